"""Compaction merges small Parquet files without changing a single row a reader sees, keeps
retired files for readers of older catalogs, and leaves the archive as it was when it fails."""
from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest

from convarch.adapters import claude_code
from convarch.etl import compact
from convarch.etl import extract as extract_mod
from convarch.etl import partfiles, readers, superseded
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.manifest import read_manifest
from helpers import reader_in_another_process, scalar
from test_parallel_load import snapshot_of
from test_reliability import corpus


def lake_files(db: Path) -> set[str]:
    lake = Layout(db).lake
    return {str(p) for p in lake.rglob("*.parquet") if not p.name.startswith("seed-")}


def listed(db: Path) -> set[str]:
    files = read_manifest(Layout(db))["files"]
    return {f for paths in files.values() for f in paths if not Path(f).name.startswith("seed-")}


def run(db: Path, root: Path, workers: int = 2):
    return ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=workers)


def append_turn(root: Path, k: int) -> None:
    for i, path in enumerate(sorted(root.rglob("*.jsonl"))[:6]):
        with open(path, "a") as fh:
            fh.write(f'{{"type": "system", "subtype": "note", "uuid": "extra-{k}-{i}", "content": "more {k}"}}\n')


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 32 << 10)   # a batch every few lines,
    monkeypatch.setattr(partfiles, "FILE_BYTES", 1)              # and a file per batch


def test_merged_lake_reads_exactly_like_the_unmerged_one(tmp_path, monkeypatch, small_batches):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=20, seed=9)
    monkeypatch.setattr(compact, "SMALL_FILES", 10**9)            # never merge
    plain = tmp_path / "plain" / "w.duckdb"
    assert run(plain, root).files_merged == 0
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    merged = tmp_path / "merged" / "w.duckdb"
    s = run(merged, root)
    assert s.files_merged > 0
    assert len(lake_files(merged)) < len(lake_files(plain)) / 2
    assert snapshot_of(merged) == snapshot_of(plain)
    # the run's own small files were never registered: deleted at once, nothing left unlisted
    assert lake_files(merged) == listed(merged)


def test_retired_files_wait_out_the_grace_then_go(tmp_path, monkeypatch, small_batches):
    """Where no one can tell which catalogs a reader holds (no /proc/locks, no F_GETLK)."""
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=12, seed=5)
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    monkeypatch.setattr(readers, "LOCKS", tmp_path / "no-proc-locks")
    monkeypatch.setattr(readers, "FLOCK", None)
    assert not readers.can_tell()
    db = tmp_path / "w" / "w.duckdb"
    run(db, root)
    for k in range(1, 6):          # each append run adds a small file per partition it touches
        before = listed(db)
        append_turn(root, k)
        if run(db, root).files_merged:
            break
    else:
        pytest.fail("five append runs never merged their small files")
    retired = before - listed(db)
    assert retired, "the second run merged none of the first run's files"
    assert retired <= lake_files(db), "a retired file went before its grace ended"
    want = scalar(db, "select count(*) from stg_records")
    assert want == scalar(db, "select count(*) from (select distinct file_id, line_no from stg_records)")
    monkeypatch.setattr(compact, "RETIRED_GRACE", timedelta(0))
    append_turn(root, 99)
    run(db, root)
    assert not (retired & lake_files(db))
    assert lake_files(db) >= listed(db)
    assert scalar(db, "select count(*) from stg_records") == want + 6


