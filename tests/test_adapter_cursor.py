"""Cursor: desktop state.vscdb, cursor-agent store.db and agent transcripts ingest completely,
exactly once, without touching the source; drift and damage are quarantined, never fatal."""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import PEER, REPO, tree_fingerprint
from convarch.adapters import _cursor_rows, _cursor_vscdb, cursor
from convarch.etl import session_parts
from convarch.adapters.base import RootError, made_lines
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "cursor" / "contract"
GNOMON = PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "cursor"
AGENT_SESSIONS = PEER / "jazzyalex__agent-sessions" / "AgentSessionsTests" / "Fixtures" / "Cursor"
STAGE0 = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "cursor"
PORTABLE = PEER / "portable-resume" / "cursor"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(cursor, cursor.resolve_root(root))])


def dump(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def make_vscdb(path: Path, disk: dict | None = None, items: dict | None = None) -> Path:
    """A state.vscdb with Cursor's two key-value tables; dict/list values are stored as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for table, rows_ in (("cursorDiskKV", disk or {}), ("ItemTable", items or {})):
        con.execute(f"create table if not exists {table} (key text unique on conflict replace, value blob)")
        con.executemany(f"insert into {table} values (?, ?)",
                        [(k, v if isinstance(v, (str, bytes)) or v is None else dump(v)) for k, v in rows_.items()])
    con.commit()
    con.close()
    return path


def make_store_db(path: Path, meta: dict | str | None, blobs: list[tuple[str, bytes]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("create table blobs (id text primary key, data blob)")
    con.execute("create table meta (key text primary key, value text)")
    con.executemany("insert into blobs values (?, ?)", blobs)
    if meta is not None:
        con.execute("insert into meta values ('0', ?)", (meta if isinstance(meta, str) else dump(meta).encode().hex(),))
    con.commit()
    con.close()
    return path


def blob(value) -> tuple[str, bytes]:
    data = value if isinstance(value, bytes) else dump(value).encode()
    return hashlib.sha256(data).hexdigest(), data


def node(*children: str, extra: bytes = b"") -> tuple[str, bytes]:
    """A tree node as the reference describes it: field 1 (0x0A), 32 bytes, per child."""
    return blob(b"".join(b"\x0a\x20" + bytes.fromhex(c) for c in children) + extra)


def counts(db: Path) -> dict:
    return {
        "sessions": scalar(db, "select count(*) from sessions where source = 'cursor'"),
        "records": scalar(db, "select count(*) from stg_records"),
        "messages": scalar(db, "select count(*) from messages"),
        "tool_calls": scalar(db, "select count(*) from tool_calls"),
        "quarantined": scalar(db, "select count(*) from quarantine"),
    }


# --------------------------------------------------------------------------- peer samples


def independent_counts(root: Path) -> dict:
    """Counts read straight from the sample files, without convarch.

    Transcripts: one record per non-blank line, a message per line with a role, a tool call
    per tool_use/tool_call block. state.vscdb: one record per composerData and bubbleId row,
    a message per bubble of type 1 or 2, a tool call per toolFormerData. A store.db: one
    record per meta row plus, for each blob its root names that the blobs table lacks, one
    missing_blob record; its message blobs (none in the sample) would be messages.
    """
    out = {"files": 0, "sessions": 0, "records": 0, "messages": 0, "tool_calls": 0}
    for f in sorted(root.rglob("*")):
        if f.suffix == ".jsonl":
            out["files"] += 1
            out["sessions"] += 1
            for line in f.read_text().splitlines():
                if not line.strip():
                    continue
                obj = json.loads(line)
                out["records"] += 1
                out["messages"] += obj.get("role") in ("user", "assistant", "system")
                for b in (obj.get("message") or {}).get("content") or []:
                    out["tool_calls"] += b.get("type") in ("tool_use", "tool_call", "tool-call")
        elif f.name == "state.vscdb":
            out["files"] += 1
            con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
            kv = con.execute("select key, value from cursorDiskKV").fetchall()
            con.close()
            composers = [k for k, _ in kv if k.startswith("composerData:")]
            bubbles = [json.loads(v) for k, v in kv if k.startswith("bubbleId:")]
            out["sessions"] += len(composers)
            out["records"] += len(composers) + len(bubbles)
            out["messages"] += sum(b.get("type") in (1, 2) for b in bubbles)
            out["tool_calls"] += sum(bool((b.get("toolFormerData") or {}).get("name")) for b in bubbles)
        elif f.suffix == ".db":
            out["files"] += 1
            out["sessions"] += 1
            con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
            metas = con.execute("select value from meta").fetchall()
            ids = {i for (i,) in con.execute("select id from blobs")}
            con.close()
            out["records"] += len(metas)
            for (hexed,) in metas:
                root_id = json.loads(bytes.fromhex(hexed)).get("latestRootBlobId")
                out["records"] += bool(root_id) and root_id not in ids
    return out


# Literal counts, checked against independent_counts (how they were derived):
# - gnomon: state.vscdb holds 2 composers and 7 bubbles (2 user, 5 assistant, all 5 assistant
#   bubbles with toolFormerData); 3 transcripts of 3 lines each (user, assistant, turn_ended)
#   with 2 + 1 + 4 tool_use blocks. 2 + 3 sessions, 9 + 9 records, 7 + 6 messages, 5 + 7 calls.
# - agent-sessions tests: test-store.db has one meta row whose latestRootBlobId "deadbeef" is
#   not in its (empty) blobs table (1 meta + 1 missing_blob record); two transcripts of 3 and 6
#   role lines with 1 and 2 tool_use blocks.
# - agent-sessions stage0: five transcripts (small 5 lines incl. turn_ended, large 10,
#   schema_drift 4, parent 2, child 2) with 1 + 2 + 1 (a "tool_call" block) + 1 + 0 tool calls.
PEER_SAMPLES = {
    "gnomon": (GNOMON, {"files": 4, "sessions": 5, "records": 18, "messages": 13, "tool_calls": 12}),
    "agent-sessions-tests": (AGENT_SESSIONS, {"files": 3, "sessions": 3, "records": 11, "messages": 9,
                                              "tool_calls": 3}),
    "agent-sessions-stage0": (STAGE0, {"files": 5, "sessions": 5, "records": 23, "messages": 22,
                                       "tool_calls": 5}),
}


@pytest.mark.parametrize("name", sorted(PEER_SAMPLES))
def test_peer_sample_loads_with_exact_counts(tmp_path, name):
    root, want = PEER_SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    assert independent_counts(root) == want
    before = tree_fingerprint(root)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert tree_fingerprint(root) == before, "the source store changed"
    assert (s.files_scanned, s.records_added, s.quarantined) == (want["files"], want["records"], 0)
    got = counts(db)
    assert got == {"sessions": want["sessions"], "records": want["records"], "messages": want["messages"],
                   "tool_calls": want["tool_calls"], "quarantined": 0}
    again = run(db, root)
    assert (again.files_changed, again.records_added, again.quarantined) == (0, 0, 0)
    if name == "gnomon":
        gnomon_details(db)


def gnomon_details(db: Path) -> None:
    # the composer and its transcript copy are two sessions, so nothing is counted twice
    assert rows(db, "select session_id, parent_session_id, message_count from sessions order by 1") == [
        ("demo-session", None, 5), ("old-only-session", None, 2),
        ("transcript:demo-session", None, 2), ("transcript:jsonl-only-session", None, 2),
        ("transcript:sub-explore-1", "transcript:demo-session", 2)]
    assert rows(db, "select title from sessions where session_id = 'transcript:jsonl-only-session'") == [
        ("please add tests for the parser",)]                  # the <user_query>, not the attachments
    assert rows(db, "select input_tokens, output_tokens from messages where message_id like '7777%'") == [(350, 150)]
    assert rows(db, "select tool_name, is_error from tool_calls where session_id = 'demo-session' order by call_id") == [
        ("read_file_v2", False), ("edit_file_v2", True), ("run_terminal_command_v2", True), ("read_file_v2", False)]
    assert scalar(db, "select min(\"timestamp\")::varchar from messages where session_id = 'demo-session'") == \
        "2026-01-01 10:00:00"




def test_portable_resume_cases_never_crash(tmp_path):
    """Those shapes are invented (the folder's README says so): the CLI layout there
    (chats/<md5>/<id>/metadata.json + transcripts/) is not Cursor's and is not read, and
    their state.vscdb has none of Cursor's tables, so each is quarantined once as unreadable
    (s-cur-08 also carries a hot -journal, which the private copy rolls back)."""
    cases = sorted(PORTABLE.glob("s-cur-*"))
    if not cases:
        pytest.skip("portable-resume cursor cases not present")
    roots = [c / "root" for c in cases]
    db = tmp_path / "w.duckdb"
    s = ingest(Layout(db), [(cursor, cursor.resolve_root(r)) for r in roots])
    with_vscdb = [r for r in roots if (r / "state.vscdb").exists()]
    assert [r.parent.name for r in with_vscdb] == ["s-cur-04-desktop-private-snapshot", "s-cur-08-desktop-family-race"]
    assert (s.files_scanned, s.records_added, s.quarantined) == (2, 0, 2)
    got = rows(db, "select source_file, reason, error from quarantine order by 1")
    assert [(p, r) for p, r, _ in got] == [(str(r / "state.vscdb"), "unreadable_container") for r in with_vscdb]
    assert all("no cursorDiskKV or ItemTable table" in e for _, _, e in got)


# --------------------------------------------------------------------------- contract store


def test_contract_store_sessions_messages_and_tools(tmp_path):
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert (s.files_scanned, s.records_added, s.quarantined) == (5, 35, 0)
    composer, sub, old = ("3f1c9a52-7d4e-4b1a-9c2e-8a5b6d7e0f11", "9b2e4c61-5a3d-4e7f-8c1b-2d6f0a9e4b37",
                          "c0ffee00-1111-4222-8333-444455556666")
    chat = "6a8d2f14-3b5c-4d7e-9f01-23456789abcd"
    got = {r[0]: r[1:] for r in rows(db, "select session_id, parent_session_id, cwd, model, message_count, "
                                         "started_at::varchar, ended_at::varchar from sessions")}
    assert got == {
        composer: (None, "/home/demo/shop", "claude-4.5-sonnet", 7, "2026-01-01 10:00:00", "2026-01-01 10:07:00"),
        sub: (composer, None, "claude-4.5-sonnet", 2, "2026-01-01 10:00:58", "2026-01-01 10:01:10"),
        old: (None, None, None, 2, "2025-12-01 10:00:00", "2025-12-01 10:00:50"),
        chat: (None, None, "gpt-5", 5, "2026-01-02 10:00:00", "2026-01-02 10:00:00"),
        "7d3e1f2a-4b5c-4d6e-8f7a-9b0c1d2e3f4a": (None, None, "gpt-4", 2, "2024-07-02 08:00:00", "2024-07-02 08:00:00"),
        "aiService:5e1f0c2a9b8d7e6f5a4b3c2d1e0f9a8b": (None, None, None, 0, "2026-01-01 10:00:05", "2026-01-01 10:00:05"),
        f"transcript:{chat}": (None, None, None, 4, None, None),
        "transcript:e4b7c9d2-1a3f-4c5e-8d6b-0f2a4c6e8a1b": (f"transcript:{chat}", None, None, 2, None, None),
    }
    kinds = dict(rows(db, "select kind, count(*) from messages where session_id = ? group by 1", [composer]))
    assert kinds == {"prompt": 2, "response": 2, "tool_use": 3}
    assert rows(db, "select kind, count(*) from stg_records where session_id = ? group by 1 order by 1", [chat]) == [
        ("metadata", 1), ("prompt", 1), ("response", 1), ("system", 1), ("tool_result", 1), ("tool_use", 1)]
    # the user message's <user_info> wrapper is not its text; the raw record keeps it
    assert rows(db, "select text from messages where session_id = ? and kind = 'prompt'", [chat]) == [
        ("Add rate limiting to the login endpoint.",)]
    calls = rows(db, "select session_id, call_id, tool_name, output_text, is_error, has_result from tool_calls "
                     "where session_id in (?, ?) order by session_id, line_no", [composer, chat])
    assert calls == [
        (composer, "toolu_01RunTests", "run_terminal_command_v2", '{"output":"1 failed, 4 passed","exitCode":1}',
         False, True),
        (composer, "toolu_02ReadConftest", "read_file_v2", '{"error":"File not found: tests/conftest.py"}', True, True),
        (composer, "toolu_03EditFixture", "edit_file_v2",
         '{"diff":"-clock = Clock()\\n+clock = Clock.per_test()"}', False, True),
        (chat, "call_read_login", "Read", "def login(request):\n    return authenticate(request)\n", False, True),
    ]
    assert json.loads(scalar(db, "select input from tool_calls where call_id = 'toolu_01RunTests'")) == {
        "command": "pytest tests/test_login.py --count=5", "requireUserApproval": True}
    # transcripts have no tool ids: calls get one per line and block, and no result
    assert rows(db, "select call_id, tool_name, has_result from tool_calls where session_id = ? order by 1",
                [f"transcript:{chat}"]) == [("line2.2", "Read", False), ("line3.1", "Task", False)]
    tokens = rows(db, "select sum(input_tokens), sum(output_tokens) from messages where session_id = ?", [composer])
    assert tokens == [(12700, 430)]
    thinking = rows(db, "select text from stg_blocks where block_type = 'thinking' order by session_id")
    assert thinking == [("Flaky one run in five usually means shared state or timing.",),
                        ("Find the endpoint first.",)]
    # bookkeeping: the workspace's prompt history is kept, never as a message
    assert scalar(db, "select count(*) from stg_records where kind = 'prompt_history'") == 2
    assert scalar(db, "select count(*) from messages where harness_kind is not null") == 0


def test_to_lines_are_json_objects_in_a_stable_order(tmp_path):
    files = [sf for sf in cursor.discover(cursor.resolve_root(CONTRACT)) if sf.container == "sqlite"]
    assert len(files) == 3
    for sf in files:
        copy = tmp_path / sf.path.name
        shutil.copy(sf.path, copy)
        first = list(made_lines(cursor.to_lines(copy, sf)))
        assert first == list(made_lines(cursor.to_lines(copy, sf)))
        assert all(isinstance(json.loads(line), dict) and b"\n" not in line for line in first)


# --------------------------------------------------------------------------- drift


def test_desktop_drift_cases(tmp_path):
    """Bubbles no header names, bubbles whose composer is gone, a header naming nothing, a
    repeated header, numeric and missing bubble times, a value kept as a BLOB, a WAL that
    was never checkpointed."""
    user_dir = tmp_path / "Cursor" / "User"
    cid, gone = "c1", "c-gone"
    disk = {
        f"composerData:{cid}": {"_v": 10, "composerId": cid, "createdAt": 1770000000000,
                                "fullConversationHeadersOnly": [
                                    {"bubbleId": "b1", "type": 1}, {"bubbleId": "missing", "type": 2},
                                    {"bubbleId": "b2", "type": 2}, {"bubbleId": "b1", "type": 1}]},
        f"bubbleId:{cid}:b1": {"type": 1, "text": "first", "createdAt": 1770000001000},
        f"bubbleId:{cid}:b2": dump({"type": 2, "text": "second", "timingInfo": {"clientRpcSendTime": 1770000002000},
                                    "workspaceUris": ["file:///home/demo/my%20app"]}).encode(),
        f"bubbleId:{cid}:b0-extra": {"type": 2, "text": "not in the headers"},
        f"bubbleId:{gone}:x1": {"type": 1, "text": "my composer row is gone", "createdAt": "2026-03-01T00:00:00Z"},
        f"bubbleId:{gone}:x2": {"type": 3, "text": "an unknown bubble type"},
        f"bubbleId:{cid}:null": None,                       # Cursor writes NULL markers: skipped
        f"bubbleId:{cid}:big": {"type": 2, "text": "x" * (3 << 20)},   # a large value, read whole
    }
    db_path = make_vscdb(user_dir / "globalStorage" / "state.vscdb", disk)
    # a later commit that only reached the -wal
    con = sqlite3.connect(db_path)
    con.execute("pragma journal_mode=wal")
    con.execute("pragma wal_autocheckpoint=0")
    con.execute("insert into cursorDiskKV values (?, ?)", (f"bubbleId:{cid}:b3", dump({"type": 1, "text": "from wal"})))
    con.commit()
    assert (db_path.parent / "state.vscdb-wal").stat().st_size > 0
    db = tmp_path / "w.duckdb"
    s = ingest(Layout(db), [(cursor, cursor.resolve_root(tmp_path / "Cursor"))])   # the folder above User
    con.close()
    assert s.quarantined == 0
    assert scalar(db, "select strlen(text) from messages where message_id = 'big'") == 3 << 20
    got = rows(db, "select session_id, message_id, role, kind, \"timestamp\"::varchar, cwd, month "
                   "from stg_records order by line_no")
    assert got == [
        (cid, "b1", "user", "prompt", "2026-02-02 02:40:01", None, "2026-02"),
        (cid, "b2", "assistant", "response", "2026-02-02 02:40:02", "/home/demo/my app", "2026-02"),
        (cid, "b0-extra", "assistant", "response", None, None, "2026-02"),     # listed after, by key
        (cid, "b3", "user", "prompt", None, None, "2026-02"),
        (cid, "big", "assistant", "response", None, None, "2026-02"),
        (cid, None, None, "metadata", "2026-02-02 02:40:00", None, "2026-02"),  # the composer after its bubbles
        (gone, "x1", "user", "prompt", "2026-03-01 00:00:00", None, "2026-03"),
        (gone, "x2", None, "unknown", None, None, "2026-02"),
    ]


def test_cli_store_tree_drift(tmp_path):
    """A nested tree with a message embedded in a node, a cycle, a blob named but absent, a
    message blob no node reaches; a subagent chat; a store without a meta row; meta.json."""
    chats = tmp_path / ".cursor" / "chats" / "h0"
    u = blob({"role": "user", "content": "<user_query>\nhello\n</user_query>"})
    a = blob({"id": "1", "role": "assistant", "content": [{"type": "text", "text": "hi"}]})
    stale = blob({"role": "user", "content": "an edit that was rewound"})
    missing = hashlib.sha256(b"absent").hexdigest()
    embedded = dump({"role": "assistant", "content": "embedded reply"}).encode()
    inner = node(a[0], missing, extra=b"\x12" + bytes([len(embedded)]) + embedded)
    root = node(u[0], inner[0])
    # a damaged store whose node names itself: walked once, never looped
    loop_id = "ab" * 32
    loop = (loop_id, b"\x0a\x20" + bytes.fromhex(loop_id) + b"\x0a\x20" + bytes.fromhex(u[0]))
    root2 = node(loop_id)
    parent_id = "11111111-2222-4333-8444-555555555555"
    make_store_db(chats / parent_id / "store.db",
                  {"agentId": parent_id, "latestRootBlobId": root[0], "name": "Nested", "createdAt": 1770000000000,
                   "lastUsedModel": "gpt-5"}, [u, a, stale, inner, root])
    child_id = "66666666-7777-4888-9999-000000000000"
    make_store_db(chats / child_id / "store.db",
                  {"agentId": child_id, "latestRootBlobId": root2[0], "createdAt": 1770000100000,
                   "subagentInfo": {"parentAgentId": parent_id, "rootParentAgentId": parent_id,
                                    "toolCallId": "t1", "typeName": "explore"}},
                  [u, loop, root2])
    (chats / child_id / "meta.json").write_text(dump({"schemaVersion": 1, "cwd": "/home/demo/api"}))
    bare_id = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    make_store_db(chats / bare_id / "store.db", None, [a, u])     # no meta: blobs in table order
    db = tmp_path / "w.duckdb"
    s = ingest(Layout(db), [(cursor, cursor.resolve_root(tmp_path / ".cursor"))])
    assert s.quarantined == 0
    got = rows(db, "select session_id, record_type, role, kind, text from stg_records "
                   "where session_id = ? order by line_no", [parent_id])
    assert got == [
        (parent_id, "chat_meta", None, "metadata", "Nested"),
        (parent_id, "user", "user", "prompt", "hello"),
        (parent_id, "assistant", "assistant", "response", "hi"),
        (parent_id, "missing_blob", None, "missing_blob", None),
        (parent_id, "assistant", "assistant", "response", "embedded reply"),
        (parent_id, "user", None, "unreachable_message", "an edit that was rewound"),
    ]
    assert rows(db, "select parent_session_id, cwd, message_count from sessions where session_id = ?",
                [child_id]) == [(parent_id, "/home/demo/api", 1)]
    assert rows(db, "select role, text from messages where session_id = ? order by line_no", [bare_id]) == [
        ("assistant", "hi"), ("user", "hello")]


def test_transcript_drift(tmp_path):
    """The flat layout, string content, a tool call with an id answered by a result line,
    blocks of unknown types."""
    folder = tmp_path / "projects" / "p" / "agent-transcripts"
    folder.mkdir(parents=True)
    lines = [
        {"role": "user", "message": {"content": "plain string prompt"}},
        {"role": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "call_1", "name": "Shell", "input": {"command": "ls"}},
            {"type": "image", "source": {"media_type": "image/png", "data": "iVBORw0KGgo="}}]}},
        {"role": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "call_1",
                                                  "content": [{"type": "text", "text": "a.txt"}], "is_error": False}]}},
        {"role": "assistant", "message": {"content": [{"type": "mystery", "text": "visible"}]}},
        {"type": "something_new"},
    ]
    (folder / "flat-id.jsonl").write_text("".join(dump(x) + "\n" for x in lines))
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "projects")
    assert rows(db, "select session_id, role, kind, text from stg_records order by line_no") == [
        ("transcript:flat-id", "user", "prompt", "plain string prompt"),
        ("transcript:flat-id", "assistant", "tool_use", None),
        ("transcript:flat-id", "user", "tool_result", None),
        ("transcript:flat-id", "assistant", "response", "visible"),
        ("transcript:flat-id", None, "unknown", None),
    ]
    assert rows(db, "select call_id, output_text, has_result from tool_calls") == [("call_1", "a.txt", True)]
    assert rows(db, "select media_type, data_chars from stg_blocks where block_type = 'image'") == [("image/png", 12)]


# --------------------------------------------------------------------------- bad input


def test_malformed_rows_are_quarantined_and_the_rest_loads(tmp_path):
    user_dir = tmp_path / "User"
    make_vscdb(user_dir / "globalStorage" / "state.vscdb", {
        "composerData:ok": {"composerId": "ok", "fullConversationHeadersOnly": [
            {"bubbleId": "b1"}, {"bubbleId": "bad"}, {"bubbleId": "b2"}]},
        "bubbleId:ok:b1": {"type": 1, "text": "fine"},
        "bubbleId:ok:bad": '{"type": 2, "text": "cut in the mid',
        "bubbleId:ok:b2": {"type": 2, "text": "also fine"},
        "bubbleId:ok:latin1": b'{"type": 2, "text": "caf\xe9"}',
        "composerData:broken": "{not json",
        "bubbleId:broken:b1": {"type": 1, "text": "my composer row is malformed"},
    }, {"aiService.prompts": "[{]"})
    make_store_db(tmp_path / "User" / "chats" / "h" / "chat-1" / "store.db", "zz-not-hex",
                  [blob({"role": "user", "content": "still here"})])
    db = tmp_path / "w.duckdb"
    s = run(db, user_dir)
    got = rows(db, "select reason, error, raw_text from quarantine order by source_file, line_no")
    assert [g[0] for g in got] == ["malformed_row", "malformed_row", "malformed_row", "invalid_utf8", "malformed_row"]
    texts = [g[2] for g in got]
    assert got[0][1].startswith("cursor meta[0]: malformed JSON")
    assert got[1][1].startswith("cursor cursorDiskKV[composerData:broken]: malformed JSON") and "{not json" in texts[1]
    assert got[2][1].startswith("cursor cursorDiskKV[bubbleId:ok:bad]") and "cut in the mid" in texts[2]
    assert "cursorDiskKV[bubbleId:ok:latin1]" in texts[3]
    assert got[4][1].startswith("cursor ItemTable[aiService.prompts]")
    assert s.quarantined == 5
    assert rows(db, "select session_id, text from messages order by source_file, line_no") == [
        ("chat-1", "still here"), ("broken", "my composer row is malformed"), ("ok", "fine"), ("ok", "also fine")]


def test_a_file_that_is_not_sqlite_is_one_unreadable_line(tmp_path):
    store = tmp_path / ".cursor" / "chats" / "h"
    (store / "chat-a").mkdir(parents=True)
    (store / "chat-a" / "store.db").write_text("this is not a database\n" * 100)
    make_store_db(store / "chat-b" / "store.db", None, [blob({"role": "user", "content": "ok"})])
    (store / "chat-c").mkdir()
    (store / "chat-c" / "store.db").write_bytes(b"")                       # empty: no tables
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path)
    got = rows(db, "select source_file, reason, error from quarantine order by source_file")
    assert [(Path(p).parent.name, r) for p, r, _ in got] == [("chat-a", "unreadable_container"),
                                                             ("chat-c", "unreadable_container")]
    assert "file is not a database" in got[0][2]
    assert "not a Cursor store" in got[1][2]
    assert (s.records_added, s.quarantined) == (1, 2)


def test_transcript_bad_lines_and_an_unfinished_last_line(tmp_path):
    folder = tmp_path / "projects" / "p" / "agent-transcripts" / "s1"
    folder.mkdir(parents=True)
    good = [dump({"role": "user", "message": {"content": [{"type": "text", "text": "q"}]}}),
            dump({"role": "assistant", "message": {"content": [{"type": "text", "text": "a"}]}})]
    f = folder / "s1.jsonl"
    f.write_text(good[0] + "\n{broken\n" + good[1][:20])
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "projects")
    assert s.records_added == 1
    assert rows(db, "select line_no, reason from quarantine order by line_no") == [(2, "invalid_json"),
                                                                                   (3, "truncated_tail")]
    with open(f, "a") as fh:
        fh.write(good[1][20:] + "\n")
    s = run(db, tmp_path / "projects")
    assert s.records_added == 1
    assert rows(db, "select line_no, reason from quarantine") == [(2, "invalid_json")]
    assert scalar(db, "select count(*) from messages") == 2


def test_changed_database_is_read_again_whole_and_loads_the_changed_chat(tmp_path):
    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb", {
        "composerData:a": {"composerId": "a", "lastUpdatedAt": 1000, "fullConversationHeadersOnly": [{"bubbleId": "x"}]},
        "bubbleId:a:x": {"type": 1, "text": "older chat"},
        "composerData:c": {"composerId": "c", "lastUpdatedAt": 2000, "fullConversationHeadersOnly": [{"bubbleId": "b1"}]},
        "bubbleId:c:b1": {"type": 1, "text": "one"}})
    db = tmp_path / "w.duckdb"
    assert run(db, tmp_path / "User").records_added == 4
    make_vscdb(path, {"composerData:c": {"composerId": "c", "lastUpdatedAt": 3000, "fullConversationHeadersOnly": [
        {"bubbleId": "b1"}, {"bubbleId": "b2"}]}, "bubbleId:c:b2": {"type": 2, "text": "two"}})
    s = run(db, tmp_path / "User")
    # read again whole; the chats updated longest ago and the chat's earlier bubbles come first
    # again, so only its new bubble and its own row (which changed) load
    assert (s.files_changed, s.records_added) == (1, 2)
    assert rows(db, "select text from messages order by line_no") == [("older chat",), ("one",), ("two",)]
    assert scalar(db, "select count(*) from stg_records") == 5
    # an older chat taken up again moves to the end: the chats after its old place stay where
    # they were loaded, and only its own lines load again, after them
    make_vscdb(path, {"composerData:a": {"composerId": "a", "lastUpdatedAt": 4000, "fullConversationHeadersOnly": [
        {"bubbleId": "x"}, {"bubbleId": "y"}]}, "bubbleId:a:y": {"type": 2, "text": "back to it"}})
    s = run(db, tmp_path / "User")
    assert s.records_added == 3
    assert scalar(db, "select count(*) from stg_records") == 6
    query = "select text from messages order by line_no"
    assert rows(db, query) == [("one",), ("two",), ("older chat",), ("back to it",)]
    kept = "select line_no, file_epoch from stg_records where session_id = 'c' order by 1"
    assert rows(db, kept) == [(3, 1), (4, 2), (5, 2)]        # chat c, as loaded by the runs before
    fresh = tmp_path / "fresh.duckdb"
    run(fresh, tmp_path / "User")
    assert rows(fresh, query) == rows(db, query)
    # taken up once more: it is at the end already, so only its new bubble and its row load
    make_vscdb(path, {"composerData:a": {"composerId": "a", "lastUpdatedAt": 5000, "fullConversationHeadersOnly": [
        {"bubbleId": "x"}, {"bubbleId": "y"}, {"bubbleId": "z"}]}, "bubbleId:a:z": {"type": 1, "text": "and again"}})
    assert run(db, tmp_path / "User").records_added == 2
    assert rows(db, kept) == [(3, 1), (4, 2), (5, 2)]
    assert rows(db, query)[-1] == ("and again",)
    assert scalar(db, "select count(*) from stg_records") == 7


def test_a_warehouse_hashed_the_old_way_is_matched_by_its_first_lines_once(tmp_path):
    """A store an earlier version read kept one running hash over its lines: the next read
    keeps only the lines that still come first (as that version did), then keeps each line's
    own hash, so a chat taken up again later loads only its own lines."""
    import duckdb

    from convarch.etl.containers import snapshot_whole

    def chat(cid: str, updated: int, texts: list[str]) -> dict:
        return {f"composerData:{cid}": {"composerId": cid, "lastUpdatedAt": updated,
                                        "fullConversationHeadersOnly": [{"bubbleId": f"b{i}"} for i in range(len(texts))]},
                **{f"bubbleId:{cid}:b{i}": {"type": 1 + i % 2, "text": t} for i, t in enumerate(texts)}}

    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb",
                      chat("a", 1000, ["a1", "a2"]) | chat("b", 2000, ["b1", "b2"]) | chat("c", 3000, ["c1"]))
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "User")
    # the state as the earlier version left it
    sf = next(iter(cursor.discover(cursor.resolve_root(tmp_path / "User"))))
    lines = snapshot_whole(sf, tmp_path / "lines.jsonl", tmp_path / "copy").path.read_bytes().splitlines(keepends=True)
    h, chain = hashlib.blake2b(digest_size=16), b""
    for line in lines:
        h.update(line)
        chain += h.digest()[:8]
    state = duckdb.connect(str(Layout(db).state_db))
    state.execute("update source_files set lines_hash = ?", [h.hexdigest()])
    state.execute("update file_line_hashes set hashes = ?", [chain])
    state.close()
    # the same lines, the file touched: nothing loads
    make_vscdb(path, {"checkpointId:zzz": {"unread": True}})
    assert run(db, tmp_path / "User").records_added == 0
    # chat b taken up again: only chat a still comes first, so b and c load again
    make_vscdb(path, chat("b", 4000, ["b1", "b2", "b3"]))
    assert run(db, tmp_path / "User").records_added == 4 + 2
    state = duckdb.connect(str(Layout(db).state_db), read_only=True)
    assert state.execute("select lines_hash from source_files").fetchone()[0].startswith("2:")
    state.close()
    # chat a taken up again: now matched line by line, only its own lines load
    make_vscdb(path, chat("a", 5000, ["a1", "a2", "a3"]))
    assert run(db, tmp_path / "User").records_added == 4
    fresh = tmp_path / "fresh.duckdb"
    run(fresh, tmp_path / "User")
    query = "select session_id, text from messages order by line_no"
    assert rows(db, query) == rows(fresh, query) == [
        ("c", "c1"), ("b", "b1"), ("b", "b2"), ("b", "b3"), ("a", "a1"), ("a", "a2"), ("a", "a3")]
    assert rows(db, "select * from sessions order by 1") == rows(fresh, "select * from sessions order by 1")


def test_a_store_read_again_checks_only_the_bubbles_it_did_not_give_before(tmp_path, monkeypatch):
    """A chat whose rows did not change is not made again at all; in a chat that changed, a
    bubble's line the store gave before, byte for byte, is not parsed again; a bubble that
    changed is, and one that no longer parses is quarantined as on a first read."""
    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb", {
        "composerData:a": {"composerId": "a", "lastUpdatedAt": 1000, "fullConversationHeadersOnly": [{"bubbleId": "x"}]},
        "bubbleId:a:x": {"type": 1, "text": "first"},
        "composerData:c": {"composerId": "c", "lastUpdatedAt": 2000, "fullConversationHeadersOnly": [
            {"bubbleId": "b1"}, {"bubbleId": "bad"}, {"bubbleId": "z"}]},
        "bubbleId:c:b1": {"type": 1, "text": "one"},
        "bubbleId:c:bad": '{"type": 2, "text": "cut in the mid',
        "bubbleId:c:z": {"type": 1, "text": "after the bad one"}})
    parsed: list[str] = []
    made: list[str] = []
    real_parse, real_lines = _cursor_vscdb._parse, _cursor_vscdb._chat_lines

    def counting_parse(raw):
        parsed.append(raw.decode() if isinstance(raw, bytes) else raw)
        return real_parse(raw)

    def counting_lines(con, cid, *args):
        made.append(cid)
        return real_lines(con, cid, *args)

    monkeypatch.setattr(_cursor_vscdb, "_parse", counting_parse)
    monkeypatch.setattr(_cursor_vscdb, "_chat_lines", counting_lines)
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "User")
    bubbles = lambda: sorted(json.loads(p)["text"] if p.endswith("}") else p for p in parsed if '"type"' in p)
    assert bubbles() == sorted(['{"type": 2, "text": "cut in the mid', "after the bad one", "first", "one"])
    assert made == ["a", "c"]
    assert [r for (r,) in rows(db, "select error from quarantine")] == [
        'cursor cursorDiskKV[bubbleId:c:bad]: malformed JSON (Unterminated string starting at: line 1 column 21 (char 20))']

    parsed.clear()
    made.clear()
    make_vscdb(path, {"composerData:c": {"composerId": "c", "lastUpdatedAt": 3000, "fullConversationHeadersOnly": [
        {"bubbleId": "b1"}, {"bubbleId": "bad"}, {"bubbleId": "z"}, {"bubbleId": "b2"}]},
        "bubbleId:c:b2": {"type": 2, "text": "two"}})
    s = run(db, tmp_path / "User")
    # chat a is taken as it was; in chat c the malformed bubble's line was not the spliced one
    # before, so it is checked again (and is the same quarantined line), the new bubble is
    # checked, the others are not parsed
    assert made == ["c"]
    assert bubbles() == sorted(['{"type": 2, "text": "cut in the mid', "two"])
    assert (s.records_added, s.quarantined) == (2, 0)
    assert scalar(db, "select count(*) from quarantine") == 1

    # a bubble rewritten in place with text that no longer parses, its composer row unchanged:
    # the chat is made again, the bubble checked and quarantined
    made.clear()
    con = sqlite3.connect(path)
    con.execute("update cursorDiskKV set value = ? where key = 'bubbleId:c:b2'", ('{"type": 2, "text": "tw',))
    con.commit()
    con.close()
    s = run(db, tmp_path / "User")
    assert made == ["c"]
    assert s.quarantined == 1
    assert sorted(r for (r,) in rows(db, "select error from quarantine"))[0].startswith(
        "cursor cursorDiskKV[bubbleId:c:b2]: malformed JSON")
    fresh = tmp_path / "fresh.duckdb"
    run(fresh, tmp_path / "User")
    query = "select session_id, role, text from messages order by session_id, line_no"
    assert rows(db, query) == rows(fresh, query) == [
        ("a", "user", "first"), ("c", "user", "one"), ("c", "user", "after the bad one")]


def test_a_chat_that_grew_derives_again_only_its_own_session_facts(tmp_path, monkeypatch):
    """After a pick-up, the sessions read as after a fresh load of the final store; the kept
    records read back to derive session facts again are only those of the chats the
    replaced lines held (the others' facts are taken over), and without earlier facts to take
    over every kept session is derived again, to the same result."""
    def chat(cid: str, updated: int, texts: list[str]) -> dict:
        return {f"composerData:{cid}": {"composerId": cid, "name": f"chat {cid}", "createdAt": 100,
                                        "lastUpdatedAt": updated,
                                        "fullConversationHeadersOnly": [{"bubbleId": f"b{i}"} for i in range(len(texts))]},
                **{f"bubbleId:{cid}:b{i}": {"type": 1 + i % 2, "text": t, "createdAt": f"2026-02-0{1 + i}T10:00:00Z"}
                   for i, t in enumerate(texts)}}

    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb",
                      chat("old", 1000, ["first question", "first answer"])
                      | chat("mid", 2000, ["second question", "second answer", "more"])
                      | chat("new", 3000, ["third question"]))
    read_back: list[list[tuple]] = []
    real_write = session_parts._write

    def spying_write(con, staging, run_id, prefix, **kwargs):
        if prefix == "k":          # the kept lines' parts, not those of the lines a run loaded
            read_back.append(con.execute("select session_id, count(*) from records_loaded group by 1 order by 1").fetchall())
        return real_write(con, staging, run_id, prefix, **kwargs)

    monkeypatch.setattr(session_parts, "_write", spying_write)
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "User")
    query = "select * from sessions order by session_id"

    def same_as_fresh(name: str) -> None:
        fresh = tmp_path / f"fresh-{name}.duckdb"
        run(fresh, tmp_path / "User")
        assert rows(db, query) == rows(fresh, query)

    # the latest chat gains an answer: only its one kept bubble is read back
    read_back.clear()
    make_vscdb(path, chat("new", 4000, ["third question", "third answer"]))
    assert run(db, tmp_path / "User").records_added == 2
    assert read_back[0] == [("new", 1)]
    same_as_fresh("grown")
    # the middle chat taken up again: it moves to the end, so the newest chat's lines load
    # again too; the oldest chat's facts are taken over
    read_back.clear()
    make_vscdb(path, chat("mid", 5000, ["second question", "second answer", "more", "back to it"]))
    run(db, tmp_path / "User")
    assert read_back[0] == []
    same_as_fresh("taken-up")
    # with no earlier facts to take over, every kept session's records are read back
    read_back.clear()
    monkeypatch.setattr(session_parts, "lake_parts", lambda layout, state: [])
    make_vscdb(path, chat("mid", 6000, ["second question", "second answer", "more", "back to it", "done"]))
    run(db, tmp_path / "User")
    assert read_back[0] == [("mid", 4), ("new", 3), ("old", 3)]
    same_as_fresh("nothing-to-take-over")


# --------------------------------------------------------------------------- locations


def test_default_roots_follow_home_and_overrides(isolated_home, monkeypatch):
    env = {"XDG_CONFIG_HOME": str(isolated_home / ".config")}
    assert cursor.default_roots(env, isolated_home) == [
        isolated_home / ".cursor", isolated_home / ".config" / "Cursor" / "User",
        isolated_home / "Library" / "Application Support" / "Cursor" / "User"]
    env = {"CURSOR_CONFIG_DIR": "/opt/cursor-home", "XDG_CONFIG_HOME": "/xdg"}
    assert cursor.default_roots(env, isolated_home)[:3] == [
        Path("/opt/cursor-home"), isolated_home / ".cursor", Path("/xdg/Cursor/User")]
    assert cursor.default_roots({"XDG_CONFIG_HOME": "relative"}, isolated_home)[1] == \
        isolated_home / ".config" / "Cursor" / "User"


def test_default_targets_find_every_store_in_a_throwaway_home(isolated_home, monkeypatch):
    from convarch.cli.targets import default_targets

    monkeypatch.delenv("CURSOR_CONFIG_DIR", raising=False)
    assert default_targets(cursor) == []
    shutil.copytree(CONTRACT / ".cursor", isolated_home / ".cursor")
    mac = isolated_home / "Library" / "Application Support" / "Cursor"
    shutil.copytree(CONTRACT / ".config" / "Cursor", mac)
    found = [root for _, root in default_targets(cursor)]
    assert found == [isolated_home / ".cursor", mac / "User"]
    names = sorted(sf.path.name for root in found for sf in cursor.discover(root))
    assert names == ["6a8d2f14-3b5c-4d7e-9f01-23456789abcd.jsonl", "e4b7c9d2-1a3f-4c5e-8d6b-0f2a4c6e8a1b.jsonl",
                     "state.vscdb", "state.vscdb", "store.db"]
    other = isolated_home / "elsewhere"
    shutil.copytree(CONTRACT / ".cursor", other)
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(other))
    assert [root for _, root in default_targets(cursor)][0] == other


def test_resolve_root_accepts_each_level_and_rejects_the_rest(tmp_path):
    home = CONTRACT
    user = home / ".config" / "Cursor" / "User"
    assert cursor.resolve_root(home / ".config" / "Cursor") == user
    for p in (home, home / ".cursor", home / ".cursor" / "projects", user, user / "workspaceStorage",
              user / "globalStorage" / "state.vscdb"):
        assert cursor.resolve_root(p) == p
    with pytest.raises(RootError):
        cursor.resolve_root(tmp_path / "nope")
    with pytest.raises(RootError):
        cursor.resolve_root(home / ".cursor" / "cli-config.json")


def test_discovery_reads_only_conversation_places(tmp_path):
    home = tmp_path / "store"
    shutil.copytree(CONTRACT, home)
    cur = home / ".cursor"
    (cur / "extensions" / "ext").mkdir(parents=True)
    (cur / "extensions" / "ext" / "log.jsonl").write_text("{}\n")          # not a transcript
    (cur / "projects" / "home-demo-shop" / "terminals").mkdir()
    (cur / "projects" / "home-demo-shop" / "terminals" / "1.jsonl").write_text("{}\n")
    ws = home / ".config" / "Cursor" / "User" / "workspaceStorage" / "5e1f0c2a9b8d7e6f5a4b3c2d1e0f9a8b"
    shutil.copy(ws / "state.vscdb", ws / "state.vscdb.backup")
    outside = tmp_path / "outside"
    (outside / "agent-transcripts").mkdir(parents=True)
    (outside / "agent-transcripts" / "x.jsonl").write_text("{}\n")
    (cur / "projects" / "linked").symlink_to(outside, target_is_directory=True)
    found = {str(sf.path.relative_to(home)): (sf.session_hint, sf.parent_session_hint, sf.container)
             for sf in cursor.discover(cursor.resolve_root(home))}
    chat = "6a8d2f14-3b5c-4d7e-9f01-23456789abcd"
    sub = "e4b7c9d2-1a3f-4c5e-8d6b-0f2a4c6e8a1b"
    assert found == {
        f".cursor/chats/c238f386c15826f5b0f2050238a1ba19/{chat}/store.db": (chat, None, "sqlite"),
        f".cursor/projects/home-demo-shop/agent-transcripts/{chat}/{chat}.jsonl": (f"transcript:{chat}", None, "jsonl"),
        f".cursor/projects/home-demo-shop/agent-transcripts/{chat}/subagents/{sub}.jsonl":
            (f"transcript:{sub}", f"transcript:{chat}", "jsonl"),
        ".config/Cursor/User/globalStorage/state.vscdb": (None, None, "sqlite"),
        ".config/Cursor/User/workspaceStorage/5e1f0c2a9b8d7e6f5a4b3c2d1e0f9a8b/state.vscdb": (None, None, "sqlite"),
    }
    # a project folder gives its transcripts only
    project = [sf.path.name for sf in cursor.discover(cursor.resolve_root(cur / "projects" / "home-demo-shop"))]
    assert project == [f"{chat}.jsonl", f"{sub}.jsonl"]
    # a single file is a root of its own
    one = home / ".cursor" / "projects" / "home-demo-shop" / "agent-transcripts" / chat / f"{chat}.jsonl"
    assert [sf.session_hint for sf in cursor.discover(cursor.resolve_root(one))] == [f"transcript:{chat}"]
    assert os.path.islink(cur / "projects" / "linked")


# --------------------------------------------------------------------------- reading speed


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(cid=st.text(), bid=st.text(), seq=st.none() | st.integers(min_value=0),
       ctx=st.none() | st.fixed_dictionaries({"composerCreatedAt": json_values, "parentComposerId": st.none() | st.text()}),
       value=st.sampled_from(['{"type":1}', ' {"text":"é 🚀"} ', b'{"a":[1,2]}']))
def test_a_bubble_envelope_is_written_as_any_other_envelope(cid, bid, seq, ctx, value):
    """Bubble lines encode what all of a composer's bubbles share once; the bytes must be
    those of the generic envelope, or every Cursor store would load again as changed."""
    ctx = ctx or {}
    key = f"bubbleId:{cid}:{bid}"
    env = {"_src": "vscdb", "_table": "cursorDiskKV", "_key": key, "_type": "bubble",
           "composerId": cid, "bubbleId": bid, "seq": seq, "inline": False, **ctx}
    fast = _cursor_rows._splice(_cursor_vscdb.BubbleEnvelope(cid, ctx).head(key, bid, seq), value)
    assert fast == _cursor_rows._line(env, value)
    assert json.loads(fast)["_key"] == key


def test_bubbles_read_in_chunks_give_the_lines_of_one_lookup_each(tmp_path, monkeypatch):
    """Bubbles are looked up LOOKUP_CHUNK keys a statement: a bubble named twice across a
    chunk's edge still comes once, at its first place; missing and NULL ones are skipped; the
    ones no header names follow in key order."""
    cid = "c1"
    order = ["b05", "b01", "gone", "b02", "b01", "nul", "b03", "b05", "b04"]
    disk = {f"composerData:{cid}": {"composerId": cid, "createdAt": 1770000000000,
                                    "fullConversationHeadersOnly": [{"bubbleId": b} for b in order]},
            f"bubbleId:{cid}:nul": None}
    for b in ("b01", "b02", "b03", "b04", "b05", "x2", "x1"):
        disk[f"bubbleId:{cid}:{b}"] = {"type": 1, "text": b}
    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb", disk)
    sf = next(sf for sf in cursor.discover(cursor.resolve_root(tmp_path / "User")) if sf.path == path)

    def lines(chunk: int) -> list[bytes]:
        monkeypatch.setattr(_cursor_vscdb, "LOOKUP_CHUNK", chunk)
        return list(made_lines(cursor.to_lines(path, sf)))

    one_each = lines(1)
    got = [(json.loads(line)["bubbleId"], json.loads(line)["seq"]) for line in one_each[:-1]]
    assert got == [("b05", 0), ("b01", 1), ("b02", 3), ("b03", 6), ("b04", 8), ("x1", None), ("x2", None)]
    for chunk in (2, 3, 4, 256):
        assert lines(chunk) == one_each


def test_bubble_owners_are_the_composers_every_bubble_key_names(tmp_path):
    """The owners found by seeking past each composer's bubbles are those a walk over every
    bubble key finds, in the same order, odd keys included."""
    keys = ["bubbleId:a:1", "bubbleId:a:2", "bubbleId:0b:1", "bubbleId:noc", "bubbleId::x", "bubbleId:c:1",
            "bubbleId:c:2", "bubbleId:c", "bubbleId:c:", "bubbleId:é:1", "bubbleId:~:9", "bubbleIdz", "composerData:a"]
    con = sqlite3.connect(":memory:")
    con.execute("create table cursorDiskKV (key text unique on conflict replace, value blob)")
    con.executemany("insert into cursorDiskKV values (?, '{}')", [(k,) for k in keys])
    # keys that are not UTF-8 (a damaged page): found once each, never sought forever
    bad = [b"bubbleId:\xff\xfe:1", b"bubbleId:\xff\xfe:2", b"bubbleId:\xc3:1", b"bubbleId:\xff"]
    con.executemany("insert into cursorDiskKV values (cast(? as text), '{}')", [(k,) for k in bad])
    con.text_factory = bytes
    walked = [_cursor_rows._s(k.split(b":", 2)[1]) if len(k.split(b":", 2)) == 3 else ""
              for k in sorted([k.encode() for k in keys if k.startswith("bubbleId:")] + bad)]
    owners = list(itertools.islice(_cursor_vscdb._bubble_owners(con), 100))
    assert list(dict.fromkeys(owners)) == list(dict.fromkeys(walked))
    assert len(owners) < len(walked)


def test_chats_made_by_other_code_are_made_again_and_kept_where_their_lines_are_the_same(tmp_path, monkeypatch):
    """A chat's key hashes the code that makes its lines: after an upgrade every chat is made
    again once (none is taken as it was), and its lines, the same, load nothing; the next read
    takes them whole again."""
    def chat(cid: str, updated: int, texts: list[str]) -> dict:
        return {f"composerData:{cid}": {"composerId": cid, "lastUpdatedAt": updated,
                                        "fullConversationHeadersOnly": [{"bubbleId": f"b{i}"} for i in range(len(texts))]},
                **{f"bubbleId:{cid}:b{i}": {"type": 1 + i % 2, "text": t} for i, t in enumerate(texts)}}

    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb",
                      chat("a", 1000, ["a1", "a2"]) | chat("b", 2000, ["b1"]))
    made: list[str] = []
    real_lines = _cursor_vscdb._chat_lines
    monkeypatch.setattr(_cursor_vscdb, "_chat_lines", lambda con, cid, *a: made.append(cid) or real_lines(con, cid, *a))
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "User")
    made.clear()
    monkeypatch.setattr(_cursor_vscdb, "code_key", lambda *modules: b"other code".ljust(16, b"."))
    make_vscdb(path, {"checkpointId:zzz": {"unread": True}})
    s = run(db, tmp_path / "User")
    assert made == ["a", "b"] and s.records_added == 0
    made.clear()
    make_vscdb(path, chat("b", 3000, ["b1", "b2"]))
    assert run(db, tmp_path / "User").records_added == 2 and made == ["b"]
