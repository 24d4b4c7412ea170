"""OpenCode: opencode.db (SQLite, WAL), the legacy storage/ JSON tree and export documents
ingest completely, and every bad input is quarantined with a reason while the rest loads."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from convarch.adapters import opencode
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.publish import publish
from convarch.etl.state import open_state
from conftest import PEER, REPO, contract_builder, tree_fingerprint
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "opencode" / "contract"
PR = PEER / "portable-resume" / "opencode"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "opencode"

build = contract_builder("opencode")
MAIN, CHILD = build.MAIN, build.CHILD


@pytest.fixture(autouse=True)
def no_opencode_env(monkeypatch):
    monkeypatch.delenv("OPENCODE_DB", raising=False)


def run(db: Path, root: Path):
    return ingest(Layout(db), [(opencode, opencode.resolve_root(root))])


# Counts read by hand from each sample. Databases (sqlite3 shell): sessions = rows of
# `session`, messages = rows of `message`, tool calls = `part` rows whose data has
# "type":"tool", records = sessions + messages + parts whose message_id matches no message.
# File trees: records = JSON files under session/, message/ and part/; messages = files
# under message/; tool calls = part files with "type":"tool". s-ope-05 has a `session`
# table only (the "unsupported schema" case): quarantined whole as unreadable. s-ope-06 is an
# `opencode export` document, passed as a single-file root. s-ope-07 carries a garbage hot
# -journal, which SQLite ignores when the private copy is opened.
PEER_COUNTS = {
    "pr-s-ope-01": (PR / "s-ope-01" / "root", dict(files=1, sessions=1, messages=2, tool_calls=1, records=3, bad=0)),
    "pr-s-ope-02": (PR / "s-ope-02" / "root", dict(files=5, sessions=1, messages=2, tool_calls=0, records=5, bad=0)),
    "pr-s-ope-03": (PR / "s-ope-03" / "root", dict(files=1, sessions=1, messages=2, tool_calls=0, records=3, bad=0)),
    "pr-s-ope-04": (PR / "s-ope-04" / "root", dict(files=1, sessions=1, messages=2, tool_calls=1, records=4, bad=0)),
    "pr-s-ope-05": (PR / "s-ope-05" / "root", dict(files=1, sessions=0, messages=0, tool_calls=0, records=0, bad=1)),
    "pr-s-ope-06": (PR / "s-ope-06" / "root" / "exports" / "session.json",
                    dict(files=1, sessions=1, messages=2, tool_calls=0, records=3, bad=0)),
    "pr-s-ope-07": (PR / "s-ope-07" / "root", dict(files=1, sessions=1, messages=2, tool_calls=1, records=3, bad=0)),
    "jazzy-storage_v2": (JAZZY / "storage_v2", dict(files=22, sessions=2, messages=6, tool_calls=2, records=22, bad=0)),
    "jazzy-storage_legacy": (JAZZY / "storage_legacy",
                             dict(files=5, sessions=1, messages=2, tool_calls=1, records=5, bad=0)),
    "gnomon": (PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "opencode",
               dict(files=9, sessions=1, messages=2, tool_calls=3, records=9, bad=0)),
}


@pytest.mark.parametrize("name", sorted(PEER_COUNTS))
def test_peer_samples_load_with_exact_counts(tmp_path, name):
    root, want = PEER_COUNTS[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    before = tree_fingerprint(root if root.is_dir() else root.parent)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert tree_fingerprint(root if root.is_dir() else root.parent) == before
    assert (s.files_scanned, s.records_added, s.quarantined) == (want["files"], want["records"], want["bad"])
    assert scalar(db, "select count(*) from sessions") == want["sessions"]
    assert scalar(db, "select count(*) from messages") == want["messages"]
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"]
    assert scalar(db, "select count(*) from messages where \"timestamp\" is null") == 0
    check = PEER_DETAILS.get(name)
    if check:
        check(db)
    if name in ("pr-s-ope-01", "jazzy-storage_v2"):       # one database, one tree: nothing new twice
        again = run(db, root)
        assert (again.files_changed, again.records_added) == (0, 0)


def _orphan_part_is_kept(db):
    assert rows(db, "select session_id, message_id, text from stg_records where record_type = 'part'") == [
        ("ses-sql", "missing", "orphan")]


def _binary_part_is_an_image_block(db):
    assert rows(db, "select block_type, data_chars from stg_blocks order by block_index") == [
        ("image", 4), ("thinking", None), ("text", None)]


def _flat_part_finds_its_session(db):
    assert rows(db, "select session_id, call_id, output_text from tool_calls") == [
        ("s_stage0_drift", "call_legacy_1", "# Title\n\nBody\n")]


def _tool_parts_without_call_ids(db):
    assert rows(db, "select call_id, tool_name, output_text, is_error from tool_calls order by call_id") == [
        ("p3", "edit", None, False), ("p4", "bash", None, False), ("p5", "grep", "no matches", True)]


def _unsupported_schema_is_unreadable(db):
    assert rows(db, "select reason, error from quarantine") == [
        ("unreadable_container", "unreadable sqlite container: ValueError: not an OpenCode database: "
                                 "no message table")]


PEER_DETAILS = {
    "pr-s-ope-04": _orphan_part_is_kept,
    "pr-s-ope-03": _binary_part_is_an_image_block,
    "pr-s-ope-05": _unsupported_schema_is_unreadable,
    "jazzy-storage_legacy": _flat_part_finds_its_session,
    "gnomon": _tool_parts_without_call_ids,
}


def test_contract_database(tmp_path):
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert (s.files_scanned, s.records_added, s.quarantined) == (1, 11, 0)     # 2 sessions + 9 messages
    got = rows(db, "select session_id, parent_session_id, cwd, model, message_count, agent_version, "
                   "started_at::varchar from sessions order by started_at")
    assert got == [
        (MAIN, None, build.CWD, "claude-sonnet-4-5", 7, "1.2.10", "2026-05-13 10:00:00"),
        (CHILD, MAIN, build.CWD, "claude-sonnet-4-5", 2, "1.2.10", "2026-05-13 10:00:20"),
    ]
    kinds = rows(db, "select kind, harness_kind, is_compact_summary, count(*) from messages "
                     "where session_id = ? group by all order by 1, 2, 3", [MAIN])
    assert kinds == [("compact_boundary", "compaction", False, 1), ("prompt", None, False, 2),
                     ("response", None, True, 1), ("tool_use", None, False, 3)]
    # the typed prompt, without the text OpenCode added for the attached file
    assert scalar(db, "select text from messages where message_id = 'msg_e1a0000001AbCdEfGhIjKlMn'") == \
        "Add retries to the forecast client"
    assert rows(db, "select parent_id, input_tokens, output_tokens, cache_creation_tokens from messages "
                    "where message_id = 'msg_e1a0000002AbCdEfGhIjKlMn'") == [
        ("msg_e1a0000001AbCdEfGhIjKlMn", 1200, 120, 1100)]
    calls = rows(db, "select call_id, tool_name, output_text, is_error, has_result from tool_calls order by call_id")
    assert calls == [
        ("toolu_01Read", "read", "def fetch(city):\n    return http.get(city)\n", False, True),
        ("toolu_02Edit", "edit", "", False, True),
        ("toolu_03Bash", "bash", "Command exited with code 1", True, True),
        ("toolu_04Task", "task", "None exist yet.", False, True),
        ("toolu_05Edit", "edit", None, False, False),             # still running: no result yet
    ]
    blocks = rows(db, "select block_index, block_type from stg_blocks where message_id = "
                      "'msg_e1a0000002AbCdEfGhIjKlMn' order by block_index")
    assert [b[1] for b in blocks] == ["step_start", "thinking", "text", "tool_use", "tool_result", "step_finish"]


def test_file_tree_holds_the_same_conversation(tmp_path):
    build.write_tree(tmp_path / "data" / "storage")
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "data")
    assert (s.files_scanned, s.records_added, s.quarantined) == (32, 32, 0)   # 2 sessions, 9 messages, 21 parts
    ref = tmp_path / "ref.duckdb"
    run(ref, CONTRACT)
    same = ("select session_id, parent_session_id, cwd, model, message_count from sessions order by 1",
            "select session_id, message_id, role, kind, harness_kind, \"timestamp\", input_tokens from messages "
            "where message_id <> 'msg_e1a0000006AbCdEfGhIjKlMn' order by 2",
            "select session_id, call_id, tool_name, input, output_text, is_error, has_result from tool_calls order by 2",
            "select session_id, message_id, block_type, text, call_id from stg_blocks order by all")
    for q in same:
        assert rows(db, q) == rows(ref, q), q
    # the request to compact is only told by its compaction part, which the message file lacks
    assert rows(db, "select kind, harness_kind from messages where message_id = 'msg_e1a0000006AbCdEfGhIjKlMn'") == [
        ("prompt", None)]
    # in the tree a message's text lives in its part files
    assert scalar(db, "select count(*) from messages where text is not null") == 0
    assert scalar(db, "select count(*) from stg_records where record_type = 'part' and text is not null") == 9


def test_tree_beside_a_database_is_left_to_it(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(CONTRACT, data)
    build.write_tree(data / "storage")
    assert [sf.path.name for sf in opencode.discover(opencode.resolve_root(data))] == ["opencode.db"]
    s = run(tmp_path / "w.duckdb", data / "storage")                 # named explicitly, it is read
    assert s.files_scanned == 32


def test_a_tree_read_before_its_database_existed_gives_way_to_it(tmp_path):
    """OpenCode 1.2 takes its JSON tree into a new opencode.db and reads the tree no more; so
    does discovery, and the tree's files, no longer found, were kept as deleted beside the
    database's copy of their sessions: each counted twice (14 messages of 7). A deleted
    file whose every session a database of the source holds gives way to it; one holding a
    session the database lacks stays."""
    data = tmp_path / "data"
    build.write_tree(data / "storage")
    extra = data / "storage" / "message" / "ses_only_in_tree" / "msg_only_in_tree.json"
    extra.parent.mkdir()
    extra.write_text(json.dumps({"id": "msg_only_in_tree", "sessionID": "ses_only_in_tree", "role": "user",
                                 "time": {"created": 1778666401000}}))
    db = tmp_path / "w.duckdb"
    assert run(db, data).records_added == 33
    shutil.copy(CONTRACT / "opencode.db", data / "opencode.db")        # the upgrade
    before = tree_fingerprint(data / "storage")
    s = run(db, data)
    assert tree_fingerprint(data / "storage") == before
    assert (s.files_scanned, s.records_added) == (1, 11)
    assert scalar(db, "select count(*) from source_files where gone") == 33
    ref = tmp_path / "ref.duckdb"
    run(ref, CONTRACT)
    for q in ("select session_id, parent_session_id, message_count, record_count, title from sessions "
              "where session_id <> 'ses_only_in_tree' order by 1",
              "select session_id, message_id, role, kind, \"timestamp\" from messages "
              "where session_id <> 'ses_only_in_tree' order by 2",
              "select session_id, call_id, tool_name, output_text from tool_calls order by 2"):
        assert rows(db, q) == rows(ref, q), q
    assert rows(db, "select message_count, record_count from sessions where session_id = 'ses_only_in_tree'") == [
        (1, 1)]
    hits = "select count(*) from messages where text like '%retry%' or text like '%retries%'"
    assert scalar(db, hits) == scalar(ref, hits) > 0


def test_an_archive_made_before_file_kinds_were_kept_learns_them_without_a_change(tmp_path):
    """Rows loaded before 0010 have no container, so the catalog took the database for a file
    like any other and the tree it took in counted twice until the database next changed.
    The first run reads nothing again: it learns each file's kind from discovery, publishes,
    and the next run has nothing to do."""
    data = tmp_path / "data"
    build.write_tree(data / "storage")
    db = tmp_path / "w.duckdb"
    run(db, data)
    shutil.copy(CONTRACT / "opencode.db", data / "opencode.db")
    run(db, data)
    messages = scalar(db, "select count(*) from messages")
    layout = Layout(db)
    state = open_state(layout.state_db)
    try:
        state.execute("update source_files set container = null")
        publish(layout, state, scalar(db, "select max(run_id) from ingest_runs"))    # as before 0010
    finally:
        state.close()
    assert scalar(db, "select count(*) from messages") == 2 * messages
    before = tree_fingerprint(data)
    s = run(db, data)
    assert tree_fingerprint(data) == before
    assert (s.records_added, s.files_changed) == (0, 0)
    assert scalar(db, "select count(*) from messages") == messages
    assert rows(db, "select container, count(*) from source_files where not gone group by 1") == [("sqlite", 1)]
    assert scalar(db, "select count(*) from source_files where container is null") == 32    # the tree, gone
    again = run(db, data)
    state = open_state(layout.state_db)
    try:
        changed = dict(state.execute("select run_id, files_changed from ingest_runs").fetchall())
    finally:
        state.close()
    assert (changed[s.run_id], changed[again.run_id]) == (1, 0)     # the database's kind, then nothing
    assert scalar(db, "select count(*) from messages") == messages


def test_live_wal_database_and_its_next_commit(tmp_path):
    data = tmp_path / "opencode"
    con = build.write_db(data / "opencode.db", wal=True, keep_open=True)
    try:
        assert (data / "opencode.db-wal").stat().st_size > 0
        before = tree_fingerprint(data)
        db = tmp_path / "w.duckdb"
        assert run(db, data).records_added == 11
        assert tree_fingerprint(data) == before
        con.execute("insert into part values ('prt_zzz', 'msg_e1b0000002AbCdEfGhIjKlMn', ?, 1, 1, ?)",
                    (CHILD, json.dumps({"type": "text", "text": "Done."})))
        s = run(db, data)
        # read again whole: the messages written before the one that gained a part stay where
        # they were loaded; it and the lines after it (the sessions last) load again
        assert (s.files_changed, s.records_added) == (1, 7)
        assert scalar(db, "select text from messages where message_id = 'msg_e1b0000002AbCdEfGhIjKlMn'") == \
            "None exist yet.\nDone."
        assert scalar(db, "select count(*) from stg_records") == 11
    finally:
        con.close()


def test_malformed_json_in_rows_quarantines_only_those_rows(tmp_path):
    data = json.loads(json.dumps(build.CONTRACT))
    msgs = data["messages"][MAIN]
    msgs[1][1] = '{"role": "assistant", "time": {"created": 1778666402000'          # message data cut short
    msgs[2][2][2][1] = '{"type": "tool", "callID": "toolu_03Bash", state: {}}'     # one bad part
    build.write_db(tmp_path / "opencode" / "opencode.db", data)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "opencode")
    # 11 lines as before, the bad message's 5 parts now stand alone, plus the bad part's line
    assert (s.records_added, s.quarantined) == (15, 2)
    got = rows(db, "select reason, raw_text from quarantine order by line_no")
    assert [g[0] for g in got] == ["malformed_row", "malformed_row"]
    assert "message row msg_e1a0000002AbCdEfGhIjKlMn: column data" in got[0][1]
    assert "part row prt_e1a0000003Ac: column data" in got[1][1] and "state: {}" in got[1][1]
    assert scalar(db, "select count(*) from messages") == 8
    # the quarantined message's parts still load, linked to it
    assert rows(db, "select call_id, output_text from tool_calls where call_id = 'toolu_01Read'") == [
        ("toolu_01Read", "def fetch(city):\n    return http.get(city)\n")]
    assert scalar(db, "select count(*) from tool_calls where call_id = 'toolu_03Bash'") == 0


def test_file_that_is_not_sqlite_is_quarantined_as_unreadable(tmp_path):
    (tmp_path / "opencode").mkdir()
    (tmp_path / "opencode" / "opencode.db").write_bytes(b"PK\x03\x04 not a database" * 100)
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "opencode")
    assert (s.records_added, s.quarantined) == (0, 1)
    (reason, error), = rows(db, "select reason, error from quarantine")
    assert reason == "unreadable_container" and "not a database" in error


def test_bad_tree_files_and_session_message_rows(tmp_path):
    storage = tmp_path / "data" / "storage"
    build.write_tree(storage)
    (storage / "message" / MAIN / "msg_broken.json").write_text('{"id": "msg_broken", "role": ')
    (storage / "part" / "msg_e1a0000004AbCdEfGhIjKlMn" / "prt_list.json").write_text("[1, 2]")
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "data")
    assert (s.records_added, s.quarantined) == (32, 2)
    assert sorted(r[0] for r in rows(db, "select reason from quarantine")) == ["invalid_json", "not_object"]
    # newer databases add a session_message table: each row is kept as a bookkeeping record
    con = build.write_db(tmp_path / "oc" / "opencode.db", keep_open=True)
    con.execute("create table session_message (id text primary key, session_id text, type text, "
                "time_created integer, time_updated integer, data text)")
    con.execute("insert into session_message values ('sm_1', ?, 'user', 1778666401000, 1778666401000, '{}')", (MAIN,))
    con.close()
    db = tmp_path / "x.duckdb"
    assert run(db, tmp_path / "oc").records_added == 12
    assert rows(db, "select kind, subtype, role from stg_records where record_type = 'session_message'") == [
        ("session_message", "user", None)]


def test_default_roots_and_overrides(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    data = home / ".local" / "share" / "opencode"
    assert opencode.default_roots({"XDG_DATA_HOME": str(home / ".local" / "share")}, home)[0] == data
    shutil.copytree(CONTRACT, data)
    (data / "opencode-beta.db").write_bytes((data / "opencode.db").read_bytes())
    (data / "opencode.db-wal").write_bytes(b"")
    assert [(a.NAME, r) for a, r in default_targets(opencode)] == [("opencode", data)]
    assert [sf.path.name for sf in opencode.discover(data)] == ["opencode-beta.db", "opencode.db"]
    # OPENCODE_DB: an absolute file, or a name inside the data folder
    elsewhere = tmp_path / "elsewhere.db"
    shutil.copy(CONTRACT / "opencode.db", elsewhere)
    monkeypatch.setenv("OPENCODE_DB", str(elsewhere))
    assert default_targets(opencode)[0][1] == elsewhere
    monkeypatch.setenv("OPENCODE_DB", "custom.db")
    assert opencode.default_roots(dict(XDG_DATA_HOME=str(tmp_path / "x"), OPENCODE_DB="custom.db"), home)[0] == \
        tmp_path / "x" / "opencode" / "custom.db"


def test_resolve_root_accepts_each_level(tmp_path):
    build.write_tree(tmp_path / "data" / "storage")
    assert opencode.resolve_root(tmp_path / "data") == tmp_path / "data"
    assert opencode.resolve_root(tmp_path / "data" / "storage") == tmp_path / "data" / "storage"
    assert opencode.resolve_root(CONTRACT / "opencode.db") == CONTRACT / "opencode.db"
    one = next((tmp_path / "data" / "storage" / "message" / MAIN).iterdir())
    assert [(sf.session_hint, sf.container) for sf in opencode.discover(opencode.resolve_root(one))] == [(MAIN, "json")]
    (tmp_path / "empty").mkdir()
    for bad in (tmp_path / "empty", tmp_path / "missing", CONTRACT / "opencode.db-wal"):
        with pytest.raises(RootError):
            opencode.resolve_root(bad)