def test_a_failed_merge_commits_nothing_and_the_next_run_loads_once(tmp_path, monkeypatch, small_batches):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=12, seed=6)
    lines = sum(1 for p in root.rglob("*.jsonl") for line in open(p) if line.strip())
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    real = compact._merge

    def broken(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(compact, "_merge", broken)
    db = tmp_path / "w" / "w.duckdb"
    with pytest.raises(OSError):
        run(db, root)
    assert not os.path.exists(db) or scalar(db, "select count(*) from stg_records") == 0
    monkeypatch.setattr(compact, "_merge", real)
    s = run(db, root)
    assert s.records_added == lines and s.files_merged > 0
    assert scalar(db, "select count(*) from stg_records") == lines
    assert lake_files(db) == listed(db)


def test_a_run_rewrites_no_more_than_its_budget_and_later_runs_go_on(tmp_path, monkeypatch, small_batches):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=16, seed=8)
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    plain_db = tmp_path / "plain" / "w.duckdb"
    monkeypatch.setattr(compact, "RUN_BUDGET_BYTES", 0)
    assert run(plain_db, root).files_merged == 0
    monkeypatch.setattr(compact, "RUN_BUDGET_BYTES", 64 << 10)     # a few small partitions a run
    db = tmp_path / "w" / "w.duckdb"
    merged_per_run = [run(db, root).files_merged]
    for k in range(8):
        append_turn(root, k)
        merged_per_run.append(run(db, root).files_merged)
    assert merged_per_run[0] > 0 and sum(merged_per_run[1:]) > 0
    assert max(merged_per_run) < len(lake_files(plain_db))    # no run merged everything at once
    got = scalar(db, "select count(*) from stg_records")
    assert got == scalar(plain_db, "select count(*) from stg_records") + 8 * 6


