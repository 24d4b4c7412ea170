"""Materialize the conversation chains at ingest, for the files a run changed.

The chain views (sql/views/int_chain_*, branches, chain_messages, resume_messages,
session_state, chain_issues) walk each file's parent graph with recursive CTEs. Run over the
whole archive on every query they would cost seconds; chains are per file, so ingest runs the
very same SQL over just the files it changed, stores the rows as Parquet, and the catalog's
public views read those rows.
"""
from __future__ import annotations

import time
from pathlib import Path

import duckdb

from convarch import sql
from convarch.etl.duck import connect
from convarch.etl.layout import Layout
from convarch.etl.load import Written

#: Views computed by ingest; the catalog serves them from Parquet.
MATERIALIZED = ("branches", "chain_messages", "resume_messages", "session_state", "chain_issues")
#: Everything the materialized views need, in build order.
CHAIN_VIEWS = tuple(v for v in sql.VIEWS if sql.view_name(v).startswith("int_chain_") or sql.view_name(v) in MATERIALIZED)


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _with_source(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """`select` list of a chain view with the file's source last (Parquet partitions by it)."""
    cols = [r[0] for r in con.execute(f"describe {name}").fetchall()]
    return "select v.* exclude (source), w.source" if "source" in cols else "select v.*, w.source"


def define_chain_views(con: duckdb.DuckDBPyConnection, *, as_tables: bool = False) -> None:
    """Create the chain relations in order; as tables, each step is computed once, not once
    per view that reads it."""
    kind = "temp table" if as_tables else "view"
    for name in CHAIN_VIEWS:
        con.execute(f"create or replace {kind} {sql.view_name(name)} as {sql.read(name)}")


def materialize(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int, epochs: list[tuple[int, int]],
                written: list[Written], staging: Path, seeds: dict[str, Path]) -> tuple[list[Written], float]:
    """Compute the chains of the files in `epochs` ((file_id, current epoch, source)) and write
    them under `staging`."""
    if not epochs:
        return [], 0.0
    file_ids = [fid for fid, _, _ in epochs]
    t0 = time.perf_counter()
    files: dict[str, list[str]] = {"records": [str(seeds["records"])], "blocks": [str(seeds["blocks"])]}
    for path, table in state.execute(
        "select path, table_name from data_files where retired_run_id is null and table_name in ('records', 'blocks')"
    ).fetchall():
        files[table].append(str(layout.lake / path))
    for w in written:
        if w.table_name in files:
            files[w.table_name].append(str(layout.lake / w.path))
    con = connect(":memory:", threads=2, preserve_insertion_order=False)
    try:
        con.execute("create table wanted (file_id bigint, epoch integer, source varchar)")
        con.executemany("insert into wanted values (?, ?, ?)", epochs)
        ids = ", ".join(str(int(i)) for i in sorted(set(file_ids)))
        for table in ("records", "blocks"):
            listed = ", ".join(_quote(f) for f in files[table])
            con.execute(
                f"create view stg_{table} as select t.* from read_parquet([{listed}], hive_partitioning = true, "
                f"union_by_name = true) as t join wanted on wanted.file_id = t.file_id and wanted.epoch = t.file_epoch "
                f"where t.file_id in ({ids})"
            )
        define_chain_views(con, as_tables=True)
        out: list[Written] = []
        (staging / "chains").mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in MATERIALIZED:
            target = staging / "chains" / name
            con.execute(f"create or replace temp table chain_batch as {_with_source(con, name)}, "
                        f"{int(run_id)}::bigint as chain_run_id, 'all' as month from {name} as v "
                        "join wanted as w on w.file_id = v.file_id")
            n = con.execute("select count(*) from chain_batch").fetchone()[0]
            if not n:
                continue
            con.execute(f"copy chain_batch to {_quote(str(target))} (format parquet, compression zstd, "
                        f"partition_by (source, month), filename_pattern 'r{run_id:06d}_{{i}}')")
            for p in sorted(target.rglob("*.parquet")):
                rel = p.relative_to(target.parent)
                parts = dict(seg.split("=", 1) for seg in rel.parts if "=" in seg)
                p.chmod(0o600)
                count = con.execute(f"select count(*) from chain_batch where source = ?", [parts["source"]]).fetchone()[0]
                out.append(Written(str(rel), name, parts["source"], parts["month"], count, p.stat().st_size, p))
        return out, time.perf_counter() - t0
    finally:
        con.close()
