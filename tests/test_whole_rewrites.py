"""A whole container (a JSON document, a SQLite family) that changed is read again whole, but
loads only what changed in the lines it gives: nothing when the lines are the same, only the
new ones when the old ones come first again and the adapter's SQL reads lines on their own.
Either way the warehouse reads exactly as if the final store had been loaded at once."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from convarch import adapters
from convarch.adapters import cline, goose
from convarch.etl import read_file as read_file_mod
from convarch.etl.containers import WholeStream, makes_lines, snapshot_whole
from convarch.etl.lines import split_chunks, split_snapshot
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import REPO, contract_builder, tree_fingerprint
from helpers import hand_inodes, rows, scalar
from test_parallel_load import TABLES, snapshot_of

TASK = "1778580000000"

goose_build = contract_builder("goose")


def run(db: Path, adapter, root: Path):
    return ingest(Layout(db), [(adapter, adapter.resolve_root(root))])


def lake_files(db: Path) -> int:
    return sum(1 for _ in (db.parent / f"{db.stem}.d" / "lake").rglob("*.parquet"))


def same_as_fresh(db: Path, adapter, root: Path, tmp_path: Path, numbered: bool = True) -> None:
    """The warehouse holds what a fresh load of the store gives. Unless `numbered`, the lines
    need only be in the same order: lines kept where they were loaded keep their numbers and
    byte offsets when lines before them are gone (etl/live_lines.py), where a fresh load
    numbers them anew."""
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    run(fresh, adapter, root)
    got, want = snapshot_of(db), snapshot_of(fresh)
    for view in TABLES:
        if numbered:
            assert got[view] == want[view], view
        else:
            assert in_line_order(view, got[view]) == in_line_order(view, want[view]), view


def in_line_order(view: str, got: list[tuple]) -> list[tuple]:
    """A view's rows with each line number replaced by its rank among its file's, and without
    byte offsets."""
    cols = [c.strip() for c in TABLES[view].split(",")]
    if "line_no" not in cols:
        return got
    at, key = cols.index("line_no"), cols.index("file_id" if "file_id" in cols else "source_file")
    numbers: dict = {}
    for r in got:
        numbers.setdefault(r[key], set()).add(r[at])
    rank = {f: {n: i for i, n in enumerate(sorted(ns))} for f, ns in numbers.items()}
    out = []
    for r in got:
        r = list(r)
        r[at] = rank[r[key]][r[at]]
        out.append(tuple(v for c, v in zip(cols, r) if c != "byte_offset"))
    return sorted(out, key=repr)


def cline_store(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "cline"
    shutil.copytree(REPO / "fixtures" / "cline" / "contract", root)
    return root, root / "tasks" / TASK / "api_conversation_history.json"


def test_a_history_that_only_grew_loads_just_its_new_messages(tmp_path):
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    history = json.loads(api.read_text())
    lines_before = scalar(db, "select count(*) from stg_records where source_file = ?", [str(api)])
    assert lines_before == len(history)
    api.write_text(json.dumps(history + [
        {"role": "user", "content": [{"type": "text", "text": "one more thing: the zebrafish flag"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Added --zebrafish."}]},
    ], indent=1))
    before = tree_fingerprint(root)
    s = run(db, cline, root)
    assert tree_fingerprint(root) == before
    assert (s.files_changed, s.records_added) == (1, 2)
    # the file keeps its version, and the lake holds each line once
    assert rows(db, "select distinct file_epoch from stg_records where source_file = ?", [str(api)]) == [(1,)]
    file_id = scalar(db, "select distinct file_id from stg_records where source_file = ?", [str(api)])
    assert scalar(db, "select count(*) from lake_records where file_id = ?", [file_id]) == lines_before + 2
    assert scalar(db, "select count(*) from search_postings where term = 'zebrafish'") == 2
    same_as_fresh(db, cline, root, tmp_path)


def test_a_history_caught_half_written_waits_for_the_next_run(tmp_path, monkeypatch):
    """An extension writes its history by truncating the file and writing it out again. Read
    between the two, the history used to lose its lines until the next run, or have its torn
    tail quarantined and every message after the tear loaded again; now it is left for the
    next run, and read then as if never caught."""
    from convarch.etl import settled

    monkeypatch.setattr(settled, "WRITING_SECONDS", 5.0)
    root, api = cline_store(tmp_path)
    whole = api.read_bytes()
    db = tmp_path / "w" / "convarch.duckdb"
    api.write_bytes(whole[: len(whole) // 3])     # read for the first time half written
    s = run(db, cline, root)
    assert (s.quarantined, s.files_skipped) == (0, 1) and "being written" in s.skipped[0][1], s
    api.write_bytes(whole)
    run(db, cline, root)
    live = scalar(db, "select count(*) from stg_records where source_file = ?", [str(api)])
    assert live == len(json.loads(whole))
    # cut where the writer had got to, once just after a bracket matching the first
    on_bracket = whole[: whole.rindex(b"]", 0, len(whole) // 2) + 1]
    assert on_bracket[:1] == b"[" and on_bracket.endswith(b"]")
    for torn in (whole[: len(whole) // 2], on_bracket, b""):
        api.write_bytes(torn)                  # caught between the truncate and the last write
        s = run(db, cline, root)
        assert (s.records_added, s.quarantined, s.files_skipped) == (0, 0, 1), s
        assert "being written" in s.skipped[0][1]
        assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(api)]) == live
    api.write_bytes(whole)
    s = run(db, cline, root)
    assert (s.records_added, s.quarantined, s.files_skipped) == (0, 0, 0), s
    file_id = scalar(db, "select distinct file_id from stg_records where source_file = ?", [str(api)])
    assert scalar(db, "select count(*) from lake_records where file_id = ?", [file_id]) == live
    # a history left torn by a writer long gone is read as it is: its torn tail quarantined
    api.write_bytes(whole[: len(whole) // 2])
    old = api.stat().st_mtime - 60
    os.utime(api, (old, old))
    s = run(db, cline, root)
    assert s.quarantined == 1 and s.files_skipped == 0, s


def test_an_edited_message_keeps_the_lines_before_it_and_loads_the_rest_as_a_new_version(tmp_path):
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    history = json.loads(api.read_text())
    history[1]["content"] = [{"type": "text", "text": "an answer edited in place"}]
    api.write_text(json.dumps(history + [{"role": "user", "content": "and then?"}]))
    s = run(db, cline, root)
    # line 1 stays where it was loaded; lines 2 on (the edited one, the rest, the new one) load
    assert (s.files_changed, s.records_added) == (1, len(history))
    assert rows(db, "select file_epoch, min(line_no), max(line_no) from stg_records where source_file = ? "
                    "group by 1 order by 1", [str(api)]) == [(1, 1, 1), (2, 2, len(history) + 1)]
    assert scalar(db, "select count(*) from messages where text = 'an answer edited in place'") == 1
    same_as_fresh(db, cline, root, tmp_path)
    # an edit to the first line leaves nothing to keep: the whole history is a new version
    history[0]["content"] = "a new first prompt"
    api.write_text(json.dumps(history))
    s = run(db, cline, root)
    assert s.records_added == len(history)
    assert rows(db, "select distinct file_epoch from stg_records where source_file = ?", [str(api)]) == [(3,)]
    same_as_fresh(db, cline, root, tmp_path / "again")


def test_a_document_saved_again_unchanged_loads_nothing(tmp_path, monkeypatch):
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    files = lake_files(db)
    api.write_text(json.dumps(json.loads(api.read_text()), indent=4))      # other bytes, same lines
    s = run(db, cline, root)
    assert (s.files_changed, s.records_added) == (0, 0)
    assert lake_files(db) == files
    # its new size and time are remembered: the next run does not read it at all
    read = []
    real = read_file_mod.snapshot_whole
    monkeypatch.setattr(read_file_mod, "snapshot_whole", lambda *a, **k: read.append(a[0].path) or real(*a, **k))
    assert run(db, cline, root).files_changed == 0
    assert read == []
    same_as_fresh(db, cline, root, tmp_path)


def test_sqlite_writes_that_change_no_line_load_nothing(tmp_path):
    sessions = tmp_path / "goose" / "sessions"
    con = goose_build.write_db(sessions / "sessions.db", wal=True, keep_open=True)
    try:
        db = tmp_path / "w" / "convarch.duckdb"
        assert run(db, goose, tmp_path / "goose").records_added == 18
        files = lake_files(db)
        # a checkpoint moves the -wal into the database; a table goose keeps but convarch does
        # not read gets a row: both change the files, neither a line
        con.execute("pragma wal_checkpoint(truncate)")
        con.execute("create table if not exists recipes (name text)")
        con.execute("insert into recipes values ('deploy')")
        size = os.path.getsize(sessions / "sessions.db") + os.path.getsize(sessions / "sessions.db-wal")
        s = run(db, goose, tmp_path / "goose")
        assert (s.files_changed, s.records_added) == (0, 0)
        assert lake_files(db) == files
        assert scalar(db, "select max(file_epoch) from stg_records") == 1
        assert size == os.path.getsize(sessions / "sessions.db") + os.path.getsize(sessions / "sessions.db-wal")
        # a real change still loads
        con.execute("update sessions set name = 'renamed' where id = '20260505_1'")
        s = run(db, goose, tmp_path / "goose")
        assert s.files_changed == 1 and s.records_added > 0
        assert scalar(db, "select count(*) from stg_records") == 18
    finally:
        con.close()
    same_as_fresh(db, goose, tmp_path / "goose", tmp_path)


def test_an_adapter_whose_sql_reads_across_lines_loads_a_grown_document_whole(tmp_path, monkeypatch):
    # an adapter that does not declare LINES_STAND_ALONE (its SQL looks across a file's lines,
    # as Copilot CLI's does for its legacy documents) has a grown document loaded again whole
    monkeypatch.setattr(cline, "LINES_STAND_ALONE", False)
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    history = json.loads(api.read_text())
    n = scalar(db, "select count(*) from stg_records where source_file = ?", [str(api)])
    history.append({"role": "user", "content": [{"type": "text", "text": "and the zebrafish flag?"}]})
    api.write_text(json.dumps(history))
    s = run(db, cline, root)
    assert (s.files_changed, s.records_added) == (1, n + 1)
    assert rows(db, "select distinct file_epoch from stg_records where source_file = ?", [str(api)]) == [(2,)]
    same_as_fresh(db, cline, root, tmp_path)


def test_a_grok_build_log_as_its_answer_streams_loads_from_the_runs_first_chunk(tmp_path):
    # a chunk appended to Grok Build's log adds to the message its run's first line carries:
    # that line changes, so it and what follows load; the lines before it stay
    from convarch.adapters import grok_build

    root = tmp_path / "grok"
    shutil.copytree(REPO / "fixtures" / "grok_build" / "contract", root)
    log = next(root.rglob("updates.jsonl"))
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, grok_build, root)
    n = scalar(db, "select count(*) from stg_records where source_file = ?", [str(log)])
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    for i, text in enumerate((" And the zebrafish flag.", " Done.")):
        with open(log, "a") as fh:
            fh.write(json.dumps(dict(last, params=dict(last["params"], update=dict(
                last["params"]["update"], content={"type": "text", "text": text})))) + "\n")
        s = run(db, grok_build, root)
        assert (s.files_changed, s.records_added) == (1, 2 + i)    # the first chunk, then every chunk since
        same_as_fresh(db, grok_build, root, tmp_path / f"fresh{i}")
    assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(log)]) == n + 2
    assert scalar(db, "select text from messages where source_file = ? order by line_no desc limit 1",
                  [str(log)]).endswith("README updated. And the zebrafish flag. Done.")
    assert scalar(db, "select min(file_epoch) from stg_records where source_file = ?", [str(log)]) == 1


def gemini_oplog(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "gemini"
    shutil.copytree(REPO / "fixtures" / "gemini_cli" / "contract", root)
    return root, max(root.rglob("session-*.jsonl"), key=lambda p: p.stat().st_size)


def test_a_gemini_op_log_as_its_session_goes_on_loads_from_its_first_changed_line(tmp_path):
    # Gemini CLI appends to its op-log, but a line can change what an earlier line means: a
    # message written again supersedes its earlier line, a rewind takes messages out. The
    # replay's facts are on each line, so those earlier lines change too and load again;
    # the lines before the first of them stay where they were loaded
    from convarch.adapters import gemini_cli

    root, log = gemini_oplog(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, gemini_cli, root)
    n = scalar(db, "select count(*) from stg_records where source_file = ?", [str(log)])
    sid = scalar(db, "select any_value(session_id) from stg_records where source_file = ?", [str(log)])
    last_id = scalar(db, "select message_id from stg_records where source_file = ? and message_id is not null "
                         "order by line_no desc limit 1", [str(log)])

    def append(*records) -> None:
        with open(log, "a") as fh:
            for r in records:
                fh.write(json.dumps(r) + "\n")

    ask = {"id": "zz-ask", "timestamp": "2026-05-02T10:00:00.000Z", "type": "user", "content": "and the zebrafish flag?"}
    answer = {"id": "zz-answer", "timestamp": "2026-05-02T10:00:05.000Z", "type": "gemini", "content": "thinking"}
    append(ask, answer)
    s = run(db, gemini_cli, root)
    assert (s.files_changed, s.records_added) == (1, 2)
    same_as_fresh(db, gemini_cli, root, tmp_path / "fresh1")

    # the answer completes: written again, it supersedes the line just loaded, and only the
    # lines from that one on load again
    append(dict(answer, content="use --zebrafish", tokens={"input": 9, "output": 3, "cached": 0, "total": 12}),
           {"$set": {"lastUpdated": "2026-05-02T10:00:06.000Z"}})
    s = run(db, gemini_cli, root)
    assert (s.files_changed, s.records_added) == (1, 3)
    assert rows(db, "select kind from stg_records where message_id = 'zz-answer' order by line_no") == [
        ("superseded",), ("response",)]
    same_as_fresh(db, gemini_cli, root, tmp_path / "fresh2")

    # a rewind to the question takes it and what follows out of the conversation: the lines
    # of both messages change (they are now rewound), so they load again, the rest stays
    append({"$rewindTo": "zz-ask"})
    s = run(db, gemini_cli, root)
    assert s.records_added == 5
    same_as_fresh(db, gemini_cli, root, tmp_path / "fresh3")
    assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(log)]) == n + 5
    # the first load's lines are all still live (the first two new lines were an append to
    # it); every later line is the last load's, the third version of the file
    assert rows(db, "select file_epoch, count(*) from stg_records where source_file = ? group by 1 order by 1",
                [str(log)]) == [(1, n), (3, 5)]
    assert scalar(db, "select count(distinct session_id) from stg_records where source_file = ?", [str(log)]) == 1
    assert sid and last_id


def test_a_grown_history_appended_over_several_runs_matches_a_fresh_load(tmp_path):
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    history = json.loads(api.read_text())
    api.write_text(json.dumps(history[:3]))
    run(db, cline, root)
    last = 3
    for end in (5, 6, 9, len(history)):            # a live task, read by `watch` as it grows
        api.write_text(json.dumps(history[:end]))
        assert run(db, cline, root).records_added == end - last
        last = end
    assert rows(db, "select distinct file_epoch from stg_records where source_file = ?", [str(api)]) == [(1,)]
    same_as_fresh(db, cline, root, tmp_path)


def test_a_document_back_unchanged_after_it_was_gone_is_live_again_without_a_load(tmp_path):
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    body = api.read_bytes()
    api.unlink()
    run(db, cline, root)
    assert rows(db, "select gone from source_files where path = ?", [str(api)]) == [(True,)]
    api.write_bytes(body)                          # restored: a new file, with the same lines
    s = run(db, cline, root)
    assert (s.files_changed, s.records_added) == (1, 0)
    assert rows(db, "select gone, epoch from source_files where path = ?", [str(api)]) == [(False, 1)]
    same_as_fresh(db, cline, root, tmp_path)


@pytest.mark.parametrize("name", sorted(adapters.ADAPTERS))
def test_every_store_saved_again_unchanged_loads_nothing(tmp_path, name):
    # every adapter's lines are a function of the store's content alone (no time, temporary
    # path or run in them), so a store whose files are all written again with the same bytes
    # is recognised as unchanged, whatever its container
    adapter = adapters.ADAPTERS[name]
    src = next(p for p in (REPO / "fixtures" / name / "contract", REPO / "fixtures" / name / "demo") if p.exists())
    root = tmp_path / "store"
    shutil.copytree(src, root, symlinks=True)
    db = tmp_path / "w" / "convarch.duckdb"
    first = ingest(Layout(db), [(adapter, adapter.resolve_root(root))])
    assert first.records_added > 0
    files = lake_files(db)
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            p.write_bytes(p.read_bytes())              # a new mtime (and inode time), same bytes
            os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 5_000_000_000))
    again = ingest(Layout(db), [(adapter, adapter.resolve_root(root))])
    assert (again.files_changed, again.records_added, again.quarantined) == (0, 0, 0)
    assert lake_files(db) == files


def test_a_live_task_rewritten_at_its_tail_again_and_again_reads_like_a_fresh_load(tmp_path):
    # Cline rewrites ui_messages.json as a task runs: the last entry changes (a partial message
    # completed, a request's cost filled in), entries are added, and a checkpoint restore cuts
    # the end off. Each step keeps the lines before the first change and loads the rest.
    root, _api = cline_store(tmp_path)
    ui = root / "tasks" / TASK / "ui_messages.json"
    entries = json.loads(ui.read_text())
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    steps = [
        entries[:-1] + [dict(entries[-1], text="partial", partial=True)],        # the last one in progress
        entries,                                                                    # ... completed
        entries + [{"ts": 1, "type": "say", "say": "text", "text": "zebrafish one", "partial": True}],
        entries + [{"ts": 1, "type": "say", "say": "text", "text": "zebrafish two"},
                   {"ts": 2, "type": "say", "say": "text", "text": "and three"}],
        entries[:5],                                                                # a checkpoint restore
        entries[:5] + [{"ts": 3, "type": "say", "say": "text", "text": "after the restore"}],
    ]
    for i, step in enumerate(steps):
        ui.write_text(json.dumps(step))
        s = run(db, cline, root)
        assert s.records_added <= len(step), i
        same_as_fresh(db, cline, root, tmp_path / f"fresh{i}")
    assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(ui)]) == 6
    # only the live lines are there: not the ones the restore cut off
    live = "select count(*) from stg_records where source_file = ? and raw like ?"
    assert scalar(db, live, [str(ui), "%zebrafish%"]) == 0
    assert scalar(db, live, [str(ui), "%after the restore%"]) == 1
    epochs = rows(db, "select distinct file_epoch from stg_records where source_file = ? order by 1", [str(ui)])
    assert len(epochs) >= 2, "the lines kept from an earlier load should still be live"


@pytest.mark.parametrize("group", [1, 3, 256])
def test_a_database_whose_earlier_rows_change_keeps_the_rows_before_them(tmp_path, monkeypatch, group):
    """Rows edited, added and deleted before the end, whatever the size of the groups of rows
    (adapters/db_order.py): the warehouse reads as a fresh load."""
    from convarch.adapters import base

    monkeypatch.setattr(base, "GROUP_ROWS", group)
    sessions = tmp_path / "goose" / "sessions"
    con = goose_build.write_db(sessions / "sessions.db", wal=True, keep_open=True)
    try:
        db = tmp_path / "w" / "convarch.duckdb"
        run(db, goose, tmp_path / "goose")
        for i, change in enumerate([
            "update messages set content_json = '[{\"type\":\"text\",\"text\":\"edited\"}]' "
            "where message_id = (select max(message_id) from messages)",
            "insert into messages (message_id, session_id, role, content_json, created_timestamp) values "
            "('msg_zzz', '20260505_1', 'user', '[{\"type\":\"text\",\"text\":\"late\"}]', 1777970000)",
            "delete from messages where message_id = 'msg_zzz'",
            # a message in the middle edited, one deleted there
            "update messages set content_json = '[{\"type\":\"text\",\"text\":\"mid\"}]' "
            "where id = (select id from messages order by id limit 1 offset 5)",
            "delete from messages where id = (select id from messages order by id limit 1 offset 8)",
        ]):
            con.execute(change)
            run(db, goose, tmp_path / "goose")
            # a line gone: the lines after it stay where they were loaded, numbered as then (a
            # message written back in time moves its session's row, which goes by its last
            # message by id, to that message's time, and back when it is deleted)
            same_as_fresh(db, goose, tmp_path / "goose", tmp_path / f"fresh{i}", numbered=i == 0)
    finally:
        con.close()


@pytest.mark.parametrize("group", [1, 2, 256])
def test_an_opencode_database_as_a_session_goes_on_reads_like_a_fresh_load(tmp_path, monkeypatch, group):
    """Messages come GROUP_MESSAGES at a time as groups keyed by their rows and by the rows of
    the sessions whose last message they hold (adapters/db_order.py): only the groups whose
    rows changed, or that follow lines that changed, are made again, and the warehouse reads
    as a fresh load after each step whatever the groups' size."""
    from convarch.adapters import opencode

    build = contract_builder("opencode")
    monkeypatch.setattr(opencode, "GROUP_MESSAGES", group)
    made: list[int] = []
    real = opencode._message_lines
    monkeypatch.setattr(opencode, "_message_lines", lambda cols, rows, *a: made.append(len(rows)) or real(cols, rows, *a))
    data = tmp_path / "opencode"
    con = build.write_db(data / "opencode.db", wal=True, keep_open=True)
    try:
        db = tmp_path / "w" / "convarch.duckdb"
        run(db, opencode, data)
        order = [r[0] for r in con.execute("select session_id from message order by time_created, id")]
        n = len(order)
        # the subagent's last message is followed by 4 of the main session's
        assert order[-1] == build.MAIN and len(order) - 1 - max(i for i, s in enumerate(order) if s == build.CHILD) == 4
        # full groups are made whole; the last, not full, in runs between the sessions' rows
        assert sum(made) == n and len(made) >= -(-n // group)
        last = con.execute("select id from message order by time_created desc, id desc limit 1").fetchone()[0]
        first = con.execute("select id from message order by time_created, id limit 1").fetchone()[0]
        # the counts below are for groups of one message, all full: a session's row goes in
        # the group of the message before its time, the later of its last message's and its
        # time_updated (the main session's row, touched after its last message, after them all)
        steps = [
            # the latest message gains a part, and its session's counters move, as OpenCode writes
            ("insert into part values ('prt_zz1', ?, ?, 9, 9, ?)",
             (last, build.MAIN, json.dumps({"type": "text", "text": "Done."})), 1),
            # the main session's row, after every message, changes alone
            ("update session set time_updated = time_updated + 1, tokens_output = tokens_output + 5 where id = ?",
             (build.MAIN,), 0),
            # an earlier session's row changed where it is: the group it is in and every one after it
            ("update session set time_updated = time_updated + 1 where id = ?", (build.CHILD,), 4),
            # a message more: its group alone (its session's row stays after it)
            ("insert into message values ('msg_zzzzzzzzzzzzzzzzzzzzzzzzzz', ?, 1778666499000, 1778666499000, ?)",
             (build.MAIN, json.dumps({"role": "user", "time": {"created": 1778666499000}})), 1),
            ("delete from part where id = 'prt_zz1'", (), 2),
            # the first message's part rewritten in place: its group and every one after it
            ("update part set data = ? where id = (select min(id) from part where message_id = ?)",
             (json.dumps({"type": "text", "text": "rewritten"}), first), n + 1),
        ]
        for i, (statement, params, messages_made) in enumerate(steps):
            con.execute(statement, params)
            made.clear()
            run(db, opencode, data)
            if group == 1 or messages_made == n + 1:
                assert sum(made) == messages_made, statement
            same_as_fresh(db, opencode, data, tmp_path / f"fresh{i}")
    finally:
        con.close()


def test_a_session_that_goes_on_loads_its_new_message_and_its_own_row_alone(tmp_path):
    """Sessions' rows come each right after its last message, not all after the messages: a
    database of many sessions that gained a message loads that message and that session's
    row, not every session's row again; a session taken up again moves to the end with its
    row alone."""
    from convarch.adapters import opencode

    build = contract_builder("opencode")
    data = tmp_path / "opencode"
    con = build.write_db(data / "opencode.db", wal=True, keep_open=True)
    try:
        for k in range(40):
            con.execute("insert into session (id, project_id, slug, directory, title, version, time_created, time_updated) "
                        "values (?, 'p', ?, '/w', ?, '1.2.10', ?, ?)", (f"ses_old{k:03d}", f"s{k}", f"old {k}", 1000 + k, 1000 + k))
            con.execute("insert into message values (?, ?, ?, ?, ?)",
                        (f"msg_old{k:03d}", f"ses_old{k:03d}", 1000 + k, 1000 + k,
                         json.dumps({"role": "user", "time": {"created": 1000 + k}})))
        db = tmp_path / "w" / "convarch.duckdb"
        first = run(db, opencode, data)
        assert first.records_added > 80
        t = 1778666499000
        con.execute("insert into message values ('msg_zzzzzzzzzzzzzzzzzzzzzzzzzz', ?, ?, ?, ?)",
                    (build.MAIN, t, t, json.dumps({"role": "user", "time": {"created": t}})))
        con.execute("update session set time_updated = ? where id = ?", (t, build.MAIN))
        assert run(db, opencode, data).records_added == 2          # the message and its session's row
        same_as_fresh(db, opencode, data, tmp_path / "fresh0")
        # the oldest session taken up again: its message and its row, where they now are
        con.execute("insert into message values ('msg_zzzzzzzzzzzzzzzzzzzzzzzzzz1', 'ses_old000', ?, ?, ?)",
                    (t + 1, t + 1, json.dumps({"role": "user", "time": {"created": t + 1}})))
        assert run(db, opencode, data).records_added == 2
        # its old row's line is gone: the lines after it stay where they were loaded
        same_as_fresh(db, opencode, data, tmp_path / "fresh1", numbered=False)
    finally:
        con.close()


#: (adapter, its database in the contract store, the statement that renames the session whose
#: last message is oldest as the agent does: a new title and the row's update time now)
RENAMES = [
    ("opencode", "opencode.db", "update session set title = 'Renamed', time_updated = 1893456000000 where id = "
     "(select session_id from message group by session_id order by max(time_created) limit 1)"),
    ("kilo_code", "kilo.db", "update session set title = 'Renamed', time_updated = 1893456000000 where id = "
     "(select session_id from message group by session_id order by max(time_created) limit 1)"),
    ("crush", ".crush/crush.db", "update sessions set title = 'Renamed', updated_at = 1893456000 where id = "
     "(select session_id from messages group by session_id order by max(created_at) limit 1)"),
    ("goose", "sessions/sessions.db", "update sessions set name = 'Renamed', updated_at = '2030-01-01 00:00:00' "
     "where id = (select session_id from messages group by session_id order by max(created_timestamp) limit 1)"),
    ("grok_cli", "grok.db", "update sessions set title = 'Renamed', updated_at = '2030-01-01T00:00:00.000Z' where id = "
     "(select session_id from messages group by session_id order by max(created_at) limit 1)"),
]


def _loaded_contract_store(tmp_path: Path, name: str):
    """A copy of the adapter's contract store, loaded once: (adapter, store root, warehouse)."""
    adapter = adapters.get(name)
    root = tmp_path / name
    shutil.copytree(REPO / "fixtures" / name / "contract", root,
                    ignore=shutil.ignore_patterns("build_contract*", "README*"))
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, adapter, root)
    return adapter, root, db


