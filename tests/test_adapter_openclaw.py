"""OpenClaw: per-agent openclaw-agent.sqlite databases (2026.9+) and the legacy JSONL
transcripts ingest completely, tables holding credentials or peer ids are never read, and
every bad input is quarantined with a reason while the rest loads."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from convarch.adapters import openclaw
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import PEER, REPO, contract_builder, tree_fingerprint
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "openclaw" / "contract"
PR = PEER / "portable-resume" / "openclaw"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "openclaw"

build = contract_builder("openclaw")
W1, W2, W3 = build.W1, build.W2, build.W3


def run(db: Path, root: Path):
    return ingest(Layout(db), [(openclaw, openclaw.resolve_root(root))])


# Counts read by hand. Databases (sqlite3 shell, one per agents/<id>/agent/): records =
# rows of session_nodes + session_windows + transcript_events; sessions = distinct session ids
# among them; messages = transcript_events rows of type "message" or "compaction" or
# "branch_summary" (the reduced {type, role, text} shape); no sample has a tool call.
# s-oc-05 declares schema_version 99999, which OpenClaw refuses; it is archived as it stands.
# jazzyalex JSONL: records = lines; messages = "message" + "custom_message" lines; tool calls =
# toolCall parts (small 1, large 2, schema_drift 1); its "compact" line is an unknown kind.
PEER_COUNTS = {
    "s-oc-01": (PR / "s-oc-01-basic", dict(files=1, sessions=1, messages=2, tool_calls=0, records=4)),
    "s-oc-02": (PR / "s-oc-02-multi-agent", dict(files=2, sessions=2, messages=4, tool_calls=0, records=8)),
    "s-oc-03": (PR / "s-oc-03-compaction-reset", dict(files=1, sessions=2, messages=4, tool_calls=0, records=7)),
    "s-oc-04": (PR / "s-oc-04-internal-filter", dict(files=1, sessions=3, messages=3, tool_calls=0, records=9)),
    "s-oc-05": (PR / "s-oc-05-corrupt-meta", dict(files=1, sessions=1, messages=1, tool_calls=0, records=3)),
    "jazzy-small": (JAZZY / "small.jsonl", dict(files=1, sessions=1, messages=3, tool_calls=1, records=5)),
    "jazzy-large": (JAZZY / "large.jsonl", dict(files=1, sessions=1, messages=7, tool_calls=2, records=11)),
    "jazzy-drift": (JAZZY / "schema_drift.jsonl", dict(files=1, sessions=1, messages=4, tool_calls=1, records=7)),
    "jazzy-folder": (JAZZY, dict(files=3, sessions=3, messages=14, tool_calls=4, records=23)),
}


@pytest.mark.parametrize("case", sorted(PEER_COUNTS))
def test_peer_samples_load_with_exact_counts(tmp_path, case):
    root, want = PEER_COUNTS[case]
    if not root.exists():
        pytest.skip(f"{root} not present")
    folder = root if root.is_dir() else root.parent
    before = tree_fingerprint(folder)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert tree_fingerprint(folder) == before
    assert (s.files_scanned, s.records_added, s.quarantined) == (want["files"], want["records"], 0)
    assert scalar(db, "select count(*) from sessions") == want["sessions"]
    assert scalar(db, "select count(*) from messages") == want["messages"]
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"]
    assert scalar(db, "select count(*) from tool_calls where not has_result") == 0
    assert scalar(db, "select count(*) from messages where \"timestamp\" is null") == 0
    if case == "s-oc-02":
        assert rows(db, "select session_id, agent_id from stg_records where kind = 'prompt' order by 1") == [
            ("sess-main-0001", "main"), ("sess-worker-0001", "worker")]
    if case == "s-oc-03":
        # a reset window starts a new conversation: no parent; the compaction is a boundary
        assert rows(db, "select session_id, parent_session_id, title from sessions order by 1") == [
            ("sess-compact-initial", None, "Window initial"), ("sess-compact-reset", None, "Window reset")]
        assert rows(db, "select kind, text from messages where role = 'system' order by line_no") == [
            ("compact_boundary", "Synthetic compaction kept first message"), ("system", None)]
    if case == "s-oc-04":
        assert rows(db, "select session_id, subtype from stg_records where record_type = 'session_node' "
                        "order by 1") == [("sess-cron-01", "cron"), ("sess-internal-01", "internal"),
                                         ("sess-operator-01", "operator")]
    if case == "jazzy-large":
        assert rows(db, "select harness_kind, text from messages where harness_kind is not null") == [
            ("custom_message", "System context injected before the turn.")]
        assert rows(db, "select cwd, model from sessions") == [("/tmp/large", "openclaw-large")]
    if case == "jazzy-drift":
        assert rows(db, "select record_type, kind from stg_records where kind = 'unknown'") == [("compact", "unknown")]
    again = run(db, root)
    assert (again.files_changed, again.records_added) == (0, 0)


def test_contract_store_sessions_messages_and_tools(tmp_path):
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    # main: 2 nodes + 3 windows + 19 events; ops: two 3-line transcripts (live and deleted)
    assert (s.files_scanned, s.records_added, s.quarantined) == (3, 30, 0)
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, message_count, "
                   "started_at::varchar from sessions order by started_at")
    assert got == [
        (build.OPS_GONE, None, "Check disk space", "/home/demo/weather-app", "claude-sonnet-4-5", 2,
         "2026-05-03 10:00:00"),
        (build.OPS_LIVE, None, "Rotate the logs", "/home/demo/weather-app", "claude-sonnet-4-5", 2,
         "2026-05-04 10:00:00"),
        (W1, None, "Units flag for the weather CLI", "/home/demo/weather-app", "claude-sonnet-4-5", 6,
         "2026-05-05 10:00:00"),
        (W2, W1, "Weather CLI units", "/home/demo/weather-app", "claude-sonnet-4-5", 5, "2026-05-05 10:10:00"),
        (W3, W2, "Find tests", "/home/demo/weather-app", "claude-haiku-4-5", 2, "2026-05-05 10:10:20"),
    ]
    assert rows(db, "select distinct agent_id from stg_records order by 1") == [("main",), ("ops",)]
    kinds = dict(rows(db, f"select kind, count(*) from messages where session_id = '{W2}' group by 1"))
    assert kinds == {"compact_boundary": 1, "prompt": 3, "response": 1}
    assert rows(db, f"select harness_kind, is_compact_summary from messages where session_id = '{W2}' "
                    "order by line_no") == [(None, True), ("custom_message", False), (None, False),
                                            (None, False), ("shell_escape", False)]
    calls = rows(db, "select call_id, tool_name, input ->> 'path', input ->> 'command', output_text, is_error "
                     "from tool_calls order by call_id")
    assert calls == [("call_read", "read", "src/cli.py", None, "import argparse", False),
                     ("call_test", "exec", None, "pytest -q", "1 failed", True)]
    assert rows(db, "select block_type, text, output_text, is_error from stg_blocks "
                    "where block_type in ('shell_command', 'thinking', 'image') order by line_no") == [
        ("thinking", "Read the CLI first.", None, None),
        ("image", None, None, None),
        ("shell_command", "git status --short", " M src/cli.py\n", False)]
    assert rows(db, f"select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
                    f"sum(cache_creation_tokens) from stg_records where session_id = '{W1}'") == [(4400, 180, 2200, 1100)]
    # parent links of the pi tree are kept
    assert rows(db, "select message_id, parent_id from stg_records where message_id = 'a0000004'") == [
        ("a0000004", "a0000003")]
    # tables holding credentials or messaging peer ids are never read
    assert scalar(db, "select count(*) from stg_records where raw like '%placeholder-never-read%' "
                      "or raw like '%peer-demo%'") == 0


def test_legacy_transcripts_beside_a_database_are_left_to_it(tmp_path):
    found = [sf.path.relative_to(CONTRACT).as_posix() for sf in openclaw.discover(openclaw.resolve_root(CONTRACT))]
    assert found == [
        "agents/main/agent/openclaw-agent.sqlite",
        f"agents/ops/sessions/{build.OPS_LIVE}.jsonl",
        f"agents/ops/sessions/{build.OPS_GONE}.jsonl.deleted.2026-05-03T09-00-00.000Z",
    ]
    # the sessions folder named as the root is archived anyway; it is the same session
    sessions = CONTRACT / "agents" / "main" / "sessions"
    db = tmp_path / "w.duckdb"
    s = run(db, sessions)
    assert (s.files_scanned, s.records_added) == (1, 9)
    assert rows(db, "select session_id, title from sessions") == [(W1, "Units flag for the weather CLI")]


def test_appended_transcript_lines_are_read_incrementally(tmp_path):
    root = tmp_path / ".openclaw"
    f = root / "agents" / "ops" / "sessions" / f"{build.OPS_LIVE}.jsonl"
    build.transcript(f, build.ops_events(build.OPS_LIVE, 0, "Rotate the logs", "Logs rotated."))
    with open(f, "a") as fh:
        fh.write("not json at all\n")
        fh.write('{"type": "message", "id": "f1", "parentId": "e0000000", "message": {"role": "us')
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert s.records_added == 3
    assert rows(db, "select line_no, reason from quarantine order by 1") == [(4, "invalid_json"), (5, "truncated_tail")]
    with open(f, "a") as fh:                  # OpenClaw finishes the line: only it is read
        fh.write('er", "content": "thanks", "timestamp": 1777975300000}}\n')
    s = run(db, root)
    assert s.records_added == 1
    assert rows(db, "select text, \"timestamp\"::varchar, session_id from messages where message_id = 'f1'") == [
        ("thanks", "2026-05-05 10:01:40", build.OPS_LIVE)]


def test_live_wal_database_is_read_whole_and_left_alone(tmp_path):
    agent = tmp_path / ".openclaw" / "agents" / "main" / "agent"
    con = build.write_db(agent / "openclaw-agent.sqlite", wal=True, keep_open=True)
    try:
        assert (agent / "openclaw-agent.sqlite-wal").stat().st_size > 0
        before = tree_fingerprint(agent)
        db = tmp_path / "w.duckdb"
        s = run(db, tmp_path / ".openclaw")
        assert tree_fingerprint(agent) == before
        assert (s.records_added, s.quarantined) == (24, 0)
        con.execute("insert into transcript_events values (?, 7, ?, ?)",
                    (W2, json.dumps(build.user("b0000007", "b0000006", 700, "one more")), build.ms(700)))
        s = run(db, tmp_path / ".openclaw")
        # read again whole: the rows are in time, each session's window and node right after
        # its last event (adapters/db_order.py), so the new event loads, and W2's window and
        # node, which moved after it; the rest stays where it was loaded
        assert (s.files_changed, s.records_added) == (1, 3)
        assert scalar(db, "select count(*) from stg_records") == 25
    finally:
        con.close()


def test_malformed_json_columns_quarantine_only_their_rows(tmp_path):
    nodes = json.loads(json.dumps(build.NODES))
    nodes[1]["entry_json"] = '{"sessionKey": "agent:main:subagent:7d3e", '
    db_path = tmp_path / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    build.write_db(db_path, nodes=nodes, raw_events=[(W3, 9, '{"type": "message", "message": {')])
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".openclaw")
    assert (s.records_added, s.quarantined) == (23, 2)
    got = rows(db, "select reason, error from quarantine order by line_no")
    # in time: the subagent's node right after its session's last event
    assert got == [
        ("malformed_row", f"openclaw transcript_events row {W3}#9: column event_json is not valid JSON"),
        ("malformed_row", "openclaw session_nodes row agent:main:subagent:7d3e: column entry_json is not valid JSON")]
    # the window still knows its parent and the subagent's messages still load
    assert rows(db, f"select parent_session_id, message_count from sessions where session_id = '{W3}'") == [(W2, 2)]


def test_file_that_is_not_sqlite_is_quarantined_as_unreadable(tmp_path):
    f = tmp_path / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    f.parent.mkdir(parents=True)
    f.write_text("this is not a database\n" * 50)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".openclaw")
    assert (s.records_added, s.quarantined) == (0, 1)
    (reason, error), = rows(db, "select reason, error from quarantine")
    assert reason == "unreadable_container" and "not a database" in error


def test_database_without_transcripts_is_quarantined(tmp_path):
    f = tmp_path / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    f.parent.mkdir(parents=True)
    sqlite3.connect(f).execute("create table auth_profile_store (store_key text)").connection.close()
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".openclaw")
    assert (s.records_added, s.quarantined) == (0, 1)
    assert "no transcript_events table" in scalar(db, "select error from quarantine")


def test_default_roots_and_overrides(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    assert openclaw.default_roots({}, home) == [home / ".openclaw", home / ".clawdbot", home / ".moldbot",
                                                home / ".moltbot"]
    assert default_targets(openclaw) == []
    shutil.copytree(CONTRACT, home / ".clawdbot")           # a store from before the rename
    assert [(a.NAME, r) for a, r in default_targets(openclaw)] == [("openclaw", home / ".clawdbot")]
    alt = tmp_path / "state"
    shutil.copytree(CONTRACT, alt)
    monkeypatch.setenv("CLAWDBOT_STATE_DIR", str(alt))
    assert default_targets(openclaw)[0][1] == alt
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "missing"))
    assert [r for _, r in default_targets(openclaw)] == [home / ".clawdbot"]


def test_resolve_root_accepts_each_level(tmp_path):
    agents = CONTRACT / "agents"
    db = agents / "main" / "agent" / "openclaw-agent.sqlite"
    for root, first in [(CONTRACT, db), (agents, db), (agents / "main", db), (agents / "main" / "agent", db),
                        (db, db), (agents / "ops", agents / "ops" / "sessions" / f"{build.OPS_LIVE}.jsonl")]:
        assert openclaw.resolve_root(root) == root
        assert next(iter(openclaw.discover(root))).path == first
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "x.sqlite-wal").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing", tmp_path / "x.sqlite-wal"):
        with pytest.raises(RootError):
            openclaw.resolve_root(bad)


def test_symlinked_database_is_skipped_with_a_reason(tmp_path):
    agent = tmp_path / ".openclaw" / "agents" / "main" / "agent"
    agent.mkdir(parents=True)
    os.symlink(CONTRACT / "agents" / "main" / "agent" / "openclaw-agent.sqlite", agent / "openclaw-agent.sqlite")
    s = run(tmp_path / "w.duckdb", tmp_path / ".openclaw")
    assert s.records_added == 0
    assert dict(s.skipped)[str(agent / "openclaw-agent.sqlite")].startswith("not a regular file")
