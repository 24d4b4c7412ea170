"""grok-cli (superagent-ai/grok-cli, the community TypeScript/Bun agent): one SQLite database,
``~/.grok/grok.db``.

Evidence followed (formats.md §22 B, confidence S), read in the agent's own source as stored
in the search index: ``src/storage/db.ts`` (the database is ``os.homedir()/.grok/grok.db``, no
environment override; WAL journal), ``src/storage/migrations.ts`` (``user_version`` 1-3 and
the STRICT tables: ``workspaces``, ``sessions``, ``messages(session_id, seq, role,
message_json, created_at)``, ``tool_calls``, ``tool_results``, ``usage_events``,
``compactions``; v3 adds ``sessions.recap_*``), ``src/storage/transcript.ts`` (``message_json``
is a Vercel AI SDK ``ModelMessage``: ``{role: user|assistant|tool|system, content: string |
parts}`` with ``text``, ``image``, ``file``, ``reasoning``, ``tool-call{toolCallId, toolName,
input}`` and ``tool-result{toolCallId, toolName, output{type: text|json|error-text|…,
value}}`` parts; ``tool_calls``/``tool_results`` index the same calls), ``sessions.ts``
(12-hex session ids, ``title`` set later, ``cwd_at_start``/``cwd_last``), ``usage.ts``
(per-request tokens) and ``src/agent/compaction.ts`` (a compaction summary is a system message
starting ``[Context checkpoint summary]``). Every timestamp is ``new Date().toISOString()``.

Grok Build (adapter ``grok_build``) shares ``~/.grok``: this adapter reads only ``grok.db``,
never ``sessions/``. Not read: ``user-settings.json`` (settings) and ``delegations/``
(sub-agent runs; no source or sample shows their format).

Lines made from the private copy, each naming its ``table``: one per ``sessions`` row (with
its workspace's path, git root and name), per ``messages`` row (``message_json`` decoded as
``message``), per ``tool_calls`` row (with its ``tool_results`` rows nested, ``args_json`` and
``output_json`` decoded), per ``usage_events`` row and per ``compactions`` row. Messages carry
the call and result blocks; the ``tool_calls`` lines are bookkeeping (kind 'tool_status':
status and times), so no call is counted twice. A row whose JSON column does not parse is
quarantined with its raw text while the other rows load. Parsing is
``sql/extract/grok_cli__*.sql``.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from convarch.adapters import base, db_order
from convarch.adapters.base import Extract, RootError, SourceFile, code_key, keyed_group, malformed_row

NAME = "grok_cli"
TITLE = "grok-cli (superagent)"
ENV_VARS: tuple[str, ...] = ()
EXTRACT = Extract(records="extract/grok_cli__records", blocks="extract/normalized__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

DB_NAME = "grok.db"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """grok-cli always uses ``~/.grok``."""
    return [home / ".grok"]


def resolve_root(path: Path) -> Path:
    """Accept the ``.grok`` folder holding ``grok.db`` or the database file itself."""
    if path.is_file():
        if path.suffix == ".db":
            return path
        raise RootError(f"{path} is not a grok-cli database (grok.db)")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if (path / DB_NAME).exists() or (path / DB_NAME).is_symlink():
        return path
    raise RootError(f"{path} holds no grok-cli database ({DB_NAME})")


def discover(root: Path) -> Iterator[SourceFile]:
    """``grok.db`` only (a SQLite family); a symlinked one is listed so ingest reports it."""
    db = root if root.is_file() else root / DB_NAME
    if root.is_file() or db.exists() or db.is_symlink():
        yield SourceFile(NAME, db, db.parent, container="sqlite")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """One JSON line per session, message, tool call (with its results), usage event and
    compaction of the private copy of grok.db."""
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    con.row_factory = sqlite3.Row
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        missing = {"sessions", "messages"} - tables
        if missing:
            raise ValueError(f"not a grok-cli database: no {', '.join(sorted(missing))} table")
        version = con.execute("pragma user_version").fetchone()[0]
        workspaces = {}
        if "workspaces" in tables:
            workspaces = {r["id"]: dict(r) for r in _rows(con, "select * from workspaces", "id")}
        # messages, tool calls, usage and compactions merged in time (adapters/db_order.py),
        # each session's row (which changes with every message: update time, cwd, recap) right
        # after its last message: a database that gained a message is read again with its
        # earlier lines first, so only its tail loads (etl/containers.py); the messages come as
        # groups (adapters/base.py Group), so those that did not change are not made again
        streams = [db_order.table(_query(con, "select * from messages", "created_at, session_id, seq"), "created_at",
                                  keyed_group(_message_lines, code_key(sys.modules[__name__], base), ("messages",)))]
        if "tool_calls" in tables:
            results: dict[int, list[dict]] = {}
            if "tool_results" in tables:
                for r in _rows(con, "select * from tool_results", "id"):
                    results.setdefault(r["tool_call_row_id"], []).append(dict(r))
            streams.append(db_order.table(_query(con, "select * from tool_calls", "started_at, id"), "started_at",
                                          lambda cols, rows: (_tool_call(dict(r), results.get(r["id"], [])) for r in rows)))
        for table in ("usage_events", "compactions"):
            if table in tables:
                streams.append(db_order.table(_query(con, f"select * from {table}", "id"), "created_at",
                                              partial(_table_lines, table)))
        last = db_order.last_times(con, "messages", "session_id", "created_at")
        streams.append(db_order.owners(_query(con, "select * from sessions", "created_at, id"), "id", last, "created_at",
                                       partial(_session_lines, version, workspaces), touched="updated_at"))
        yield from db_order.merged(streams)
    finally:
        con.close()


def _table_lines(table: str, cols: list[str], rows: list[sqlite3.Row]) -> Iterator[bytes]:
    for r in rows:
        yield _dump({"table": table, **dict(r)})


def _session_lines(version: int, workspaces: dict, cols: list[str], rows: list[sqlite3.Row]) -> Iterator[bytes]:
    for r in rows:
        row = {"table": "sessions", **dict(r), "schema_version": version}
        ws = workspaces.get(row.get("workspace_id"))
        if ws:
            row["workspace"] = {k: ws.get(k) for k in ("canonical_path", "git_root", "display_name", "scope_key")}
        yield _dump(row)


def _message_lines(cols: list[str], rows: list[sqlite3.Row]) -> Iterator[bytes]:
    for r in rows:
        yield _decoded("messages", dict(r), {"message_json": "message"}, f"{r['session_id']}#{r['seq']}")


def _query(con: sqlite3.Connection, select: str, order: str) -> sqlite3.Cursor:
    try:
        return con.execute(f"{select} order by {order}")
    except sqlite3.OperationalError:        # a schema without the usual columns: file order
        return con.execute(f"{select} order by rowid")


def _rows(con: sqlite3.Connection, select: str, order: str) -> list[sqlite3.Row]:
    return _query(con, select, order).fetchall()


def _dump(row: dict) -> bytes:
    return json.dumps({k: (v.hex() if isinstance(v, bytes) else v) for k, v in row.items()},
                      ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _decode(text):
    if not isinstance(text, str):
        return text
    return json.loads(text) if text.strip() else None


def _decoded(table: str, row: dict, columns: dict[str, str], key: str) -> bytes:
    """The row with each JSON text column replaced by its value under a new name, or a
    malformed-row line (quarantined with the raw text) when one does not parse."""
    out = {"table": table}
    for col, value in row.items():
        if col in columns:
            try:
                out[columns[col]] = _decode(value)
            except (ValueError, RecursionError):
                return malformed_row(f"grok-cli {table} row {key}", f"column {col} is not valid JSON", str(value))
        else:
            out[col] = value
    return _dump(out)


def _tool_call(call: dict, results: list[dict]) -> bytes:
    key = f"{call.get('session_id')}#{call.get('tool_call_id')}"
    try:
        args = _decode(call.get("args_json"))
        outputs = [_decode(r.get("output_json")) for r in results]
    except (ValueError, RecursionError) as exc:
        return malformed_row(f"grok-cli tool_calls row {key}", f"a JSON column is not valid JSON: {exc}",
                             json.dumps({**call, "results": results}, default=str))
    call = {k: v for k, v in call.items() if k != "args_json"}
    nested = [{**{k: v for k, v in r.items() if k != "output_json"}, "output": out} for r, out in zip(results, outputs)]
    return _dump({"table": "tool_calls", **call, "args": args, "results": nested})
