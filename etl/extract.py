"""Load the files a run changed: snapshot each, cut it into lines and load them through the
adapter's SQL, on the workers in units of about one batch; then build the search index of the
staged batches. Nothing here touches the lake or the state database's watermarks; ingest
commits what this returns.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from convarch import sql
from convarch.adapters.base import SourceFile
from convarch.etl import snapshot as snap
from convarch.etl.containers import WholeStream, snapshot_whole, streams
from convarch.etl.duck import HIVE, connect, sql_list
from convarch.etl.index import index_batch
from convarch.etl import lines as line_cutter
from convarch.etl.lines import split_chunks, split_snapshot
from convarch.etl.load import BatchWriter, FileContext, Written
from convarch.etl.partfiles import PerWorker, RowGroup
from convarch.etl.redact import Redactor, redact_json_line
from convarch.etl.shared_batches import Job, SharedBatches
from convarch.etl.workers import Workers

if TYPE_CHECKING:
    from convarch.etl.ingest import Summary

FLUSH_BYTES = 16 << 20   # memory stays bounded by this batch size (per worker), not by the corpus


@dataclass
class Planned:
    file: SourceFile
    stat: snap.FileStat
    prev: dict | None
    action: str          # new | append | rewrite | touched | unchanged
    start: int
    file_id: int = 0


def reason(exc: BaseException) -> str:
    if isinstance(exc, snap.NotRegularFile):
        return "not a regular file (symlink, FIFO or device): not read"
    return f"cannot read: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)



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
    """Give each rewritten or appended file seen before its live loads (file_versions) and,
    for a rewritten one, the running hashes of the lines it last gave (file_line_hashes)."""
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
        chains = dict(state.execute(
            "select file_id, hashes from file_line_hashes where file_id in (select file_id from seen_ids)").fetchall())
    finally:
        state.unregister("seen_ids")
    for p in seen:
        p.prev = dict(p.prev, versions=versions.get(p.prev["file_id"], []), chain=chains.get(p.prev["file_id"]))


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

    def writer_for(con, extract, context: pa.Table | None = None) -> BatchWriter:
        return BatchWriter(run_id, staging / "out", extract, con, batch_numbers, parts.mine(), context, learnt)

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
                upd = read_file(p, writer, snapdir, result, redacting, flush)
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
    return written, updates, sessions, batches, same


def _each(results, progress):
    for r in results:
        if progress and r is not None:
            progress(r.unit.nbytes)
        yield r


def read_file(p: Planned, writer: BatchWriter, snapdir: Path, result: UnitResult, redacting: bool,
              flush: Callable[[], None] | None = None) -> dict | None:
    from convarch import adapters

    prev = p.prev
    file_id = p.file_id
    action = p.action
    dest = snapdir / f"{file_id}.jsonl"
    whole_container = p.file.container != "jsonl"
    stand_alone = whole_container and getattr(adapters.get(p.file.source), "LINES_STAND_ALONE", False)
    known = None
    if action == "rewrite" and prev.get("lines_hash"):
        known = (prev["lines_read"], prev["lines_hash"])
    if whole_container and action == "new" and streams(p.file):
        return _read_new_container(p, writer, snapdir, result, redacting, flush, stand_alone)
    try:
        if not whole_container:
            s = snap.snapshot_lines(p.file.path, p.start, dest)
        else:
            t0 = time.monotonic()
            s = snapshot_whole(p.file, dest, snapdir / f"{file_id}.copy",
                               prev.get("chain") if known else None, keep_chain=stand_alone,
                               leave_out_common=stand_alone)
            result.read_seconds[str(p.file.path)] = time.monotonic() - t0
    except (OSError, snap.NotRegularFile) as exc:
        result.skipped.append((str(p.file.path), reason(exc)))
        return None
    if known == (s.lines, s.lines_hash):
        # the same lines as before (a write to a table not read, a document saved again):
        # nothing to load, only the new stat to remember
        dest.unlink()
        result.same.append(p)
        return None
    action, skip, epoch, lines_read, versions = _what_loads(p, s, stand_alone and bool(known and prev.get("chain")))
    ctx = _context(p, epoch)
    redactor = Redactor() if redacting else None
    # the copy may leave out the lines already loaded (snapshot_whole): it starts that far in
    lines_read += _add_batches(split_snapshot(dest, file_id, s.start + s.omitted, lines_read + 1,
                                              transform=_redacting(redactor), skip=skip - s.omitted),
                               ctx, writer, flush)
    dest.unlink()
    if redactor is not None:
        result.redacted += sum(redactor.counts.values())
    return _update(p, s, action, epoch, lines_read, versions)


def _read_new_container(p: Planned, writer: BatchWriter, snapdir: Path, result: UnitResult, redacting: bool,
                        flush: Callable[[], None] | None, keep_chain: bool) -> dict | None:
    """A container read for the first time: its lines are cut and loaded as they are made
    (WholeStream), not written out whole first; everything it gives loads."""
    try:
        stream = WholeStream(p.file, snapdir / f"{p.file_id}.copy", keep_chain=keep_chain)
    except (OSError, snap.NotRegularFile) as exc:
        result.skipped.append((str(p.file.path), reason(exc)))
        return None
    ctx = _context(p, 1)
    redactor = Redactor() if redacting else None
    lines_read = _add_batches(split_chunks(stream.chunks(line_cutter.READ_CHUNK), p.file_id, transform=_redacting(redactor)),
                              ctx, writer, flush)
    result.read_seconds[str(p.file.path)] = stream.seconds       # the read, not the loads
    if redactor is not None:
        result.redacted += sum(redactor.counts.values())
    return _update(p, stream.snapshot(), "new", 1, lines_read, [])


def _context(p: Planned, epoch: int) -> FileContext:
    return FileContext(
        file_id=p.file_id,
        source=p.file.source,
        epoch=epoch,
        source_file=str(p.file.path),
        file_stem=p.file.path.stem,
        session_hint=p.file.session_hint,
        parent_session_hint=p.file.parent_session_hint,
    )


def _redacting(redactor: Redactor | None) -> Callable[[str], str] | None:
    if redactor is None:
        return None

    def transform(line: str) -> str:
        return redact_json_line(line, redactor)

    return transform


def _add_batches(batches, ctx: FileContext, writer: BatchWriter, flush: Callable[[], None] | None) -> int:
    """Hand a file's line batches to the writer, flushing (or handing over) each full batch;
    returns the physical lines they held."""
    lines = 0
    for batch in batches:
        writer.add(ctx, batch.table, batch.bad, batch.nbytes)
        lines += batch.lines
        if writer.pending_bytes >= FLUSH_BYTES:
            (flush or writer.flush)()
    return lines


def _update(p: Planned, s: snap.Snapshot, action: str, epoch: int, lines_read: int, versions: list) -> dict:
    """The watermark update of a file read: what the commit records of it."""
    return {
        "file_id": p.file_id,
        "source": p.file.source,
        "path": str(p.file.path),
        "action": action,
        "stat": p.stat,
        "offset": s.end,
        "size": s.size,
        "head_len": s.head_len,
        "head_hash": s.head_hash,
        "epoch": epoch,
        "tail_bytes": s.size - s.end,
        "lines_read": lines_read,
        "prev_records": _kept_records(p.prev, action),
        "lines_hash": s.lines_hash or None,
        "chain": s.chain,
        "versions": versions,
        "session_hint": p.file.session_hint,
        "parent_session_hint": p.file.parent_session_hint,
    }


def _what_loads(p: Planned, s: snap.Snapshot, compared: bool) -> tuple[str, int, int, int, list]:
    """(action, bytes of the snapshot already loaded, epoch, lines before the first to load,
    the file's live loads as (epoch, first line)) for a file read; `compared` when its lines
    were compared with those it gave before, line by line (a whole container whose adapter's
    SQL reads lines on their own, read before by this version). Without the comparison a
    changed container loads again whole."""
    prev, action = p.prev, p.action
    versions = list(prev.get("versions") or []) if prev else []
    if action == "new":
        return "new", 0, 1, 0, []
    if compared and s.common == prev["lines_read"]:
        # every line loaded before comes first again: the rest is appended
        return "append", s.common_end, prev["epoch"], prev["lines_read"], versions
    if compared and s.common:
        # the first s.common lines are those loaded before: they stay where they are, and the
        # rest loads as a new epoch from the line after them
        epoch = prev["epoch"] + 1
        kept = [(e, first) for e, first in (versions or [(prev["epoch"], 1)]) if first <= s.common]
        return "replace_tail", s.common_end, epoch, s.common, kept + [(epoch, s.common + 1)]
    if action == "rewrite":
        return "rewrite", 0, prev["epoch"] + 1, 0, []
    return action, 0, prev["epoch"], prev["lines_read"], versions        # a JSONL file appended


def _kept_records(prev: dict | None, action: str) -> int:
    """The file's records loaded before that stay live: all of them for an append, none for a
    rewrite; for a replaced tail, session_parts.derive_kept counts them in the lake."""
    return prev["records"] if prev and action not in ("rewrite", "replace_tail") else 0


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