@pytest.mark.parametrize("name, db_path, rename", RENAMES, ids=[r[0] for r in RENAMES])
def test_an_old_session_renamed_loads_its_own_row_alone(tmp_path, name, db_path, rename):
    """A session's row goes at the later of its last message's time and the time the agent
    last wrote the row: an old session renamed (or archived, shared) moves to the end and
    loads its row alone, where at its old place every line after it loaded again."""
    import sqlite3

    adapter, root, db = _loaded_contract_store(tmp_path, name)
    con = sqlite3.connect(root / db_path)
    assert con.execute(rename).rowcount == 1
    con.commit()
    con.close()
    again = run(db, adapter, root)
    assert again.records_added == 1, again
    assert "Renamed" in {t for (t,) in rows(db, "select source_title from int_session_metadata")}
    same_as_fresh(db, adapter, root, tmp_path / "fresh", numbered=False)


def test_a_database_changed_in_place_inside_one_tick_of_its_time_is_read_again(tmp_path):
    """A commit that keeps the database's size, made inside the tick of the clock that stamped
    its time at the last read, leaves size and time as they were: SQLite's own change counter
    (etl/snapshot.py CHANGE_MARKS) tells the run to read it again."""
    import sqlite3

    name, db_path, rename = RENAMES[0]
    adapter, root, db = _loaded_contract_store(tmp_path, name)
    store = root / db_path
    st = store.stat()
    con = sqlite3.connect(store)
    assert con.execute("pragma journal_mode").fetchone()[0] == "delete"
    assert con.execute(rename).rowcount == 1
    con.commit()
    con.close()
    os.utime(store, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (store.stat().st_size, store.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    again = run(db, adapter, root)
    assert again.records_added == 1, again
    assert "Renamed" in {t for (t,) in rows(db, "select source_title from int_session_metadata")}
    assert run(db, adapter, root).files_changed == 0          # and read once, not at every run
    same_as_fresh(db, adapter, root, tmp_path / "fresh", numbered=False)


@pytest.mark.parametrize("name, db_path", [("goose", "sessions/sessions.db"), ("openclaw", "agents/main/agent/openclaw-agent.sqlite")])
def test_a_database_loaded_in_the_order_before_reads_like_a_fresh_load_after_it(tmp_path, monkeypatch, name, db_path):
    """A warehouse that loaded a database's tables one after the other (as before they were
    merged in time) and then reads it in time loads what changed places again, and reads as
    a fresh load of the store."""
    import sqlite3

    from convarch.adapters import db_order

    adapter = adapters.get(name)
    root = tmp_path / name
    shutil.copytree(REPO / "fixtures" / name / "contract", root)
    real = db_order.merged
    monkeypatch.setattr(db_order, "merged", lambda tables, size=None: (g for t in tables for g in real([t], size)))
    db = tmp_path / "w" / "convarch.duckdb"
    first = run(db, adapter, root)
    monkeypatch.setattr(db_order, "merged", real)
    con = sqlite3.connect(root / db_path)
    if name == "goose":
        con.execute("insert into messages (message_id, session_id, role, content_json, created_timestamp) "
                    "select 'msg_late', session_id, role, content_json, created_timestamp + 1000 from messages "
                    "order by id desc limit 1")
    else:
        con.execute("insert into transcript_events select session_id, seq + 1, event_json, created_at + 1000 "
                    "from transcript_events order by created_at desc limit 1")
    con.commit()
    con.close()
    again = run(db, adapter, root)
    assert 1 < again.records_added <= first.records_added + 1
    same_as_fresh(db, adapter, root, tmp_path / "fresh", numbered=False)


def test_the_copy_of_a_grown_document_leaves_out_the_lines_loaded_before(tmp_path, monkeypatch):
    """A store that changed at its end, or not at all, is not written out whole only for its
    first lines to be skipped: the copy starts after them, and the records keep the byte
    offsets a whole copy gives."""
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    run(db, cline, root)
    history = json.loads(api.read_text())
    history.append({"role": "user", "content": [{"type": "text", "text": "and the docs too"}]})
    api.write_text(json.dumps(history))
    copies = []
    real = read_file_mod.snapshot_whole

    def watched(*args, **kwargs):
        s = real(*args, **kwargs)
        copies.append((s, s.path.stat().st_size))
        return s

    monkeypatch.setattr(read_file_mod, "snapshot_whole", watched)
    assert run(db, cline, root).records_added == 1
    s, size = next((s, size) for s, size in copies if s.kept)
    assert s.omitted > 0
    assert 0 < size < s.omitted             # only the new line was written
    same_as_fresh(db, cline, root, tmp_path)
    offsets = rows(tmp_path / "fresh" / "convarch.duckdb",
                   "select line_no, byte_offset from stg_records where source_file = ? order by 1", [str(api)])
    assert rows(db, "select line_no, byte_offset from stg_records where source_file = ? order by 1", [str(api)]) == offsets


def test_a_store_read_whole_can_be_left_for_a_later_run(tmp_path):
    """`defer` leaves a changed store read whole as it was last read (watch spaces out the
    reads of big ones); its change is not recorded, so the next run reads it."""
    root, api = cline_store(tmp_path)
    db = tmp_path / "inc" / "convarch.duckdb"
    first = run(db, cline, root)
    assert 0 < first.read_seconds[str(api)] <= first.extract_seconds     # the read, not the loads
    history = json.loads(api.read_text())
    history.append({"role": "user", "content": [{"type": "text", "text": "one more thing"}]})
    api.write_text(json.dumps(history))
    s = ingest(Layout(db), [(cline, cline.resolve_root(root))], defer={str(api)})
    assert (s.files_deferred, s.files_changed, s.records_added) == (1, 0, 0)
    assert str(api) not in s.read_seconds
    assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(api)]) == len(history) - 1
    s = run(db, cline, root)
    assert (s.files_deferred, s.files_changed, s.records_added) == (0, 1, 1)
    same_as_fresh(db, cline, root, tmp_path)