def test_a_partition_whose_small_files_pass_the_budget_is_merged_a_piece_a_run(monkeypatch):
    """Cheapest partitions are merged whole while the run's budget lasts, and one that a later
    run can take whole waits for it; one whose small files alone pass a run's budget has its
    oldest merged, as many as fit, instead of waiting for room it can never have."""
    import duckdb

    state = duckdb.connect()
    state.execute("create table data_files (path varchar, table_name varchar, source varchar, month varchar, "
                  "run_id bigint, row_count bigint, bytes bigint, retired_run_id bigint)")
    kb = 1 << 10
    rows = [(f"records/big/{i:02d}.parquet", "records", "claude_code", "2026-11", i, 1, 10 * kb, None)
            for i in range(10)]
    rows += [(f"records/small/{i}.parquet", "records", "codex", "2026-11", i, 1, 5 * kb, None) for i in range(4)]
    # 48 KB: more than is left after the cheapest, but a later run's budget takes it whole
    rows += [(f"records/mid/{i}.parquet", "records", "codex", "2026-10", i, 1, 12 * kb, None) for i in range(4)]
    rows += [("records/retired.parquet", "records", "claude_code", "2026-11", 0, 1, kb, 3)]
    state.executemany("insert into data_files values (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    monkeypatch.setattr(compact, "RUN_BUDGET_BYTES", 64 * kb)
    got = {(p.source, tuple(p.paths)) for p in compact.plan(state, [])}
    assert got == {
        ("codex", tuple(f"records/small/{i}.parquet" for i in range(4))),            # 20 KB, whole
        ("claude_code", tuple(f"records/big/{i:02d}.parquet" for i in range(4))),   # the 44 KB left: its 4 oldest
    }


def _data_files(rows):
    import duckdb

    state = duckdb.connect()
    state.execute("create table data_files (path varchar, table_name varchar, source varchar, month varchar, "
                  "run_id bigint, row_count bigint, bytes bigint, retired_run_id bigint)")
    if rows:
        state.executemany("insert into data_files values (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return state


def test_a_file_bigger_than_the_small_files_beside_it_is_left_out_of_their_merge(monkeypatch):
    kb = 1 << 10
    rows = [("records/m.parquet", "records", "claude_code", "2026-11", 1, 1, 20 * kb, None)]
    rows += [(f"records/t{i}.parquet", "records", "claude_code", "2026-11", 2 + i, 1, kb, None) for i in range(7)]
    # files of like sizes are merged together, the biggest too
    rows += [(f"blocks/{i}.parquet", "blocks", "claude_code", "2026-11", 1 + i, 1, (8 - i) * kb, None)
             for i in range(8)]
    # files each past all the smaller ones together, and fewer than half of SMALL_FILES left
    # beside them: nothing yet
    rows += [(f"postings/m{i}.parquet", "postings", "codex", "2026-11", 1 + i, 1, (64 >> i) * kb, None)
             for i in range(5)]
    rows += [(f"postings/t{i}.parquet", "postings", "codex", "2026-11", 6 + i, 1, kb, None) for i in range(3)]
    monkeypatch.setattr(compact, "SMALL_FILES", 8)
    got = {p.table: p.paths for p in compact.plan(_data_files(rows), [])}
    assert got == {"records": [f"records/t{i}.parquet" for i in range(7)],
                   "blocks": [f"blocks/{i}.parquet" for i in range(8)]}


@pytest.mark.parametrize("leave_out_big", [True, False])
def test_pick_ups_that_each_add_a_small_file_rewrite_each_row_a_few_times(monkeypatch, leave_out_big):
    """A partition under `watch` gains a small file at every pick-up. Merging every small file
    each time rewrote the last merge's file again and again while it grew (each row 21 times
    over 300 pick-ups here); leaving out a file bigger than the rest together
    bounds it (3.6 times), with no more files in the partition than a few."""
    kb = 1 << 10
    if not leave_out_big:
        monkeypatch.setattr(compact, "_worth_merging", lambda paths, sizes: (paths, sizes))
    files: dict[str, int] = {}
    rewritten, most_files = 0, 0
    state = _data_files([])
    for run_id in range(1, 301):
        files[f"r{run_id:04d}.parquet"] = 50 * kb
        state.execute("delete from data_files")
        state.executemany("insert into data_files values (?, ?, ?, ?, ?, ?, ?, ?)",
                          [(path, "records", "claude_code", "2026-11", int(path[1:5]), 1, size, None)
                           for path, size in files.items()])
        for part in compact.plan(state, []):
            merged = sum(files.pop(path) for path in part.paths)
            rewritten += merged
            files[f"r{run_id:04d}m.parquet"] = merged
        most_files = max(most_files, len(files))
    written = 300 * 50 * kb
    assert sum(files.values()) == written
    if leave_out_big:
        assert rewritten < 6 * written and most_files <= 16, (rewritten / written, most_files)
    else:
        assert rewritten > 15 * written, rewritten / written          # what it was


def listed_rows(db: Path, table: str) -> int:
    """Rows of `table` in the files the published catalog lists (the seed holds none)."""
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(f).metadata.num_rows for f in read_manifest(Layout(db))["files"][table])


CHAIN_TABLES = ("chain_messages", "resume_messages", "branches", "session_state", "chain_issues")


def every_view(db: Path) -> dict[str, list[tuple]]:
    from helpers import rows
    got = snapshot_of(db)
    for view in ("session_state", "chain_issues", "int_session_parts"):
        got[view] = sorted(rows(db, f"select * exclude (file_id) from {view}"), key=repr)
    return got


def rewrite_head(path: Path, k: int) -> None:
    """The agent rewrites a transcript from its first line: a new version (epoch) of the file."""
    lines = path.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace("task", f"task (edit {k})", 1)
    path.write_text("".join(lines))


def test_superseded_derived_rows_leave_the_lake_and_every_view_reads_the_same(tmp_path, monkeypatch):
    """Each pick-up computes a changed file's chains again under its run, and a rewritten
    file's session facts under its new epoch; the older rows are read by no view. A run
    rewrites the files they make up a good share of without them: the listed chain files
    then hold the live rows alone, every view reads as in an archive that kept them all, and
    the records of a file's earlier versions stay, since they are the archive."""
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=12, seed=3)
    transcripts = sorted(root.rglob("*.jsonl"))
    dbs = {"kept": tmp_path / "kept" / "w.duckdb", "pruned": tmp_path / "pruned" / "w.duckdb"}
    superseded = {name: 0 for name in dbs}
    for k in range(4):
        if k:
            append_turn(root, k)                 # six transcripts gain a line
            rewrite_head(transcripts[-1], k)     # and one is rewritten from its head
        for name, db in dbs.items():
            monkeypatch.setattr(compact, "DEAD_SHARE", 2.0 if name == "kept" else 0.25)   # 2: never
            superseded[name] += run(db, root).rows_superseded
    assert superseded["kept"] == 0 and superseded["pruned"] > 0
    assert every_view(dbs["pruned"]) == every_view(dbs["kept"])
    for table in CHAIN_TABLES:
        live = scalar(dbs["pruned"], f"select count(*) from {table}")
        assert listed_rows(dbs["pruned"], table) == live, table
    assert listed_rows(dbs["kept"], "chain_messages") > scalar(dbs["kept"], "select count(*) from chain_messages")
    # parts of the rewritten file's earlier versions are gone; its earlier records are not
    parts = {name: listed_rows(db, "session_parts") for name, db in dbs.items()}
    assert parts["pruned"] < parts["kept"]
    assert listed_rows(dbs["pruned"], "records") == listed_rows(dbs["kept"], "records")
    assert lake_files(dbs["pruned"]) >= listed(dbs["pruned"])


