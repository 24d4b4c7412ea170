"""Crush: per-project .crush/crush.db stores (SQLite, WAL) are found through the configured
list, crush's own projects.json and --root, ingest completely, and every bad input is
quarantined with a reason while the rest loads."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import PEER, REPO, contract_builder, tree_fingerprint
from convarch.adapters import crush
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "crush" / "contract"
SAMPLES = PEER / "portable-resume" / "crush"

build = contract_builder("crush")


def run(db: Path, root: Path):
    return ingest(Layout(db), [(crush, crush.resolve_root(root))])


# Counts read straight from each sample with the sqlite3 shell: `select count(*) from sessions`,
# `select count(*) from messages` (roles user/assistant only), tool_call parts in `parts`
# (none in these samples); records = sessions + messages rows. s-cr-03 stops at migration
# 20250624000000 (3 of 7), which portable-resume refuses; convarch archives it as it stands.
PEER_COUNTS = {
    "s-cr-01-user-basic": dict(sessions=1, messages=2, tool_calls=0, records=3),
    "s-cr-02-parent-child": dict(sessions=2, messages=3, tool_calls=0, records=5),
    "s-cr-03-unsupported-schema": dict(sessions=1, messages=1, tool_calls=0, records=2),
}


@pytest.mark.parametrize("case", sorted(PEER_COUNTS))
def test_peer_samples_load_with_exact_counts(tmp_path, case):
    root = SAMPLES / case                        # the project folder: .crush/crush.db inside
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
    # the cwd is the project folder that holds .crush; the samples' times are milliseconds
    assert scalar(db, "select min(cwd) from sessions") == str(root)
    assert scalar(db, "select min(started_at)::varchar from sessions") == "2024-01-01 12:00:00"
    if case == "s-cr-02-parent-child":
        assert rows(db, "select session_id, parent_session_id, title from sessions order by 1") == [
            ("cr000101-0101-4101-8101-010101010101", None, "parent session"),
            ("cr000102-0202-4202-8202-020202020202", "cr000101-0101-4101-8101-010101010101", "child session")]
    if case == "s-cr-03-unsupported-schema":
        assert scalar(db, "select agent_version from sessions") == "20250624000000"
    again = run(db, root)
    assert (again.files_changed, again.records_added) == (0, 0)


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("crush-contract") / "w.duckdb"
    s = run(db, CONTRACT)
    assert (s.files_scanned, s.records_added, s.quarantined) == (1, 16, 0)   # 2 sessions + 14 messages
    return db


def test_contract_sessions_and_kinds(contract_db):
    db = contract_db
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, message_count, started_at::varchar, "
                   "agent_version from sessions order by started_at")
    assert got == [
        (build.MAIN, None, "Cache the forecast responses", str(CONTRACT), "claude-sonnet-4-5", 12,
         "2026-05-08 09:00:00", "20260127000000"),
        (build.SUB, build.MAIN, "Find cache helpers", str(CONTRACT), "claude-haiku-4-5", 2,
         "2026-05-08 09:00:41", "20260127000000"),
    ]
    kinds = rows(db, "select message_id, subtype, role, kind, harness_kind, is_compact_summary from stg_records "
                     "where session_id = ? and record_type = 'message' order by line_no", [build.MAIN])
    assert kinds == [
        ("msg-main-01", None, "user", "prompt", None, False),
        ("msg-main-02", "tool_use", "assistant", "tool_use", None, False),
        ("msg-main-03", None, "user", "tool_result", None, False),
        ("msg-main-04", "tool_use", "assistant", "tool_use", None, False),
        ("msg-main-05", None, "user", "tool_result", None, False),
        ("msg-main-06", "end_turn", "assistant", "response", None, False),
        ("msg-main-07", "tool_use", "assistant", "tool_use", None, False),
        ("msg-main-08", None, "user", "tool_result", None, False),
        ("msg-main-09", None, "user", "prompt", "shell_escape", False),
        ("msg-main-10", "end_turn", "assistant", "response", None, True),
        ("msg-main-11", None, "user", "prompt", None, False),
        ("msg-main-12", "canceled", "assistant", "thinking", None, False),
    ]
    # tokens exist per session only: they sit on the session's metadata line
    assert rows(db, "select sum(input_tokens), sum(output_tokens) from stg_records where kind = 'metadata'") == [(51300, 1340)]
    assert scalar(db, "select \"timestamp\"::varchar from stg_records where message_id = 'msg-main-02'") == "2026-05-08 09:00:02"


def test_contract_tools_and_blocks(contract_db):
    db = contract_db
    assert rows(db, "select call_id, tool_name, input ->> 'command', output_text, is_error, has_result "
                    "from tool_calls order by call_id") == [
        ("call_agent_1", "agent", None, "There are none yet.", False, True),
        ("call_bash_1", "bash", "pytest -q", "1 failed, 4 passed\nexit code 1", True, True),
        ("call_view_1", "view", None, "def fetch(city): ...", False, True),
    ]
    assert rows(db, "select block_type, text, output_text, media_type, data_chars from stg_blocks "
                    "where block_type in ('image', 'thinking', 'shell_command') order by line_no, block_index") == [
        ("image", "/home/demo/weather-app/docs/flow.png", None, "image/png", 24),
        ("thinking", "The client module is where requests are made.", None, None, None),
        ("shell_command", "git status --short", " M src/client.py\n", None, None),
        ("thinking", "Use the logging module.", None, None, None),
    ]
    assert scalar(db, "select count(*) from stg_blocks where block_type = 'finish'") == 0


def test_live_wal_database_is_read_whole_and_left_alone(tmp_path):
    data_dir = tmp_path / "weather-app" / ".crush"
    con = build.write_db(data_dir / "crush.db", wal=True, keep_open=True)
    try:
        assert (data_dir / "crush.db-wal").stat().st_size > 0          # commits not checkpointed
        before = tree_fingerprint(data_dir)
        db = tmp_path / "w.duckdb"
        s = run(db, tmp_path / "weather-app")
        assert tree_fingerprint(data_dir) == before
        assert (s.records_added, s.quarantined) == (16, 0)
        # a message as Crush writes it, its session's count and update time with it (at T0 + 95:
        # in the second the main session's row was last written, T0 + 90, that row, given after
        # the messages of its time, would load again too)
        con.execute("insert into messages (id, session_id, role, parts, created_at, updated_at) values "
                    "('msg-new', ?, 'user', '[{\"type\":\"text\",\"data\":{\"text\":\"more\"}}]', ?, ?)",
                    (build.SUB, build.T0 + 95, build.T0 + 95))
        con.execute("update sessions set message_count = message_count + 1, updated_at = ? where id = ?",
                    (build.T0 + 95, build.SUB))
        s = run(db, tmp_path / "weather-app")
        # a commit that only reaches the -wal is a change: the database is read again whole;
        # its rows are in time, each session's after its last message or its last write, the
        # later (adapters/db_order.py), so only the new message and its session's row, which
        # moved after it, load
        assert (s.files_changed, s.records_added) == (1, 2)
        assert scalar(db, "select count(*) from stg_records") == 17
        assert scalar(db, "select count(*) from messages where text = 'more'") == 1
        assert rows(db, "select file_epoch, count(*) from stg_records group by 1 order by 1") == [(1, 15), (2, 2)]
    finally:
        con.close()


def test_malformed_parts_quarantine_only_that_row(tmp_path):
    data = json.loads(json.dumps(build.CONTRACT))
    data["messages"][2]["parts"] = '[{"type": "tool_result", "data": {'
    data["sessions"][0]["todos"] = "not json either"          # todos are not conversation: kept as text
    build.write_db(tmp_path / "p" / ".crush" / "crush.db", data)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "p")
    assert (s.records_added, s.quarantined) == (15, 1)
    (reason, error, raw), = rows(db, "select reason, error, raw_text from quarantine")
    assert reason == "malformed_row"
    assert error == "crush messages row msg-main-03: column parts is not valid JSON"
    assert '"tool_result", "data": {' in raw
    assert scalar(db, "select count(*) from tool_calls where has_result") == 2


def test_file_that_is_not_sqlite_and_foreign_database_are_quarantined(tmp_path):
    bad = tmp_path / "a" / ".crush" / "crush.db"
    bad.parent.mkdir(parents=True)
    bad.write_text("this is not a database\n" * 50)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "a")
    assert (s.records_added, s.quarantined) == (0, 1)
    (reason, error), = rows(db, "select reason, error from quarantine")
    assert reason == "unreadable_container" and "not a database" in error
    other = tmp_path / "b" / ".crush" / "crush.db"
    other.parent.mkdir(parents=True)
    sqlite3.connect(other).execute("create table sessions (id)").connection.close()
    s = run(tmp_path / "w2.duckdb", tmp_path / "b")
    assert (s.records_added, s.quarantined) == (0, 1)
    assert "no messages table" in scalar(tmp_path / "w2.duckdb", "select error from quarantine")


def test_default_roots_configured_list_and_projects_json(tmp_path, monkeypatch, isolated_home):
    home = isolated_home
    data = home / ".local" / "share" / "crush"
    assert crush.default_roots({"XDG_DATA_HOME": str(home / ".local" / "share")}, home) == [data, home / ".crush"]
    assert crush.default_roots({"CRUSH_GLOBAL_DATA": str(tmp_path / "g")}, home)[0] == tmp_path / "g"
    assert default_targets(crush) == []
    # crush's own project list: every project it ran in, with its data dir
    p1, p2, p3 = tmp_path / "proj1", tmp_path / "proj2", tmp_path / "proj3"
    for p in (p1, p2):
        shutil.copytree(CONTRACT, p)
    (p3 / "state").mkdir(parents=True)
    build.write_db(p3 / "state" / "crush.db")                           # options.data_directory = "state"
    data.mkdir(parents=True)
    (data / "projects.json").write_text(json.dumps({"projects": [
        {"path": str(p2), "data_dir": str(p2 / ".crush"), "last_accessed": "2026-05-08T09:00:00Z"},
        {"path": str(p1), "data_dir": str(p1 / ".crush"), "last_accessed": "2026-05-07T09:00:00Z"},
        {"path": str(p3), "data_dir": "state", "last_accessed": "2026-05-06T09:00:00Z"},
        {"path": str(tmp_path / "gone"), "data_dir": str(tmp_path / "gone" / ".crush")},
        "not an object",
    ]}))
    assert [r for _a, r in default_targets(crush)] == [data]
    found = [sf.path for sf in crush.discover(data)]
    assert found == [p1 / ".crush" / "crush.db", p2 / ".crush" / "crush.db", p3 / "state" / "crush.db"]
    # the configured list comes first; ~/.crush is found too (crush run from the home folder)
    shutil.copytree(CONTRACT / ".crush", home / ".crush")
    monkeypatch.setenv("CONVARCH_CRUSH_PROJECTS", os.pathsep.join([str(p1), str(tmp_path / "nothing-here")]))
    assert [r for _a, r in default_targets(crush)] == [p1 / ".crush", data, home / ".crush"]
    db = tmp_path / "w.duckdb"
    s = ingest(Layout(db), default_targets(crush))
    assert (s.files_scanned, s.records_added) == (4, 64)
    assert scalar(db, "select count(distinct source_file) from stg_records") == 4
    # a projects.json crush could not have written is ignored, not fatal
    (data / "projects.json").write_text("{broken")
    assert list(crush.discover(data)) == []


def test_resolve_root_each_level(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(CONTRACT, project)
    data_dir = project / ".crush"
    assert crush.resolve_root(project) == data_dir
    assert crush.resolve_root(data_dir) == data_dir
    assert crush.resolve_root(data_dir / "crush.db") == data_dir / "crush.db"
    assert [sf.path for sf in crush.discover(crush.resolve_root(data_dir / "crush.db"))] == [data_dir / "crush.db"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing", data_dir / "crush.db-wal"):
        with pytest.raises(RootError):
            crush.resolve_root(bad)


def test_symlinked_database_is_skipped_with_a_reason(tmp_path):
    data_dir = tmp_path / "proj" / ".crush"
    data_dir.mkdir(parents=True)
    os.symlink(CONTRACT / ".crush" / "crush.db", data_dir / "crush.db")
    s = run(tmp_path / "w.duckdb", tmp_path / "proj")
    assert s.records_added == 0 and dict(s.skipped)[str(data_dir / "crush.db")].startswith("not a regular file")