@pytest.mark.parametrize("name", sorted(adapters.ADAPTERS))
def test_a_container_read_the_first_time_is_cut_as_its_lines_are_made(name, tmp_path):
    """A new container's lines are cut in chunks as they are made (WholeStream), not written
    out first: the same lines, numbers, offsets, bad lines and hashes as the written copy."""
    adapter = adapters.ADAPTERS[name]
    root = next(p for p in (REPO / "fixtures" / name / "contract", REPO / "fixtures" / name / "demo") if p.exists())
    files = [sf for sf in adapter.discover(adapter.resolve_root(root)) if sf.container != "jsonl" and makes_lines(sf)]
    if not files:
        pytest.skip("no store read whole")
    for i, sf in enumerate(files):
        whole = snapshot_whole(sf, tmp_path / f"{i}.jsonl", tmp_path / f"{i}.copy", keep=True)
        want = list(split_snapshot(whole.path, 7, 0, 1))
        stream = WholeStream(sf, tmp_path / f"{i}.stream", keep=True)
        got = list(split_chunks(stream.chunks(lambda: 300), 7))       # chunks of a line or a few
        s = stream.snapshot()
        assert [r for b in got for r in b.table.to_pylist()] == [r for b in want for r in b.table.to_pylist()]
        assert [x for b in got for x in b.bad] == [x for b in want for x in b.bad]
        assert sum(b.lines for b in got) == sum(b.lines for b in want)
        assert (s.lines, s.lines_hash, s.line_hashes, s.size) == (whole.lines, whole.lines_hash, whole.line_hashes, whole.size)
        assert not (tmp_path / f"{i}.stream").exists()          # the private copy is gone


