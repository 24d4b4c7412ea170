"""Continue (continuedev/continue: the VS Code / JetBrains extension and the ``cn`` CLI): one
JSON document per session, ``sessions/<sessionId>.json`` in Continue's global folder.

Evidence followed (formats.md §13, confidence S, no sample; Continue's source as stored in
the search index):
- Where: ``$CONTINUE_GLOBAL_DIR`` else ``~/.continue`` on every OS (``core/util/paths.ts``:
  ``getSessionsFolderPath`` = ``<global>/sessions``, ``getSessionFilePath(id)`` =
  ``sessions/<id>.json``, ``getSessionsListPath`` = ``sessions/sessions.json``).
- Session document (``core/index.d.ts``): ``{sessionId, title, workspaceDirectory,
  history: ChatHistoryItem[], mode?, chatModelTitle?, usage?}``. A ChatHistoryItem is
  ``{message, contextItems[], editorState?, promptLogs?, toolCallStates?, reasoning?,
  conversationSummary?, appliedRules?}``; ``message.role`` is user (content a string or
  ``text`` / ``imageUrl`` parts), assistant (``toolCalls[{id, type, function{name,
  arguments}}]``, ``usage{promptTokens, completionTokens, promptTokensDetails}``),
  thinking, system or tool (``toolCallId``). A tool call's state lives on the assistant item
  (``toolCallStates[{toolCallId, toolCall, status, output?: ContextItem[]}]``); its result
  is also a later ``tool`` message. 2024 builds wrote ``[prompt, completion]`` pairs as
  ``promptLogs`` and string-only content; both read as they are.
- ``sessions.json`` is only an index (``[{sessionId, title, dateCreated, workspaceDirectory,
  messageCount?}]``), but it is the only place Continue keeps a date: each entry is read as
  one metadata record of its session (``dateCreated``, Unix ms as a string, is the session's
  time). A session listed there whose file is gone keeps just that record.
- Times: Continue stores none per message. An item whose ``reasoning.startAt`` (Unix ms,
  recalled from Continue's GUI session slice, second-hand) is set takes that time; every
  other message has no timestamp and is ordered by its place in the history.
- ``workspaceDirectory`` is a path or (2025+) a ``file://`` URI; the URI is turned back into
  a path. ``chatModelTitle`` is a config title, not a provider model id; it is the model
  recorded (with ``promptLogs[0].modelTitle`` on an assistant item, second-hand).
- Older drift: the 2023 Python-server builds wrote ``{history: {timeline: [{step, observation,
  …}]}}``; each timeline node is read as a record (``UserInputStep`` = the person's input,
  other steps = Continue's output in ``description``).

Lines made (``to_lines`` parses the whole document): one ``session`` line (every key but
``history``), one ``history_item`` line per item (all its keys, plus ``session_id`` and
``index``; a ``tool`` message gets the ``status`` its call has on the assistant item; each
``toolCallStates`` entry is marked ``resultInHistory`` / ``callInMessage`` so a call and a
result are never counted twice), and one ``session_index`` line per ``sessions.json`` entry.
A document that is not JSON is quarantined whole. Parsing is the SQL in
``sql/extract/continue_dev__*.sql``. A session's title is its ``title``.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from convarch.adapters import _json_stream as json_stream
from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "continue_dev"
TITLE = "Continue"
ENV_VARS = ("CONTINUE_GLOBAL_DIR",)
EXTRACT = Extract(records="extract/continue_dev__records", blocks="extract/continue_dev__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True
#: A session document at least this big is read an item at a time.
STREAM_BYTES = json_stream.STREAM_BYTES

INDEX = "sessions.json"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$CONTINUE_GLOBAL_DIR`` when set, then ``~/.continue``."""
    roots: list[Path] = []
    if env.get("CONTINUE_GLOBAL_DIR"):
        roots.append(Path(env["CONTINUE_GLOBAL_DIR"]).expanduser())
    roots.append(home / ".continue")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept Continue's global folder (``sessions/`` inside), the sessions folder, or one
    session file."""
    if path.is_file():
        if path.suffix == ".json":
            return path
        raise RootError(f"{path} is not a Continue session (.json) file")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / "sessions").is_dir() and _jsons(path / "sessions"):
        return path / "sessions"
    if _jsons(path):
        return path
    raise RootError(f"{path} holds no Continue sessions (no sessions/*.json)")


def _jsons(folder: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    # symlinks are listed too, so ingest reports them as skipped instead of hiding them
    return [Path(e.path) for e in entries if e.name.endswith(".json") and not e.is_dir(follow_symlinks=False)]


def discover(root: Path) -> Iterator[SourceFile]:
    """Every ``<id>.json`` session of the sessions folder, and its ``sessions.json`` index.
    Continue keeps them flat; nothing below is read and symlinks are not followed."""
    if root.is_file():
        yield _classify(root, root.parent)
        return
    for p in _jsons(root):
        yield _classify(p, root)


def _classify(path: Path, root: Path) -> SourceFile:
    if path.name == INDEX:
        return SourceFile(NAME, path, root, container="json")
    return SourceFile(NAME, path, root, session_hint=path.stem, container="json")


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """JSON lines of the private copy of a session document or of the index. A session of
    STREAM_BYTES or more is read an item at a time (its other members first)."""
    if file.path.name != INDEX:
        rest = json_stream.big_object(copy, "history", STREAM_BYTES)
        if rest is not None:
            yield from _session_lines(rest, lambda: json_stream.member_items(copy, "history"), file)
            return
    data = copy.read_bytes()
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        yield data.replace(b"\n", b" ")        # not JSON: quarantined with its bytes
        return
    if file.path.name == INDEX:
        entries = doc if isinstance(doc, list) else doc.get("sessions") if isinstance(doc, dict) else None
        if not isinstance(entries, list):
            yield _dump({"type": "unknown", "document": doc})
            return
        for entry in entries:
            yield _dump({**entry, "type": "session_index"} if isinstance(entry, dict)
                        else {"type": "unknown", "entry": entry})
        return
    if not isinstance(doc, dict):
        yield _dump({"type": "unknown", "document": doc})
        return
    history = doc.get("history")
    if isinstance(history, dict) and isinstance(history.get("timeline"), list):      # 2023 builds
        sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else file.session_hint
        for i, node in enumerate(history["timeline"]):
            yield _dump({**(node if isinstance(node, dict) else {"node": node}),
                         "type": "timeline_node", "session_id": sid, "index": i})
        yield _dump({**{k: v for k, v in doc.items() if k != "history"}, "type": "session",
                     "_items_have_usage": False})
        return
    items = history if isinstance(history, list) else []
    yield from _session_lines({k: v for k, v in doc.items() if k != "history"}, lambda: items, file)


def _session_lines(doc: dict, history: Callable[[], Iterable], file: SourceFile) -> Iterator[bytes]:
    """A line per history item, then the session line: the session given as its members other
    than `history`, and `history()`, which gives the items afresh for each of two passes.

    The session line comes last because it changes as the session goes on (its usage totals,
    its title) while the items before it do not: a session that gained items is then read with
    its earlier lines first, and only the tail loads (etl/containers.py). It says whether any
    item counts its own tokens, so the SQL reads each line on its own."""
    sid = doc.get("sessionId") if isinstance(doc.get("sessionId"), str) else file.session_hint
    found = {"usage": False}
    yield from _items(history, sid, found)
    yield _dump({**doc, "type": "session", "_items_have_usage": found["usage"]})


def _tokens(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _items(history: Callable[[], Iterable], sid: str | None, found: dict) -> Iterator[bytes]:
    answered: set[str] = set()                # tool calls whose result is a `tool` message
    called: dict[str, str] = {}               # tool call id -> status on the assistant item
    for item in history():
        msg = item.get("message") if isinstance(item, dict) else None
        usage = msg.get("usage") if isinstance(msg, dict) else None
        if isinstance(usage, dict) and (_tokens(usage.get("promptTokens")) or _tokens(usage.get("completionTokens"))):
            found["usage"] = True
        if isinstance(msg, dict) and msg.get("role") == "tool" and msg.get("toolCallId"):
            answered.add(msg["toolCallId"])
        for state in (item.get("toolCallStates") or []) if isinstance(item, dict) else []:
            if isinstance(state, dict) and state.get("toolCallId"):
                called[state["toolCallId"]] = state.get("status")
    for i, item in enumerate(history()):
        if not isinstance(item, dict):
            yield _dump({"type": "history_item", "session_id": sid, "index": i, "item": item})
            continue
        line = {**item, "type": "history_item", "session_id": sid, "index": i}
        msg = item.get("message") if isinstance(item.get("message"), dict) else {}
        in_message = {c.get("id") for c in msg.get("toolCalls") or [] if isinstance(c, dict)}
        states = item.get("toolCallStates")
        if isinstance(states, list):
            line["toolCallStates"] = [
                {**s, "resultInHistory": s.get("toolCallId") in answered,
                 "callInMessage": s.get("toolCallId") in in_message} if isinstance(s, dict) else s
                for s in states]
        if msg.get("role") == "tool" and msg.get("toolCallId") in called:
            line["status"] = called[msg["toolCallId"]]
        yield _dump(line)
