"""goose (block/goose): one SQLite database ``sessions/sessions.db`` under goose's data
folder, plus the per-session JSONL files goose wrote before it (≤ v1.9).

Evidence followed (formats.md §5, confidence S R F):
- Where: goose's ``config/paths.rs`` puts the data folder at ``$GOOSE_PATH_ROOT/data`` when
  that variable holds an absolute path, else at etcetera's app data dir: ``$XDG_DATA_HOME/goose``
  (``~/.local/share/goose``) on Linux; macOS builds keep ``~/Library/Application
  Support/Block/goose`` (a comment in paths.rs), and older ones used the XDG path there too,
  so both are probed. ``session_manager.rs`` opens ``<data>/sessions/sessions.db`` and, when it
  creates the database, imports the ``<data>/sessions/*.jsonl`` files it finds but leaves them
  on disk (``legacy.rs``: file stem = session id, line 1 = session metadata, every other line
  a message ``{id?, role, created, content, metadata?}``). Beside a database those files are
  copies of sessions it holds, so they are read only where there is no database (or when one
  is named as the root). Very old builds used ``~/.config/goose/sessions`` (second-hand):
  probed last.
- Database: ``sessions`` (id, name/description, session_type, working_dir, created_at and
  updated_at as SQLite ``CURRENT_TIMESTAMP`` text in UTC, token totals, model_config_json,
  parent_session_id …), ``messages`` (autoincrement id, message_id, session_id, role,
  content_json = array of goose MessageContent, created_timestamp, metadata_json with
  userVisible/agentVisible) and, from schema v15, ``usage_ledger`` (per-request tokens).
  Columns are read by name (``select *``), so older and newer schema versions both load; a
  schema version goose itself would refuse (the portable-resume ``s-go-05`` case, v99) is
  still archived as it stands, with the version kept on each session line.
- ``created_timestamp`` is Unix seconds in goose's source but milliseconds in the
  portable-resume samples: values of 10^11 or more are read as milliseconds.
- Tool calls: a ``toolRequest`` block (assistant message) and the ``toolResponse`` block with
  the same ``id`` (the following user message).
- Compaction (``context_mgmt/mod.rs``): the summary is a *user* message with
  ``userVisible:false, agentVisible:true``; replaced history becomes ``agentVisible:false``.

The private copy of the database becomes one JSON line per ``sessions`` row, per
``messages`` row and per ``usage_ledger`` row (``"table"`` names the table; JSON text
columns are decoded). A row whose JSON column does not parse becomes one line that is not
JSON, so it is quarantined with its raw text while the other rows load. Parsing is the SQL in
``sql/extract/goose__*.sql``.
"""
from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from convarch.adapters import base, db_order
from convarch.adapters.base import Extract, RootError, SourceFile, code_key, keyed_group, malformed_row

NAME = "goose"
TITLE = "goose"
ENV_VARS = ("GOOSE_PATH_ROOT",)
EXTRACT = Extract(records="extract/goose__records", blocks="extract/goose__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

DB_NAME = "sessions.db"
#: Text columns goose stores as JSON, per table.
JSON_COLUMNS = {
    "sessions": ("extension_data", "recipe_json", "user_recipe_values_json", "model_config_json"),
    "messages": ("content_json", "metadata_json"),
    "usage_ledger": (),
}
ORDER = {"sessions": "created_at, id", "messages": "id", "usage_ledger": "id"}


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$GOOSE_PATH_ROOT`` (absolute only, as goose requires), then the data folders goose
    has used on Linux and macOS."""
    roots: list[Path] = []
    override = env.get("GOOSE_PATH_ROOT")
    if override and Path(override).is_absolute():
        roots.append(Path(override))
    xdg = env.get("XDG_DATA_HOME")
    roots.append((Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share") / "goose")
    roots.append(home / ".local" / "share" / "goose")
    roots.append(home / "Library" / "Application Support" / "Block" / "goose")
    # very old builds kept sessions under the config folder (formats.md §5, second-hand)
    config = env.get("XDG_CONFIG_HOME")
    roots.append((Path(config) if config and Path(config).is_absolute() else home / ".config") / "goose")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept a ``GOOSE_PATH_ROOT`` folder (``data/sessions`` inside), goose's data folder
    (``sessions`` inside), the sessions folder itself, or a single ``sessions.db`` / ``.jsonl``."""
    if path.is_file():
        if path.suffix == ".jsonl" or path.suffix == ".db":
            return path
        raise RootError(f"{path} is neither a goose sessions.db nor a legacy .jsonl session")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    for candidate in (path / "sessions", path / "data" / "sessions", path):
        if candidate.is_dir() and _holds_sessions(candidate):
            return candidate
    raise RootError(f"{path} holds no goose sessions (no sessions/{DB_NAME} or sessions/*.jsonl)")


def _holds_sessions(folder: Path) -> bool:
    if (folder / DB_NAME).exists():
        return True
    try:
        return any(e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False) for e in os.scandir(folder))
    except OSError:
        return False


