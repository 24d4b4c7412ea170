"""Load the files a run changed: snapshot each, cut it into lines and load them through the
adapter's SQL, on the workers in units of about one batch; then build the search index of the
staged batches. Nothing here touches the lake or the state database's watermarks; ingest
commits what this returns.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from convarch import sql
from convarch.etl.duck import HIVE, connect, sql_list
from convarch.etl.index import index_batch
from convarch.etl.load import BatchWriter
from convarch.etl.written import Written
from convarch.etl.partfiles import PerWorker, RowGroup
from convarch.etl.read_file import Planned, read_file
from convarch.etl.retained import retained_by_file
from convarch.etl.shared_batches import Job, SharedBatches
from convarch.etl.stage_clock import StageClock
from convarch.etl.workers import Workers

if TYPE_CHECKING:
    from convarch.etl.summary import Summary

FLUSH_BYTES = 16 << 20   # memory stays bounded by this batch size (per worker), not by the corpus


@dataclass
class Unit:
    """Files of one source loaded together by one worker, about one batch worth of bytes."""

    source: str
    plans: list[Planned]
    nbytes: int = 0


@dataclass
class UnitResult:
    unit: Unit
    updates: list[dict]
    written: list[Written]       # quarantine files (records and blocks go to the worker's open files)
    batches: list[list[RowGroup]]
    sessions: set[tuple[str, str]]
    skipped: list[tuple[str, str]]
    redacted: int
    #: rewritten containers that gave the same lines as before: nothing loaded
    same: list[Planned] = field(default_factory=list)
    #: seconds each store read whole took to copy and turn into lines, by path
    read_seconds: dict[str, float] = field(default_factory=dict)


def units(changed: list[Planned]) -> list[Unit]:
    """Group changed files, in file id order, into units of about FLUSH_BYTES; the biggest
    units go first so the workers end together."""
    by_source: dict[str, list[Planned]] = {}
    for p in changed:
        by_source.setdefault(p.file.source, []).append(p)
    units: list[Unit] = []
    for source, plans in by_source.items():
        unit = Unit(source, [])
        for p in sorted(plans, key=lambda p: p.file_id):   # neighbours share Parquet files
            size = max(p.stat.size - p.start, 0)
            if unit.plans and unit.nbytes + size > FLUSH_BYTES:
                units.append(unit)
                unit = Unit(source, [])
            unit.plans.append(p)
            unit.nbytes += size
        if unit.plans:
            units.append(unit)
    return sorted(units, key=lambda u: u.nbytes, reverse=True)


def _numbering_order(changed: list[Planned]) -> list[Planned]:
    """The order new files get their ids in. Where an adapter's files stand alone (no record
    depends on its file's place among others), they are numbered in the order they were last
    written, so the units (in file id order) each hold files of about the same time: a batch
    then falls in a month or two and leaves one row group in each. In discovery order a batch
    spread over every month its folders span, and each month's file took a row group per
    batch and a footer that every later read of it parses again. Other adapters keep their
    discovery order, which their multi-file sessions rely on."""
    from convarch import adapters

    def key(item: tuple[int, Planned]):
        i, p = item
        alone = getattr(adapters.get(p.file.source), "FILES_STAND_ALONE", False)
        return (p.file.source, p.stat.mtime_ns if alone else 0, i)

    return [p for _, p in sorted(enumerate(changed), key=key)]


def _number_new_files(state, changed: list[Planned]) -> None:
    """Give new files their ids from the state database's sequence, on this thread, in one
    statement. A statement per file commits to the state file each time: 915 ids took 1.8 s
    (against 5 ms) before any worker could start on the 1 GB bench corpus, and a store of one
    file per event (OpenHands) has tens of thousands. Files seen before keep their id."""
    for p in changed:
        if p.action != "new":
            p.file_id = p.prev["file_id"]
    new = [p for p in _numbering_order(changed) if p.action == "new"]
    if not new:
        return
    ids = sorted(i for (i,) in state.execute("select nextval('file_id_seq') from range(?)", [len(new)]).fetchall())
    for p, i in zip(new, ids, strict=True):
        p.file_id = i


def _attach_versions(state, changed: list[Planned]) -> None:
    """Give each rewritten or appended file seen before its live loads (file_versions), for a
    rewritten one the hashes of the lines it holds and the groups they came in
    (file_line_hashes), and the runs of lines it keeps of sessions it deleted (file_retained)."""
    seen = [p for p in changed if p.prev is not None]
    if not seen:
        return
    state.register("seen_ids", pa.table({"file_id": pa.array([p.prev["file_id"] for p in seen], pa.int64())}))
    try:
        versions: dict[int, list] = {}
        for fid, epoch, first in state.execute(
                "select file_id, epoch, first_line from file_versions where file_id in (select file_id from seen_ids) "
                "order by file_id, first_line").fetchall():
            versions.setdefault(fid, []).append((epoch, first))
        hashes = {fid: (h, g) for fid, h, g in state.execute(
            "select file_id, hashes, groups from file_line_hashes where file_id in (select file_id from seen_ids)"
        ).fetchall()}
    finally:
        state.unregister("seen_ids")
    kept = retained_by_file(state, [p.prev["file_id"] for p in seen])
    for p in seen:
        h, g = hashes.get(p.prev["file_id"], (None, None))
        p.prev = dict(p.prev, versions=versions.get(p.prev["file_id"], []), line_hashes=h, line_groups=g,
                      retained=kept.get(p.prev["file_id"], []))


def earlier_context(lake: Path, state, changed: list[Planned]) -> dict[str, pa.Table]:
    """For each source whose records SQL carries values forward over a file's lines
    (Extract.context), the context lines of its appended files, from their rows in the lake:
    the appended lines are loaded as if the file had been read whole."""
    from convarch import adapters

    wanted: dict[str, list[Planned]] = {}
    for p in changed:
        if p.action == "append" and adapters.get(p.file.source).EXTRACT.context:
            wanted.setdefault(p.file.source, []).append(p)
    out: dict[str, pa.Table] = {}
    for source, plans in wanted.items():
        files = [str(lake / path) for (path,) in state.execute(
            "select path from data_files where table_name = 'records' and source = ? and retired_run_id is null",
            [source]).fetchall()]
        if not files:
            continue
        con = connect(":memory:", threads=1)
        try:
            con.register("appended", pa.table({
                "file_id": pa.array([p.prev["file_id"] for p in plans], pa.int64()),
                "file_epoch": pa.array([p.prev["epoch"] for p in plans], pa.int32())}))
            con.execute(
                "create temp view earlier as select t.file_id, t.line_no, t.byte_offset, t.raw, t.record_type, "
                f"t.subtype, t.role from read_parquet({sql_list(files)}, {HIVE}, union_by_name = true) as t "
                "join appended as a on a.file_id = t.file_id and a.file_epoch = t.file_epoch "
                # constants the scan can test against each row group's file_id range
                f"where t.file_id in ({', '.join(str(int(p.prev['file_id'])) for p in plans)})")
            out[source] = con.sql(sql.read(adapters.get(source).EXTRACT.context)).to_arrow_table()
        finally:
            con.close()
    return out


def extract(staging, run_id, state, changed: list[Planned], summary: Summary, progress, workers: Workers,
            earlier: dict[str, pa.Table] | None = None):
    """Snapshot and parse every changed file on the workers; return the Parquet written, the
    watermark updates, the sessions seen, each batch's row groups (for the index) and the
    rewritten containers that gave the same lines as before (only their stat is new).
    `earlier` holds context lines of appended files (earlier_context)."""
    _number_new_files(state, changed)
    _attach_versions(state, changed)
    earlier = earlier or {}
    snapdir = staging / "snap"
    snapdir.mkdir(mode=0o700)
    batch_numbers = itertools.count()
    redacting = summary.redacting
    parts = PerWorker(run_id, staging / "out", "w")
    learnt: dict[str, int] = {}       # batch sizes that fit a worker's memory (BatchWriter.learnt)
    clock = StageClock()

    def writer_for(con, extract, context: pa.Table | None = None) -> BatchWriter:
        return BatchWriter(run_id, staging / "out", extract, con, batch_numbers, parts.mine(), context, learnt, clock)

    planned = units(changed)
    shared = SharedBatches(workers.n, len(planned), writer_for) if workers.n > 1 and len(planned) else None

    def load(con, unit: Unit) -> UnitResult:
        from convarch import adapters

        extract_ = adapters.get(unit.source).EXTRACT
        writer = writer_for(con, extract_, earlier.get(unit.source))
        result = UnitResult(unit, [], [], [], set(), [], 0)
        mine: list[Job] = []
        # a batch that carries context to the next one is loaded in order, here
        flush = writer.flush if shared is None or extract_.context else lambda: shared.hand_over(con, writer, mine)
        try:
            for p in unit.plans:
                upd = read_file(p, writer, snapdir, result, redacting, flush, FLUSH_BYTES)
                if upd is not None:
                    result.updates.append(upd)
            writer.flush()
            if mine:
                shared.collect(con, writer, mine)
        finally:
            if shared is not None:
                shared.finished(mine)
        for u in result.updates:
            u["records_added"] = writer.records_by_file.get(u["file_id"], 0)
            u["quarantined_added"] = writer.quarantined_by_file.get(u["file_id"], 0)
        result.written, result.batches, result.sessions = writer.written, writer.batches, writer.sessions
        return result

    def task(con, unit: Unit | None) -> UnitResult | None:
        if unit is None:           # a worker with no unit left loads other units' batches
            shared.help(con)
            return None
        return load(con, unit)

    written: list[Written] = []
    updates: list[dict] = []
    sessions: set[tuple[str, str]] = set()
    batches: list[list[RowGroup]] = []
    same: list[Planned] = []
    try:
        helpers = [None] * (workers.n - 1) if shared is not None else []
        results = [r for r in _each(workers.map_unordered(task, planned + helpers, shared.stop if shared else None),
                                      progress) if r is not None]
    except BaseException:
        parts.abandon()
        raise
    written += parts.close()          # every file whole before the index reads it
    for r in results:
        written += r.written
        updates += r.updates
        sessions |= r.sessions
        batches += r.batches
        summary.skipped += r.skipped
        summary.files_skipped += len(r.skipped)
        summary.redacted += r.redacted
        summary.read_seconds.update(r.read_seconds)
        same += r.same
    summary.stage_seconds = clock.as_json()
    return written, updates, sessions, batches, same


def _each(results, progress):
    for r in results:
        if progress and r is not None:
            progress(r.unit.nbytes)
        yield r


def index(workers: Workers, staging: Path, batches: list[list[RowGroup]], run_id: int,
          seeds: dict[str, Path]) -> list[Written]:
    parts = PerWorker(run_id, staging, "i")
    try:
        for _ in workers.map_unordered(lambda con, groups: index_batch(con, parts.mine(), groups, seeds), batches):
            pass
    except BaseException:
        parts.abandon()
        raise
    return parts.close()
