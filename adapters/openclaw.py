"""OpenClaw (openclaw/openclaw, formerly Clawdbot / Moltbot): one SQLite database per agent,
``agents/<agentId>/agent/openclaw-agent.sqlite`` (2026.9+), and the JSONL transcripts
``agents/<agentId>/sessions/<sessionId>.jsonl`` it wrote before.

Evidence followed (formats.md §0 and §24 name OpenClaw only; the rest was read for this
adapter in OpenClaw's source and in readers of it, as stored in the search index):
- Where (``src/config/paths.ts``): the state folder is ``$OPENCLAW_STATE_DIR`` (legacy
  ``$CLAWDBOT_STATE_DIR``) else ``~/.openclaw``, falling back to the legacy folders
  ``~/.clawdbot``, ``~/.moldbot``, ``~/.moltbot`` when only one of those exists. OpenClaw's
  docs: ``agents/<agentId>/agent/openclaw-agent.sqlite`` holds "agent session history,
  transcript events, VFS scratch state, and artifacts" (and the auth profile store);
  ``agents/<agentId>/sessions/`` holds legacy imports and debug exports.
- Database (portable-resume samples, ``PRAGMA user_version`` 11, and a dashboard reader of
  2026.9.2+): ``transcript_events(session_id, seq, event_json, created_at ms)`` where
  ``event_json`` "is the exact logical JSONL record" of the legacy transcript;
  ``session_windows`` (one row per session id: session_key, previous_session_id, reason
  initial/reset/rollover/fork/rewind/switch/recovery/compaction, created/started/ended ms,
  model, model_provider, display_name, parent_session_key, spawned_by …) and
  ``session_nodes`` (one row per session key: current_session_id, entry_json with cwd/model,
  created_via operator/spawn/channel/cron/…, label, display_name …); ``schema_meta`` carries
  the schema version, agent id and app version. Only these tables are read: never
  ``auth_profile_store`` (credentials), VFS or artifact tables, and not ``conversations`` /
  ``session_conversations`` (messaging peer identifiers).
- Transcript records are pi-coding-agent session entries (OpenClaw embeds pi; jazzyalex
  samples): a ``session`` header ``{version, id, timestamp, cwd}``, then ``message``
  (``message.role`` user / assistant / toolResult / bashExecution / custom /
  branchSummary / compactionSummary, ``content`` text / thinking / toolCall{id, name,
  arguments} / image parts, assistant ``model``, ``usage``), ``model_change``,
  ``thinking_level_change``, ``custom`` (not in context), ``custom_message`` (in context),
  ``compaction{summary, firstKeptEntryId}``, ``branch_summary``, ``label``, ``session_info``
  (the session's name), each with ``id``/``parentId`` and an ISO (or Unix ms) ``timestamp``.
  The portable-resume samples carry a reduced shape ``{type: "message", role, text}``; it
  is read too.
- Legacy files: ``<sessionId>.jsonl``, ``<sessionId>-topic-<threadId>.jsonl`` (a thread's
  own transcript) and the archives OpenClaw renames a transcript to on delete or reset,
  ``<sessionId>.jsonl.deleted.<ts>`` / ``.jsonl.reset.<ts>``; ``sessions.json`` (the index)
  and ``*.bak-*`` repair backups are not read. The database imports these files, so beside
  an agent's database they are copies of sessions it holds and are read only where the
  agent has no database (or when the sessions folder or one file is named as the root).

Session ids: a transcript's session is its ``sessionId`` (the file name without
``.jsonl``, the ``session_id`` column in the database), so a session imported into the
database keeps its id. A window that continues an earlier one (reason other than
``initial`` / ``reset``) has it as parent; a window spawned by another session key has that
key's current session as parent.

Lines made from a database: one per ``transcript_events`` row (``{"table", "session_id",
"seq", "created_at", "event"}``), one per ``session_nodes`` row and one per
``session_windows`` row (with its node's cwd and label joined in, the schema facts
attached), in time: each session's events in seq order, its window and node (which change
with every event) right after its last event (adapters/db_order.py). A
row whose JSON column does not parse becomes a line that is not JSON, so it is quarantined
with its raw text while the rest loads. Parsing is the SQL in ``sql/extract/openclaw__*.sql``;
its mapping of entries follows the pi adapter's (compaction = a 'system' compact_boundary,
custom_message = a prompt with harness_kind 'custom_message', bashExecution = 'shell_escape').
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
from convarch.adapters.base import Extract, RootError, SourceFile, code_key, keyed_group, malformed_row

NAME = "openclaw"
TITLE = "OpenClaw"
ENV_VARS = ("OPENCLAW_STATE_DIR", "CLAWDBOT_STATE_DIR")
EXTRACT = Extract(records="extract/openclaw__records", blocks="extract/openclaw__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True

DB_NAME = "openclaw-agent.sqlite"
SIDECARS = ("-wal", "-shm", "-journal")
LEGACY_STATE_DIRS = (".clawdbot", ".moldbot", ".moltbot")
#: ``<sessionId>.jsonl`` or an archive ``<sessionId>.jsonl.deleted.<ts>`` / ``.reset.<ts>``
TRANSCRIPT = re.compile(r"^(?P<sid>.+?)\.jsonl(?:\.(?:deleted|reset)\.[^/]+)?$")


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$OPENCLAW_STATE_DIR`` (or the legacy ``$CLAWDBOT_STATE_DIR``), then ``~/.openclaw``
    and the folders earlier releases used."""
    roots: list[Path] = []
    for var in ENV_VARS:
        value = (env.get(var) or "").strip()
        if value:
            roots.append(Path(value).expanduser())
            break
    roots.append(home / ".openclaw")
    roots.extend(home / name for name in LEGACY_STATE_DIRS)
    return list(dict.fromkeys(roots))


