"""A session a store deletes inside itself stays in the archive, as a deleted transcript file
does: a database read again whole keeps live the lines of a session it no longer holds
(etl/retained.py). A session that goes on in the store is the store's again: its edited,
cut or moved lines are replaced, never kept twice."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from convarch.adapters import cline, crush, cursor, goose, hermes, opencode
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import contract_builder, tree_fingerprint
from helpers import hand_inodes, rows, scalar
from test_whole_rewrites import goose_build

MAIN, SUB = "20260505_1", "20260505_2"
#: (session, messages, records) of the contract store
WHOLE = [(MAIN, 12, 15), (SUB, 2, 3)]


def run(db: Path, adapter, root: Path):
    return ingest(Layout(db), [(adapter, adapter.resolve_root(root))])


def drop_session(path: Path, sid: str) -> None:
    """What deleting a session in goose leaves: no row of it in any table."""
    con = sqlite3.connect(path)
    with con:
        for table, column in (("messages", "session_id"), ("usage_ledger", "session_id"), ("sessions", "id")):
            con.execute(f"delete from {table} where {column} = ?", [sid])
    con.close()


def facts(db: Path) -> list[tuple]:
    return rows(db, "select session_id, message_count, record_count from sessions order by 1")


def test_a_session_deleted_in_a_database_stays_with_everything_it_had(tmp_path):
    store = tmp_path / "goose" / "sessions" / "sessions.db"
    goose_build.write_db(store)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, goose, tmp_path / "goose")
    assert facts(db) == WHOLE
    messages = rows(db, "select session_id, line_no, kind, text from messages order by 1, 2, 3, 4")
    calls = rows(db, "select session_id, tool_name, output_text from tool_calls order by 1, 2, 3")
    usage = rows(db, "select session_id, input_tokens, output_tokens from usage order by 1, 2, 3")
    assert len(usage) == 2

    drop_session(store, MAIN)
    before = tree_fingerprint(store.parent)
    s = run(db, goose, tmp_path / "goose")
    assert tree_fingerprint(store.parent) == before
    assert s.files_changed == 1
    assert facts(db) == WHOLE
    assert rows(db, "select session_id, line_no, kind, text from messages order by 1, 2, 3, 4") == messages
    assert rows(db, "select session_id, tool_name, output_text from tool_calls order by 1, 2, 3") == calls
    assert rows(db, "select session_id, input_tokens, output_tokens from usage order by 1, 2, 3") == usage
    assert scalar(db, "select count(*) from search_postings where term = 'ttl'") > 0
    # a fresh load of the store as it is now has only what the store holds
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, goose, tmp_path / "goose")
    assert facts(fresh) == [w for w in WHOLE if w[0] != MAIN]

    # the session that goes on grows; the deleted one stays as it was, once
    con = sqlite3.connect(store)
    with con:
        con.execute("insert into messages (session_id, role, content_json, created_timestamp) values "
                    "(?, 'user', ?, 1778000100)", [SUB, json.dumps([{"type": "text", "text": "and the tests?"}])])
    con.close()
    s = run(db, goose, tmp_path / "goose")
    assert s.records_added >= 1
    assert facts(db) == [(MAIN, 12, 15), (SUB, 3, 4)]
    assert scalar(db, "select count(*) from messages where session_id = ?", [MAIN]) == 12

    # nothing changed: nothing loaded, nothing lost
    s = run(db, goose, tmp_path / "goose")
    assert (s.files_changed, s.records_added) == (0, 0)
    # the store's last session deleted too, then the database itself: both stay
    drop_session(store, SUB)
    run(db, goose, tmp_path / "goose")
    assert facts(db) == [(MAIN, 12, 15), (SUB, 3, 4)]
    target = goose.resolve_root(tmp_path / "goose")
    shutil.rmtree(store.parent)
    ingest(Layout(db), [(goose, target)])
    assert facts(db) == [(MAIN, 12, 15), (SUB, 3, 4)]
    assert rows(db, "select gone from source_files") == [(True,)]


def test_a_session_that_goes_on_keeps_no_line_it_no_longer_has(tmp_path):
    """Edited, cut back, deleted in part: the store's version of a session it still holds is
    the archive's, as a fresh load of it would give."""
    store = tmp_path / "goose" / "sessions" / "sessions.db"
    goose_build.write_db(store)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, goose, tmp_path / "goose")
    con = sqlite3.connect(store)
    with con:
        con.execute("update messages set content_json = ? where session_id = ? and role = 'assistant' "
                    "and id = (select max(id) from messages where session_id = ?)",
                    [json.dumps([{"type": "text", "text": "Logging added, at debug level."}]), MAIN, MAIN])
        con.execute("delete from messages where session_id = ? and id = (select min(id) from messages "
                    "where session_id = ?)", [SUB, SUB])
    con.close()
    run(db, goose, tmp_path / "goose")
    assert scalar(db, "select count(*) from file_retained") == 0
    assert facts(db) == [(MAIN, 12, 15), (SUB, 1, 2)]
    assert scalar(db, "select count(*) from messages where text like 'Logging added%'") == 1
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, goose, tmp_path / "goose")
    assert facts(db) == facts(fresh)


