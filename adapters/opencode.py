"""OpenCode (sst/opencode, now anomalyco/opencode): the SQLite database ``opencode.db`` in
OpenCode's data folder (v1.2+), or the JSON file tree ``storage/`` it used before.

Evidence followed (formats.md §8, confidence S F R):
- Where: ``$XDG_DATA_HOME/opencode`` (``~/.local/share/opencode``; the same layout on macOS).
  ``storage/db.ts`` names the database ``opencode.db`` (``opencode-<channel>.db`` for
  non-stable channels) and honours ``OPENCODE_DB`` (an absolute file, or a name inside the
  data folder). Forks rename that variable; only upstream's is read.
- Database (``session/session.sql.ts``): ``session`` (id, project_id, parent_id, directory,
  title, version, model JSON, token totals, time_created/time_updated in Unix ms …),
  ``message`` (id, session_id, time_created, data = Message.Info without id/sessionID) and
  ``part`` (id, message_id, session_id, data = Part without its ids); messages are ordered by
  (time_created, id), parts by id. Newer builds add ``session_message`` (an event model),
  kept here as one bookkeeping record per row.
- File tree, read as OpenCode's own ``storage/json-migration.ts`` reads it:
  ``session/<projectID>/<sessionID>.json``, ``message/<sessionID>/<messageID>.json``,
  ``part/<messageID>/<partID>.json``. A message's session is its folder; a part's session is
  the folder of its message's file (found while listing, without opening a file), else the
  part's own ``sessionID``, else (same batch only) that of the message its ``messageID``
  names. A session's id is its document's ``id`` (the name its messages are filed under),
  else its file name; OpenCode writes both alike, the jazzyalex samples do not. OpenCode
  imports the tree into the database once, when it creates the database, and never reads it
  again: beside a database the tree is a stale copy of sessions the database holds, so it is
  not read then (pass ``--root <data>/storage`` to archive it). Not read: ``project/``,
  ``todo/``, ``session_diff/`` and the 2025 H1 layout ``project/<slug>/storage/session/…``
  (no sample; formats.md marks it second-hand).
- Message.Info: ``role``, ``time.created``, assistant ``parentID`` (the user message it
  answers), ``modelID``/``providerID`` (user: ``model{providerID,modelID}``), ``path.cwd``,
  ``tokens{input,output,reasoning,cache{read,write}}``, ``summary: true`` on a compaction
  summary. Parts: ``text`` (``synthetic`` when OpenCode wrote it), ``reasoning``, ``file``,
  ``tool`` — the call and its result in one part (``callID``, ``tool``,
  ``state{status,input,output,error}``) — and bookkeeping parts (``step-start``,
  ``step-finish``, ``patch``, ``compaction`` …).
- Drift seen in samples (jazzyalex agent-sessions, portable-resume): message files named
  unlike their ids, parts without ids or ``callID`` (the part id then links call and
  result), parts directly under ``part/``, ``path`` as a plain string, and an ``opencode
  export`` document (``{info, messages: [{info, parts}]}``) accepted as a single-file root.

Lines made: one per session, one per message carrying its parts (database, export), one per
part file or orphan part row, one per ``session_message`` row; each names its ``table``. A
row whose JSON column does not parse becomes a line that is not JSON, so it is quarantined
with its raw text while the rest loads. Parsing is the SQL in ``sql/extract/opencode__*.sql``.
In the file tree a message's text lives in its part files, so those message records have no
text of their own; their parts' blocks carry it (linked by ``message_id``).
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from convarch.adapters import base, db_order
from convarch.adapters.base import (Extract, Group, RootError, SourceFile, code_key, feed_values, key_digest,
                                    key_hash, keyed_group, malformed_row)

NAME = "opencode"
TITLE = "OpenCode"
ENV_VARS = ("OPENCODE_DB",)
EXTRACT = Extract(records="extract/opencode__records", blocks="extract/opencode__blocks")
# its SQL reads every line of a database on its own (a part file of the JSON tree finds its
# message's session in its batch, but each such file is one line): a rewrite that kept its
# first lines loads just the rest
LINES_STAND_ALONE = True

DB_PATTERN = re.compile(r"^opencode(-[A-Za-z0-9._-]+)?\.db$")
SIDECARS = ("-wal", "-shm", "-journal")
STORE_DIRS = ("session", "message", "part")
#: Messages a group of lines holds (adapters/base.py Group): a database read again makes again
#: only the groups whose rows changed, nearly always the last one or two.
GROUP_MESSAGES = 256
#: Text columns OpenCode stores as JSON (drizzle ``text({mode: "json"})``), per table.
JSON_COLUMNS = {
    "session": ("summary_diffs", "revert", "permission", "goal", "model"),
    "message": ("data",),
    "part": ("data",),
    "session_message": ("data",),
}


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$OPENCODE_DB`` when it names a file, then OpenCode's data folder."""
    xdg = env.get("XDG_DATA_HOME")
    data = (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share") / "opencode"
    roots: list[Path] = []
    db = env.get("OPENCODE_DB")
    if db and db != ":memory:":
        roots.append(Path(db) if Path(db).is_absolute() else data / db)
    roots.append(data)
    roots.append(home / ".local" / "share" / "opencode")
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept OpenCode's data folder, its ``storage/`` folder, a database file, or one JSON
    file (a store file or an ``opencode export`` document)."""
    if path.is_file():
        if path.suffix in (".db", ".json") and not path.name.endswith(SIDECARS):
            return path
        raise RootError(f"{path} is neither an OpenCode database nor a JSON document")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if _databases(path) or (path / "storage").is_dir() or _is_storage(path):
        return path
    raise RootError(f"{path} holds no OpenCode store (no opencode.db and no storage/ folder)")


def _is_storage(folder: Path) -> bool:
    return any((folder / d).is_dir() for d in STORE_DIRS)


def _databases(folder: Path) -> list[Path]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    # symlinks are listed too, so ingest reports them as skipped instead of hiding them
    return sorted(Path(e.path) for e in entries if DB_PATTERN.match(e.name) and not e.is_dir(follow_symlinks=False))


def discover(root: Path) -> Iterator[SourceFile]:
    """Every database in the data folder; else every session, message and part file of the
    storage tree. Listed by path only; symlinks are not followed."""
    if root.is_file():
        yield _single(root)
        return
    dbs = _databases(root)
    for db in dbs:
        yield SourceFile(NAME, db, root, container="sqlite")
    if dbs:
        return
    storage = root / "storage" if (root / "storage").is_dir() else root
    yield from _storage_files(storage)


def _walk(top: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        folder = Path(dirpath)
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".json"):
                yield folder / name


def _storage_files(storage: Path) -> Iterator[SourceFile]:
    sessions, messages, parts = [], [], []
    owner: dict[str, str] = {}          # message id (its file stem) -> session folder
    for p in _walk(storage / "session"):
        if len(p.relative_to(storage).parts) == 3:          # session/<project>/<id>.json
            sessions.append(SourceFile(NAME, p, storage, container="json"))
    for p in _walk(storage / "message"):
        if len(p.relative_to(storage).parts) == 3:          # message/<session>/<id>.json
            owner.setdefault(p.stem, p.parent.name)
            messages.append(SourceFile(NAME, p, storage, session_hint=p.parent.name, container="json"))
    for p in _walk(storage / "part"):
        depth = len(p.relative_to(storage).parts)
        if depth == 3:                                       # part/<message>/<id>.json
            parts.append(SourceFile(NAME, p, storage, session_hint=owner.get(p.parent.name), container="json"))
        elif depth == 2:                                     # part/<id>.json (seen in samples)
            parts.append(SourceFile(NAME, p, storage, container="json"))
    yield from sessions
    yield from messages
    yield from parts


def _kind_of(path: Path) -> str:
    """What a JSON file of the tree holds, from where it lies."""
    parent, grand = path.parent.name, path.parent.parent.name
    if grand == "session":
        return "session"
    if grand == "message":
        return "message"
    if grand == "part" or parent == "part":
        return "part"
    return "document"


def _single(path: Path) -> SourceFile:
    if path.suffix == ".db":
        return SourceFile(NAME, path, path.parent, container="sqlite")
    kind = _kind_of(path)
    hint = path.parent.name if kind == "message" else None
    return SourceFile(NAME, path, path.parent, session_hint=hint, container="json")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """JSON lines of a private copy: database rows, or one file of the tree."""
    if file.container == "sqlite":
        yield from db_lines(copy)
    else:
        yield from _file_lines(copy, file)


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --- the JSON file tree -------------------------------------------------------------------

def _file_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    data = copy.read_bytes()
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        yield data                        # not JSON: quarantined with its bytes
        return
    if not isinstance(doc, dict):
        yield _dump(doc)                  # JSON but not an object: quarantined as such
        return
    path = file.path
    kind = _kind_of(path)
    if kind == "session":
        yield _dump({"table": "session", "id": path.stem, "project_id": path.parent.name, "data": doc})
    elif kind == "message":
        yield _dump({"table": "message", "id": path.stem, "session_id": path.parent.name, "data": doc})
    elif kind == "part":
        line = {"table": "part", "id": path.stem, "data": doc}
        if path.parent.name != "part":
            line["message_id"] = path.parent.name
        yield _dump(line)
    elif isinstance(doc.get("info"), dict) and isinstance(doc.get("messages"), list):
        yield from _export_lines(doc)
    else:
        yield _dump({"table": "document", "data": doc})


def _export_lines(doc: dict) -> Iterator[bytes]:
    """An ``opencode export`` document: its session, then each message with its parts."""
    info = doc["info"]
    yield _dump({"table": "session", "id": info.get("id"), "data": info})
    for m in doc["messages"]:
        if not isinstance(m, dict) or not isinstance(m.get("info"), dict):
            yield _dump({"table": "document", "session_id": info.get("id"), "data": m})
            continue
        mi = m["info"]
        parts = [{"id": p.get("id") if isinstance(p, dict) else None, "data": p} for p in m.get("parts") or []]
        yield _dump({"table": "message", "id": mi.get("id"), "session_id": mi.get("sessionID") or info.get("id"),
                     "data": mi, "parts": parts})


# --- the database --------------------------------------------------------------------------

def db_lines(copy: Path) -> Iterator[bytes]:
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        missing = {"session", "message"} - tables
        if missing:
            raise ValueError(f"not an OpenCode database: no {', '.join(sorted(missing))} table")
        # every table's rows merged in time (adapters/db_order.py): each session's row right
        # after its last message, so a database that gained messages is read again with its
        # earlier lines first and only the tail loads (etl/containers.py). GROUP_MESSAGES
        # messages at a time are a Group keyed by their rows and their parts' rows, so the
        # messages of a database read again are made again only where they changed
        code = code_key(sys.modules[__name__], base)
        has_parts = "part" in tables
        messages = _query(con, "select * from message", "time_created, id")
        streams = [db_order.table(messages, "time_created", partial(_message_group, con, has_parts))]
        if has_parts:
            orphans = _query(con, "select * from part where message_id not in (select id from message)", "session_id, id")
            streams.append(_plain_table(orphans, "part", code))
        if "session_message" in tables:
            streams.append(_plain_table(_query(con, "select * from session_message", "time_created, id"),
                                        "session_message", code))
        sessions = _query(con, "select * from session", "time_created, id")
        last = db_order.last_times(con, "message", "session_id", "time_created")
        streams.append(db_order.owners(sessions, "id", last, "time_created",
                                       keyed_group(partial(_plain_lines, "session"), code, ("session",)),
                                       touched="time_updated"))
        yield from db_order.merged(streams, GROUP_MESSAGES)
    finally:
        con.close()


def _query(con: sqlite3.Connection, select: str, order: str, params=()) -> sqlite3.Cursor:
    try:
        return con.execute(f"{select} order by {order}", params)
    except sqlite3.OperationalError:      # a schema without the usual columns: file order
        return con.execute(f"{select} order by rowid", params)


def _message_lines(cols: list[str], rows: list[tuple], ids: list, parts: tuple[list, dict]) -> Iterator[bytes]:
    """Each message's line, its parts in it; a message or part whose JSON does not parse on
    a line of its own, quarantined."""
    part_cols, by_message = parts
    for values, mid in zip(rows, ids):
        row = {"table": "message", **dict(zip(cols, values))}
        bad = _decode(row, JSON_COLUMNS["message"])
        good_parts, bad_parts = [], []
        for part_values in by_message.get(mid, ()):
            part = dict(zip(part_cols, part_values))
            (bad_parts if _decode(part, JSON_COLUMNS["part"]) else good_parts).append(part)
        if bad:
            yield _malformed("message", row, bad)
            for part in good_parts:
                yield _dump({"table": "part", **part})
        else:
            yield _dump({**row, "parts": good_parts})
        for part in bad_parts:
            yield _malformed("part", part, "data")


def _messages_key(cols: list[str], rows: list[tuple], ids: list, parts: tuple[list, dict]) -> bytes:
    """The hash of everything a group of messages' lines are made of: the code, the message
    rows and each message's part rows, in order, with their columns' names."""
    part_cols, by_message = parts
    h = key_hash(code_key(sys.modules[__name__], base))
    feed_values(h, cols)
    feed_values(h, part_cols)
    for values, mid in zip(rows, ids):
        h.update(b"m")
        feed_values(h, values)
        for part_values in by_message.get(mid, ()):
            h.update(b"p")
            feed_values(h, part_values)
    return key_digest(h)


def _parts_of(con: sqlite3.Connection, message_ids: list) -> tuple[list[str], dict]:
    """The part table's columns, and the part rows of those messages by message id, each
    message's in id order."""
    ids = [m for m in dict.fromkeys(message_ids) if m is not None]
    if not ids:
        return [], {}
    cur = _query(con, f"select * from part where message_id in ({','.join('?' * len(ids))})", "message_id, id", ids)
    cols = [d[0] for d in cur.description]
    at = cols.index("message_id")
    out: dict = {}
    for values in cur:
        out.setdefault(values[at], []).append(values)
    return cols, out


def _plain_table(cur: sqlite3.Cursor, table: str, code: bytes) -> db_order.Table:
    """A table's rows, each a line of its own, in time: session_message, the 2026 event
    table, may come to hold what message and part hold now."""
    return db_order.table(cur, "time_created", keyed_group(partial(_plain_lines, table), code, (table,)))


def _message_group(con: sqlite3.Connection, has_parts: bool, cols: list[str], rows: list[tuple]) -> Group:
    """Messages and their parts as one Group, keyed by their rows (_messages_key)."""
    at = cols.index("id") if "id" in cols else None
    ids = [r[at] if at is not None else None for r in rows]
    parts = _parts_of(con, ids) if has_parts else ([], {})
    return Group(_messages_key(cols, rows, ids, parts), partial(_message_lines, cols, rows, ids, parts))


def _plain_lines(table: str, cols: list[str], rows: list[tuple]) -> Iterator[bytes]:
    for values in rows:
        row = {"table": table, **dict(zip(cols, values))}
        bad = _decode(row, JSON_COLUMNS.get(table, ()))
        yield _malformed(table, row, bad) if bad else _dump(row)


def _decode(row: dict, columns: tuple[str, ...]) -> str | None:
    """Replace each JSON text column by its value; return the first one that is not JSON."""
    for col in columns:
        value = row.get(col)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            continue
        try:
            row[col] = json.loads(value) if value.strip() else None
        except (ValueError, RecursionError):
            row[col] = value
            return col
    for col, value in row.items():
        if isinstance(value, bytes):
            row[col] = value.hex()
    return None


def _malformed(table: str, row: dict, column: str) -> bytes:
    """A line that is deliberately not JSON, so the row is quarantined with its raw text."""
    raw = row.get(column)
    return malformed_row(f"opencode {table} row {row.get('id')}", f"column {column} is not valid JSON",
                         None if raw is None else str(raw))
