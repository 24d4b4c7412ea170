"""Merge a partition's many small Parquet files into a few big ones.

Every run that changes data writes at least one file per table, source and month it touches
(a big load keeps one open per worker, etl/partfiles.py, but a run that adds ten lines still
writes its own); a warehouse kept current by `watch` or a timer gathers thousands of them. Every query then opens every footer (about 0.4 ms each here), so a
search over years of history would spend seconds on that alone.

When a partition holds SMALL_FILES or more files under SMALL_BYTES, a worker rewrites them as
files of up to MERGED_BYTES (cheapest partitions first, at most RUN_BUDGET_BYTES a run, since a
rewrite costs about what the first write did; a partition bigger than that, its oldest files a
run at a time), rows in the order they were written, with narrow
row groups so a reader that wants a few files' rows still skips the rest; the search postings
are sorted by term again instead, as each file of them was (etl/partfiles.py). The merged files are
registered, and the small ones retired, in the run's own state transaction. Files the run itself
wrote are deleted at once (no catalog ever listed them); an older file only by a later run once
RETIRED_GRACE has passed, since a notebook may still hold a catalog that lists it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from convarch.etl.layout import Layout
from convarch.etl.duck import sql_list, sql_literal
from convarch.etl.written import Written, written_files
from convarch.etl import partfiles, readers
from convarch.etl.manifest import read_manifest
from convarch.etl.workers import Workers

SMALL_BYTES = 32 << 20
SMALL_FILES = 8
MERGED_BYTES = 256 << 20
ROW_GROUP_BYTES = 16 << 20
RUN_BUDGET_BYTES = 64 << 20      # Parquet one run may rewrite (about 3 s here)
RETIRED_GRACE = timedelta(hours=24)

#: Derived tables whose rows a later run supersedes, by the column that says which run or
#: version made a row and the column of `current_versions` it is compared with. A file's
#: chains are computed again whole at each change, under the run's id, and a rewritten file's
#: session facts again under its new epoch; the views read only the newest (sql/materialized.sql,
#: int_session_parts). Kept, the older rows were dead weight that merging carried on forever:
#: a 200,000-record transcript gaining 10 lines added 20 MB of chain rows at each pick-up.
SUPERSEDED = {
    "branches": ("chain_run_id", "chain_run_id"),
    "chain_messages": ("chain_run_id", "chain_run_id"),
    "resume_messages": ("chain_run_id", "chain_run_id"),
    "session_state": ("chain_run_id", "chain_run_id"),
    "chain_issues": ("chain_run_id", "chain_run_id"),
    "session_parts": ("file_epoch", "epoch"),
}
#: A file of such a table is rewritten without its superseded rows once they are this share
#: of its rows: the lake then holds at most a third more than the live rows need.
DEAD_SHARE = 0.25


@dataclass
class Partition:
    table: str
    source: str
    month: str
    paths: list[str]       # relative to the lake, in the order they were written


@dataclass
class Dead:
    """A file of a SUPERSEDED table and how many of its rows are superseded."""
    path: str              # relative to the lake
    bytes: int
    rows: int
    dead: int


@dataclass
class Compaction:
    written: list[Written] = field(default_factory=list)    # the merged files
    retired: list[str] = field(default_factory=list)         # registered files they replace
    dropped: list[Written] = field(default_factory=list)     # this run's own files they replace
    superseded: int = 0                                       # rows left out as superseded


def current_versions(state: duckdb.DuckDBPyConnection, updates: list[tuple[int, int]], run_id: int) -> pa.Table:
    """Each file's chain run and epoch as they stand once this run commits: `updates` are
    (file_id, epoch) of the files it loaded, whose chains it computed again (etl/ingest.py
    records this run as their chain run). A row made by an older run or epoch than its file's
    is superseded; one of a file not listed here is never taken for superseded."""
    now = dict(updates)
    ids, runs, epochs = [], [], []
    for fid, chain_run, epoch in state.execute("select file_id, chain_run_id, epoch from source_files").fetchall():
        ids.append(fid)
        runs.append(run_id if fid in now else chain_run)
        epochs.append(now.pop(fid, epoch))
    for fid, epoch in now.items():      # new files
        ids.append(fid)
        runs.append(run_id)
        epochs.append(epoch)
    return pa.table({"file_id": pa.array(ids, pa.int64()), "chain_run_id": pa.array(runs, pa.int64()),
                     "epoch": pa.array(epochs, pa.int64())})


def _kept_rows(table: str, relation: str) -> str:
    """`relation` (aliased t) without the rows superseded, for a table of SUPERSEDED; the
    worker or state connection has `current_versions` registered."""
    if table not in SUPERSEDED:
        return f"select * from {relation} as t"
    column, key = SUPERSEDED[table]
    return (f"select t.* from {relation} as t left join current_versions as c on c.file_id = t.file_id "
            f"where c.{key} is null or t.{column} is null or t.{column} >= c.{key}")


def dead_files(layout: Layout, state: duckdb.DuckDBPyConnection, fresh: list[Written],
               current: pa.Table) -> dict[tuple[str, str, str], list[Dead]]:
    """The files of each SUPERSEDED partition this run wrote to (only a run that computes
    chains or session facts again can supersede rows) whose superseded rows reach
    DEAD_SHARE, by partition, in the order they were written. Reads only two integer columns
    of each file."""
    touched = {(w.table_name, w.source, w.month) for w in fresh if w.table_name in SUPERSEDED}
    if not touched:
        return {}
    fresh_paths = [(w.path, w.table_name, w.source, w.month, w.bytes) for w in fresh]
    registered = state.execute(
        "select path, table_name, source, month, bytes from data_files where retired_run_id is null "
        "order by run_id, path").fetchall()
    by_part: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for path, table, source, month, nbytes in registered + fresh_paths:
        if (table, source, month) in touched:
            by_part.setdefault((table, source, month), []).append((path, nbytes))
    state.register("current_versions", current)
    try:
        found: dict[tuple[str, str, str], list[Dead]] = {}
        for part, files in by_part.items():
            column, key = SUPERSEDED[part[0]]
            counts = {Path(f).as_posix(): (n, d) for f, n, d in state.execute(
                f"select t.filename, count(*), count(*) filter (where t.{column} < c.{key}) "
                f"from read_parquet({sql_list(layout.lake / p for p, _ in files)}, filename = true, "
                "hive_partitioning = false, union_by_name = true) as t "
                "left join current_versions as c on c.file_id = t.file_id group by t.filename").fetchall()}
            dead = [Dead(p, b, *counts[(layout.lake / p).as_posix()]) for p, b in files
                    if (layout.lake / p).as_posix() in counts]
            dead = [d for d in dead if d.dead and d.dead >= DEAD_SHARE * d.rows]
            if dead:
                found[part] = dead
        return found
    finally:
        state.unregister("current_versions")


def plan(state: duckdb.DuckDBPyConnection, fresh: list[Written],
         dead: dict[tuple[str, str, str], list[Dead]] | None = None) -> list[Partition]:
    """Partitions with too many small files, counting the files this run is about to register,
    and files of `dead` (dead_files) to rewrite without their superseded rows."""
    state.register("fresh_files", pa.table({
        "path": [w.path for w in fresh], "table_name": [w.table_name for w in fresh],
        "source": [w.source for w in fresh], "month": [w.month for w in fresh],
        "bytes": pa.array([w.bytes for w in fresh], pa.int64()),
    }, schema=pa.schema([("path", pa.string()), ("table_name", pa.string()), ("source", pa.string()),
                         ("month", pa.string()), ("bytes", pa.int64())])))
    try:
        rows = state.execute(
            "with files as ("
            "  select path, table_name, source, month, bytes, run_id from data_files where retired_run_id is null"
            "  union all select *, null from fresh_files"
            ") select table_name, source, month, list(path order by run_id nulls last, path), "
            "list(bytes order by run_id nulls last, path), sum(bytes) from files "
            "where bytes < ? group by all having count(*) >= ? order by sum(bytes), table_name, source, month",
            [SMALL_BYTES, SMALL_FILES],
        ).fetchall()
    finally:
        state.unregister("fresh_files")
    # the cheapest partitions first, as many as the run's budget allows; the rest wait for a
    # later run, so no run pays for rewriting a whole big first load at once. A partition
    # whose small files alone pass a whole run's budget has its oldest merged, as many as
    # fit: waiting for room it could never get, it was never merged at all
    chosen, budget = [], RUN_BUDGET_BYTES
    for t, s, m, paths, sizes, nbytes in rows:
        if nbytes <= budget:
            chosen.append(Partition(t, s, m, paths))
            budget -= nbytes
            continue
        if nbytes <= RUN_BUDGET_BYTES:
            continue                # it fits a later run whole: merged once, not in pieces
        n, taken = 0, 0
        while n < len(sizes) and taken + sizes[n] <= budget:
            taken += sizes[n]
            n += 1
        if n >= 2:
            chosen.append(Partition(t, s, m, paths[:n]))
            budget -= taken
    return _with_dead(chosen, dead or {}, budget)


def _with_dead(chosen: list[Partition], dead: dict[tuple[str, str, str], list[Dead]], budget: int) -> list[Partition]:
    """The merges planned, then files of superseded rows to rewrite in the budget left, the
    most superseded first (one file past the budget when the run rewrites nothing else, or a
    big file could never go). A file of a partition already being merged joins that merge."""
    by_part = {(p.table, p.source, p.month): p for p in chosen}
    candidates = sorted(((d.dead, part, d) for part, files in dead.items() for d in files),
                        key=lambda c: (-c[0], c[1], c[2].path))
    rewrites_any = bool(chosen)
    grown: list[Partition] = []
    for _, part, d in candidates:
        target = by_part.get(part)
        if target is not None and d.path in target.paths:
            continue
        if d.bytes > budget and rewrites_any:
            continue
        if target is None:
            target = by_part[part] = Partition(*part, [])
            chosen.append(target)
        target.paths.append(d.path)
        grown.append(target)
        budget -= d.bytes
        rewrites_any = True
    for target in grown:      # rows in the order they were written: a file's name starts with its run
        target.paths.sort(key=lambda p: (Path(p).name, p))
    return chosen


def compact(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int, staging: Path,
            workers: Workers, fresh: list[Written], current: pa.Table) -> Compaction:
    """Merge every partition that has gathered too many small files, `fresh` (this run's
    files, already in the lake but not registered) included, and rewrite the files of derived
    tables that hold too many superseded rows without them (`current`: current_versions).
    The caller registers the result in the run's own transaction, so a failure here leaves the
    archive as it was."""
    purge_retired(layout, state)
    result = Compaction()
    parts = plan(state, fresh, dead_files(layout, state, fresh, current))
    if not parts:
        return result
    base = staging / "compact"
    for got, superseded in workers.map_unordered(lambda con, job: _merge(con, layout, run_id, base, *job, current),
                                                 list(enumerate(parts))):
        result.written += got
        result.superseded += superseded
    for w in result.written:
        dst = layout.lake / w.path
        dst.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        w.staged.replace(dst)
    by_path = {w.path: w for w in fresh}
    for part in parts:
        for path in part.paths:
            if path in by_path:
                result.dropped.append(by_path[path])
            else:
                result.retired.append(path)
    return result


def _merge(con: duckdb.DuckDBPyConnection, layout: Layout, run_id: int, base: Path, k: int,
           part: Partition, current: pa.Table) -> tuple[list[Written], int]:
    """The partition's files rewritten as one or a few, without superseded rows; with how many
    rows were left out."""
    listed = sql_list(layout.lake / p for p in part.paths)
    con.register("current_versions", current)
    try:
        return _rewrite(con, layout, run_id, base, k, part, listed)
    finally:
        con.unregister("current_versions")


def _rewrite(con: duckdb.DuckDBPyConnection, layout: Layout, run_id: int, base: Path, k: int,
             part: Partition, listed: str) -> tuple[list[Written], int]:
    every = con.execute(f"select count(*) from read_parquet({listed})").fetchone()[0]
    before = every
    if part.table in SUPERSEDED:        # only these leave rows out: count what they keep
        relation = f"read_parquet({listed}, hive_partitioning = true, union_by_name = true)"
        before = con.execute(f"select count(*) from ({_kept_rows(part.table, relation)})").fetchone()[0]
    if key := partfiles.SORTED_BY.get(part.table):
        # each file is sorted, their concatenation is not: sort the merged rows again
        order, groups = f" order by {key}", f"row_group_size {partfiles.RUN_GROUP_ROWS}"
    else:
        order, groups = "", f"row_group_size_bytes {ROW_GROUP_BYTES}"
    got: list[Written] = []
    for j, paths in enumerate(_same_columns(layout, part)):
        out = base / f"c{k:05d}_{j}"
        target = out / part.table
        target.mkdir(parents=True, mode=0o700)
        relation = f"read_parquet({sql_list(layout.lake / p for p in paths)}, hive_partitioning = true, union_by_name = true)"
        con.execute(
            f"copy ({_kept_rows(part.table, relation)}{order}) "
            f"to {sql_literal(str(target))} (format parquet, compression zstd, partition_by (source, month), "
            f"filename_pattern 'r{run_id:06d}_c{k:05d}_{j}_{{i}}', file_size_bytes {MERGED_BYTES}, {groups})"
        )
        got += [Written(str(rel), part.table, parts["source"], parts["month"], n, p.stat().st_size, p)
                for p, rel, parts, n in written_files(target, out)]
    if sum(w.row_count for w in got) != before:        # never retire a row that was not rewritten
        raise RuntimeError(f"compacting {part.table}/{part.source}/{part.month}: "
                           f"{before} rows kept, {sum(w.row_count for w in got)} written")
    return got, every - before


def _same_columns(layout: Layout, part: Partition) -> list[list[str]]:
    """The partition's files in the groups merged together. Records files written before
    chain_raw existed are merged apart from the others: merged with them, their rows would get
    a null chain_raw, and the chain rebuild reads such a file's raw lines instead only when the
    file has no chain_raw at all (etl/chains.py)."""
    if part.table != "records":
        return [part.paths]
    groups: dict[bool, list[str]] = {}
    for p in part.paths:
        groups.setdefault("chain_raw" in pq.read_schema(layout.lake / p).names, []).append(p)
    return list(groups.values())


def purge_retired(layout: Layout, state: duckdb.DuckDBPyConnection) -> int:
    """Delete the files retired by runs that finished more than RETIRED_GRACE ago, or sooner
    once no catalog a reader holds open names them (etl/readers.py), unless the published
    catalog still lists them (a run that died before publishing)."""
    cutoff = datetime.now(UTC).replace(tzinfo=None) - RETIRED_GRACE
    manifest = read_manifest(layout) or {}
    listed = {str(Path(f)) for files in manifest.get("files", {}).values() for f in files}
    held = readers.held_files(layout, state)
    named, since = ({str(Path(f)) for f in held[0]}, held[1]) if held else (set(), None)
    rows = [
        (path,) for (path, run_id, finished) in state.execute(
            "select d.path, d.run_id, r.finished_at from data_files as d "
            "join ingest_runs as r on r.run_id = d.retired_run_id where r.finished_at is not null"
        ).fetchall()
        if str(layout.lake / path) not in listed
        and (finished <= cutoff or (since is not None and run_id >= since and str(layout.lake / path) not in named))
    ]
    for (path,) in rows:
        (layout.lake / path).unlink(missing_ok=True)
    if rows:
        state.register("purged_paths", pa.table({"path": [p for (p,) in rows]}))
        state.execute("delete from data_files where path in (select path from purged_paths)")
        state.unregister("purged_paths")
    return len(rows)
