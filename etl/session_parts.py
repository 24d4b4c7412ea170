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

from convarch import sql
from convarch.etl.duck import HIVE, connect, sql_list
from convarch.etl.layout import Layout
from convarch.etl.load import Written
from convarch.etl.partfiles import PartitionFiles


def missing(state: duckdb.DuckDBPyConnection) -> bool:
    """True when the archive holds records but not a single part: loaded by an older version."""
    return state.execute(
        "select count(*) filter (table_name = 'records') > 0 and count(*) filter (table_name = 'session_parts') = 0 "
        "from data_files where retired_run_id is null"
    ).fetchone()[0]


def lake_records(layout: Layout, state: duckdb.DuckDBPyConnection) -> list[Path]:
    """Every registered records file (every epoch: the views keep the current one)."""
    return [layout.lake / p for (p,) in state.execute(
        "select path from data_files where table_name = 'records' and retired_run_id is null order by path"
    ).fetchall()]


def derive(records: list[Path], staging: Path, run_id: int) -> list[Written]:
    """The parts of the records in these Parquet files (records as stored, hive-partitioned by
    source and month), written under `staging` for the run to register with its own files."""
    if not records:
        return []
    con = connect()
    try:
        con.execute(
            f"create temp view records_loaded as select * from read_parquet({sql_list(records)}, {HIVE}, "
            "union_by_name = true)"
        )
        files = PartitionFiles(run_id, staging, 0, "p")
        try:
            files.write(con, "session_parts", sql.read("extract/session_parts"))
        except BaseException:
            files.abandon()
            raise
        return files.close()
    finally:
        con.close()