def rewritten_stores(tmp_path: Path) -> dict:
    """A Claude Code corpus, a Cursor store and a Cline task, each of which loses lines
    (rewrite_lines): a transcript rewritten from its head (a new epoch), a Cursor chat taken
    up again (its lines move to the end: a run of lines no longer live) and a Cline message
    edited in place (the lines from it on load as a new epoch)."""
    import shutil
    import sys

    from conftest import REPO
    sys.path.insert(0, str(REPO / "bench"))
    from stores import cursor_store

    claude_root = tmp_path / "home" / ".claude"
    corpus(claude_root / "projects", files=8, seed=5)
    cursor_root = tmp_path / "cursor" / "User"
    cursor_store(cursor_root / "globalStorage" / "state.vscdb", 1)
    cline_root = tmp_path / "cline"
    shutil.copytree(REPO / "fixtures" / "cline" / "contract", cline_root)
    return {"claude": claude_root, "cursor": cursor_root, "cline": cline_root}


def rewrite_lines(roots: dict, k: int) -> None:
    import json
    import sqlite3
    import sys

    from conftest import REPO
    sys.path.insert(0, str(REPO / "bench"))
    from stores import cursor_bubble

    rewrite_head(sorted(roots["claude"].rglob("*.jsonl"))[k], k)
    store = roots["cursor"] / "globalStorage" / "state.vscdb"
    con = sqlite3.connect(store)
    (oldest,) = con.execute("select key from cursorDiskKV where key like 'composerData:%' "
                            "order by json_extract(value, '$.lastUpdatedAt') limit 1").fetchone()
    con.close()
    cursor_bubble(store, oldest.split(":")[1], f"again{k}", f"taken up again ({k}): the zebrafish flag")
    api = next(roots["cline"].rglob("api_conversation_history.json"))
    history = json.loads(api.read_text())
    history[1 + k]["content"] = [{"type": "text", "text": f"an answer edited in place ({k})"}]
    api.write_text(json.dumps(history))


def run_stores(db: Path, roots: dict):
    from convarch.adapters import cline, cursor
    return ingest(Layout(db), [(claude_code, claude_code.resolve_root(roots["claude"])),
                               (cursor, cursor.resolve_root(roots["cursor"])),
                               (cline, cline.resolve_root(roots["cline"]))], workers=2)


