"""Merge a partition's many small Parquet files into a few big ones.

Every run that changes data writes at least one file per table, source and month it touches
(a big load keeps one open per worker, etl/partfiles.py, but a run that adds ten lines still
writes its own); a warehouse kept current by `watch` or a timer gathers thousands of them. Every query then opens every footer (about 0.4 ms each here), so a
search over years of history would spend seconds on that alone.

When a partition holds SMALL_FILES or more files under SMALL_BYTES, a worker rewrites them as
files of up to MERGED_BYTES, leaving out any file bigger than all the smaller ones together
(cheapest partitions first, at most RUN_BUDGET_BYTES a run, since a rewrite costs about what
the first write did; a partition bigger than that, its oldest files a run at a time), rows in
the order they were written, with narrow
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
from convarch.etl import superseded
from convarch.etl.superseded import SUPERSEDED, Current
from convarch.etl.manifest import read_manifest
from convarch.etl.workers import Workers

SMALL_BYTES = 32 << 20
SMALL_FILES = 8
MERGED_BYTES = 256 << 20
ROW_GROUP_BYTES = 16 << 20
RUN_BUDGET_BYTES = 64 << 20      # Parquet one run may rewrite (about 3 s here)
RETIRED_GRACE = timedelta(hours=24)

#: A file of a table whose rows are superseded (etl/superseded.py) is rewritten without them
#: once they are this share of its rows: the lake then holds at most a third more than the
#: live rows need.
DEAD_SHARE = 0.25
#: The settings key (with the source after it) of how many records of the source's files were
#: no longer live when its search index was last swept of the rows of such lines.
SWEPT_KEY = "index_swept:"


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
    swept: dict[str, int] = field(default_factory=dict)      # sources whose index was swept (stale_sources)


def stale_sources(state: duckdb.DuckDBPyConnection, updates: list[dict]) -> dict[str, int]:
    """Sources whose search index is due a sweep of the rows of lines no longer live, with
    how many records their files no longer hold once this run commits: those where the
    records dead since the last sweep (SWEPT_KEY) are DEAD_SHARE of the live ones and those,
    as the rows of their lines are of the index (a file is rewritten at that share). Read from
    the state and `updates` (the files this run loaded) alone, so a run pays nothing to know.
    Before this run, the count is the lake's records less those the files hold; a file this
    run loaded no longer holds those of its records it did not keep (`prev_records`), and
    holds those it added."""
    counts = {source: [dead, live, swept] for source, dead, live, swept in state.execute(
        "with lake as (select source, sum(row_count) as n from data_files "
        "  where table_name = 'records' and retired_run_id is null group by source), "
        "live as (select source, sum(records) as n from source_files group by source), "
        "swept as (select substr(key, ?) as source, value::bigint as n from settings where starts_with(key, ?)) "
        "select source, lake.n - live.n, live.n, coalesce(swept.n, 0) "
        "from lake join live using (source) left join swept using (source)",
        [len(SWEPT_KEY) + 1, SWEPT_KEY]).fetchall()}
    held = dict(state.execute("select file_id, records from source_files").fetchall())
    for u in updates:
        if u["source"] in counts:
            dropped = held.get(u["file_id"], 0) - u["prev_records"]
            counts[u["source"]][0] += dropped
            counts[u["source"]][1] += u.get("records_added", 0) - dropped
    # the index holds the live rows and those dead since the sweep: due once they are its share
    return {source: dead for source, (dead, live, swept) in counts.items()
            if dead - swept >= max(DEAD_SHARE * (live + dead - swept), 1)}


def dead_files(layout: Layout, state: duckdb.DuckDBPyConnection, fresh: list[Written], current: Current,
               stale: dict[str, int] = {}) -> dict[tuple[str, str, str], list[Dead]]:
    """The files whose superseded rows reach DEAD_SHARE, by partition, in the order they were
    written: of each SUPERSEDED partition this run wrote to (only a run that computes chains
    or session facts again can supersede rows), and of every LINE_TABLES partition of the
    `stale` sources (stale_sources). Reads only the columns that decide it."""
    touched = {(w.table_name, w.source, w.month) for w in fresh if w.table_name in SUPERSEDED}
    registered = state.execute(
        "select path, table_name, source, month, bytes from data_files where retired_run_id is null "
        "order by run_id, path").fetchall()
    touched |= {(t, s, m) for _, t, s, m, _ in registered if t in superseded.LINE_TABLES and s in stale}
    if not touched:
        return {}
    by_part: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for path, table, source, month, nbytes in registered + [(w.path, w.table_name, w.source, w.month, w.bytes)
                                                              for w in fresh]:
        if (table, source, month) in touched:
            by_part.setdefault((table, source, month), []).append((path, nbytes))
    current.register(state, [part[0] for part in by_part])
    try:
        found: dict[tuple[str, str, str], list[Dead]] = {}
        for part, files in by_part.items():
            joins, dead = superseded.superseded(part[0])
            counts = {Path(f).as_posix(): (n, d) for f, n, d in state.execute(
                f"select t.filename, count(*), count(*) filter (where {dead}) "
                f"from read_parquet({sql_list(layout.lake / p for p, _ in files)}, filename = true, "
                f"hive_partitioning = false, union_by_name = true) as t {joins} group by t.filename").fetchall()}
            dead_rows = [Dead(p, b, *counts[(layout.lake / p).as_posix()]) for p, b in files
                         if (layout.lake / p).as_posix() in counts]
            dead_rows = [d for d in dead_rows if d.dead and d.dead >= DEAD_SHARE * d.rows]
            if dead_rows:
                found[part] = dead_rows
        return found
    finally:
        current.unregister(state)


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
    worth = []
    for t, s, m, paths, sizes, _ in rows:
        paths, sizes = _worth_merging(paths, sizes)
        if paths:
            worth.append((sum(sizes), t, s, m, paths, sizes))
    worth.sort(key=lambda w: w[:4])
    chosen, budget = [], RUN_BUDGET_BYTES
    for nbytes, t, s, m, paths, sizes in worth:
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


def _worth_merging(paths: list[str], sizes: list[int]) -> tuple[list[str], list[int]]:
    """The files of a partition to merge, in the order they were written: all but those bigger
    than every smaller file together, which a merge would mostly copy as they are.

    Under `watch` each pick-up adds a small file to the partitions it touches; merging them all
    each time also rewrote the file the last merge made, growing by a few pick-ups' rows at a
    time, until it passed SMALL_BYTES: most of each merge was that file again (a postings file
    of 11 MB sorted again every few pick-ups, 4 s each). Left out until the files beside it
    add up to its size, a row is rewritten only by a merge at least twice the size of the file
    holding it, so a few times in all. Fewer than half of SMALL_FILES left wait for more."""
    skip = set()
    smaller = sum(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        smaller -= sizes[i]
        if sizes[i] <= smaller:
            break
        skip.add(i)
    keep = [i for i in range(len(sizes)) if i not in skip]
    if len(keep) < max(2, SMALL_FILES // 2):
        return [], []
    return [paths[i] for i in keep], [sizes[i] for i in keep]


def _with_dead(chosen: list[Partition], dead: dict[tuple[str, str, str], list[Dead]], budget: int) -> list[Partition]:
    """The merges planned, then files of superseded rows to rewrite in the budget left, the
    most superseded first (one file past the budget when the run rewrites nothing else, or a
    big file could never go). A file of a partition already being merged joins that merge,
    except a file of a table stored sorted (the search postings): it is rewritten alone, in
    its own order, so that no sort holds its rows (a sweep of a gigabyte's index sorting them
    took 3.5 s more and 280 MB more at peak than a run that merged small files alone)."""
    by_part = {(p.table, p.source, p.month): p for p in chosen}
    merging = {path for p in chosen for path in p.paths}
    candidates = sorted(((d.dead, part, d) for part, files in dead.items() for d in files),
                        key=lambda c: (-c[0], c[1], c[2].path))
    rewrites_any = bool(chosen)
    grown: list[Partition] = []
    for _, part, d in candidates:
        if d.path in merging or (d.bytes > budget and rewrites_any):
            continue
        budget -= d.bytes
        rewrites_any = True
        if part[0] in partfiles.SORTED_BY:
            chosen.append(Partition(*part, [d.path]))
            continue
        target = by_part.get(part)
        if target is None:
            target = by_part[part] = Partition(*part, [])
            chosen.append(target)
        target.paths.append(d.path)
        grown.append(target)
    for target in grown:      # rows in the order they were written: a file's name starts with its run
        target.paths.sort(key=lambda p: (Path(p).name, p))
    return chosen


def compact(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int, staging: Path,
            workers: Workers, fresh: list[Written], current: Current, updates: list[dict] = ()) -> Compaction:
    """Merge every partition that has gathered too many small files, `fresh` (this run's
    files, already in the lake but not registered) included, and rewrite the files of derived
    tables that hold too many superseded rows without them.
    The caller registers the result in the run's own transaction, so a failure here leaves the
    archive as it was."""
    purge_retired(layout, state)
    result = Compaction()
    stale = stale_sources(state, updates)
    dead = dead_files(layout, state, fresh, current, stale)
    parts = plan(state, fresh, dead)
    # a source's index is swept once every file found worth rewriting is; else the next run
    # looks again (the budget left some for it)
    planned = {(p.table, p.source, p.month, path) for p in parts for path in p.paths}
    result.swept = {source: n for source, n in stale.items()
                    if all((*part, d.path) in planned for part, files in dead.items() if part[1] == source
                           and part[0] in superseded.LINE_TABLES for d in files)}
    if not parts:
        return result
    if any(p.table in superseded.LINE_TABLES for p in parts):
        current.lines       # made here, on the run's own thread, before the workers read them
    base = staging / "compact"
    for got, left_out in workers.map_unordered(lambda con, job: _merge(con, layout, run_id, base, *job, current),
                                                 list(enumerate(parts))):
        result.written += got
        result.superseded += left_out
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
           part: Partition, current: Current) -> tuple[list[Written], int]:
    """The partition's files rewritten as one or a few, without superseded rows; with how many
    rows were left out."""
    listed = sql_list(layout.lake / p for p in part.paths)
    current.register(con, [part.table])
    try:
        return _rewrite(con, layout, run_id, base, k, part, listed)
    finally:
        current.unregister(con)


def _rewrite(con: duckdb.DuckDBPyConnection, layout: Layout, run_id: int, base: Path, k: int,
             part: Partition, listed: str) -> tuple[list[Written], int]:
    every = con.execute(f"select count(*) from read_parquet({listed})").fetchone()[0]
    before = every
    if part.table in SUPERSEDED or part.table in superseded.LINE_TABLES:   # only these leave rows out: count what they keep
        relation = f"read_parquet({listed}, hive_partitioning = true, union_by_name = true)"
        before = con.execute(f"select count(*) from ({superseded.kept_rows(part.table, relation)})").fetchone()[0]
    order, groups = "", f"row_group_size_bytes {ROW_GROUP_BYTES}"
    if key := partfiles.SORTED_BY.get(part.table):
        groups = f"row_group_size {partfiles.RUN_GROUP_ROWS}"
        if len(part.paths) > 1:
            # each file is sorted, their concatenation is not: sort the merged rows again. A
            # file rewritten alone keeps its order: a worker's one thread reads and writes
            # its rows in turn
            order = f" order by {key}"
    got: list[Written] = []
    for j, paths in enumerate(_same_columns(layout, part)):
        out = base / f"c{k:05d}_{j}"
        target = out / part.table
        target.mkdir(parents=True, mode=0o700)
        relation = f"read_parquet({sql_list(layout.lake / p for p in paths)}, hive_partitioning = true, union_by_name = true)"
        con.execute(
            f"copy ({superseded.kept_rows(part.table, relation)}{order}) "
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