def test_a_task_dropped_from_clines_index_keeps_its_entry(tmp_path):
    """A document too: Cline's task history index, written out whole, loses a task's entry
    when the task is deleted; the archive keeps the entry, and its title."""
    from test_whole_rewrites import cline_store

    root, _api = cline_store(tmp_path)
    index = root / "state" / "taskHistory.json"
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, cline, root)
    titles = rows(db, "select session_id, title from sessions order by 1")
    entries = json.loads(index.read_text())
    assert len(entries) >= 2
    dropped = entries.pop(0)
    index.write_text(json.dumps(entries))
    shutil.rmtree(root / "tasks" / str(dropped["id"]), ignore_errors=True)
    run(db, cline, root)
    assert rows(db, "select session_id, title from sessions order by 1") == titles
    entry = "select count(*) from stg_records where record_type = 'history_item' and session_id = ?"
    assert scalar(db, entry, [str(dropped["id"])]) == 1


def test_a_session_deleted_in_opencode_stays(tmp_path):
    """OpenCode deletes a session's messages and parts with it (foreign keys, on cascade)."""
    build = contract_builder("opencode")
    store = tmp_path / "opencode" / "opencode.db"
    build.write_db(store)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, opencode, tmp_path / "opencode")
    before = facts(db)
    texts = rows(db, "select session_id, text from messages where text is not null order by 1, 2")
    assert len(before) == 2 and any(sid == build.CHILD for sid, _ in texts)
    con = sqlite3.connect(store)
    with con:
        con.execute("pragma foreign_keys = on")
        con.execute("delete from session where id = ?", [build.CHILD])
        assert con.execute("select count(*) from message where session_id = ?", [build.CHILD]).fetchone() == (0,)
    con.close()
    s = run(db, opencode, tmp_path / "opencode")
    assert s.files_changed == 1
    assert facts(db) == before
    assert rows(db, "select session_id, text from messages where text is not null order by 1, 2") == texts
    assert scalar(db, "select parent_session_id from sessions where session_id = ?", [build.CHILD]) == build.MAIN


def test_the_lines_no_longer_live_are_those_no_run_of_the_new_version_covers():
    from convarch.etl.retained import _minus

    end = (1 << 63) - 1
    assert _minus([(1, 1, 1, 10)], [(1, 1, 1, 3), (1, 1, 6, 7)]) == [(1, 1, 4, 5), (1, 1, 8, 10)]
    assert _minus([(1, 1, 1, 10)], [(1, 2, 1, end), (2, 1, 1, end)]) == [(1, 1, 1, 10)]   # another epoch, file
    assert _minus([(1, 1, 1, 10), (1, 1, 20, 30)], [(1, 1, 1, end)]) == []
    assert _minus([(1, 1, 5, 10)], [(1, 1, 8, 20), (1, 1, 1, 6)]) == [(1, 1, 7, 7)]