def resolve_root(path: Path) -> Path:
    """Accept the state folder (``agents/`` inside), ``agents/`` itself, one agent folder,
    an agent's ``agent/`` or ``sessions/`` folder, a database, or one transcript file."""
    if path.is_file():
        if path.name.endswith(SIDECARS):
            raise RootError(f"{path} is a SQLite sidecar; name the database itself")
        if path.suffix == ".sqlite" or TRANSCRIPT.match(path.name):
            return path
        raise RootError(f"{path} is neither an OpenClaw agent database nor a transcript")
    if not path.is_dir():
        raise RootError(f"{path} does not exist")
    if any(True for _ in discover(path)):
        return path
    raise RootError(f"{path} holds no OpenClaw store (no agents/<id>/agent/{DB_NAME}, no transcripts)")


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _files(folder: Path) -> list[os.DirEntry]:
    try:
        return sorted((e for e in os.scandir(folder) if not e.is_dir(follow_symlinks=False)), key=lambda e: e.name)
    except OSError:
        return []


def _is_agent_dir(folder: Path) -> bool:
    return (folder / "agent").is_dir() or (folder / "sessions").is_dir()


def discover(root: Path) -> Iterator[SourceFile]:
    """Each agent's database; an agent's transcripts only where it has no database.
    Listed by path only; symlinks are not followed (a symlinked database is listed so ingest
    reports it as skipped)."""
    if root.is_file():
        yield _classify(Path(root), root.parent)
        return
    if (root / "agents").is_dir():
        agents = _subdirs(root / "agents")
    elif _is_agent_dir(root):
        agents = [root]
    elif any(e.name == DB_NAME for e in _files(root)):               # an agent's agent/ folder
        yield _classify(root / DB_NAME, root)
        return
    elif any(TRANSCRIPT.match(e.name) for e in _files(root)):          # a sessions folder
        yield from _transcripts(root, root)
        return
    else:                                                               # agents/ itself
        agents = [d for d in _subdirs(root) if _is_agent_dir(d)]
    for agent in agents:
        db = agent / "agent" / DB_NAME
        if os.path.lexists(db) and not db.is_dir():
            yield _classify(db, root)
        else:
            yield from _transcripts(agent / "sessions", root)


def _transcripts(folder: Path, root: Path) -> Iterator[SourceFile]:
    for e in _files(folder):
        if TRANSCRIPT.match(e.name) and ".bak" not in e.name:
            yield _classify(Path(e.path), root)


def _classify(path: Path, root: Path) -> SourceFile:
    m = TRANSCRIPT.match(path.name)
    if m and path.suffix != ".sqlite":
        return SourceFile(NAME, path, root, session_hint=m.group("sid"), container="jsonl")
    return SourceFile(NAME, path, root, container="sqlite")


def _agent_of(path: Path) -> str | None:
    parts = path.parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "agents":
            return parts[i]
    return None


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """JSON lines of the private copy of an agent database (see the module docstring)."""
    if file.container != "sqlite":
        raise ValueError(f"openclaw has no reader for a {file.container!r} container")
    # The copy is private to this run: opening it read-write lets SQLite replay its -wal or
    # roll back a hot journal. query_only keeps this reader from changing anything else.
    con = sqlite3.connect(f"file:{copy}?mode=rw", uri=True)
    con.text_factory = _text
    try:
        con.execute("pragma query_only = 1")
        tables = {r[0] for r in con.execute("select name from sqlite_master where type = 'table'")}
        if "transcript_events" not in tables:
            raise ValueError("not an OpenClaw agent database: no transcript_events table")
        facts = {"user_version": con.execute("pragma user_version").fetchone()[0]}
        if "schema_meta" in tables:
            meta = _select(con, "schema_meta", "rowid")
            if meta:
                facts.update(schema_version=meta[0].get("schema_version"), app_version=meta[0].get("app_version"),
                             agent_id=meta[0].get("agent_id"))
        agent = facts.get("agent_id") or _agent_of(file.path)
        nodes = _select(con, "session_nodes", "rowid") if "session_nodes" in tables else []
        windows = _select(con, "session_windows", "created_at, rowid") if "session_windows" in tables else []
        # every row in time (adapters/db_order.py): the events at their time, each session's
        # window and node, which change with every event (update and activity times), right
        # after its last event, so a database that gained events is read again with its
        # earlier lines first and only the tail loads (etl/containers.py). The events come as
        # groups (adapters/base.py Group): a database read again makes again only the events
        # of the groups that changed
        last = db_order.last_times(con, "transcript_events", "session_id", "created_at")
        node_lines, windows_lines = _session_lines(agent, facts, nodes, windows, last)
        yield from db_order.merged([_events(con, agent), node_lines, windows_lines])
    finally:
        con.close()