def discover(root: Path) -> Iterator[SourceFile]:
    """``sessions.db`` (a SQLite family), or the legacy ``<session>.jsonl`` files when there
    is no database.

    goose imports every legacy file into sessions.db when it creates the database and then
    never reads them again, so beside a database they are copies of sessions the database
    holds: reading both would count each of those sessions twice. Pass one legacy file as the
    root to archive it anyway. goose keeps its sessions flat in one folder; nothing below it
    is read, and symlinks are not followed.
    """
    if root.is_file():
        yield _classify(root, root.parent)
        return
    try:
        # symlinks are listed too, so ingest reports them as skipped instead of hiding them
        entries = sorted((e for e in os.scandir(root) if not e.is_dir(follow_symlinks=False)),
                         key=lambda e: e.name)
    except OSError:
        return
    if any(e.name == DB_NAME for e in entries):
        yield _classify(root / DB_NAME, root)
        return
    for entry in entries:
        if entry.name.endswith(".jsonl"):
            yield _classify(Path(entry.path), root)


def _classify(path: Path, root: Path) -> SourceFile:
    if path.suffix == ".jsonl":
        return SourceFile(NAME, path, root, session_hint=path.stem)
    return SourceFile(NAME, path, root, container="sqlite")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """One JSON line per session, message and usage row of the private copy of sessions.db."""
    if file.container != "sqlite":
        raise ValueError(f"goose has no reader for a {file.container!r} container")
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = _text
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        missing = {"sessions", "messages"} - tables
        if missing:
            raise ValueError(f"not a goose sessions database: no {', '.join(sorted(missing))} table")
        version = None
        if "schema_version" in tables:
            version = con.execute("select max(version) from schema_version").fetchone()[0]
        # the tables merged in time (adapters/db_order.py): messages and usage rows at their
        # time, each session's row, which changes with every message (token counts, update
        # time), right after its last message, so a database that gained a message is read
        # again with its earlier lines first and only the tail loads (etl/containers.py)
        streams = [_timed(con, table) for table in ("messages", "usage_ledger") if table in tables]
        sessions = _ordered(con, "sessions")
        last = db_order.last_times(con, "messages", "session_id", "created_timestamp", by="id")
        # a session's own created_at is text, its messages' times are numbers: one with no
        # message goes last; its updated_at, text too, is read as the messages' seconds
        extra = {"goose_schema_version": version}
        streams.append(db_order.owners(sessions, "id", last, None, _group("sessions", extra),
                                       touched="updated_at", as_time=_epoch_seconds))
        yield from db_order.merged(streams)
    finally:
        con.close()


def _epoch_seconds(value) -> int | None:
    """SQLite's CURRENT_TIMESTAMP text ('2026-05-05 10:01:00', UTC) as Unix seconds, the kind
    of time goose gives its messages; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    return int((t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp())


def _ordered(con: sqlite3.Connection, table: str) -> sqlite3.Cursor:
    try:
        return con.execute(f"select * from {table} order by {ORDER[table]}")
    except sqlite3.OperationalError:       # a schema without the usual columns: file order
        return con.execute(f"select * from {table} order by rowid")


def _timed(con: sqlite3.Connection, table: str) -> db_order.Table:
    """A table's rows at the time they were written, as groups (adapters/base.py Group): a
    database read again makes again only the rows of the groups that changed."""
    return db_order.table(_ordered(con, table), "created_timestamp", _group(table, {}))


def _group(table: str, extra: dict):
    return keyed_group(partial(_row_lines, table, extra), code_key(sys.modules[__name__], base),
                       (table, tuple(extra.items())))


def _row_lines(table: str, extra: dict, cols: list[str], rows: list[tuple]) -> Iterator[bytes]:
    json_cols = JSON_COLUMNS[table]
    for values in rows:
        row = {"table": table, **dict(zip(cols, (_plain(v) for v in values))), **extra}
        bad = _decode(row, json_cols)
        if bad:
            yield _malformed(table, row, bad)
        else:
            yield json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


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
            row[col] = json.loads(text) if text.strip() else None
        except (ValueError, RecursionError):
            return col
    return None


def _malformed(table: str, row: dict, column: str) -> bytes:
    """A line that is deliberately not JSON, so the row is quarantined with its raw text."""
    key = row.get("message_id") or row.get("id")
    raw = row.get(column)
    return malformed_row(f"goose {table} row {key}", f"column {column} is not valid JSON", None if raw is None else str(raw))