def test_calls_of_a_kept_session_count_once_beside_the_lines_that_took_their_numbers(tmp_path):
    """A Gemini CLI session file written out as another session keeps the first one; the new
    version's lines are numbered from 1 again, as the kept ones were. Each answer's tokens,
    which carry no API id, still count once, as does each message."""
    from convarch.adapters import gemini_cli
    from test_adapter_gemini_cli import HEADER, msg

    chats = tmp_path / "home" / ".gemini" / "tmp" / "demo" / "chats"
    chats.mkdir(parents=True)
    path = chats / "session-2026-05-01T10-00-aaaa1111.jsonl"
    sid = "aaaa1111-0000-4000-8000-{:012d}".format
    root = tmp_path / "home" / ".gemini"
    db = tmp_path / "w" / "convarch.duckdb"
    for k in range(3):
        path.write_text("".join(json.dumps(r) + "\n" for r in [
            {**HEADER, "sessionId": sid(k)},
            msg(f"u-{k}", "user", f"question {k}", 1),
            msg(f"g-{k}", "gemini", f"answer {k}", 2, model="gemini-2.5-pro",
                tokens={"input": 100 * (k + 1), "output": 10, "total": 100 * (k + 1) + 10})]))
        run(db, gemini_cli, root)
    assert rows(db, "select session_id, input_tokens from usage order by 1") == [(sid(k), 100 * (k + 1)) for k in range(3)]
    assert rows(db, "select session_id, count(*) from unique_messages group by 1 order by 1") == [
        (sid(k), 2) for k in range(3)]
    assert rows(db, "select count(distinct line_no) from messages") == [(2,)]      # the numbers are shared


def test_a_chat_deleted_in_cursor_stays_and_the_chat_that_goes_on_grows_once(tmp_path):
    """Cursor deletes a chat's composer row and its bubbles from state.vscdb, and writes the
    chats that go on in place; the store is read again whole every time it changes."""
    from test_adapter_cursor import make_vscdb
    path = make_vscdb(tmp_path / "User" / "globalStorage" / "state.vscdb", {
        "composerData:a": {"composerId": "a", "name": "old chat", "lastUpdatedAt": 1000,
                           "fullConversationHeadersOnly": [{"bubbleId": "x"}, {"bubbleId": "y"}]},
        "bubbleId:a:x": {"type": 1, "text": "why is the cache stale"},
        "bubbleId:a:y": {"type": 2, "text": "the TTL is read once"},
        "composerData:c": {"composerId": "c", "lastUpdatedAt": 2000, "fullConversationHeadersOnly": [{"bubbleId": "b1"}]},
        "bubbleId:c:b1": {"type": 1, "text": "one"}})
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, cursor, tmp_path / "User")
    query = "select session_id, text from messages order by 1, 2"
    texts = rows(db, query)
    titles = rows(db, "select session_id, title, message_count from sessions order by 1")
    assert len(texts) == 3 and [t[2] for t in titles] == [2, 1]

    con = sqlite3.connect(path)
    with con:
        con.execute("delete from cursorDiskKV where key like 'composerData:a' or key like 'bubbleId:a:%'")
    con.close()
    before = tree_fingerprint(path.parent)
    s = run(db, cursor, tmp_path / "User")
    assert tree_fingerprint(path.parent) == before
    assert (s.files_changed, s.records_added) == (1, 0)
    assert rows(db, query) == texts
    assert rows(db, "select session_id, title, message_count from sessions order by 1") == titles
    assert scalar(db, "select count(*) from file_retained") >= 1
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, cursor, tmp_path / "User")
    assert rows(fresh, query) == [("c", "one")]

    # the chat that goes on gains a bubble; the deleted one stays as it was, once
    make_vscdb(path, {"composerData:c": {"composerId": "c", "lastUpdatedAt": 3000, "fullConversationHeadersOnly": [
        {"bubbleId": "b1"}, {"bubbleId": "b2"}]}, "bubbleId:c:b2": {"type": 2, "text": "two"}})
    s = run(db, cursor, tmp_path / "User")
    assert s.records_added == 2
    assert rows(db, query) == sorted([*texts, ("c", "two")])
    assert rows(db, "select count(*) from stg_records where session_id = 'a'") == [(3,)]
    assert scalar(db, "select count(*) from search_postings where term = 'ttl'") > 0
    s = run(db, cursor, tmp_path / "User")
    assert (s.files_changed, s.records_added) == (0, 0)

    # a chat of the same id written again is the store's again: its new version stands
    make_vscdb(path, {"composerData:a": {"composerId": "a", "name": "old chat", "lastUpdatedAt": 4000,
                                         "fullConversationHeadersOnly": [{"bubbleId": "z"}]},
                      "bubbleId:a:z": {"type": 1, "text": "started over"}})
    run(db, cursor, tmp_path / "User")
    fresh2 = tmp_path / "fresh2" / "convarch.duckdb"
    run(fresh2, cursor, tmp_path / "User")
    assert rows(db, query) == rows(fresh2, query)
    assert ("a", "started over") in rows(db, query)
    facts_of = "select session_id, title, message_count, record_count from sessions order by 1"
    assert rows(db, facts_of) == rows(fresh2, facts_of)


