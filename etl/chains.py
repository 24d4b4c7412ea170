"""Materialize the conversation chains at ingest, for the files a run changed.

The chain views (sql/views/int_chain_*, branches, chain_messages, resume_messages,
session_state, chain_issues) walk each file's parent graph with recursive CTEs. Run over the
whole archive on every query they would cost seconds; chains are per file, so ingest runs the
very same SQL over just the files it changed, stores the rows as Parquet, and the catalog's
public views read those rows.
"""
from __future__ import annotations

import functools
import os
import re
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from convarch import sql
from convarch.etl.errors import ConvarchError
from convarch.etl.layout import Layout
from convarch.etl.duck import memory_cap_mb, run_with_memory, sql_list
from convarch.etl.written import Written
from convarch.etl.partfiles import PartitionFiles, PerWorker
from convarch.etl.workers import Workers

#: Sources whose files have chains: the chain views read Claude Code's records only (its
#: uuid/parentUuid graph), so other sources' files are not read back for them; a Cursor store's
#: every pick-up read all its rows again to compute no row (tests/test_chains.py holds the
#: views to this).
CHAIN_SOURCES = frozenset({"claude_code"})
#: Views computed by ingest; the catalog serves them from Parquet.
MATERIALIZED = ("branches", "chain_messages", "resume_messages", "session_state", "chain_issues")
#: Everything the materialized views need, in build order.
CHAIN_VIEWS = tuple(v for v in sql.VIEWS if sql.view_name(v).startswith("int_chain_") or sql.view_name(v) in MATERIALIZED)