@pytest.mark.parametrize("name, db_path, table, order", [
    ("goose", "sessions/sessions.db", "messages", "rowid"), ("hermes", "state.db", "messages", "rowid"),
    ("crush", ".crush/crush.db", "messages", "rowid"),
    ("openclaw", "agents/main/agent/openclaw-agent.sqlite", "transcript_events", "session_id, seq"),
    ("grok_cli", "grok.db", "messages", "created_at, session_id, seq")])
def test_a_database_given_as_row_groups_makes_again_only_the_groups_that_changed(tmp_path, monkeypatch, name,
                                                                                db_path, table, order):
    """goose, Hermes, Crush, OpenClaw and grok-cli give their messages (events) GROUP_ROWS at
    a time as groups keyed by their rows (adapters/base.py Group): a message more makes only
    the groups at the end again, and the warehouse reads as a fresh load."""
    import sqlite3

    from convarch.adapters import base
    from convarch.etl.containers import LinesDigest

    adapter = adapters.get(name)
    root = tmp_path / name
    shutil.copytree(REPO / "fixtures" / name / "contract", root)
    monkeypatch.setattr(base, "GROUP_ROWS", 2)
    taken: list[bool] = []
    real = LinesDigest.take_group
    monkeypatch.setattr(LinesDigest, "take_group", lambda self, key: taken.append(real(self, key)) or taken[-1])
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, adapter, root)
    con = sqlite3.connect(root / db_path)
    n = con.execute(f"select count(*) from {table}").fetchone()[0]
    # a message more, as the agent writes it: the last one again, with a new id, written last
    desc = ", ".join(f"{c} desc" for c in order.split(", "))
    cur = con.execute(f"select * from {table} order by {desc} limit 1")
    cols = [d[0] for d in cur.description]
    row = dict(zip(cols, cur.fetchone()))
    for col, value in row.items():
        if col in ("id", "message_id"):
            row[col] = None if isinstance(value, int) else f"{value}-more"
        elif col == "seq":
            row[col] = value + 1
        elif isinstance(value, (int, float)) and ("created" in col or col == "timestamp"):
            row[col] = con.execute(f"select max({col}) from {table}").fetchone()[0] + 1
    con.execute(f"insert into {table} ({', '.join(cols)}) values ({', '.join('?' * len(cols))})", list(row.values()))
    con.commit()
    con.close()
    taken.clear()
    s = run(db, adapter, root)
    # every group is taken as it was but the new message's, its session's row (which moved
    # after it, adapters/db_order.py) and the group that row's old place had cut in two
    assert len(taken) >= n // 2 and taken[-1] is False and taken.count(False) <= 3
    assert 1 <= s.records_added <= 3
    # a session row that moved from between messages leaves its old line dead there, and the
    # lines after it keep their numbers (etl/live_lines.py)
    same_as_fresh(db, adapter, root, tmp_path / "fresh", numbered=False)