def test_the_search_index_of_lines_no_longer_live_leaves_the_lake_and_search_reads_the_same(tmp_path, monkeypatch):
    """A store that loses lines leaves their search rows read by no view: those of a file's
    older epochs, and of the runs of lines a store rewritten in place no longer gives. A run
    that finds a source's index due a sweep rewrites the files they make up a good share of
    without them: the listed index then holds the live rows alone, every view and search read
    as in an archive that kept them all, and the records of those lines stay (the archive)."""
    from helpers import rows

    roots = rewritten_stores(tmp_path)
    dbs = {"kept": tmp_path / "kept" / "w.duckdb", "pruned": tmp_path / "pruned" / "w.duckdb"}
    monkeypatch.setattr(compact, "SMALL_FILES", 10**9)          # no merges: the sweep alone
    for k in range(3):
        if k:
            rewrite_lines(roots, k)
        for name, db in dbs.items():
            monkeypatch.setattr(superseded, "LINE_TABLES", () if name == "kept" else ("postings", "search_docs"))
            monkeypatch.setattr(compact, "DEAD_SHARE", 1e-9)     # every line lost: a sweep
            run_stores(db, roots)
        assert every_view(dbs["pruned"]) == every_view(dbs["kept"])
        for table, view in (("postings", "search_postings"), ("search_docs", "search_docs")):
            assert listed_rows(dbs["pruned"], table) == scalar(dbs["pruned"], f"select count(*) from {view}"), table
            if k:
                assert listed_rows(dbs["kept"], table) > scalar(dbs["kept"], f"select count(*) from {view}"), table
        for word in ("zebrafish", "edited", "task"):
            hits = {name: sorted(rows(db, "select r.source, r.session_id, r.line_no, r.text from search_postings as p "
                                          "join stg_records as r using (file_id, line_no) where p.term = ?", [word]))
                    for name, db in dbs.items()}
            assert hits["pruned"] == hits["kept"], word
    # a file swept is rewritten alone, in its own order: still one run sorted by term
    import pyarrow.parquet as pq
    from test_sorted_postings import runs_in
    for f in read_manifest(Layout(dbs["pruned"]))["files"]["postings"]:
        assert runs_in(pq.read_table(f, columns=["term"])["term"].to_pylist()) == 1, f
    # every source lost lines, and its sweep is recorded
    assert {s for (s,) in rows(dbs["pruned"], "select distinct source from lake_postings")} == {"claude_code", "cursor", "cline"}
    assert listed_rows(dbs["pruned"], "records") == listed_rows(dbs["kept"], "records")
    assert scalar(dbs["pruned"], "select count(*) from lake_records") > scalar(dbs["pruned"], "select count(*) from stg_records")


def dead_shares(db: Path, table: str) -> list[float]:
    """The share of each listed file's rows whose line is no longer live (no search_docs row)."""
    from helpers import rows
    files = read_manifest(Layout(db))["files"][table]
    return [share for (share,) in rows(db, (
        "with t as (select * from read_parquet(?, filename = true, hive_partitioning = false)) "
        "select avg(case when d.file_id is null then 1 else 0 end) from t left join search_docs as d "
        "on d.file_id = t.file_id and d.file_epoch = t.file_epoch and d.line_no = t.line_no and d.field = t.field "
        "group by t.filename"), [files])]


def test_a_source_is_swept_once_its_lines_no_longer_live_reach_their_share(tmp_path, monkeypatch):
    """The sweep reads a source's whole index, so a run does it only once the records its
    files no longer hold have grown since the last to DEAD_SHARE of the records of the index
    (the live ones and those): counted from the state, so a run that is not due pays nothing.
    One transcript of eight rewritten is not enough; after a sweep no file is left with that
    share of dead rows, and the count starts again from there."""
    import duckdb

    roots = rewritten_stores(tmp_path)
    db = tmp_path / "w" / "w.duckdb"
    monkeypatch.setattr(compact, "SMALL_FILES", 10**9)      # no merges: the sweep alone
    run_stores(db, roots)
    transcripts = sorted(roots["claude"].rglob("*.jsonl"))

    def mark() -> int:
        con = duckdb.connect(str(Layout(db).state_db), read_only=True)
        try:
            got = con.execute("select value::bigint from settings where key = ?",
                              [compact.SWEPT_KEY + "claude_code"]).fetchone()
        finally:
            con.close()
        return got[0] if got else 0

    swept_at, last = [], 0
    for k, path in enumerate(transcripts):
        rewrite_head(path, k + 1)
        run_stores(db, roots)
        dead = (scalar(db, "select count(*) from lake_records where source = 'claude_code'")
                - scalar(db, "select count(*) from stg_records where source = 'claude_code'"))
        live = scalar(db, "select count(*) from stg_records where source = 'claude_code'")
        due = dead - last >= compact.DEAD_SHARE * (live + dead - last)
        assert (mark() != last) == due, (k, dead, last, live)
        if due:
            swept_at.append(k)
            last = mark()
            assert last == dead
            assert max(dead_shares(db, "postings")) < compact.DEAD_SHARE
            assert max(dead_shares(db, "search_docs")) < compact.DEAD_SHARE
        elif not swept_at:
            assert max(dead_shares(db, "postings")) > 0
    assert swept_at and swept_at[0] > 0 and len(swept_at) < len(transcripts), swept_at


