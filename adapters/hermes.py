"""Hermes Agent (NousResearch/hermes-agent): the SQLite store ``state.db`` in Hermes' home
folder, and the per-session files Hermes wrote in ``sessions/`` before it (and still writes
as a fallback).

Evidence followed (formats.md §23, confidence S R F; Hermes' source as stored in the search
index, read for this adapter):
- Where: ``$HERMES_HOME`` else ``~/.hermes`` (``hermes_constants.get_hermes_home``;
  ``hermes_state.py``: ``DEFAULT_DB_PATH = get_hermes_home() / "state.db"``, WAL mode, files
  chmod 0600). Profiles (``hermes profile create``) are whole Hermes homes under
  ``<home>/profiles/<name>/``, each with its own ``state.db``: they are read too.
- Database (schema 23 in the portable-resume samples): ``sessions`` (id, source = cli /
  telegram / …, model, system_prompt, parent_session_id, started_at / ended_at as Unix
  seconds REAL, end_reason, token totals, cwd, git_branch, title, archived …) and
  ``messages`` (autoincrement id, session_id, role system/user/assistant/tool, content,
  tool_call_id, tool_calls = OpenAI-style JSON, tool_name, timestamp REAL, token_count,
  finish_reason, reasoning / reasoning_content, reasoning_details / codex_* JSON, active,
  compacted, api_content, display_kind, display_metadata JSON …). Columns are read by name
  (``select *``), so older and newer schemas load alike; a schema version Hermes would refuse
  (portable-resume ``s-hm-03``, version 1) is archived as it stands, the version kept on each
  session line. Other tables (``state_meta``, FTS5 indexes, leases, locks) are bookkeeping
  and not read.
- ``content``: plain text, or (``hermes_state_messages._encode_content``) a list/dict of
  multimodal parts stored as JSON behind a sentinel, ``"\\x00json:"`` in older builds and
  ``"\\x01json:"`` now; both are decoded. ``display_metadata`` may be JSON encoded twice
  (pre-guard rows); one extra layer is unwrapped.
- Compression "splits sessions via parent_session_id chains" (module docstring): the
  continuation is a new session whose ``parent_session_id`` is the old one; subagents use
  the same column. Harness-written user turns start with markers Hermes itself lists:
  ``[CONTEXT COMPACTION`` (the summary), ``[PRIOR CONTEXT``, ``[ASYNC DELEGATION BATCH
  COMPLETE``, ``[IMPORTANT: Background process``, ``[Your active task list was preserved…``,
  ``[Continuing toward your standing goal]`` and the background-review prompts
  (``_REVIEW_HARNESS_PREFIXES``); the ``_compressed_summary`` column, where present, marks the
  summary too.
- Legacy files in ``<home>/sessions/``: ``session_<id>.json`` (run_agent.py's session log:
  ``{session_id, model, platform, session_start, last_updated, cwd?, message_count,
  system_prompt?, tools?, messages[]}``, samples in jazzyalex agent-sessions) and
  ``<id>.jsonl`` (gateway transcripts, one message dict per line; Hermes' ``divert_session_
  transcript_jsonl`` still appends there when state.db refuses a write). Both hold copies of
  sessions a ``state.db`` beside them holds, so they are read only where a home has no
  ``state.db`` (or when the sessions folder or one file is named as the root). A
  ``{"role": "session_meta"}`` entry is a metadata record; ``sessions.json`` is the gateway's
  routing index and is not read.

Lines made: one per ``sessions`` row and one per ``messages`` row of the private copy (the
line names its ``table``; JSON text columns decoded), and for a legacy session log one
``sessions`` line for the document (all keys but ``messages``) plus one ``messages`` line per
entry (``"format": "session_log"``). A row whose JSON column does not parse becomes a line
that is not JSON, so it is quarantined with its raw text while the rest loads. Parsing is
the SQL in ``sql/extract/hermes__*.sql``. Messaging identifiers of gateway sessions
(``user_id``, ``chat_id``, ``origin_json``) are archived in the raw line but never surfaced
as columns.
"""
from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from convarch.adapters import base, db_order
from convarch.adapters.base import Extract, RootError, SourceFile, code_key, keyed_group, malformed_row

