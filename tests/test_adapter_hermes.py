"""Hermes Agent: state.db (SQLite, WAL), profile databases and the legacy sessions/ files
ingest completely, and every bad input is quarantined with a reason while the rest loads."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from convarch.adapters import hermes
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import PEER, REPO, contract_builder, tree_fingerprint, write_jsonl
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "hermes" / "contract"
PR = PEER / "portable-resume" / "hermes"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "hermes"

build = contract_builder("hermes")
MAIN, CONT = build.MAIN, build.CONT


def run(db: Path, root: Path):
    return ingest(Layout(db), [(hermes, hermes.resolve_root(root))])


# Counts read by hand. state.db samples (sqlite3 shell): sessions = rows of `sessions`,
# messages = rows of `messages` (all user/assistant), tool calls = tool_calls entries (none),
# records = sessions + messages. s-hm-03 declares schema_version 1, which Hermes refuses;
# convarch archives it as it stands. jazzyalex legacy logs: records = 1 head line + one line per
# messages[] entry; messages = entries whose role is not "session_meta"; tool calls = entries
# of assistant tool_calls[] (small 0, large 1, schema_drift 1).
PEER_COUNTS = {
    "s-hm-01": (PR / "s-hm-01-user-basic", dict(files=1, sessions=1, messages=2, tool_calls=0, records=3)),
    "s-hm-02": (PR / "s-hm-02-parent-child", dict(files=1, sessions=2, messages=4, tool_calls=0, records=6)),
    "s-hm-03": (PR / "s-hm-03-unsupported-schema", dict(files=1, sessions=1, messages=1, tool_calls=0, records=2)),
    "jazzy-small": (JAZZY / "small.json", dict(files=1, sessions=1, messages=2, tool_calls=0, records=3)),
    "jazzy-large": (JAZZY / "large.json", dict(files=1, sessions=1, messages=4, tool_calls=1, records=6)),
    "jazzy-drift": (JAZZY / "schema_drift.json", dict(files=1, sessions=1, messages=3, tool_calls=1, records=5)),
    "jazzy-folder": (JAZZY, dict(files=3, sessions=3, messages=9, tool_calls=2, records=14)),
}


@pytest.mark.parametrize("case", sorted(PEER_COUNTS))
def test_peer_samples_load_with_exact_counts(tmp_path, case):
    root, want = PEER_COUNTS[case]
    if not root.exists():
        pytest.skip(f"{root} not present")
    before = tree_fingerprint(root if root.is_dir() else root.parent)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert tree_fingerprint(root if root.is_dir() else root.parent) == before
    assert (s.files_scanned, s.records_added, s.quarantined) == (want["files"], want["records"], 0)
    assert scalar(db, "select count(*) from sessions") == want["sessions"]
    assert scalar(db, "select count(*) from messages") == want["messages"]
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"]
    assert scalar(db, "select count(*) from tool_calls where not has_result") == 0
    if case.startswith("s-hm"):
        assert scalar(db, "select count(*) from messages where \"timestamp\" is null") == 0
    if case == "s-hm-02":
        assert rows(db, "select session_id, parent_session_id, title from sessions order by 1") == [
            ("hm000101-0101-4101-8101-010101010101", None, "parent root"),
            ("hm000102-0202-4202-8202-020202020202", "hm000101-0101-4101-8101-010101010101", "child subagent")]
    if case == "s-hm-01":
        # started_at is REAL seconds (1704110399.9999999999): rounded to the microsecond
        assert rows(db, "select started_at::varchar, cwd, model from sessions") == [
            ("2024-01-01 12:00:00", "/tmp/project", "synthetic-model")]
    if case == "jazzy-drift":
        assert rows(db, "select call_id, tool_name, input ->> 'query', output_text, is_error from tool_calls") == [
            ("call_drift", "memory", "session format", "No results.", True)]
    if case == "jazzy-large":
        assert rows(db, "select cwd, model, started_at::varchar from sessions") == [
            ("~/Repository/Codex-History", "gpt-5.2", "2026-04-29 20:05:00")]
        assert scalar(db, "select count(*) from stg_records where record_type = 'session_meta'") == 1
        assert rows(db, "select block_type, text from stg_blocks where block_type = 'thinking'") == [
            ("thinking", "Need a shell lookup.")]
    again = run(db, root)
    assert (again.files_changed, again.records_added) == (0, 0)


def test_contract_store_sessions_messages_and_tools(tmp_path):
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert (s.files_scanned, s.records_added, s.quarantined) == (1, 16, 0)    # 2 sessions + 14 messages
    got = rows(db, "select session_id, parent_session_id, title, cwd, git_branch, model, message_count, "
                   "started_at::varchar from sessions order by 1")
    assert got == [
        (MAIN, None, "Add a --units flag to the forecast CLI", "/home/demo/weather-app", "main",
         "anthropic/claude-sonnet-4.5", 9, "2026-05-05 10:00:00"),
        (CONT, MAIN, "Add a --units flag to the forecast CLI #2", "/home/demo/weather-app", "main",
         "anthropic/claude-sonnet-4.5", 5, "2026-05-05 10:09:00"),
    ]
    kinds = dict(rows(db, f"select kind, count(*) from messages where session_id = '{MAIN}' group by 1"))
    assert kinds == {"prompt": 2, "tool_use": 3, "tool_result": 3, "response": 1}
    assert rows(db, "select harness_kind, is_compact_summary from messages where harness_kind is not null "
                    "order by line_no") == [("compact_summary", True), ("system_reminder", False)]
    # both JSON sentinels of multimodal content are decoded
    assert rows(db, "select text from messages where kind = 'prompt' and harness_kind is null order by line_no") == [
        ("Add a --units flag to the forecast CLI (metric or imperial).",), ("Here is the error I get.",),
        ("Now add a test for it.",)]
    assert rows(db, "select block_type, media_type, data_chars from stg_blocks where block_type = 'image'") == [
        ("image", "image/png", 34)]
    calls = rows(db, "select call_id, tool_name, input ->> 'path', output_text, has_result from tool_calls "
                     "order by call_id")
    assert calls == [
        ("call_01", "terminal", None, '{"output": "cli.py\\nforecast.py", "exit_code": 0}', True),
        ("call_02", "read_file", "src/cli.py", "import argparse\n\nparser = argparse.ArgumentParser()", True),
        ("call_03", "patch", "src/cli.py", "Error: old_string not found in src/cli.py", True),
    ]
    assert rows(db, "select text from stg_blocks where block_type = 'thinking' order by line_no") == [
        ("Need to find the entry point.",), ("Two parametrized cases are enough.",)]
    # messages compaction archived keep their flags as subtype; tokens sit on the session rows only
    assert scalar(db, "select count(*) from stg_records where subtype = 'compacted'") == 4
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
                    "sum(cache_creation_tokens) from stg_records") == [(15000, 2200, 9500, 2000)]
    assert rows(db, "select \"timestamp\"::varchar, timestamp_raw from stg_records where message_id = '1'") == [
        ("2026-05-05 10:00:01", "1777975201.0")]


def test_live_wal_database_is_read_whole_and_left_alone(tmp_path):
    home = tmp_path / ".hermes"
    con = build.write_db(home / "state.db", wal=True, keep_open=True)
    try:
        assert (home / "state.db-wal").stat().st_size > 0           # commits not checkpointed
        before = tree_fingerprint(home)
        db = tmp_path / "w.duckdb"
        s = run(db, home)
        assert tree_fingerprint(home) == before
        assert (s.records_added, s.quarantined) == (16, 0)
        con.execute("insert into messages (session_id, role, content, timestamp) values (?, 'user', 'more', ?)",
                    (CONT, build.T0 + 700))
        s = run(db, home)
        # a commit that only reaches the -wal is a change: the database is read again whole;
        # its rows are in time, each session's right after its last message (adapters/db_order.py),
        # so only the new message and its session's row, which moved after it, load
        assert (s.files_changed, s.records_added) == (1, 2)
        assert scalar(db, "select count(*) from stg_records") == 17
        assert scalar(db, "select count(*) from messages where text = 'more'") == 1
        assert rows(db, "select file_epoch, count(*) from stg_records group by 1 order by 1") == [(1, 15), (2, 2)]
    finally:
        con.close()


def test_malformed_json_columns_quarantine_only_their_rows(tmp_path):
    data = json.loads(json.dumps(build.CONTRACT))
    data["messages"][1]["tool_calls"] = '[{"id": "call_01", "function": {'
    data["messages"][7]["content"] = build.NEW_JSON + '[{"type": "text", "text": "cut'
    data["sessions"][1]["model_config"] = "{max_iterations: 90}"
    build.write_db(tmp_path / ".hermes" / "state.db", data)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".hermes")
    assert (s.records_added, s.quarantined) == (13, 3)
    got = rows(db, "select reason, error, raw_text from quarantine order by line_no")
    assert [r[0] for r in got] == ["malformed_row"] * 3
    # in time, each session right after its last message (adapters/db_order.py)
    assert "hermes messages row 2: column tool_calls" in got[0][2] and '"function": {' in got[0][2]
    assert "hermes messages row 8: column content" in got[1][2]
    assert got[2][1] == f"hermes sessions row {CONT}: column model_config is not valid JSON"
    assert scalar(db, "select count(*) from messages") == 12
    # the continuation's messages still load although its session row did not
    assert scalar(db, f"select count(*) from messages where session_id = '{CONT}'") == 5
    # the call whose request row was lost is not listed as a call
    assert scalar(db, "select count(*) from tool_calls where call_id = 'call_01'") == 0


def test_file_that_is_not_sqlite_is_quarantined_as_unreadable(tmp_path):
    f = tmp_path / ".hermes" / "state.db"
    f.parent.mkdir(parents=True)
    f.write_text("this is not a database\n" * 50)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".hermes")
    assert (s.records_added, s.quarantined) == (0, 1)
    (reason, error), = rows(db, "select reason, error from quarantine")
    assert reason == "unreadable_container" and "not a database" in error


def test_database_without_hermes_tables_is_quarantined(tmp_path):
    f = tmp_path / ".hermes" / "state.db"
    f.parent.mkdir(parents=True)
    sqlite3.connect(f).execute("create table sessions (id text)").connection.close()
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".hermes")
    assert (s.records_added, s.quarantined) == (0, 1)
    assert "no messages table" in scalar(db, "select error from quarantine")


def legacy_home(home: Path) -> tuple[Path, Path]:
    """A Hermes home from before state.db: a session log and a gateway JSONL transcript."""
    log = home / "sessions" / "session_20250301_090000_abc123.json"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps({
        "session_id": "20250301_090000_abc123", "model": "gpt-5", "platform": "cli",
        "session_start": "2025-03-01T09:00:00+01:00", "last_updated": "2025-03-01T09:05:00+01:00",
        "cwd": "/home/demo/app", "message_count": 2,
        "messages": [{"role": "user", "content": "Rename the package"},
                     {"role": "assistant", "content": "Renamed app to demo_app."}],
    }))
    (home / "sessions" / "sessions.json").write_text(json.dumps({"agent:main:telegram:dm:1": {"session_id": "x"}}))
    transcript = home / "sessions" / "20250302_100000_def456.jsonl"
    write_jsonl(transcript, [
        {"role": "session_meta", "model": "gpt-5", "platform": "telegram", "timestamp": "2025-03-02T10:00:00"},
        {"role": "user", "content": "What changed today?", "timestamp": "2025-03-02T10:00:01"},
        {"role": "assistant", "content": "", "timestamp": "2025-03-02T10:00:02",
         "tool_calls": [build.call("call_9", "terminal", {"command": "git log --oneline -3"})]},
        {"role": "tool", "content": "a1 rename", "tool_call_id": "call_9", "timestamp": "2025-03-02T10:00:03"},
        "not json at all",
    ])
    with open(transcript, "a") as fh:                      # Hermes was killed mid-write
        fh.write('{"role": "assistant", "content": "One comm')
    return log, transcript


def test_legacy_session_files_load_when_there_is_no_database(tmp_path):
    home = tmp_path / ".hermes"
    _log, transcript = legacy_home(home)
    db = tmp_path / "w.duckdb"
    s = run(db, home)
    assert (s.files_scanned, s.records_added) == (2, 3 + 4)
    assert rows(db, "select session_id, cwd, model, started_at::varchar from sessions order by 1") == [
        ("20250301_090000_abc123", "/home/demo/app", "gpt-5", "2025-03-01 08:00:00"),
        ("20250302_100000_def456", None, "gpt-5", "2025-03-02 10:00:00")]
    assert rows(db, "select session_id, kind from messages order by session_id, line_no") == [
        ("20250301_090000_abc123", "prompt"), ("20250301_090000_abc123", "response"),
        ("20250302_100000_def456", "prompt"), ("20250302_100000_def456", "tool_use"),
        ("20250302_100000_def456", "tool_result")]
    assert rows(db, "select call_id, command, output_text from tool_calls") == [
        ("call_9", "git log --oneline -3", "a1 rename")]
    assert rows(db, "select line_no, reason from quarantine order by 1") == [(5, "invalid_json"), (6, "truncated_tail")]
    with open(transcript, "a") as fh:                       # the line is finished: only it is read
        fh.write('it: a1 rename."}\n')
    s = run(db, home)
    assert (s.records_added, scalar(db, "select count(*) from messages")) == (1, 6)


def test_legacy_files_beside_a_database_are_left_to_it(tmp_path):
    home = tmp_path / ".hermes"
    build.write_db(home / "state.db")
    log, transcript = legacy_home(home)
    assert [sf.path.name for sf in hermes.discover(hermes.resolve_root(home))] == ["state.db"]
    # the sessions folder or one file named as the root is archived anyway
    assert hermes.resolve_root(home / "sessions") == home / "sessions"
    assert sorted(sf.path.name for sf in hermes.discover(home / "sessions")) == sorted([log.name, transcript.name])
    db = tmp_path / "w.duckdb"
    assert run(db, log).records_added == 3
    assert rows(db, "select session_id from sessions") == [("20250301_090000_abc123",)]


def test_profile_databases_are_read_too(tmp_path):
    home = tmp_path / ".hermes"
    build.write_db(home / "state.db")
    other = json.loads(json.dumps(build.CONTRACT))
    for row in other["sessions"]:
        row["id"] = "p-" + row["id"]
        row["parent_session_id"] = row.get("parent_session_id") and "p-" + row["parent_session_id"]
    for row in other["messages"]:
        row["session_id"] = "p-" + row["session_id"]
    build.write_db(home / "profiles" / "work" / "state.db", other)
    legacy_home(home / "profiles" / "old")                     # a profile from before state.db
    found = [sf.path.relative_to(home).as_posix() for sf in hermes.discover(hermes.resolve_root(home))]
    assert found == ["state.db", "profiles/old/sessions/20250302_100000_def456.jsonl",
                     "profiles/old/sessions/session_20250301_090000_abc123.json", "profiles/work/state.db"]
    db = tmp_path / "w.duckdb"
    run(db, home)
    assert scalar(db, "select count(*) from sessions") == 6


def test_default_roots_and_override(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    assert hermes.default_roots({}, home) == [home / ".hermes"]
    assert default_targets(hermes) == []
    shutil.copytree(CONTRACT, home / ".hermes")
    assert [(a.NAME, r) for a, r in default_targets(hermes)] == [("hermes", home / ".hermes")]
    alt = tmp_path / "alt-hermes"
    shutil.copytree(CONTRACT, alt)
    monkeypatch.setenv("HERMES_HOME", str(alt))
    assert [r for _, r in default_targets(hermes)] == [alt, home / ".hermes"]


def test_resolve_root_accepts_each_level(tmp_path):
    assert hermes.resolve_root(CONTRACT) == CONTRACT
    assert hermes.resolve_root(CONTRACT / "state.db") == CONTRACT / "state.db"
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "state.db-wal").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing", tmp_path / "state.db-wal"):
        with pytest.raises(RootError):
            hermes.resolve_root(bad)


def test_symlinked_database_is_skipped_with_a_reason(tmp_path):
    home = tmp_path / ".hermes"
    home.mkdir()
    os.symlink(CONTRACT / "state.db", home / "state.db")
    s = run(tmp_path / "w.duckdb", home)
    assert s.records_added == 0 and dict(s.skipped)[str(home / "state.db")].startswith("not a regular file")