def _with_source(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """`select` list of a chain view with the file's source last (Parquet partitions by it)."""
    cols = [r[0] for r in con.execute(f"describe {name}").fetchall()]
    return "select v.* exclude (source), w.source" if "source" in cols else "select v.*, w.source"


def _reads(name: str) -> set[str]:
    """The chain relations a view's SQL reads (its comments left out)."""
    body = "\n".join(line.split("--", 1)[0] for line in sql.read(name).splitlines())
    names = {sql.view_name(v) for v in CHAIN_VIEWS}
    return {n for n in names if n != sql.view_name(name) and re.search(rf"\b{n}\b", body)}


#: The order ingest builds the chain steps in: each table is dropped once its last reader is
#: built, so the steps that free the widest ones (the nodes, then int_chain_relinked, which
#: chain_issues reads) come before the walk, where memory peaks.
BUILD_ORDER = ("int_chain_nodes", "int_chain_relinked", "int_chain_leaves", "int_chain_runs", "int_chain_depths",
               "chain_issues", "branches", "int_chain_positions", "int_chain_paths", "chain_messages", "resume_messages", "session_state")


@functools.cache
def _build_plan() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(view, its SQL, the tables to drop once it is built), in BUILD_ORDER; worked out once
    per process, not for every group. A step added to the views and not to BUILD_ORDER, or
    built before what it reads, fails here, not later."""
    order = [v for name in BUILD_ORDER for v in CHAIN_VIEWS if sql.view_name(v) == name]
    if len(order) != len(CHAIN_VIEWS):
        raise RuntimeError("BUILD_ORDER does not name every chain view")
    reads = {sql.view_name(v): _reads(v) for v in order}
    built: set[str] = set()
    last_reader: dict[str, str] = {}
    for v in order:
        name = sql.view_name(v)
        if missing := reads[name] - built:
            raise RuntimeError(f"BUILD_ORDER builds {name} before {sorted(missing)}")
        built.add(name)
        for dep in reads[name]:
            last_reader[dep] = name
    return tuple((sql.view_name(v), sql.read(v), tuple(dep for dep, reader in last_reader.items()
                                                       if reader == sql.view_name(v) and dep not in MATERIALIZED))
                 for v in order)


def build_chain_tables(con: duckdb.DuckDBPyConnection) -> None:
    """The chain relations as tables, each step dropped once every step that reads it is
    built (the materialized views stay, for the caller to write). A long transcript's steps
    are each a table of its every node, and a walk's peak came with all of them held at once.

    Always tables, never views: each step names the one before it in a plain CTE (a
    materialized one was a copy of a whole table that DuckDB cannot spill), so as views every
    step would inline the whole chain above it, and planning them took 38 s even over no rows."""
    for name, body, spent in _build_plan():
        con.execute(f"create or replace temp table {name} as {body}")
        for dep in spent:
            con.execute(f"drop table if exists {dep}")


#: Columns no chain step reads, left out when a group's rows are loaded: tool inputs and
#: outputs are most of the blocks' bytes. A chain view that starts reading one fails to bind
#: at ingest (tests/test_chains.py), it never sees a silent null.
UNREAD = {"blocks": "exclude (output_text, tool_input)", "records": "exclude (metadata_raw)"}
#: How a group reads its records. The raw lines are most of their bytes, and the chain steps
#: read only the few kept as chain_raw (sql/extract/stored_records.sql), so raw is left
#: unread, a null column (the views bind as over the lake). A file written before chain_raw
#: existed hands its raw lines over as chain_raw: the steps read the same facts from them.
RECORDS_READ = {True: f"t.* {UNREAD['records']} replace (null::varchar as raw)",
                False: f"t.* {UNREAD['records']}, t.raw as chain_raw"}

#: A group of files whose chains one worker computes at once: big enough that the recursive
#: walk's per-step cost is shared, small enough that its memory stays bounded.
GROUP_RECORDS = 50_000
GROUP_BYTES = 64 << 20
#: A chain view's rows are written in row groups of about this size, streamed out of DuckDB:
#: a 600,000-record transcript's chain_messages, taken whole, held 200 MB more outside
#: DuckDB's memory limit.
WRITE_GROUP_BYTES = 32 << 20
#: DuckDB memory a group's steps take per thousand records. Every step is a table of the
#: group's nodes and a walk's window spans a file's rows at once, so a long transcript, which
#: no group can cut, needs more than a worker has: one of 600,000 records failed at 360 MB and
#: ran at 420 MB, and at 600 MB it spills little (it had crashed the whole run at a worker's
#: 300 MB, and needed 800 MB while the steps copied their inputs into materialized CTEs).
MB_PER_1K_RECORDS = 1.0


def first_try_mb(worker_mb: int, records: int) -> int:
    """The memory a group of `records` records starts with: a worker's, or what it needs."""
    return min(memory_cap_mb(), max(worker_mb, int(records * MB_PER_1K_RECORDS / 1000)))


def groups_of(files: list[tuple], records: dict[int, int], nbytes: dict[int, int]) -> list[list]:
    """Split (file_id, epoch, source, live lines) items into groups under GROUP_RECORDS and GROUP_BYTES,
    in file id order: files loaded together sit in the same Parquet files, so a group reads
    few of them."""
    groups: list[list] = []
    current: list = []
    n = b = 0
    for item in sorted(files):
        r, size = records.get(item[0], 0), nbytes.get(item[0], 0)
        if current and (n + r > GROUP_RECORDS or b + size > GROUP_BYTES):
            groups.append(current)
            current, n, b = [], 0, 0
        current.append(item)
        n += r
        b += size
    if current:
        groups.append(current)
    return groups


def materialize(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int, epochs: list[tuple],
                written: list[Written], staging: Path, seeds: dict[str, Path], workers: Workers,
                records: dict[int, int] | None = None,
                nbytes: dict[int, int] | None = None) -> tuple[list[Written], float, dict[int, float]]:
    """Compute the chains of the files in `epochs` ((file_id, current epoch, source, live lines:
    (epoch, first line, last line) of each load of the file still live)) and write them into
    each worker's open files under `staging`, a group of files per worker task. Files of a
    source outside CHAIN_SOURCES have none to compute. Returns the files written, the
    stage's seconds, and each file's share of its group's seconds (by its records)."""
    epochs = [e for e in epochs if e[2] in CHAIN_SOURCES]
    if not epochs:
        return [], 0.0, {}
    t0 = time.perf_counter()
    files: dict[str, list[str]] = {"records": [str(seeds["records"])], "blocks": [str(seeds["blocks"])]}
    for path, table in state.execute(
        "select path, table_name from data_files where retired_run_id is null and table_name in ('records', 'blocks')"
    ).fetchall():
        files[table].append(str(layout.lake / path))
    for w in written:
        if w.table_name in files:
            files[w.table_name].append(str(layout.lake / w.path))
    groups = groups_of(epochs, records or {}, nbytes or {})
    footers = {f: _footer(f) for listed in files.values() for f in listed}

    def group_files(group: list) -> dict[str, list[tuple[str, bool]]]:
        # only the Parquet files whose file_id range meets the group's: a group reads its own
        # rows; with each, whether it has chain_raw
        lo, hi = min(e[0] for e in group), max(e[0] for e in group)
        return {t: [(f, footers[f][1]) for f in listed
                    if footers[f][0] is None or (footers[f][0][0] <= hi and footers[f][0][1] >= lo)]
                for t, listed in files.items()}

    parts = PerWorker(run_id, staging / "chains", "g")
    size = records or {}
    per_file: dict[int, float] = {}

    def build(con: duckdb.DuckDBPyConnection, group: list) -> tuple[list, int, float]:
        n = sum(size.get(e[0], 0) for e in group)
        started = time.perf_counter()
        _build_group(con, parts.mine(), group, group_files(group), run_id, workers.memory_mb, first_try_mb(workers.memory_mb, n), n)
        return group, n, time.perf_counter() - started

    try:
        for group, n, seconds in workers.map_unordered(build, groups):
            for e in group:
                per_file[e[0]] = seconds * (size.get(e[0], 0) / n if n else 1 / len(group))
    except BaseException:
        parts.abandon()
        raise
    return parts.close(), time.perf_counter() - t0, per_file


def _footer(path: str) -> tuple[tuple[int, int] | None, bool]:
    """From a Parquet file's footer: its smallest and largest file_id (None when unknown: an
    empty seed, or no statistics, and such a file is always read) and whether it has a
    chain_raw column. Remembered by the file's size and modification time: `watch` runs
    in one process, and reading every lake file's footer again was 25 ms of each pick-up."""
    st = os.stat(path)
    return _read_footer(path, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8192)
def _read_footer(path: str, size: int, mtime_ns: int) -> tuple[tuple[int, int] | None, bool]:
    pf = pq.ParquetFile(path)
    return _file_id_range(pf.metadata), "chain_raw" in pf.schema_arrow.names


def _file_id_range(meta: pq.FileMetaData) -> tuple[int, int] | None:
    lo = hi = None
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            col = group.column(c)
            if col.path_in_schema != "file_id":
                continue
            st = col.statistics
            if st is None or not st.has_min_max:
                return None
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
    return None if lo is None else (lo, hi)


class ChainMemoryError(ConvarchError):
    """A transcript's chains did not fit in the most memory a group may take: the run commits
    nothing, and says which memory it would need."""


def _build_group(con: duckdb.DuckDBPyConnection, parts: PartitionFiles, epochs: list[tuple],
                 files: dict[str, list[tuple[str, bool]]], run_id: int, worker_mb: int, start_mb: int,
                 records: int) -> None:
    """The chains of a group of files, written to the worker's open files. The steps run
    with `start_mb` of memory, twice that if they run out, and so on up to memory_cap_mb;
    then the worker gets its own `worker_mb` back."""
    try:
        # what a failed try made holds memory the next needs, so it is dropped first
        run_with_memory(con, start_mb, lambda: _compute_group(con, epochs, files), undo=lambda: _drop_tables(con),
                        cap=memory_cap_mb, too_little=lambda cap, why: ChainMemoryError(
                            f"the chains of {len({e[0] for e in epochs})} file(s), {records:,} records, need more "
                            f"than {cap:,} MB of memory: {why}"))
        for name in MATERIALIZED:
            parts.write(con, name, f"{_with_source(con, name)}, {int(run_id)}::bigint as chain_run_id, 'all' as month "
                                   f"from {name} as v join (select distinct file_id, source from wanted) as w on w.file_id = v.file_id",
                        group_bytes=WRITE_GROUP_BYTES)
    finally:
        _drop_tables(con)
        con.execute(f"set memory_limit = '{int(worker_mb)}MB'")


def _drop_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name in [*reversed(CHAIN_VIEWS), "stg_blocks", "stg_records"]:
        con.execute(f"drop table if exists {sql.view_name(name)}")


def _compute_group(con: duckdb.DuckDBPyConnection, epochs: list[tuple], files: dict[str, list[tuple[str, bool]]]) -> None:
    # one Arrow table, not a statement per file: executemany cost ~1 ms a row here, 4.6 s for
    # a group of 4,200 small files (a store of one file per event)
    live = [(e[0], epoch, e[2], first, last) for e in epochs for epoch, first, last in e[3]]
    con.register("wanted_rows", pa.table({
        "file_id": pa.array([w[0] for w in live], pa.int64()),
        "epoch": pa.array([w[1] for w in live], pa.int32()),
        "source": pa.array([w[2] for w in live], pa.string()),
        "first_line": pa.array([w[3] for w in live], pa.int64()),
        "last_line": pa.array([w[4] for w in live], pa.int64()),
    }))
    con.execute("create or replace temp table wanted as select * from wanted_rows")
    con.unregister("wanted_rows")
    ids = ", ".join(str(int(fid)) for fid in sorted({e[0] for e in epochs}))
    for table in ("records", "blocks"):
        # read once into a table: every chain step reads these, and binding a view over all
        # the lake's files would read each file's footer again for every step
        if table == "records":
            reads = [(RECORDS_READ[has], [f for f, h in files[table] if h == has]) for has in (True, False)]
        else:
            reads = [(f"t.* {UNREAD[table]}", [f for f, _ in files[table]])]
        selects = [
            f"select {columns} "
            f"from read_parquet({sql_list(paths)}, hive_partitioning = true, union_by_name = true) as t join wanted on wanted.file_id = t.file_id and wanted.epoch = t.file_epoch "
            "and t.line_no between wanted.first_line and wanted.last_line "
            f"where t.file_id in ({ids})"
            for columns, paths in reads if paths
        ]
        con.execute(f"drop view if exists stg_{table}")
        con.execute(f"create or replace temp table stg_{table} as {' union all by name '.join(selects)}")
    build_chain_tables(con)
