"""Antigravity (Google's ``agy`` CLI and the Antigravity IDE): a step transcript per
conversation under ``brain/<uuid>/``, plus a SQLite database per conversation.

Evidence followed (formats.md §21, confidence R F: closed source, so third-party readers and
samples): franken_agent_detection ``src/connectors/antigravity.rs`` (the transcript's step
shape and its ``type``/``source`` values; ``conversations/<uuid>.db`` is "an undocumented
protobuf trajectory/steps model" it does not decode), daaain/claude-code-log
``providers/agy.py`` (``CHECKPOINT`` = compaction summary, ``GENERIC`` = uncategorized model
text, ``CONVERSATION_HISTORY`` = bookkeeping), the portable-resume notes (the CLI's
``history.jsonl`` and ``messages/*.json`` lane used when the transcript is a 0-byte
placeholder) and the samples in shared/peer-fixtures (jazzyalex ``cli_small.jsonl``,
``cli_schema_drift.jsonl``; portable-resume ``antigravity/``).

Where: ``~/.gemini/antigravity-cli/`` (the CLI) and ``~/.gemini/antigravity/`` (the IDE). No
environment override is known. Layout handled:
- ``brain/<uuid>/.system_generated/logs/transcript.jsonl``: the conversation, one step per
  line: ``{step_index, source: USER_EXPLICIT|MODEL|SYSTEM, type, status, created_at, content?,
  thinking?, tool_calls?[{name, args}], truncated_fields?}``. Session id = the folder name.
  ``transcript_full.jsonl`` (a fuller variant, no sample) is read only when
  ``transcript.jsonl`` is missing or empty, and ``.system_generated/messages/*.json`` (agent
  messages ``{id, content, timestamp, sender, hideFromUser, renderDetails}``) likewise: these
  lanes hold the same conversation, so they share the session hint (when the transcript fills
  up, the lane read before it is superseded rather than counted twice).
- ``history.jsonl``: ``{display, timestamp (Unix ms), workspace, conversationId, type?}``, one
  line per prompt typed. It is an index, not the transcript (formats.md §0 rule 2): each line
  is a bookkeeping record (kind 'prompt_history', role null, so a prompt is never counted
  twice) that gives its conversation the only cwd Antigravity records (``workspace``).
- ``conversations/<uuid>.db`` (SQLite): ``trajectory_meta(trajectory_id, cascade_id,
  trajectory_type, source)`` rows become metadata records; ``steps(idx, step_type, status,
  step_payload BLOB)`` rows become records of kind 'unknown' with the readable columns, the
  payload's length and the payload itself in base64 (``payload_b64`` in ``raw``). The payload
  is protobuf with no public schema: it is archived undecoded, and these rows are never
  messages (the transcript holds the readable copy of the same steps).
- Not read: ``brain/index.json`` (a hint, formats.md §0 rule 2), the IDE's
  ``conversations/<uuid>.pb`` (reported encrypted; magic bytes match no known container) and
  the markdown artifacts in ``brain/<uuid>/`` (task.md, walkthrough.md: documents, not turns).

Tool calls are not id-linked in the transcript: a ``PLANNER_RESPONSE``'s ``tool_calls`` are
followed by the tool steps that ran them, in ``step_index`` order. The extraction SQL pairs
the k-th tool step after a planner response with its k-th call (call id
``step-<line>-<k>``); a tool step with no call left to pair (a truncated or trimmed log)
carries a tool_use block of its own (named after its ``type``) beside its tool_result. A step
is paired by the lines before it, never after, so the transcript is read as the append-only
JSONL it is, from where the last run stopped; the lines pairing needs from before that point
(the last planner response or user input and the steps after it) come back from the lake as
context lines (``antigravity__context.sql``). A planner line's calls are often written before
the steps that answer them, which then pair up when they arrive.
Tool arguments are JSON texts inside the args object (``"DirectoryPath": "\\"/tmp\\""``) and
are decoded. The model is named only in a ``<USER_SETTINGS_CHANGE>`` block of a user step
("…`Model Selection` from X to Gemini 3.1 Pro (High)"); the prompt's text is the
``<USER_REQUEST>`` body. Timestamps are ISO UTC. Tokens are not recorded.

Drift tolerated: portable-resume's synthetic transcripts use another shape (``{type:
session|message|tool|system|thought, role, content, timestamp}``, a ``session`` line with
``title``/``cwd``); it is read too (its ``title`` is the session title). Step types and
sources not listed above load with kind 'unknown' and their raw line.
"""
from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "antigravity"
TITLE = "Antigravity"
ENV_VARS: tuple[str, ...] = ()
EXTRACT = Extract(records="extract/antigravity__records", blocks="extract/normalized__blocks",
                  context="extract/antigravity__context")

