"""Crush (charmbracelet/crush, successor of the Go ``opencode-ai/opencode``): one SQLite
database per project, ``<project>/.crush/crush.db``.

Evidence followed (formats.md §15, confidence S F; charmbracelet/crush as stored in the
search index):
- Where: ``internal/config/load.go`` sets the data directory to ``<working dir>/.crush``
  unless ``options.data_directory`` in ``crush.json`` moves it; ``internal/db/connect.go``
  opens ``<data dir>/crush.db`` (WAL). There is no global session store, but
  ``internal/projects/projects.go`` records every project crush ran in, with its data dir,
  in ``projects.json`` beside ``crush.json`` in the global data folder
  (``config.GlobalConfigData()``: ``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``, else
  ``~/.local/share/crush``; the same on macOS) — the list ``crush projects`` prints.
  (``CRUSH_DATA_DIR`` seen in some third-party readers is not read by crush itself.)
- Discovery, therefore: (1) the folders named in ``$CONVARCH_CRUSH_PROJECTS`` (a list
  separated like ``PATH``: project folders or their ``.crush`` folders) — the configured
  list; (2) the global data folder, whose ``projects.json`` names every data dir crush has
  used (a project not opened since crush started keeping that list is only found through
  (1) or ``--root``); (3) ``~/.crush``, where crush keeps its data when run from the home
  folder. ``--root`` takes a project folder, its ``.crush`` folder, a ``crush.db`` file or
  the global data folder. Project trees are never walked: a data dir is found by name only.
  Reading ``projects.json`` is locating, not parsing a session: its unreadable entries are
  skipped.
- Database (``internal/db/migrations``, schema tracked by pressly/goose in
  ``goose_db_version``): ``sessions(id, parent_session_id, title, message_count,
  prompt_tokens, completion_tokens, cost, updated_at, created_at, summary_message_id,
  todos)``, ``messages(id, session_id, role user|assistant|system|tool, parts, model,
  provider, created_at, updated_at, finished_at, is_summary_message)``, ``files`` (file
  history: contents of edited files) and ``read_files``. Columns are read by name, so older
  and newer schemas load; the schema version is kept on each session line (the
  portable-resume ``s-cr-03`` case, at migration 3 of 7, is archived as it stands).
- Times: the inserts use ``strftime('%s', 'now')`` (Unix seconds, although a schema comment
  says ms); the portable-resume samples hold milliseconds. Values of 10^11 or more are read
  as milliseconds.
- ``messages.parts`` (``internal/message/content.go``) is a JSON list of ``{type, data}``:
  ``text{text}``, ``reasoning{thinking, signature}``, ``image_url{url, detail}``,
  ``binary{Path, MIMEType, Data}``, ``tool_call{id, name, input (JSON text), finished}``,
  ``tool_result{tool_call_id, name, content, data, mime_type, is_error}``,
  ``finish{reason, time, message}``, ``shell_command{command, output, exit_code}``. Tool
  results are separate ``role='tool'`` messages (role 'user', kind 'tool_result' here),
  linked by ``tool_call_id``. ``finish.reason`` becomes the message's subtype.
- Children: a sub-agent (the agent tool) runs in a session with ``parent_session_id``.
  Compaction (``/summarize``) writes an assistant message with ``is_summary_message = 1``
  (``is_compact_summary``) that ``sessions.summary_message_id`` points at.
- Tokens exist per session only (``prompt_tokens``, ``completion_tokens``): they are put on
  the session's metadata line. The cwd is the folder holding ``.crush`` (crush does not
  store it; a newer ``workspace_cwd`` column is used when present).

Lines made from the private copy: one per ``messages`` row and one per ``sessions`` row, in
time, each session's right after its last message (adapters/db_order.py; ``"table"`` names
the table; ``parts`` and ``todos`` decoded). ``files`` and
``read_files`` are not read. A message whose ``parts`` is not JSON becomes a line that is
not JSON, so it is quarantined with its raw text while the rest loads. Parsing is the SQL
in ``sql/extract/crush__*.sql``.
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

NAME = "crush"
TITLE = "Crush"
ENV_VARS = ("CONVARCH_CRUSH_PROJECTS", "CRUSH_GLOBAL_DATA")
EXTRACT = Extract(records="extract/crush__records", blocks="extract/pi__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

DB_NAME = "crush.db"
DATA_DIR = ".crush"
PROJECTS = "projects.json"
SIDECARS = ("-wal", "-shm", "-journal")


def global_data_dir(env: Mapping[str, str], home: Path) -> Path:
    """Crush's ``GlobalConfigData()`` folder (where ``crush.json`` and ``projects.json`` live)."""
    if env.get("CRUSH_GLOBAL_DATA"):
        return Path(env["CRUSH_GLOBAL_DATA"]).expanduser()
    xdg = env.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg) / "crush"
    return home / ".local" / "share" / "crush"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """The configured project list, crush's global data folder (its ``projects.json``), then
    ``~/.crush``."""
    roots: list[Path] = []
    for item in (env.get("CONVARCH_CRUSH_PROJECTS") or "").split(os.pathsep):
        if item.strip():
            roots.append(Path(item.strip()).expanduser())
    roots.append(global_data_dir(env, home))
    roots.append(home / ".local" / "share" / "crush")
    roots.append(home / DATA_DIR)
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept a ``crush.db`` file, a data dir (``.crush``), a project folder holding
    ``.crush/crush.db``, or crush's global data folder (holding ``projects.json``)."""
    if path.is_file():
        if path.suffix == ".db" and not path.name.endswith(SIDECARS):
            return path
        raise RootError(f"{path} is not a Crush database (crush.db)")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if os.path.lexists(path / DB_NAME):
        return path
    if os.path.lexists(path / DATA_DIR / DB_NAME):
        return path / DATA_DIR
    if (path / PROJECTS).is_file():
        return path
    raise RootError(f"{path} holds no Crush store (no crush.db, .crush/crush.db or projects.json)")