NAME = "hermes"
TITLE = "Hermes Agent"
ENV_VARS = ("HERMES_HOME",)
EXTRACT = Extract(records="extract/hermes__records", blocks="extract/hermes__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

DB_NAME = "state.db"
SIDECARS = ("-wal", "-shm", "-journal")
CONTENT_PREFIXES = ("\x00json:", "\x01json:")
#: Text columns Hermes stores as JSON, per table (``content`` is handled apart).
JSON_COLUMNS = {
    "sessions": ("model_config", "origin_json"),
    "messages": ("tool_calls", "reasoning_details", "codex_reasoning_items", "codex_message_items",
                 "display_metadata"),
}
ORDER = {"sessions": "started_at, id", "messages": "id"}


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$HERMES_HOME`` when set, then ``~/.hermes``."""
    roots: list[Path] = []
    if env.get("HERMES_HOME"):
        roots.append(Path(env["HERMES_HOME"]).expanduser())
    roots.append(home / ".hermes")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept a Hermes home (``state.db`` and/or ``sessions/`` inside), its ``sessions``
    folder, a ``state.db`` file, or one legacy session file."""
    if path.is_file():
        if path.name.endswith(SIDECARS):
            raise RootError(f"{path} is a SQLite sidecar; name the database itself")
        if path.suffix in (".db", ".json", ".jsonl"):
            return path
        raise RootError(f"{path} is neither a Hermes state.db nor a legacy session file")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (_exists(path / DB_NAME) or _legacy_files(path / "sessions") or _legacy_files(path, loose=True)
            or any(True for _ in _profile_homes(path))):
        return path
    raise RootError(f"{path} holds no Hermes store (no {DB_NAME}, no sessions/ files)")


def _exists(p: Path) -> bool:
    return os.path.lexists(p) and not p.is_dir()


def _profile_homes(home: Path) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(home / "profiles"), key=lambda e: e.name)
    except OSError:
        return
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            yield Path(e.path)