def test_a_new_document_given_a_deleted_ones_inode_and_first_bytes_is_a_new_file(tmp_path, monkeypatch):
    """A document written out whole can begin with the same bytes as another (the same long
    prompt) and differ after. A new task's history given the inode of a deleted task's, and
    beginning as it began, is not that history moved: the deleted task stays in the archive.
    A rename keeps the size and time, so a moved document is still found."""
    from convarch.etl import snapshot

    root = tmp_path / "cline"
    tasks = root / "tasks"
    prompt = "<task>\n" + "Follow the house style guide to the letter. " * 150 + "\n</task>"

    def history(task: str, reply: str) -> Path:
        path = tasks / task / "api_conversation_history.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps([
            {"role": "user", "content": [{"type": "text", "text": prompt}]},
            {"role": "assistant", "content": [{"type": "text", "text": reply}]}]))
        return path

    old = history("1778600000000", "I renamed the module.")
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, cline, root)
    given: dict[Path, int] = {}
    hand_inodes(monkeypatch, given)
    inode = os.stat(old).st_ino
    shutil.rmtree(old.parent)
    new = history("1778600000001", "I fixed the flaky test instead, which took a while longer.")
    given[new] = inode                                 # the inode the file system gives it
    assert new.read_bytes()[:snapshot.HEAD_LEN] == json.dumps([
        {"role": "user", "content": [{"type": "text", "text": prompt}]}]).encode()[:snapshot.HEAD_LEN]
    s = run(db, cline, root)
    assert s.records_added == 2
    assert rows(db, "select session_id from sessions order by 1") == [("1778600000000",), ("1778600000001",)]
    assert rows(db, "select path, gone from source_files order by file_id") == [(str(old), True), (str(new), False)]
    assert scalar(db, "select count(*) from messages where text = 'I renamed the module.'") == 1

    # renamed, it keeps its size and time: the same file moved, nothing loaded again
    moved = tasks / "1778600000002" / new.name
    moved.parent.mkdir()
    new.rename(moved)
    given[moved] = given.pop(new)
    s = run(db, cline, root)
    assert (s.files_changed, s.records_added) == (0, 0)
    assert rows(db, "select file_id, path from source_files where not gone") == [(2, str(moved))]