def test_a_session_deleted_in_crush_stays(tmp_path):
    """Crush deletes a session's messages with it; its sub-agent's session goes on."""
    build = contract_builder("crush")
    store = tmp_path / "app" / ".crush" / "crush.db"
    build.write_db(store)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, crush, tmp_path / "app")
    before = facts(db)
    texts = rows(db, "select session_id, text from messages where text is not null order by 1, 2")
    calls = rows(db, "select session_id, tool_name, output_text from tool_calls order by 1, 2, 3")
    assert len(before) == 2 and calls
    con = sqlite3.connect(store)
    with con:
        con.execute("delete from messages where session_id = ?", [build.MAIN])
        con.execute("delete from sessions where id = ?", [build.MAIN])
    con.close()
    fingerprint = tree_fingerprint(store.parent)
    s = run(db, crush, tmp_path / "app")
    assert tree_fingerprint(store.parent) == fingerprint
    assert s.files_changed == 1
    assert facts(db) == before
    assert rows(db, "select session_id, text from messages where text is not null order by 1, 2") == texts
    assert rows(db, "select session_id, tool_name, output_text from tool_calls order by 1, 2, 3") == calls
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, crush, tmp_path / "app")
    assert [f[0] for f in facts(fresh)] == [build.SUB]


def test_a_session_deleted_in_hermes_through_its_open_wal_stays(tmp_path):
    """Hermes keeps state.db open in WAL mode: the delete reaches only the -wal, and the
    store is read again whole from a copy of both."""
    build = contract_builder("hermes")
    home = tmp_path / ".hermes"
    con = build.write_db(home / "state.db", wal=True, keep_open=True)
    try:
        db = tmp_path / "w" / "convarch.duckdb"
        run(db, hermes, home)
        before = facts(db)
        texts = rows(db, "select session_id, text from messages where text is not null order by 1, 2")
        assert len(before) == 2 and any(sid == build.CONT for sid, _ in texts)
        con.execute("delete from messages where session_id = ?", [build.CONT])
        con.execute("delete from sessions where id = ?", [build.CONT])
        fingerprint = tree_fingerprint(home)
        s = run(db, hermes, home)
        assert tree_fingerprint(home) == fingerprint
        assert (s.files_changed, s.records_added) == (1, 0)
        assert facts(db) == before
        assert rows(db, "select session_id, text from messages where text is not null order by 1, 2") == texts
        fresh = tmp_path / "fresh" / "convarch.duckdb"
        run(fresh, hermes, home)
        assert [f[0] for f in facts(fresh)] == [build.MAIN]
    finally:
        con.close()


def crush_projects(data_dir: Path, *projects: Path) -> Path:
    """Crush's global data folder, its projects.json naming `projects` as crush records them."""
    data_dir.mkdir(exist_ok=True)
    (data_dir / "projects.json").write_text(json.dumps(
        {"projects": [{"path": str(p), "data_dir": str(p / ".crush")} for p in projects]}))
    return data_dir


def crush_project(tmp_path: Path):
    """The crush contract store as a project crush's list names, loaded once: (the builder,
    the project folder, crush's data folder, the warehouse)."""
    build = contract_builder("crush")
    old = tmp_path / "app"
    build.write_db(old / ".crush" / "crush.db")
    data = crush_projects(tmp_path / "crush-data", old)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, crush, data)
    return build, old, data, db