def test_files_of_superseded_rows_go_worst_first_within_the_budget(monkeypatch):
    """A file whose superseded rows reach their share is rewritten in the run's budget left
    after the merges of small files, the most superseded first; one bigger than the whole
    budget goes when the run rewrites nothing else, or it never could."""
    import duckdb

    state = duckdb.connect()
    state.execute("create table data_files (path varchar, table_name varchar, source varchar, month varchar, "
                  "run_id bigint, row_count bigint, bytes bigint, retired_run_id bigint)")
    kb = 1 << 10
    monkeypatch.setattr(compact, "RUN_BUDGET_BYTES", 64 * kb)
    part = ("chain_messages", "claude_code", "all")
    dead = {part: [compact.Dead("chain_messages/r000002_g00_00000.parquet", 40 * kb, 100, 30),
                   compact.Dead("chain_messages/r000001_g00_00000.parquet", 30 * kb, 100, 90),
                   compact.Dead("chain_messages/r000003_g00_00000.parquet", 10 * kb, 100, 50)]}
    got = compact.plan(state, [], dead)
    # 90 then 50 superseded rows: 40 KB of the budget; the 40 KB file waits for a later run
    assert [(p.table, p.paths) for p in got] == [
        ("chain_messages", ["chain_messages/r000001_g00_00000.parquet", "chain_messages/r000003_g00_00000.parquet"])]
    huge = {part: [compact.Dead("chain_messages/r000004_g00_00000.parquet", 900 * kb, 100, 60)]}
    assert [p.paths for p in compact.plan(state, [], huge)] == [["chain_messages/r000004_g00_00000.parquet"]]
    # with small files to merge first, the huge one waits
    rows = [(f"records/s/{i}.parquet", "records", "codex", "2026-11", i, 1, kb, None) for i in range(8)]
    state.executemany("insert into data_files values (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    assert [p.table for p in compact.plan(state, [], huge)] == ["records"]


@pytest.fixture(params=["getlk", "proc-locks"])
def lock_view(request, monkeypatch):
    """Each way a run tells who holds a catalog: this process's open files and F_GETLK, and
    where the kernel's lock record is not known, /proc/locks (Linux)."""
    if request.param == "getlk":
        if readers.FLOCK is None or not readers._getlk_works(readers.FLOCK):
            pytest.skip("F_GETLK is not read on this system")
    else:
        monkeypatch.setattr(readers, "FLOCK", None)
        if not readers.can_tell():
            pytest.skip("no /proc/locks on this system")
    return request.param


def test_retired_files_go_once_no_reader_holds_a_catalog_that_names_them(tmp_path, monkeypatch, small_batches,
                                                                          lock_view):
    """A notebook holding an older catalog keeps every file it names, however many runs go by;
    once it lets go, the next run deletes them without waiting out the grace."""
    import duckdb

    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=12, seed=5)
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    db = tmp_path / "w" / "w.duckdb"
    run(db, root)
    notebooks = []
    for k in range(1, 6):
        notebooks.append((duckdb.connect(str(db), read_only=True), listed(db)))
        append_turn(root, k)
        if run(db, root).files_merged:
            break
    else:
        pytest.fail("five append runs never merged their small files")
    retired = notebooks[-1][1] - listed(db)
    assert retired
    for k in (6, 7):           # later runs purge, and must leave what the notebooks read
        append_turn(root, k)
        run(db, root)
        assert retired <= lake_files(db), "a file an open catalog names went"
    for con, _ in notebooks:    # each still reads its own state whole
        assert con.execute("select count(*) from stg_records").fetchone()[0] > 0
    held_dir = readers.kept_dir(Layout(db))
    assert len(list(held_dir.glob("*.duckdb"))) >= len(notebooks)
    from convarch.cli.doctor import lake_usage      # what `convarch doctor` reports of it
    usage = lake_usage(Layout(db))
    assert usage["merged_away_files"] >= len(retired) and usage["catalogs_held_open"] == len(notebooks)
    for con, _ in notebooks:
        con.close()
    append_turn(root, 8)
    run(db, root)
    assert not (retired & lake_files(db)), "files no reader holds waited for the grace"
    assert lake_files(db) >= listed(db)
    # only the catalog this last run replaced is kept, until the next run finds it free
    assert len(list(held_dir.glob("*.duckdb"))) == 1, "catalogs no one holds were kept"
    usage = lake_usage(Layout(db))
    # what this last run merged away waits for the next run's look at the locks
    assert usage["catalogs_held_open"] == 0
    assert usage["merged_away_files"] == len(lake_files(db) - listed(db))
    every = {f for paths in read_manifest(Layout(db))["files"].values() for f in paths}     # seeds too
    assert usage["listed_bytes"] == sum(os.path.getsize(f) for f in every)


