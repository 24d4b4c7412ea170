"""Gemini CLI: one session file per conversation under ``tmp/<project>/chats/``.

Evidence: formats.md §6, checked against Gemini CLI's own source as stored in the search
index (google-gemini/gemini-cli ``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts``: the record shapes, ``loadConversationRecord``'s replay and the
``.json`` -> ``.jsonl`` migration on resume; ``utils/paths.ts``: ``homedir()`` returns
``$GEMINI_CLI_HOME`` when set, and ``.gemini`` is joined below it; ``config/storage.ts``:
``tmp/<project id>`` with a sha256 or, since 2026-02, a short slug as project id) and the
samples in shared/peer-fixtures (jazzyalex, gnomon, portable-resume).

Layout handled (the store root is ``<home>/.gemini/tmp``):
- ``tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl``: a main session, an
  append-only op-log. Line kinds, told apart in Gemini CLI's own order: ``{"$rewindTo": id}``
  (a rewind), a message record (has a string ``id``), ``{"$set": {...}}`` (a metadata update;
  ``$set.messages`` is a full checkpoint replacing the message list), and the session header
  (``sessionId`` + ``projectHash``).
- ``tmp/<project>/chats/<parentSessionId>/<sessionId>.jsonl``: a subagent session whose
  parent is the folder name.
- ``tmp/<project>/chats/session-*.json``: the legacy whole-document ``ConversationRecord``
  (2025-08 to 2026-04). When a ``.jsonl`` of the same name sits beside it, the CLI has already
  migrated it (resume copies every message into the ``.jsonl``), so the ``.json`` is skipped.
- Not read: ``logs.json`` (a prompt log), ``checkpoint-<tag>.json`` (``/chat save`` copies of
  the history), ``checkpoints/``, ``tool-outputs/`` and other runtime folders.

Why the op-log is read whole (container "json" + ``to_lines``), not incrementally: a later
line changes what earlier lines mean. A message id written again replaces the earlier version
(``Map.set``: last write wins, first position kept), a ``$rewindTo`` deletes the target and
everything after it, and the session id lives only in the header. So every change of a file is
replayed from its first line, and each line comes out with what the replay found about it
(below). ``to_lines`` yields exactly one line per physical line, so line numbers are the
file's own (until lines before others are removed: the lines after them keep the numbers they
were loaded with, etl/live_lines.py) and each row carries its original byte offset; a line that is not a JSON object is
passed through unchanged and quarantined, and a line only DuckDB's more lenient reader accepts
(a trailing comma) is wrapped with the file's facts but no replay facts of its own.

Because every fact a row needs is on its own line, the SQL reads each line alone
(``LINES_STAND_ALONE``): when the file grows, the lines whose text and facts are unchanged stay
where they were loaded and only the rest is loaded again (etl/live_lines.py). Gemini CLI rewrites
a message as it completes (its tool results, its tokens), which supersedes the earlier line,
so a change usually loads from that line on, not the whole session.

Each line is wrapped as ``{"cv": {...}, "line": "<original text>"}``; ``cv`` holds what the
replay found, and the extraction SQL turns it into columns:
- ``session_id``: the header's ``sessionId`` (else a ``$set.sessionId``, else the file stem);
  a subagent's parent is its folder name. ``session_hint`` is the file stem, which a legacy
  ``.json`` shares with the ``.jsonl`` it was migrated to: once the ``.json`` is skipped (gone
  from the scan) the warehouse keeps only the live ``.jsonl`` (``int_current_files``).
- superseded versions: every version of a message id stays a record, but only the last one
  is a message; earlier ones get ``role`` null and ``kind`` 'superseded' (and no blocks).
- ``parent_id``: the message that preceded this id when it was first inserted, i.e. the
  chain as Gemini CLI rebuilds it. Messages a rewind removed keep their role and their parent
  link, so they form a dead branch.
- a ``$rewindTo`` line is a record of kind 'rewind' (``message_id`` null, the target stays in
  ``raw``) whose ``parent_id`` is the message the conversation continues from after the
  rewind (null when nothing is left); a ``$set.messages`` checkpoint is kind 'checkpoint'
  with the same meaning of ``parent_id`` (its messages are not rows of their own; a message
  added after it hangs below the checkpoint's last message that has a row).
  So a chain view can find the live leaf: take the last row of the file among message rows
  that are not superseded, rewinds and checkpoints; the leaf is the message row's own id, or
  the ``parent_id`` of the rewind/checkpoint; then walk ``parent_id`` up.

Tool calls: a ``gemini`` record's ``toolCalls[]`` holds the call (``id``, ``name``,
``args``) and its ``result`` (``functionResponse`` parts with the same id); the blocks SQL
emits a tool_use block for each and a tool_result block once it has a result (an error when
``status`` is error/cancelled or the response has ``error``). Newer CLIs also record the tool
response as a ``user`` message of ``functionResponse`` parts (kind 'tool_result').

Harness input (``harness_kind``): user messages starting ``<session_context>`` (the CLI's
environment preamble), ``<hook_context>``, ``<state_snapshot>`` (a compression summary) or
``/`` (Gemini CLI's own ``isIgnoredUserContent`` list). A user message's ``text`` is its
``displayContent`` (what the person typed) when present, else its ``content``.

Tokens are Gemini's own: ``input_tokens`` = ``tokens.input`` (promptTokenCount, which
includes the cached part), ``cache_read_tokens`` = ``tokens.cached``, ``output_tokens`` =
``tokens.output`` (thought tokens are counted apart, in ``tokens.thoughts``, kept in ``raw``).

Tolerated drift (hand-made samples in jazzyalex): legacy documents with ``history`` instead
of ``messages``, entries with ``role``/``parts``/``ts`` instead of ``type``/``content``/
``timestamp``, and ``model`` as an assistant type.

Not available in the files: cwd (only ``projectHash``; the header's ``directories`` is used
when present), git branch and CLI version.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from convarch.adapters import _json_stream as json_stream
from convarch.adapters import _replayed as replayed
from convarch.adapters.base import Extract, RootError, SourceFile
from convarch.etl.duck import connect, is_json_object

NAME = "gemini_cli"
TITLE = "Gemini CLI"
ENV_VARS = ("GEMINI_CLI_HOME",)
EXTRACT = Extract(records="extract/gemini_cli__records", blocks="extract/gemini_cli__blocks")
LINES_STAND_ALONE = True
#: A legacy session document at least this big is read a message at a time.
STREAM_BYTES = json_stream.STREAM_BYTES

_SUFFIXES = (".jsonl", ".json")


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$GEMINI_CLI_HOME/.gemini`` when set (Gemini CLI replaces the home folder with it),
    then ``~/.gemini``."""
    roots: list[Path] = []
    if env.get("GEMINI_CLI_HOME"):
        roots.append(Path(env["GEMINI_CLI_HOME"]).expanduser() / ".gemini")
    roots.append(home / ".gemini")
    return roots