def add_sub_message(build, store: Path) -> None:
    """A message the sub-agent's session gains, after everything else in time."""
    con = sqlite3.connect(store)
    with con:
        row = build.message("msg-sub-03", build.SUB, "user", [build.part("text", text="And in tests/?")], 100)
        con.execute(f"insert into messages ({', '.join(row)}) values ({', '.join('?' for _ in row)})",
                    list(row.values()))
    con.close()


def test_a_database_moved_and_changed_on_the_way_is_that_file_not_a_second(tmp_path):
    """A project folder renamed, crush run in it again: its crush.db keeps its inode under a new
    path, changed. Taken for a new file beside the old one kept as gone, every session of the
    project counted twice (24 messages of 12); it is the file moved, read again and matched."""
    build, old, data, db = crush_project(tmp_path)
    new = tmp_path / "app-renamed"
    old.rename(new)
    crush_projects(data, old, new)              # crush adds the new folder; the old entry stays
    store = new / ".crush" / "crush.db"
    add_sub_message(build, store)
    fingerprint = tree_fingerprint(new)
    s = run(db, crush, data)
    assert tree_fingerprint(new) == fingerprint
    # the message, and the two sessions' rows, which name the project's folder: nothing else
    assert s.files_changed == 1 and s.records_added == 3
    assert rows(db, "select path, gone from source_files") == [(str(store), False)]
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, crush, data)
    assert facts(db) == facts(fresh) == [(build.MAIN, 12, 13), (build.SUB, 3, 4)]
    assert scalar(db, "select count(*) from messages") == scalar(fresh, "select count(*) from messages") == 15


def test_a_database_given_a_deleted_ones_inode_keeps_both_projects_sessions(tmp_path, monkeypatch):
    """The inode of a project deleted whole, handed to another project's new crush.db, makes
    that one read as the first moved and changed: the deleted project's sessions stay, as
    those of a store that deleted them inside itself do, and the new one's load beside them."""
    build, old, data, db = crush_project(tmp_path)
    before = facts(db)
    other = tmp_path / "other"
    given = {other / ".crush" / "crush.db": (old / ".crush" / "crush.db").stat().st_ino}
    shutil.rmtree(old)
    build.write_db(other / ".crush" / "crush.db", {
        "sessions": [{"id": "b-1", "parent_session_id": None, "title": "Another project", "message_count": 2,
                      "prompt_tokens": 10, "completion_tokens": 5, "cost": 0.0, "created_at": build.T0 + 200,
                      "updated_at": build.T0 + 203, "summary_message_id": None, "todos": None}],
        "messages": [build.message("b-msg-1", "b-1", "user", [build.part("text", text="Hello")], 201),
                     build.message("b-msg-2", "b-1", "assistant", [build.part("text", text="Hi")], 202)]})
    crush_projects(data, old, other)
    hand_inodes(monkeypatch, given)
    s = run(db, crush, data)
    assert s.records_added == 3
    assert facts(db) == sorted([*before, ("b-1", 2, 3)])
    assert scalar(db, "select count(*) from messages") == 14 + 2


def test_a_database_copied_to_another_disk_counts_each_session_once_even_both_deleted(tmp_path):
    """A project copied to another disk and the old folder deleted: the copy is a new file (a
    new inode), the old one gone, each holding every session: both counted (24 messages of
    12). A deleted database gives way to one found after it that holds every session it held;
    deleted too, the later copy still counts, once."""
    build, old, data, db = crush_project(tmp_path)
    new = tmp_path / "other-disk" / "app"
    shutil.copytree(old, new)
    shutil.rmtree(old)
    crush_projects(data, old, new)
    add_sub_message(build, new / ".crush" / "crush.db")
    run(db, crush, data)
    assert rows(db, "select path, gone from source_files order by file_id") == [
        (str(old / ".crush" / "crush.db"), True), (str(new / ".crush" / "crush.db"), False)]
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, crush, data)
    want = [(build.MAIN, 12, 13), (build.SUB, 3, 4)]
    assert facts(db) == facts(fresh) == want
    assert scalar(db, "select count(*) from messages") == 15
    shutil.rmtree(new)
    run(db, crush, data)
    assert scalar(db, "select count(*) from source_files where gone") == 2
    assert facts(db) == want
    assert scalar(db, "select count(*) from messages") == 15
