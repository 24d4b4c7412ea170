"""Amp (Sourcegraph): one JSON document per thread, ``~/.local/share/amp/threads/T-<uuid>.json``.

Evidence, and its weakness (confidence R H): Amp is closed source and no real thread file is
public; there is no sample in shared/peer-fixtures (the one in a peer repository is a
simplified stand-in). The evidence level of this adapter is "own fixture only": its fixture
(``fixtures/amp/contract``) was written here from what third-party readers do, as stored in
the search index, and it has never been checked against a thread written by Amp itself.
What those readers agree on:
- ccusage (``rust/crates/ccusage/src/adapter/amp/{README.md,paths.rs,parser.rs}``): the
  folder, the ``id`` and ``messages[]``, integer ``messageId``, per-message
  ``usage{model, timestamp, inputTokens, outputTokens, cacheCreationInputTokens,
  cacheReadInputTokens, totalTokens, credits}`` on assistant messages, and the older
  ``usageLedger.events[]{timestamp, model, tokens{input, output, total}, toMessageId}``
  (ccusage prefers the ledger when it exists, taking cache tokens from the message it points
  to);
- cross_agent_session_resumer (``src/providers/amp.rs``): ``XDG_DATA_HOME``, ``created`` in
  epoch ms, ``meta.sentAt`` (epoch ms) per message, ``env.initial.cwd`` or
  ``env.initial.trees[].uri`` (``file://``), Anthropic-like blocks ``text``/``tool_use``/
  ``tool_result{toolUseID, run{status, result, progress}}``, role ``info`` with ``summary``
  blocks; a legacy store in VS Code's ``globalStorage/sourcegraph.amp/threads3``;
- yigitkonur/cli-continues (``src/parsers/amp.ts`` and its test): ``env.initial.tags``
  (``model:<id>``), ``trees[0].repository{url, ref, sha}``, ledger ``operationType``;
- a third-party de-minified piece of Amp's own bundle (found by its text): how Amp turns a
  ``tool_result`` block into the API's form: ``run.status`` 'done' (``run.result``, a string
  or JSON), 'error' (``run.error``, a string or ``{message}``), 'cancelled' and
  'rejected-by-user' (``run.reason``), the last three being errors;
- other readers (noamsto/houston notes, an unnamed Python reader): ``agentMode``,
  ``messages[].state{type, stopReason}``, ``relationships[]{threadID, type, role}``, and
  ``*.amptmp`` write-ahead temp files beside the threads.
The field names above are the only ones relied on; anything else stays in ``raw``.

Layout handled: ``$XDG_DATA_HOME/amp`` else ``~/.local/share/amp`` (Amp follows XDG_DATA_HOME;
it names no override of its own, so ``ENV_VARS`` is empty; ``AMP_DATA_DIR`` is ccusage's, not
Amp's), files ``threads/*.json`` (temp files are skipped). Not read: the VS Code legacy
``threads3`` folder (the extension migrates it into this store; reading both would count a
thread twice), ``history.jsonl`` (a prompt log) and ``~/.local/state/amp``.

Container "json": a thread is rewritten whole, so ``to_lines`` turns each version into
lines, in document order: one ``thread`` line (the document without its messages and
ledger; kind 'metadata' with the title as text, cwd, branch, model tag, client version), one
``message`` line per ``messages[]`` entry (its index, the previous entry's ``messageId`` as
parent, and as ``after`` the last time written on an earlier message, else the thread's
``created``), and one ``usage_event`` line per
ledger event. Tokens are counted once: from ``messages[].usage`` where it exists, and from a
ledger event only when the message it points to has no usage of its own.

Records: ``user`` messages are prompts (or tool results when they carry ``tool_result``
blocks), ``assistant`` messages responses / tool calls / thinking, ``info`` messages system
records ('compact_boundary' when they hold a summary). A message's time is ``meta.sentAt``,
else its ``usage.timestamp``, else ``after`` (a cancelled reply has neither). Relationships
(handoffs) are kept in the thread line but not turned into ``parent_session_id``: which side
a ``role`` names is not known.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from convarch.adapters import _json_stream as json_stream
from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "amp"
TITLE = "Amp"
ENV_VARS: tuple[str, ...] = ()
EXTRACT = Extract(records="extract/amp__records", blocks="extract/amp__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True
#: A thread at least this big is read a message at a time (adapters/_json_stream.py).
STREAM_BYTES = json_stream.STREAM_BYTES


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$XDG_DATA_HOME/amp`` when set, and ``~/.local/share/amp``."""
    roots: list[Path] = []
    if env.get("XDG_DATA_HOME"):
        roots.append(Path(env["XDG_DATA_HOME"]).expanduser() / "amp")
    roots.append(home / ".local" / "share" / "amp")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept the Amp data folder (holding ``threads/``), ``threads/`` itself, or one thread
    file."""
    if path.is_file():
        if path.suffix != ".json":
            raise RootError(f"{path} is not an Amp thread file (.json)")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / "threads").is_dir():
        return path / "threads"
    return path


def discover(root: Path) -> Iterator[SourceFile]:
    """Every thread file directly in ``root`` (the ``threads/`` folder). Symlinks are not
    followed."""
    if root.is_file():
        yield SourceFile(NAME, root, root.parent, session_hint=root.stem, container="json")
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        folder = Path(dirpath)
        dirnames.clear()  # threads live flat in one folder
        for name in sorted(filenames):
            if name.endswith(".json"):
                path = folder / name
                yield SourceFile(NAME, path, root, session_hint=path.stem, container="json")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """A thread line, one line per message, one per ledger event (see the module docstring).

    A damaged file is one quarantined container, never a partial thread: the document is
    parsed whole before any line is made, or, at STREAM_BYTES or more, read to its end by the
    streaming parser first (its other members) and then a message at a time."""
    rest = json_stream.big_object(copy, "messages", STREAM_BYTES)
    if rest is not None:
        yield from _thread_lines(rest, json_stream.member_items(copy, "messages"), file)
        return
    doc = json.loads(copy.read_bytes().decode("utf-8-sig"))
    if not isinstance(doc, dict):
        raise ValueError(f"a JSON {type(doc).__name__}, not an Amp thread object")
    messages = doc.get("messages") if isinstance(doc.get("messages"), list) else []
    yield from _thread_lines({k: v for k, v in doc.items() if k != "messages"}, messages, file)


def _thread_lines(doc: dict, messages: Iterable, file: SourceFile) -> Iterator[bytes]:
    """The lines of a thread given as its members other than `messages`, and its messages."""
    thread_id = doc["id"] if isinstance(doc.get("id"), str) and doc["id"] else file.path.stem
    created = doc.get("created")
    ledger = doc.get("usageLedger")
    events = ledger.get("events") if isinstance(ledger, dict) and isinstance(ledger.get("events"), list) else []

    header = {k: v for k, v in doc.items() if k != "usageLedger"}
    if isinstance(ledger, dict):
        header["usageLedger"] = {k: v for k, v in ledger.items() if k != "events"}
    yield _dump({"type": "thread", "thread_id": thread_id, "thread": header})

    with_usage = set()
    prev = None
    last_time = created
    for index, msg in enumerate(messages):
        mid = msg.get("messageId") if isinstance(msg, dict) else None
        usage = msg.get("usage") if isinstance(msg, dict) else None
        if isinstance(usage, dict) and mid is not None:
            with_usage.add(str(mid))
        yield _dump({"type": "message", "thread_id": thread_id, "index": index,
                     "parent": prev, "after": last_time, "message": msg})
        own = _own_time(msg, usage)
        if own is not None:
            last_time = own
        if mid is not None:
            prev = mid
    for index, event in enumerate(events):
        target = event.get("toMessageId") if isinstance(event, dict) else None
        counted = target is None or str(target) not in with_usage
        yield _dump({"type": "usage_event", "thread_id": thread_id, "index": index,
                     "count_tokens": counted, "event": event})


def _own_time(msg, usage):
    """A message's own time as written: ``meta.sentAt`` (epoch ms), else ``usage.timestamp``."""
    meta = msg.get("meta") if isinstance(msg, dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("sentAt"), (int, float, str)):
        return meta["sentAt"]
    if isinstance(usage, dict) and isinstance(usage.get("timestamp"), (int, float, str)):
        return usage["timestamp"]
    return None


def _dump(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