def resolve_root(path: Path) -> Path:
    """Accept ``$GEMINI_CLI_HOME`` itself, the ``.gemini`` folder, its ``tmp/``, one project
    folder, a ``chats/`` folder, or a single session file."""
    if path.is_file():
        if path.suffix not in _SUFFIXES:
            raise RootError(f"{path} is not a Gemini CLI session file (.json or .jsonl)")
        return path
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / ".gemini").is_dir() and not (path / "tmp").is_dir():
        path = path / ".gemini"
    if (path / "tmp").is_dir():
        return path / "tmp"
    return path


def discover(root: Path) -> Iterator[SourceFile]:
    """Every session file under ``root``, classified by its place in the tree.

    Symlinks are not followed: a store is read only where it lives.
    """
    if root.is_file():
        yield _classify(root, root.parent, single=True)
        return
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        here = Path(dirpath)
        names = set(filenames)
        for name in sorted(filenames):
            if not name.endswith(_SUFFIXES):
                continue
            if name.endswith(".json") and name + "l" in names:
                continue  # migrated: the .jsonl beside it holds every message
            sf = _classify(here / name, root)
            if sf is not None:
                yield sf


def _classify(path: Path, root: Path, single: bool = False) -> SourceFile | None:
    """A main session (``chats/session-*``), a subagent (``chats/<parent>/<id>.jsonl``), or,
    for a file given on its own, a main session whatever its name."""
    parent = path.parent
    if parent.name != "chats" and parent.parent.name == "chats" and path.suffix == ".jsonl":
        return SourceFile(NAME, path, root, session_hint=path.stem,
                          parent_session_hint=parent.name, container="json")
    if single or (parent.name == "chats" and path.name.startswith("session-")):
        # the stem keys the file: a legacy .json and the .jsonl it was migrated to share it
        return SourceFile(NAME, path, root, session_hint=path.stem, container="json")
    return None


