"""Reading one changed file of a run: its private copy, what of it loads, its line batches.

A JSONL file is copied up to its last complete line and read from its watermark; a whole
container (a JSON document, a SQLite family) is copied and turned into lines, compared with
the lines it gave before (etl/containers.py) so that only what changed loads, or, read for the
first time, cut and loaded as its lines are made. The batches go to the unit's writer
(etl/extract.py runs the units on the workers); the watermark update returned is what ingest
commits.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from convarch.adapters.base import SourceFile
from convarch.etl import live_lines as live
from convarch.etl import snapshot as snap
from convarch.etl.settled import StillWriting
from convarch.etl.containers import HASH_KIND, WholeStream, makes_lines, snapshot_whole
from convarch.etl.lines import split_chunks, split_snapshot
from convarch.etl.load import BatchWriter, FileContext
from convarch.etl.redact import Redactor
from convarch.etl import redact_pool

if TYPE_CHECKING:
    from convarch.etl.extract import UnitResult


@dataclass
class Planned:
    """A file the run found, what it will do with it (its action) and from which byte."""

    file: SourceFile
    stat: snap.FileStat
    prev: dict | None
    action: str          # new | append | rewrite | touched | unchanged
    start: int
    file_id: int = 0
    #: a container that gave the same lines in other groups than those kept (the code making
    #: them changed): its new groups, to keep with its new stat
    regrouped: bytes | None = None


def reason(exc: BaseException) -> str:
    if isinstance(exc, snap.NotRegularFile):
        return "not a regular file (symlink, FIFO or device): not read"
    if isinstance(exc, StillWriting):
        return f"being written: {exc}"
    return f"cannot read: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)


def read_file(p: Planned, writer: BatchWriter, snapdir: Path, result: UnitResult, redacting: bool,
              flush: Callable[[], None], flush_bytes: int) -> dict | None:
    """Read one changed file into `writer` (calling `flush` whenever `flush_bytes` are
    pending); returns its watermark update, or None when nothing loads (`result` says why:
    skipped, or the same lines as before)."""
    from convarch import adapters

    prev = p.prev
    file_id = p.file_id
    action = p.action
    dest = snapdir / f"{file_id}.jsonl"
    whole_container = p.file.container != "jsonl"
    stand_alone = whole_container and getattr(adapters.get(p.file.source), "LINES_STAND_ALONE", False)
    known, legacy = None, False
    if action == "rewrite" and prev.get("lines_hash"):
        known = prev["lines_hash"]
        legacy = not known.startswith(HASH_KIND)
    before = prev.get("line_hashes") if known and stand_alone else None
    groups = prev.get("line_groups") if before is not None else None
    runs = live.before(prev["versions"], prev["epoch"], prev["lines_read"]) if before is not None else None
    if runs is not None and len(before) != 8 * live.count(runs):
        before = runs = groups = None     # hashes that are not one a live line: the store loads again whole
    if whole_container and action == "new" and makes_lines(p.file):
        return _read_new_container(p, writer, snapdir, result, redacting, flush, flush_bytes, stand_alone)
    try:
        t0 = time.monotonic()
        if not whole_container:
            s = snap.snapshot_lines(p.file.path, p.start, dest)
        else:
            s = snapshot_whole(p.file, dest, snapdir / f"{file_id}.copy", before, keep=stand_alone, legacy=legacy,
                               groups=groups)
            result.read_seconds[str(p.file.path)] = time.monotonic() - t0
        writer.clock.add("copy", time.monotonic() - t0)
    except (OSError, snap.NotRegularFile) as exc:
        result.skipped.append((str(p.file.path), reason(exc)))
        return None
    if known and known == (s.legacy_hash if legacy else s.lines_hash):
        # the same lines as before (a write to a table not read, a document saved again):
        # nothing to load, only the new stat to remember
        dest.unlink()
        if (s.line_groups or b"") != (p.prev.get("line_groups") or b""):
            p.regrouped = s.line_groups
        result.same.append(p)
        return None
    action, epoch, lines_read, versions = _what_loads(p, s, runs)
    ctx = _context(p, epoch)
    redactor = Redactor() if redacting else None
    # the copy may leave out the lines already loaded (snapshot_whole): it starts that far in
    lines_read += _add_batches(split_snapshot(dest, file_id, s.start + s.omitted, lines_read + 1,
                                              transform=_redacting(redactor), room=_room(writer, flush_bytes)),
                               ctx, writer, flush, flush_bytes)
    dest.unlink()
    if redactor is not None:
        result.redacted += sum(redactor.counts.values())
    return _update(p, s, action, epoch, lines_read, versions)


def _read_new_container(p: Planned, writer: BatchWriter, snapdir: Path, result: UnitResult, redacting: bool,
                        flush: Callable[[], None], flush_bytes: int, keep_hashes: bool) -> dict | None:
    """A container read for the first time: its lines are cut and loaded as they are made
    (WholeStream), not written out whole first; everything it gives loads."""
    try:
        stream = WholeStream(p.file, snapdir / f"{p.file_id}.copy", keep=keep_hashes)
    except (OSError, snap.NotRegularFile) as exc:
        result.skipped.append((str(p.file.path), reason(exc)))
        return None
    ctx = _context(p, 1)
    redactor = Redactor() if redacting else None
    lines_read = _add_batches(split_chunks(stream.chunks(_room(writer, flush_bytes)), p.file_id,
                                           transform=_redacting(redactor)),
                              ctx, writer, flush, flush_bytes)
    result.read_seconds[str(p.file.path)] = stream.seconds       # the read, not the loads
    # the copy and the adapter's lines were made as the batches were cut: they count apart
    writer.clock.add("copy", stream.seconds)
    writer.clock.add("cut", -stream.seconds)
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


def _redacting(redactor: Redactor | None) -> Callable[[list[str]], list[str]] | None:
    if redactor is None:
        return None

    def transform(lines: list[str]) -> list[str]:
        return redact_pool.redact_lines(lines, redactor)

    return transform


def _room(writer: BatchWriter, flush_bytes: int) -> Callable[[], int]:
    """The bytes of lines the writer's batch has room for: a big file is cut to fill it, so a
    batch holds `flush_bytes` and part of a line (cut at a fixed 32 MB, every batch of a big
    file was twice a batch: a 1.3 GB Cursor store's first load peaked 150-200 MB higher on 4
    workers)."""
    return lambda: flush_bytes - writer.pending_bytes


def _add_batches(batches, ctx: FileContext, writer: BatchWriter, flush: Callable[[], None], flush_bytes: int) -> int:
    """Hand a file's line batches to the writer, flushing (or handing over) each full batch;
    returns the physical lines they held."""
    lines = 0
    for batch in writer.clock.timed("cut", batches):
        writer.add(ctx, batch.table, batch.bad, batch.nbytes)
        lines += batch.lines
        if writer.pending_bytes >= flush_bytes:
            flush()
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
        "line_hashes": s.line_hashes,
        "line_groups": s.line_groups,
        "versions": versions,
        "session_hint": p.file.session_hint,
        "parent_session_hint": p.file.parent_session_hint,
        "container": p.file.container,
    }


def _what_loads(p: Planned, s: snap.Snapshot, runs: list | None) -> tuple[str, int, int, list]:
    """(action, epoch, the line after which its lines load, the file's versions: etl/live_lines.py)
    for a file read; `runs` the live runs of the lines it gave before, when its lines were
    matched against them (a whole container whose adapter's SQL reads lines on their own, read
    before by this version). Without that a changed container loads again whole."""
    prev, action = p.prev, p.action
    versions = list(prev.get("versions") or []) if prev else []
    if action == "new":
        return "new", 1, 0, []
    if runs is not None:
        n = live.count(runs)
        if s.kept == ((0, n),) and n and not prev.get("retained"):
            # every line loaded before comes first again: the rest is appended. Not so in a
            # store that keeps a deleted session (etl/retained.py): the new lines may bring it
            # back, and its facts, carried in this epoch's parts, must then be counted again
            # from the lines it has left, which only a new epoch does (derive_kept)
            return "append", prev["epoch"], prev["lines_read"], versions
        if s.kept:
            # the lines kept stay where they are; the rest loads as a new epoch after them
            epoch = prev["epoch"] + 1
            versions, last_kept = live.after_matching(runs, s.kept, epoch)
            return "replace_tail", epoch, last_kept, versions
    if action == "rewrite":
        return "rewrite", prev["epoch"] + 1, 0, []
    return action, prev["epoch"], prev["lines_read"], versions        # a JSONL file appended


def _kept_records(prev: dict | None, action: str) -> int:
    """The file's records loaded before that stay live: all of them for an append, none for a
    rewrite; for a replaced tail, session_parts.derive_kept counts them in the lake."""
    return prev["records"] if prev and action not in ("rewrite", "replace_tail") else 0
