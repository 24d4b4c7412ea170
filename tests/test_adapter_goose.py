"""goose: sessions.db (SQLite, WAL) and legacy <session>.jsonl files ingest completely, and
every bad input is quarantined with a reason while the rest loads."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from convarch.adapters import goose
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import PEER, REPO, contract_builder, tree_fingerprint, write_jsonl
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "goose" / "contract"
SAMPLES = PEER / "portable-resume" / "goose"

build = contract_builder("goose")


@pytest.fixture(autouse=True)
def no_goose_env(monkeypatch):
    monkeypatch.delenv("GOOSE_PATH_ROOT", raising=False)


def run(db: Path, root: Path):
    return ingest(Layout(db), [(goose, goose.resolve_root(root))])


# Counts read straight from each sample with the sqlite3 shell: `select count(*) from sessions`,
# `select count(*) from messages` (every row has role user/assistant), toolRequest blocks in
# content_json (none in these samples), and usage_ledger rows (records = sessions + messages +
# usage rows). s-go-05 declares schema version 99, which goose refuses; convarch archives it
# as it stands.
PEER_COUNTS = {
    "s-go-01-user-basic": dict(sessions=1, messages=2, tool_calls=0, records=3),
    "s-go-02-session-types": dict(sessions=6, messages=6, tool_calls=0, records=12),
    "s-go-03-parent-subagent": dict(sessions=2, messages=2, tool_calls=0, records=6),
    "s-go-04-archived": dict(sessions=1, messages=1, tool_calls=0, records=2),
    "s-go-05-unsupported-schema": dict(sessions=1, messages=0, tool_calls=0, records=1),
}


@pytest.mark.parametrize("case", sorted(PEER_COUNTS))
def test_peer_samples_load_with_exact_counts(tmp_path, case):
    root = SAMPLES / case
    if not root.exists():
        pytest.skip(f"{root} not present")
    want = PEER_COUNTS[case]
    before = tree_fingerprint(root)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert tree_fingerprint(root) == before
    assert (s.files_scanned, s.records_added, s.quarantined) == (1, want["records"], 0)
    assert scalar(db, "select count(*) from sessions") == want["sessions"]
    assert scalar(db, "select count(*) from messages") == want["messages"]
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"]
    assert scalar(db, "select count(*) from messages where \"timestamp\" is null") == 0
    if case == "s-go-03-parent-subagent":
        assert rows(db, "select session_id, parent_session_id from sessions order by 1") == [
            ("go030301-0301-4301-8301-030303030301", None),
            ("go030302-0302-4302-8302-030303030302", "go030301-0301-4301-8301-030303030301")]
        # usage_ledger rows: per-request tokens; their created_timestamp is in milliseconds here
        assert rows(db, "select sum(input_tokens), sum(output_tokens), min(\"timestamp\")::varchar "
                        "from stg_records where kind = 'token_count'") == [(80, 160, "2024-01-01 12:00:00")]
    if case == "s-go-02-session-types":
        assert rows(db, "select subtype from stg_records where record_type = 'session' order by 1") == [
            ("acp",), ("gateway",), ("hidden",), ("scheduled",), ("sub_agent",), ("user",)]
    again = run(db, root)
    assert (again.files_changed, again.records_added) == (0, 0)


def test_contract_store_sessions_messages_and_tools(tmp_path):
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert (s.files_scanned, s.records_added, s.quarantined) == (1, 18, 0)   # 2 sessions + 14 messages + 2 usage
    got = rows(db, "select session_id, parent_session_id, cwd, model, message_count, started_at::varchar "
                   "from sessions order by 1")
    assert got == [
        ("20260505_1", None, "/home/demo/weather-app", "claude-sonnet-4-5", 12, "2026-05-05 10:00:00"),
        ("20260505_2", "20260505_1", "/home/demo/weather-app", "claude-haiku-4-5", 2, "2026-05-05 10:00:30"),
    ]
    kinds = dict(rows(db, "select kind, count(*) from messages where session_id = '20260505_1' group by 1"))
    assert kinds == {"prompt": 3, "tool_use": 3, "tool_result": 3, "response": 3}
    # the compaction summary is a user message goose hides from the user
    assert rows(db, "select message_id, harness_kind, is_compact_summary from messages "
                    "where harness_kind is not null") == [("msg_20260505_1_9", "compact_summary", True)]
    assert rows(db, "select count(*) from messages where is_meta") == [(2,)]
    calls = rows(db, "select call_id, tool_name, input ->> 'command', output_text, is_error, has_result "
                     "from tool_calls order by call_id")
    assert calls == [
        ("toolu_01", "developer__shell", "ls src", "client.py\nforecast.py", False, True),
        ("toolu_02", "text_editor", "view", "def fetch(city): ...", False, True),   # pre-1.48 list form
        ("toolu_03", "developer__shell", "pytest -q", "1 failed", True, True),     # isError in the object form
    ]
    assert rows(db, "select block_type, media_type, data_chars from stg_blocks where block_type in "
                    "('image', 'thinking') order by 1") == [("image", "image/png", 12), ("thinking", None, None)]
    assert rows(db, "select \"timestamp\"::varchar from messages where message_id = 'msg_20260505_1_1'") == [
        ("2026-05-05 10:00:01",)]
    assert scalar(db, "select sum(cache_creation_tokens) from stg_records where kind = 'token_count'") == 1100


def test_live_wal_database_is_read_whole_and_left_alone(tmp_path):
    sessions = tmp_path / "goose" / "sessions"
    con = build.write_db(sessions / "sessions.db", wal=True, keep_open=True)
    try:
        assert (sessions / "sessions.db-wal").stat().st_size > 0          # commits not checkpointed
        before = tree_fingerprint(sessions)
        db = tmp_path / "w.duckdb"
        s = run(db, tmp_path / "goose")
        assert tree_fingerprint(sessions) == before
        assert (s.records_added, s.quarantined) == (18, 0)
        # a commit that only reaches the -wal is a change: the database is read again, whole
        con.execute("insert into messages (message_id, session_id, role, content_json, created_timestamp) "
                    "values ('msg_new', '20260505_2', 'user', '[{\"type\":\"text\",\"text\":\"more\"}]', ?)",
                    (build.T0 + 90,))
        s = run(db, tmp_path / "goose")
        # read again whole; the rows are in time, each session's right after its last message
        # (adapters/db_order.py), so the others stay where they were loaded and only the new
        # message and its session's row, which moved after it, load
        assert (s.files_changed, s.records_added) == (1, 2)
        assert scalar(db, "select count(*) from stg_records") == 19
        assert scalar(db, "select count(*) from messages where message_id = 'msg_new'") == 1
        assert rows(db, "select file_epoch, count(*) from stg_records group by 1 order by 1") == [(1, 17), (2, 2)]
        # as goose writes a message: its session's row changes too, and still only the tail loads
        con.execute("insert into messages (message_id, session_id, role, content_json, created_timestamp) "
                    "values ('msg_new2', '20260505_2', 'assistant', '[{\"type\":\"text\",\"text\":\"ok\"}]', ?)",
                    (build.T0 + 95,))
        con.execute("update sessions set updated_at = '2026-05-05 11:00:00', total_tokens = 999 where id = '20260505_2'")
        s = run(db, tmp_path / "goose")
        assert (s.files_changed, s.records_added) == (1, 2)
        assert scalar(db, "select count(*) from stg_records") == 20
    finally:
        con.close()


def test_malformed_json_column_quarantines_only_that_row(tmp_path):
    data = json.loads(json.dumps(build.CONTRACT))
    data["messages"][2]["content_json"] = '[{"type": "toolResponse", "id": "toolu_01", "toolResult": {'
    data["messages"][4]["metadata_json"] = "{userVisible: true}"
    data["sessions"][1]["model_config_json"] = "{'model_name': 'x'"
    build.write_db(tmp_path / "goose" / "sessions" / "sessions.db", data)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "goose")
    assert (s.records_added, s.quarantined) == (15, 3)
    got = rows(db, "select reason, raw_text, error from quarantine order by line_no")
    assert [r[0] for r in got] == ["malformed_row"] * 3
    # in time, each session right after its last message (adapters/db_order.py)
    assert "msg_20260505_1_3: column content_json" in got[0][1] and '"toolResult": {' in got[0][1]
    assert "msg_20260505_1_5: column metadata_json" in got[1][1]
    assert "sessions row 20260505_2: column model_config_json is not valid JSON" == got[2][2].removeprefix("goose ")
    assert "sessions row 20260505_2: column model_config_json" in got[2][1]
    assert scalar(db, "select count(*) from messages") == 12
    # the subagent's messages still load although its session row did not
    assert scalar(db, "select count(*) from messages where session_id = '20260505_2'") == 2


def test_file_that_is_not_sqlite_is_quarantined_as_unreadable(tmp_path):
    f = tmp_path / "goose" / "sessions" / "sessions.db"
    f.parent.mkdir(parents=True)
    f.write_text("this is not a database\n" * 50)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "goose")
    assert (s.records_added, s.quarantined) == (0, 1)
    (reason, error), = rows(db, "select reason, error from quarantine")
    assert reason == "unreadable_container" and "not a database" in error


def test_database_without_goose_tables_is_quarantined(tmp_path):
    f = tmp_path / "goose" / "sessions" / "sessions.db"
    f.parent.mkdir(parents=True)
    sqlite3.connect(f).execute("create table other (x)").connection.close()
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "goose")
    assert (s.records_added, s.quarantined) == (0, 1)
    assert "no messages, sessions table" in scalar(db, "select error from quarantine")


def legacy_store(folder: Path) -> Path:
    f = folder / "20250101_3.jsonl"
    write_jsonl(f, [
        {"working_dir": "/home/demo/app", "description": "Fix the build", "schedule_id": None,
         "message_count": 3, "total_tokens": 100, "input_tokens": 80, "output_tokens": 20},
        {"id": "m1", "role": "user", "created": 1735725600, "content": [{"type": "text", "text": "Fix the build"}],
         "metadata": {"userVisible": True, "agentVisible": True}},
        {"role": "assistant", "created": 1735725601, "content": [build.request("call_1", "developer__shell",
                                                                               {"command": "make"})]},
        {"role": "user", "created": 1735725602, "content": [
            {"type": "toolResponse", "id": "call_1", "toolResult": {"status": "error", "error": "exit 2"}}]},
        "not json at all",
    ])
    with open(f, "a") as fh:                     # goose was killed mid-write
        fh.write('{"role": "assistant", "created": 1735725603, "content": [{"type": "te')
    return f


def test_legacy_jsonl_sessions_load(tmp_path):
    f = legacy_store(tmp_path / "goose" / "sessions")
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "goose")
    assert (s.files_scanned, s.records_added) == (1, 4)
    assert rows(db, "select session_id, cwd, message_count, started_at::varchar from sessions") == [
        ("20250101_3", "/home/demo/app", 3, "2025-01-01 10:00:00")]
    assert rows(db, "select kind from messages order by line_no") == [("prompt",), ("tool_use",), ("tool_result",)]
    assert rows(db, "select call_id, output_text, is_error from tool_calls") == [("call_1", "exit 2", True)]
    assert rows(db, "select line_no, reason from quarantine order by 1") == [(5, "invalid_json"), (6, "truncated_tail")]
    # the agent finishes the line: only it is read
    with open(f, "a") as fh:
        fh.write('xt", "text": "Fixed."}]}\n')
    s = run(db, tmp_path / "goose")
    assert (s.records_added, scalar(db, "select count(*) from messages")) == (1, 4)


def test_legacy_files_beside_a_database_are_left_to_it(tmp_path):
    sessions = tmp_path / "goose" / "sessions"
    build.write_db(sessions / "sessions.db")
    legacy = legacy_store(sessions)
    assert [sf.path.name for sf in goose.discover(goose.resolve_root(tmp_path / "goose"))] == ["sessions.db"]
    db = tmp_path / "w.duckdb"
    assert run(db, legacy).records_added == 4               # one legacy file named as the root
    assert rows(db, "select session_id from sessions") == [("20250101_3",)]


def test_text_timestamps_and_millisecond_epochs(tmp_path):
    data = json.loads(json.dumps(build.CONTRACT))
    data["sessions"][0]["created_at"] = "2026-05-05 12:00:00.500+02:00"   # sqlx DateTime<Utc> text
    data["sessions"][1]["created_at"] = "2026-05-05T10:00:30Z"
    data["messages"][0]["created_timestamp"] = (build.T0 + 1) * 1000
    build.write_db(tmp_path / "goose" / "sessions" / "sessions.db", data)
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "goose")
    got = rows(db, "select session_id, \"timestamp\"::varchar, timestamp_raw from stg_records "
                   "where record_type = 'session' or message_id = 'msg_20260505_1_1' "
                   "order by record_type = 'session' desc, session_id, line_no")
    assert got == [
        ("20260505_1", "2026-05-05 10:00:00.5", "2026-05-05 12:00:00.500+02:00"),
        ("20260505_2", "2026-05-05 10:00:30", "2026-05-05T10:00:30Z"),
        ("20260505_1", "2026-05-05 10:00:01", str((build.T0 + 1) * 1000)),
    ]


def test_default_roots_and_overrides(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    env = {"XDG_DATA_HOME": str(home / ".local" / "share")}
    assert goose.default_roots(env, home)[0] == home / ".local" / "share" / "goose"
    assert home / "Library" / "Application Support" / "Block" / "goose" in goose.default_roots(env, home)
    assert goose.default_roots({"GOOSE_PATH_ROOT": "relative/x"}, home)[0] == home / ".local" / "share" / "goose"
    # the XDG data home holds a store: it is found by default
    shutil.copytree(CONTRACT, home / ".local" / "share" / "goose")
    assert [(a.NAME, r) for a, r in default_targets(goose)] == [
        ("goose", home / ".local" / "share" / "goose" / "sessions")]
    # GOOSE_PATH_ROOT moves every goose folder under <root>/data
    alt = tmp_path / "alt"
    shutil.copytree(CONTRACT, alt / "data")
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(alt))
    assert default_targets(goose)[0][1] == alt / "data" / "sessions"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    shutil.copytree(CONTRACT, tmp_path / "xdg" / "goose")
    found = [r for _, r in default_targets(goose)]
    assert found[:2] == [alt / "data" / "sessions", tmp_path / "xdg" / "goose" / "sessions"]


def test_resolve_root_accepts_each_level(tmp_path):
    sessions = CONTRACT / "sessions"
    assert goose.resolve_root(CONTRACT) == sessions
    assert goose.resolve_root(sessions) == sessions
    assert goose.resolve_root(sessions / "sessions.db") == sessions / "sessions.db"
    (tmp_path / "root" / "data").mkdir(parents=True)
    shutil.copytree(sessions, tmp_path / "root" / "data" / "sessions")
    assert goose.resolve_root(tmp_path / "root") == tmp_path / "root" / "data" / "sessions"
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing"):
        with pytest.raises(RootError):
            goose.resolve_root(bad)


def test_symlinked_database_is_skipped_with_a_reason(tmp_path):
    sessions = tmp_path / "goose" / "sessions"
    sessions.mkdir(parents=True)
    os.symlink(CONTRACT / "sessions" / "sessions.db", sessions / "sessions.db")
    s = run(tmp_path / "w.duckdb", tmp_path / "goose")
    assert s.records_added == 0 and dict(s.skipped)[str(sessions / "sessions.db")].startswith("not a regular file")