def _legacy_files(folder: Path, *, loose: bool = False) -> list[Path]:
    """``session_<id>.json`` logs and ``<id>.jsonl`` transcripts of one sessions folder
    (symlinks listed too, so ingest reports them as skipped). ``loose``: a folder named as the
    root takes every ``.json`` but the gateway index, whatever its name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    out = []
    for e in entries:
        if e.is_dir(follow_symlinks=False) or e.name == "sessions.json":
            continue
        if e.name.endswith(".jsonl") or (e.name.endswith(".json") and (loose or e.name.startswith("session_"))):
            out.append(Path(e.path))
    return out


def discover(root: Path) -> Iterator[SourceFile]:
    """``state.db`` of the home and of each profile; a home's legacy ``sessions/`` files only
    where that home has no database. Symlinks are not followed."""
    if root.is_file():
        yield _classify(root, root.parent)
        return
    if not _exists(root / DB_NAME) and not (root / "sessions").is_dir() and not (root / "profiles").is_dir():
        for p in _legacy_files(root, loose=True):     # the root is a sessions folder itself
            yield _classify(p, root)
        return
    for home in [root, *_profile_homes(root)]:
        if _exists(home / DB_NAME):
            yield _classify(home / DB_NAME, root)
        else:
            for p in _legacy_files(home / "sessions"):
                yield _classify(p, root)


def _classify(path: Path, root: Path) -> SourceFile:
    if path.suffix == ".jsonl":
        return SourceFile(NAME, path, root, session_hint=path.stem, container="jsonl")
    if path.suffix == ".json":
        stem = path.stem
        hint = stem[len("session_"):] if stem.startswith("session_") else stem
        return SourceFile(NAME, path, root, session_hint=hint, container="json")
    return SourceFile(NAME, path, root, container="sqlite")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """JSON lines of a private copy: database rows, or one legacy session log."""
    if file.container == "sqlite":
        yield from _db_lines(copy)
    elif file.container == "json":
        yield from _log_lines(copy)
    else:
        raise ValueError(f"hermes has no reader for a {file.container!r} container")


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --- legacy session log -------------------------------------------------------------------

def _log_lines(copy: Path) -> Iterator[bytes]:
    data = copy.read_bytes()
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        yield data.replace(b"\n", b" ")          # not JSON: quarantined with its bytes
        return
    if not isinstance(doc, dict):
        yield _dump(doc)                          # JSON but not an object: quarantined as such
        return
    messages = doc.get("messages")
    head = {k: v for k, v in doc.items() if k != "messages"}
    sid = doc.get("session_id")
    yield _dump({"table": "sessions", "format": "session_log", **head})
    if not isinstance(messages, list):
        return
    for i, msg in enumerate(messages):
        if isinstance(msg, dict):
            yield _dump({"table": "messages", "format": "session_log", "session_id": sid, "index": i, **msg})
        else:
            yield _dump({"table": "messages", "format": "session_log", "session_id": sid, "index": i,
                         "content": msg})


# --- state.db -----------------------------------------------------------------------------

def _db_lines(copy: Path) -> Iterator[bytes]:
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = _text
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        missing = {"sessions", "messages"} - tables
        if missing:
            raise ValueError(f"not a Hermes state.db: no {', '.join(sorted(missing))} table")
        version = None
        if "schema_version" in tables:
            try:
                version = con.execute("select max(version) from schema_version").fetchone()[0]
            except sqlite3.Error:
                version = None
        # messages and sessions merged in time (adapters/db_order.py): each session's row, which
        # changes as the session goes on (counts, end time), right after its last message, so a
        # database that gained messages then loads only its tail (etl/containers.py)
        messages = _ordered(con, "messages")
        sessions = _ordered(con, "sessions")
        last = db_order.last_times(con, "messages", "session_id", "timestamp", by="id")
        yield from db_order.merged([
            db_order.table(messages, "timestamp", _group("messages", {})),
            db_order.owners(sessions, "id", last, "started_at", _group("sessions", {"hermes_schema_version": version})),
        ])
    finally:
        con.close()


def _ordered(con: sqlite3.Connection, table: str) -> sqlite3.Cursor:
    try:
        return con.execute(f"select * from {table} order by {ORDER[table]}")
    except sqlite3.OperationalError:            # a schema without the usual columns: file order
        return con.execute(f"select * from {table} order by rowid")


def _group(table: str, extra: dict):
    """Groups of a table's rows (adapters/base.py Group): a database read again makes again
    only the rows of the groups that changed."""
    return keyed_group(partial(_row_lines, table, extra), code_key(sys.modules[__name__], base),
                       (table, tuple(extra.items())))


def _row_lines(table: str, extra: dict, cols: list[str], rows: list[tuple]) -> Iterator[bytes]:
    for values in rows:
        row = {"table": table, **dict(zip(cols, (_plain(v) for v in values))), **extra}
        bad = _decode(row, JSON_COLUMNS[table])
        if bad is None and table == "messages":
            bad = _decode_content(row)
        if bad:
            key = row.get("id")
            raw = row.get(bad)
            yield malformed_row(f"hermes {table} row {key}", f"column {bad} is not valid JSON",
                                None if raw is None else str(raw))
        else:
            yield _dump(row)


def _text(data: bytes) -> str:
    """TEXT that is not UTF-8 (a damaged page) is kept readable rather than failing the file."""
    return data.decode("utf-8", "replace")


def _plain(value):
    """SQLite values as JSON can carry them: blobs become text (or their hex when not UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.hex()
    return value


def _decode(row: dict, columns: tuple[str, ...]) -> str | None:
    """Replace each JSON text column by its value; return the first column that is not JSON."""
    for col in columns:
        text = row.get(col)
        if not isinstance(text, str):
            continue
        try:
            value = json.loads(text) if text.strip() else None
            if col == "display_metadata" and isinstance(value, str):
                value = json.loads(value)        # pre-guard rows carry a second string layer
        except (ValueError, RecursionError):
            return col
        row[col] = value
    return None


def _decode_content(row: dict) -> str | None:
    """Multimodal content stored behind Hermes' JSON sentinel becomes its JSON value."""
    text = row.get("content")
    if not isinstance(text, str):
        return None
    for prefix in CONTENT_PREFIXES:
        if text.startswith(prefix):
            try:
                row["content"] = json.loads(text[len(prefix):])
            except (ValueError, RecursionError):
                return "content"
            row["content_encoding"] = "json"
            return None
    return None
