"""Each session's facts per file (sql/extract/session_parts.sql), which the sessions table
combines instead of aggregating every record at each publish.

A run derives the parts of the records it loaded, in one query over their staged Parquet once
loading is done: one query per loading batch cost about 35 ms each in planning alone, most of
a run's cost for them. A warehouse loaded before parts existed has records but no parts; its
first run with this version derives them once from every record in the lake.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from convarch import sql
from convarch.etl.live_lines import live_lines
from convarch.etl.duck import HIVE, sql_list
from convarch.etl.layout import Layout
from convarch.etl.written import Written
from convarch.etl.partfiles import PartitionFiles


def missing(state: duckdb.DuckDBPyConnection) -> bool:
    """True when the archive holds records but not a single part: loaded by an older version."""
    return state.execute(
        "select count(*) filter (table_name = 'records') > 0 and count(*) filter (table_name = 'session_parts') = 0 "
        "from data_files where retired_run_id is null"
    ).fetchone()[0]


def lake_records(layout: Layout, state: duckdb.DuckDBPyConnection) -> list[Path]:
    """Every registered records file (every epoch: the views keep the current one)."""
    return _lake_files(layout, state, "records")


def lake_parts(layout: Layout, state: duckdb.DuckDBPyConnection) -> list[Path]:
    """Every registered session parts file (every epoch, as records)."""
    return _lake_files(layout, state, "session_parts")


def _lake_files(layout: Layout, state: duckdb.DuckDBPyConnection, table: str) -> list[Path]:
    return [layout.lake / p for (p,) in state.execute(
        "select path from data_files where table_name = ? and retired_run_id is null order by path", [table]
    ).fetchall()]


def derive(state: duckdb.DuckDBPyConnection, records: list[Path], staging: Path, run_id: int) -> list[Written]:
    """The parts of the records in these Parquet files (records as stored, hive-partitioned by
    source and month), written under `staging` for the run to register with its own files.
    Computed on a cursor of the state's DuckDB (it reads no state table): opening a DuckDB
    of its own cost 16 ms of each pick-up under `watch`, and its spill would go to the
    working directory, not the private folder next to the state."""
    if not records:
        return []
    con = state.cursor()
    try:
        con.execute(
            f"create temp view records_loaded as select * from read_parquet({sql_list(records)}, {HIVE}, "
            "union_by_name = true)"
        )
        return _write(con, staging, run_id, "p")
    finally:
        con.close()


def derive_kept(layout: Layout, state: duckdb.DuckDBPyConnection, updates: list[dict], staging: Path,
                run_id: int) -> list[Written]:
    """The parts of the lines a rewritten file kept from its earlier loads, under its new
    epoch: the views count the current epoch's parts only, and an earlier epoch's parts also
    counted the lines that were replaced. Also sets each update's `prev_records` to the
    records it kept.

    Only a session the replaced lines held records of has facts that change: its parts are
    derived again from the records it keeps. Every other session keeps all its records, which
    its parts in the previous version (epoch - 1) then count exactly, and takes those parts
    over, relabelled (sql/extract/kept_parts.sql). A store of many sessions whose latest one
    grew, as a Cursor database, so reads back the few records of that session instead of
    every record it keeps."""
    if not updates:
        return []
    kept = [(u["file_id"], u["epoch"], e, first, last) for u in updates for e, first, last in live_lines(u)
            if e != u["epoch"]]
    files = lake_records(layout, state)
    if not kept or not files:
        return []
    con = state.cursor()          # as derive's
    try:
        con.register("kept_rows", pa.table({
            "file_id": pa.array([k[0] for k in kept], pa.int64()), "new_epoch": pa.array([k[1] for k in kept], pa.int32()),
            "epoch": pa.array([k[2] for k in kept], pa.int32()), "first_line": pa.array([k[3] for k in kept], pa.int64()),
            "last_line": pa.array([k[4] for k in kept], pa.int64())}))
        con.register("epochs", pa.table({
            "file_id": pa.array([u["file_id"] for u in updates], pa.int64()),
            "prev_epoch": pa.array([u["epoch"] - 1 for u in updates], pa.int32()),
            "new_epoch": pa.array([u["epoch"] for u in updates], pa.int32())}))
        ids = ", ".join(str(int(fid)) for fid in sorted({k[0] for k in kept}))
        records = f"read_parquet({sql_list(files)}, {HIVE}, union_by_name = true)"
        # the file ids are constants the scans test against each row group
        con.execute(f"create temp view lake_records as select file_id, file_epoch, line_no, session_id "
                    f"from {records} where file_id in ({ids})")
        con.execute(f"create temp table kept_sessions as {sql.read('extract/kept_sessions')}")
        counts = dict(con.execute("select file_id, sum(kept_records) from kept_sessions group by 1").fetchall())
        for u in updates:
            u["prev_records"] = int(counts.get(u["file_id"], 0))
        parts = lake_parts(layout, state)
        if parts:
            con.execute(f"create temp view lake_parts as select * from read_parquet({sql_list(parts)}, {HIVE}, "
                        f"union_by_name = true) where file_id in ({ids})")
            con.execute(f"create temp table copied as {sql.read('extract/kept_parts')}")
        else:
            con.execute("create temp table copied as select null::bigint as file_id, null::varchar as session_id "
                        "where false")
        # the sessions derived again: the rest of the kept ones; their records lie from the
        # first of their kept lines on, which lets the scan skip the row groups before it
        (first,) = con.execute("select coalesce(min(first_kept_line), 0) from kept_sessions as k "
                               "anti join copied as c on c.file_id = k.file_id and c.session_id = k.session_id"
                               ).fetchone()
        con.execute(
            "create temp table records_loaded as select r.* exclude (raw) replace (k.new_epoch as file_epoch) "
            f"from {records} as r "
            "join kept_rows as k on k.file_id = r.file_id and k.epoch = r.file_epoch "
            "and r.line_no between k.first_line and k.last_line "
            "anti join copied as c on c.file_id = r.file_id and c.session_id = r.session_id "
            f"where r.file_id in ({ids}) and r.line_no >= {int(first)}")
        return _write(con, staging, run_id, "k", copied="copied" if parts else None)
    finally:
        con.close()


def _write(con: duckdb.DuckDBPyConnection, staging: Path, run_id: int, prefix: str,
           copied: str | None = None) -> list[Written]:
    """The parts of the relation records_loaded, and the rows of the relation `copied` (parts
    taken over as they are), as Parquet under `staging`."""
    files = PartitionFiles(run_id, staging, 0, prefix)
    try:
        derived = sql.read("extract/session_parts")
        files.write(con, "session_parts", derived)
        if copied is not None:
            columns = ", ".join(f'"{c}"' for c in con.sql(derived).columns)
            files.write(con, "session_parts", f"select {columns} from {copied}")
    except BaseException:
        files.abandon()
        raise
    return files.close()