# --- turning a private copy into lines -------------------------------------------------------

def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """One JSON line per record, in file order (see the module docstring). A legacy document
    of STREAM_BYTES or more is read a message at a time (its other members first)."""
    if file.path.suffix != ".json":
        yield from _oplog_lines(copy.read_bytes(), file)
        return
    rest = json_stream.big_object(copy, "messages", STREAM_BYTES)
    if rest is not None:
        yield from _conversation_lines(rest, lambda: json_stream.member_items(copy, "messages"), file)
        return
    yield from _document_lines(copy.read_bytes(), file)


def _parse(text: str):
    """Python's reader accepts NaN and Infinity, as DuckDB's does. A line only DuckDB accepts
    (a trailing comma, lowercase nan) is passed through unwrapped and still loads, without
    the replay's facts."""
    return json.loads(text)


class _Replay:
    """Gemini CLI's message map: id -> line, insertion order kept, last write wins."""

    def __init__(self) -> None:
        self.order: dict[str, int | None] = {}   # id -> index of its current line (None: only in a checkpoint)
        self.parent: dict[int, str | None] = {}  # line index -> preceding message id
        self.first_parent: dict[str, str | None] = {}
        self.superseded: set[int] = set()
        self.rewound: set[int] = set()

    def _leaf(self) -> str | None:
        for mid in reversed(self.order):
            if self.order[mid] is not None:
                return mid
        return None

    def message(self, idx: int, mid: str | None) -> None:
        if mid is None:
            self.parent[idx] = self._leaf()
            return
        if mid in self.order:
            prev = self.order[mid]
            if prev is not None:
                self.superseded.add(prev)
            self.order[mid] = idx      # an existing key keeps its position
            self.parent[idx] = self.first_parent.get(mid)
            return
        self.first_parent[mid] = self._leaf()
        self.parent[idx] = self.first_parent[mid]
        self.order[mid] = idx

    def rewind(self, idx: int, target: str) -> None:
        ids = list(self.order)
        cut = ids.index(target) if target in self.order else 0  # unknown target: all cleared
        for mid in ids[cut:]:
            line = self.order.pop(mid)
            if line is not None:
                self.rewound.add(line)
            self.first_parent.pop(mid, None)
        self.parent[idx] = self._leaf()

    def checkpoint(self, idx: int, messages: list) -> None:
        new: dict[str, int | None] = {}
        for m in messages:
            mid = m.get("id") if isinstance(m, dict) else None
            if isinstance(mid, str) and mid not in new:
                new[mid] = self.order.get(mid)
        prev = None
        for mid in new:
            self.first_parent.setdefault(mid, prev)
            prev = mid
        self.order = new
        self.parent[idx] = self._leaf()