def discover(root: Path) -> Iterator[SourceFile]:
    """The ``crush.db`` of a data dir, or of every data dir ``projects.json`` names.
    Symlinks are listed (ingest reports them as skipped), never followed."""
    if root.is_file():
        yield SourceFile(NAME, root, root.parent, container="sqlite")
        return
    seen: set[Path] = set()
    own = root / DB_NAME
    if os.path.lexists(own) and not own.is_dir():
        seen.add(own)
        yield SourceFile(NAME, own, root, container="sqlite")
    for data_dir in project_data_dirs(root / PROJECTS):
        db = data_dir / DB_NAME
        if db in seen or not os.path.lexists(db) or db.is_dir():
            continue
        seen.add(db)
        yield SourceFile(NAME, db, data_dir, container="sqlite")


def project_data_dirs(projects_json: Path) -> list[Path]:
    """The data dirs listed in crush's ``projects.json`` (``{"projects": [{path, data_dir,
    last_accessed}]}``), in path order; entries that cannot be read are skipped."""
    try:
        if not projects_json.is_file():
            return []
        doc = json.loads(projects_json.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    items = doc.get("projects") if isinstance(doc, dict) else None
    out: list[Path] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        project = item.get("path") if isinstance(item.get("path"), str) else None
        data_dir = item.get("data_dir") if isinstance(item.get("data_dir"), str) else None
        if data_dir:
            p = Path(data_dir)
            if not p.is_absolute() and project:
                p = Path(project) / p
        elif project:
            p = Path(project) / DATA_DIR
        else:
            continue
        if p.is_absolute() and p not in out:
            out.append(p)
    return sorted(out, key=str)


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """One JSON line per ``messages`` and ``sessions`` row of the private copy, in time."""
    if file.container != "sqlite":
        raise ValueError(f"crush has no reader for a {file.container!r} container")
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        missing = {"sessions", "messages"} - tables
        if missing:
            raise ValueError(f"not a Crush database: no {', '.join(sorted(missing))} table")
        version = None
        if "goose_db_version" in tables:
            version = con.execute(
                "select max(version_id) from goose_db_version where is_applied").fetchone()[0]
        project = os.path.abspath(file.path.parent.parent) if file.path.parent.name == DATA_DIR else None
        extra = {"crush_schema_version": None if version is None else str(version), "project_dir": project}
        # messages and sessions merged in time (adapters/db_order.py): each session's row, which
        # changes with every message (counts, cost, update time), right after its last
        # message, so a database that gained messages is read again with its earlier lines
        # first and only the tail loads (etl/containers.py); as groups (adapters/base.py
        # Group): only the groups whose rows changed are made again
        code = code_key(sys.modules[__name__], base)
        messages = _query(con, "messages", "created_at, rowid")
        sessions = _query(con, "sessions", "created_at, id")
        last = db_order.last_times(con, "messages", "session_id", "created_at")
        yield from db_order.merged([
            db_order.table(messages, "created_at", keyed_group(_message_lines, code, ("messages",))),
            db_order.owners(sessions, "id", last, "created_at",
                            keyed_group(partial(_session_lines, extra), code, ("sessions", tuple(extra.items()))),
                            touched="updated_at"),
        ])
    finally:
        con.close()


def _message_lines(cols: list[str], rows: list[tuple]) -> Iterator[bytes]:
    for values in rows:
        row = {"table": "messages", **dict(zip(cols, (_plain(v) for v in values)))}
        parts = row.get("parts")
        if isinstance(parts, str):
            try:
                row["parts"] = json.loads(parts) if parts.strip() else []
            except (ValueError, RecursionError):
                yield malformed_row(f"crush messages row {row.get('id')}", "column parts is not valid JSON", parts)
                continue
        yield _dump(row)


def _query(con: sqlite3.Connection, table: str, order: str) -> sqlite3.Cursor:
    try:
        return con.execute(f"select * from {table} order by {order}")
    except sqlite3.OperationalError:       # a schema without the usual columns: file order
        return con.execute(f"select * from {table} order by rowid")


def _session_lines(extra: dict, cols: list[str], rows: list[tuple]) -> Iterator[bytes]:
    for values in rows:
        row = {"table": "sessions", **dict(zip(cols, (_plain(v) for v in values))), **extra}
        if isinstance(row.get("todos"), str):
            try:
                row["todos"] = json.loads(row["todos"]) if row["todos"].strip() else None
            except (ValueError, RecursionError):
                pass                      # kept as text: todos are not part of the conversation
        yield _dump(row)


def _plain(value):
    """SQLite values as JSON can carry them: blobs become text (or their hex when not UTF-8)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.hex()
    return value


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