TRANSCRIPTS = ("transcript.jsonl", "transcript_full.jsonl")
HOMES = ("antigravity-cli", "antigravity")


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The CLI's folder, then the IDE's, both under ``~/.gemini``."""
    return [home / ".gemini" / h for h in HOMES]


def resolve_root(path: Path) -> Path:
    """Accept ``~/.gemini`` (its ``antigravity-cli`` folder is used), an Antigravity folder
    (``brain/``, ``conversations/`` or ``history.jsonl`` inside), ``brain/`` itself, one
    ``brain/<uuid>`` folder, or a single transcript, message, history or database file."""
    if path.is_file():
        if path.suffix in (".jsonl", ".db") or (path.suffix == ".json" and path.parent.name == "messages"):
            return path
        raise RootError(f"{path} is not an Antigravity transcript, message, history or database file")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    for sub in HOMES:
        if (path / sub).is_dir() and not _is_store(path):
            return path / sub
    if _is_store(path) or _is_conversation(path) or _conversations_in(path):
        return path
    raise RootError(f"{path} holds no Antigravity conversations (no brain/, conversations/ or history.jsonl)")


def _is_store(folder: Path) -> bool:
    return (folder / "brain").is_dir() or (folder / "conversations").is_dir() or (folder / "history.jsonl").is_file()


def _is_conversation(folder: Path) -> bool:
    return (folder / ".system_generated").is_dir()


def _conversations_in(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder)
                      if e.is_dir(follow_symlinks=False) and _is_conversation(Path(e.path)))
    except OSError:
        return []


def discover(root: Path) -> Iterator[SourceFile]:
    """Each conversation's transcript (or, when it is missing or empty, its fuller variant or
    its messages), every ``conversations/*.db`` and ``history.jsonl``. By path and size only;
    symlinks are not followed."""
    if root.is_file():
        yield _single(root)
        return
    if _is_conversation(root):
        conversations = [root]
    else:
        brain = root / "brain" if (root / "brain").is_dir() else root
        conversations = _conversations_in(brain)
    for conv in conversations:
        yield from _conversation_files(conv, root)
    dbs = root / "conversations"
    if dbs.is_dir():
        try:
            names = sorted(e.name for e in os.scandir(dbs) if e.name.endswith(".db") and not e.is_dir())
        except OSError:
            names = []
        for name in names:
            yield SourceFile(NAME, dbs / name, root, container="sqlite")
    if (root / "history.jsonl").exists() or (root / "history.jsonl").is_symlink():
        yield SourceFile(NAME, root / "history.jsonl", root)


def _size(path: Path) -> int | None:
    try:
        return os.lstat(path).st_size
    except OSError:
        return None


def _conversation_files(conv: Path, root: Path) -> Iterator[SourceFile]:
    logs = conv / ".system_generated" / "logs"
    main, full = (_size(logs / n) for n in TRANSCRIPTS)
    if main is not None:
        yield SourceFile(NAME, logs / TRANSCRIPTS[0], root, session_hint=conv.name)
    if main:
        return
    if full:
        yield SourceFile(NAME, logs / TRANSCRIPTS[1], root, session_hint=conv.name)
        return
    messages = conv / ".system_generated" / "messages"
    if messages.is_dir():
        for dirpath, dirnames, filenames in os.walk(messages, followlinks=False):
            folder = Path(dirpath)
            dirnames[:] = []
            for name in sorted(filenames):
                if name.endswith(".json"):
                    yield SourceFile(NAME, folder / name, root, session_hint=conv.name, container="json")


def _single(path: Path) -> SourceFile:
    if path.suffix == ".db":
        return SourceFile(NAME, path, path.parent, container="sqlite")
    if path.name == "history.jsonl":
        return SourceFile(NAME, path, path.parent)
    if path.suffix == ".json":
        return SourceFile(NAME, path, path.parent, session_hint=path.parent.parent.parent.name, container="json")
    parts = path.parts
    hint = parts[-4] if len(parts) >= 4 and parts[-3:-1] == (".system_generated", "logs") else path.stem
    return SourceFile(NAME, path, path.parent, session_hint=hint)


# --- turning a private copy into lines -------------------------------------------------------

def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """An agent message file: every physical line unchanged (a line that is not JSON is
    quarantined on its own). A database: one line per ``trajectory_meta`` and per ``steps``
    row. (Transcripts are JSONL, read by the loader itself.)"""
    if file.container == "sqlite":
        yield from _db_lines(copy)
        return
    data = copy.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    parts = data.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    for raw in parts:
        yield raw[:-1] if raw.endswith(b"\r") else raw


def _db_lines(copy: Path) -> Iterator[bytes]:
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        if not tables & {"steps", "trajectory_meta"}:
            raise ValueError("not an Antigravity conversation database: no steps or trajectory_meta table")
        for table, order in (("trajectory_meta", "rowid"), ("steps", "idx")):
            if table not in tables:
                continue
            try:
                cur = con.execute(f"select * from {table} order by {order}")
            except sqlite3.OperationalError:
                cur = con.execute(f"select * from {table} order by rowid")
            cols = [d[0] for d in cur.description]
            for values in cur:
                row: dict = {"table": table}
                for col, value in zip(cols, values):
                    if isinstance(value, bytes):
                        row[f"{col}_bytes"] = len(value)
                        row[f"{col}_b64"] = base64.b64encode(value).decode("ascii")
                    else:
                        row[col] = value
                yield json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    finally:
        con.close()