def _events(con: sqlite3.Connection, agent) -> db_order.Table:
    """The events at their time, in their session's order: each at the latest time of its
    session's events so far, so a session's events keep their seq order whatever their
    clock said."""
    try:
        cur = con.execute("select *, max(created_at) over (partition by session_id order by seq rows unbounded preceding) "
                          "as convarch_time from transcript_events order by convarch_time, session_id, seq")
    except sqlite3.OperationalError:          # a schema without the usual columns: file order
        cur = con.execute("select *, null from transcript_events")
    # the rows keep their time last, which the lines leave out (their columns stop before it)
    cols = [d[0] for d in cur.description]
    return db_order.Table(cols[:-1], cur, keyed_group(partial(_event_lines, agent), code_key(sys.modules[__name__], base),
                                                      ("transcript_events", agent)), at=len(cols) - 1)


def _session_lines(agent, facts: dict, nodes: list[dict], windows: list[dict], last: dict
                   ) -> tuple[db_order.Table, db_order.Table]:
    """The nodes' lines and the windows' lines, each at the time of its session's last event
    (a node's session is its current one), else at its own creation."""
    by_key: dict[str, dict] = {}
    node_lines: list[tuple[object, bytes]] = []
    for node in nodes:
        entry = node.get("entry_json")
        try:
            node["entry_json"] = json.loads(entry) if isinstance(entry, str) and entry.strip() else None
        except (ValueError, RecursionError):
            node["entry_json"] = None
            node["_bad"] = malformed_row(f"openclaw session_nodes row {node.get('session_key')}",
                                         "column entry_json is not valid JSON", entry)
        if node.get("session_key"):
            by_key[node["session_key"]] = node
    for node in nodes:
        at = last.get(node.get("current_session_id"), node.get("created_at"))
        bad = node.pop("_bad", None)
        if bad is not None:
            node_lines.append((at, bad))
            continue
        parent_key = node.get("parent_session_key") or node.get("spawned_by")
        parent = by_key.get(parent_key, {}).get("current_session_id") if parent_key else None
        node_lines.append((at, _dump({"table": "session_nodes", "agent_id": agent, **node, "parent_session_id": parent})))
    window_lines: list[tuple[object, bytes]] = []
    for win in windows:
        node = by_key.get(win.get("session_key")) or {}
        entry = node.get("entry_json") if isinstance(node.get("entry_json"), dict) else {}
        parent = None
        if win.get("previous_session_id") and win.get("reason") not in ("initial", "reset", None):
            parent = win["previous_session_id"]
        parent_key = win.get("parent_session_key") or win.get("spawned_by")
        if parent is None and parent_key and parent_key in by_key:
            parent = by_key[parent_key].get("current_session_id")
        window_lines.append((last.get(win.get("session_id"), win.get("created_at")),
                             _dump({"table": "session_windows", "agent_id": agent, **win, **facts,
                                    "node_cwd": entry.get("cwd"), "node_label": node.get("label"),
                                    "parent_session_id": parent})))
    return db_order.lines(node_lines), db_order.lines(window_lines)


def _event_lines(agent, cols: list[str], rows: list[tuple]) -> Iterator[bytes]:
    for values in rows:
        ev = dict(zip(cols, (_plain(v) for v in values)))
        raw = ev.pop("event_json", None)
        try:
            event = json.loads(raw) if isinstance(raw, str) else raw
        except (ValueError, RecursionError):
            yield malformed_row(f"openclaw transcript_events row {ev.get('session_id')}#{ev.get('seq')}",
                                "column event_json is not valid JSON", raw)
            continue
        yield _dump({"table": "transcript_events", "agent_id": agent, **ev, "event": event})


def _query(con: sqlite3.Connection, table: str, order: str) -> sqlite3.Cursor:
    try:
        return con.execute(f"select * from {table} order by {order}")
    except sqlite3.OperationalError:             # a schema without the usual columns: file order
        return con.execute(f"select * from {table}")


def _select(con: sqlite3.Connection, table: str, order: str) -> list[dict]:
    """Every row of `table` as a dict, in `order` when the table has those columns."""
    cur = _query(con, table, order)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, (_plain(v) for v in values))) for values in cur]


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