def _oplog_lines(data: bytes, file: SourceFile) -> Iterator[bytes]:
    """Two passes over the lines: the first replays them (which line each message's current
    version is, what it follows) and keeps only each line's op, the second writes each line
    with its facts. A line's text is decoded again in the second pass rather than held with its
    parsed value from the first: a long session's values took several times the file's size."""
    lines = replayed.line_spans(data)
    ops: list[str] = []
    replay = _Replay()
    session_id = header_id = None
    sidechain = False
    for idx, (offset, end) in enumerate(lines):
        text = replayed.line_text(offset, data[offset:end])
        try:
            value = _parse(text) if text is not None and text.strip() else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            ops.append("bad")
            continue
        if isinstance(value.get("$rewindTo"), str):
            replay.rewind(idx, value["$rewindTo"])
            op = "rewind"
        elif isinstance(value.get("id"), str):
            replay.message(idx, value["id"])
            op = "message"
        elif isinstance(value.get("$set"), dict):
            update = value["$set"]
            if isinstance(update.get("messages"), list):
                replay.checkpoint(idx, update["messages"])
            if isinstance(update.get("sessionId"), str) and session_id is None:
                session_id = update["sessionId"]
            op = "set"
        elif isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str):
            header_id = header_id or value["sessionId"]
            sidechain = sidechain or value.get("kind") == "subagent"
            op = "session"
        else:
            op = "unknown"
        ops.append(op)
    sid = header_id or session_id or file.path.stem
    lenient = _LenientReader()
    for idx, ((offset, end), op) in enumerate(zip(lines, ops)):
        raw = data[offset:end]
        if op == "bad":
            text = replayed.line_text(offset, raw)
            if text is not None and lenient.is_object(text):
                # a trailing comma, say: it loads, with the file's facts but no replay facts
                yield replayed.wrap(_cv(replay, idx, None, offset, sid, sidechain), text)
            else:
                yield raw[:-1] if raw.endswith(b"\r") else raw  # not a JSON object: quarantined as is
            continue
        yield replayed.wrap(_cv(replay, idx, op, offset, sid, sidechain), replayed.line_text(offset, raw))


class _LenientReader:
    """Whether DuckDB, which parses the lines, reads a text Python's parser refused as a JSON
    object. Asked only of such lines (none, in files Gemini CLI wrote), with the same test the
    loader applies to every line, so the two can never disagree."""

    def __init__(self) -> None:
        self._con = None

    def is_object(self, text: str) -> bool:
        if self._con is None:
            self._con = connect()
        row = self._con.execute(f"select {is_json_object('$1')}", [text]).fetchone()
        return bool(row and row[0])


def _cv(replay: _Replay, idx: int, op: str | None, offset: int | None, sid: str, sidechain: bool) -> dict:
    state = None
    if idx in replay.superseded:
        state = "superseded"
    elif idx in replay.rewound:
        state = "rewound"
    return {"offset": offset, "session_id": sid, "op": op, "state": state,
            "parent": replay.parent.get(idx), "sidechain": sidechain}


def _document_lines(data: bytes, file: SourceFile) -> Iterator[bytes]:
    """A legacy ``ConversationRecord``: a header line, then one line per message."""
    text = data.decode("utf-8-sig")
    doc = _parse(text)
    if not isinstance(doc, dict):
        raise ValueError(f"a JSON {type(doc).__name__}, not a conversation object")
    messages = doc.get("messages")
    if not isinstance(messages, list):
        messages = doc.get("history") if isinstance(doc.get("history"), list) else []
    yield from _conversation_lines(doc, lambda: messages, file)


def _conversation_lines(doc: dict, messages: Callable[[], Iterable], file: SourceFile) -> Iterator[bytes]:
    """The lines of a legacy conversation given as its members and `messages()`, which gives
    its messages afresh for each of the replay's two passes."""
    header = {k: v for k, v in doc.items() if k not in ("messages", "history")}
    sid = doc["sessionId"] if isinstance(doc.get("sessionId"), str) else file.path.stem
    sidechain = doc.get("kind") == "subagent"
    replay = _Replay()
    for i, m in enumerate(messages(), start=1):
        if isinstance(m, dict):
            replay.message(i, m["id"] if isinstance(m.get("id"), str) else None)
    yield replayed.wrap(_cv(replay, 0, "session", None, sid, sidechain), _dumps(header))
    for i, m in enumerate(messages(), start=1):
        if isinstance(m, dict):
            yield replayed.wrap(_cv(replay, i, "message", None, sid, sidechain), _dumps(m))
        else:
            yield _dumps(m).encode("utf-8")  # not an object: quarantined as is


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