def test_a_reader_in_another_process_keeps_the_files_its_catalog_names(tmp_path, monkeypatch, small_batches,
                                                                      lock_view):
    """A notebook in its own process, holding the catalog of an earlier run, keeps what that
    catalog names past a merge; once it exits, the next run deletes them."""
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=12, seed=5)
    monkeypatch.setattr(compact, "SMALL_FILES", 3)
    db = tmp_path / "w" / "w.duckdb"
    run(db, root)
    names = listed(db)
    with reader_in_another_process(db) as notebook:
        first = notebook.count()
        for k in range(1, 8):
            append_turn(root, k)
            run(db, root)
            if names - listed(db):
                break
        retired = names - listed(db)
        assert retired, "seven append runs merged none of the first run's files"
        append_turn(root, 50)
        run(db, root)               # a run after the merge looks at the locks, and keeps them
        assert retired <= lake_files(db), "a file the other process's catalog names went"
        assert notebook.count() == first
    append_turn(root, 51)
    run(db, root)
    assert not (retired & lake_files(db)), "files no reader holds waited for the grace"
    assert lake_files(db) >= listed(db)


def test_getlk_sees_a_lock_of_another_process_and_never_our_own(tmp_path):
    import subprocess
    import sys

    import duckdb

    if readers.FLOCK is None:
        pytest.skip("F_GETLK is not read on this system")
    db = tmp_path / "c.duckdb"
    duckdb.connect(str(db)).close()
    assert readers._locked_elsewhere(db) is False
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, sys; c = duckdb.connect({str(db)!r}, read_only=True); print('open', flush=True);"
         "sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert readers._locked_elsewhere(db) is True
    finally:
        holder.kill()
        holder.wait()
    assert readers._locked_elsewhere(db) is False
    mine = duckdb.connect(str(db), read_only=True)
    st = db.stat()
    assert readers._locked_elsewhere(db) is False            # our own lock never stops ours
    assert (st.st_dev, st.st_ino) in readers._open_here()    # so it is told by the open file
    mine.close()
    assert (st.st_dev, st.st_ino) not in readers._open_here()
