"""Snapshots of stores that are not append-only JSONL: whole JSON documents, zstd JSONL and
SQLite families are copied privately and turned into JSON lines (by the adapter's `to_lines`
where it has one), so every container reaches the same line-parsing path.

Such a container is rewritten in place, and read again whole, whenever it changes. The lines
it gives are hashed as they are written, so the run can tell what really changed: a SQLite
store whose writes touched only tables the adapter does not read (or a WAL checkpoint), or a
document saved again unchanged, gives the same lines and loads nothing; one whose first lines
are those it gave before keeps them and loads only the rest (etl/extract.py).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import time
from pathlib import Path

from convarch.adapters.base import SourceFile, Unchecked, checked_line
from convarch.etl import snapshot as snap


class LinesDigest:
    """A hash of the lines written and, where `chain` (the running hash after each line of the
    version read before, 8 bytes a line) is given, how many of the first lines are that
    version's; with `keep_chain` the new lines' own running hashes are kept for the next read."""

    def __init__(self, chain: bytes | None = None, keep_chain: bool = False):
        self._hash = hashlib.blake2b(digest_size=16)
        self.lines = 0
        self.nbytes = 0
        self._old = chain
        self.common = 0              # first lines the same as the version before's
        self.common_end = 0          # bytes of those lines
        self.chain = bytearray() if keep_chain else None

    def add(self, line: bytes) -> None:
        self._hash.update(line)
        step = self._hash.digest()[:8] if self.chain is not None or self._old is not None else None
        self._took(len(line), step)

    def add_known(self, line: bytes) -> bool:
        """Add `line` if it is the version before's line at this place, within the lines the
        two have in common so far; False, adding nothing, otherwise."""
        if self._old is None or self.common != self.lines:
            return False
        h = self._hash.copy()
        h.update(line)
        step = h.digest()[:8]
        if self._old[8 * self.lines:8 * self.lines + 8] != step:
            return False
        self._hash = h
        self._took(len(line), step)
        return True

    def _took(self, nbytes: int, step: bytes | None) -> None:
        """Count a line the hash has taken, `step` the running hash after it (None when no
        chain is kept or compared)."""
        self.lines += 1
        self.nbytes += nbytes
        if step is None:
            return
        if self.chain is not None:
            self.chain += step
        if self._old is not None and self.common == self.lines - 1 and self._old[8 * self.common:8 * self.lines] == step:
            self.common, self.common_end = self.lines, self.nbytes

    def stamp(self, s: snap.Snapshot) -> snap.Snapshot:
        return dataclasses.replace(s, lines=self.lines, lines_hash=self._hash.hexdigest(), common=self.common,
                                   common_end=self.common_end,
                                   chain=bytes(self.chain) if self.chain is not None else None)


def snapshot_whole(file: SourceFile, dest: Path, workdir: Path, chain: bytes | None = None,
                   keep_chain: bool = False, leave_out_common: bool = False) -> snap.Snapshot:
    """Copy a non-line container privately and write the JSON lines the adapter makes of it,
    hashed as they are written (LinesDigest: `chain` holds the running hashes of the lines the
    version read before gave, if kept; with `keep_chain` the new lines' are returned).

    With `leave_out_common`, the first lines that are those of the version before are not
    written (Snapshot.omitted counts their bytes): only what follows them can load, and a
    gigabyte store that changed at its end, or not at all, was written out whole to be skipped.
    Those lines are also made unchecked where the adapter can (`to_lines_unchecked`,
    adapters/base.py): one equal to the version before's line at its place needs no check.

    A container the adapter cannot read (a corrupt zstd frame, a file that is not SQLite, a
    document that is not JSON) becomes one quarantined line carrying the reason.
    """
    digest = LinesDigest(chain, keep_chain)
    if not makes_lines(file):
        s = snap.snapshot_document(file.path, dest)
        digest.add(dest.read_bytes())
        return digest.stamp(s)
    workdir.mkdir(mode=0o700)
    try:
        copy, size = _copy(file, workdir)
        leaving_out = leave_out_common and chain is not None
        with open(dest, "wb") as out:
            for item in _lines(file, copy, unchecked=leaving_out):
                if leaving_out and isinstance(item, Unchecked) and digest.add_known(_one_line(item.line)):
                    continue          # the version before's line: it was checked then
                line = _written(item)
                digest.add(line)
                if leaving_out and digest.common == digest.lines:
                    continue          # still the version before's lines
                leaving_out = False
                out.write(line)
        os.chmod(dest, 0o600)
        omitted = digest.common_end if leave_out_common and chain is not None else 0
        return dataclasses.replace(digest.stamp(snap.Snapshot(dest, 0, size, size, 0, "")), omitted=omitted)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def makes_lines(file: SourceFile) -> bool:
    """Whether the container is turned into lines (by the adapter's to_lines or, zstd JSONL,
    by decompressing it), and so can be cut as they are made (WholeStream): every one but a
    JSON document the adapter keeps as it is, whose copy is its one line."""
    from convarch import adapters

    return file.container != "json" or getattr(adapters.get(file.source), "to_lines", None) is not None


class WholeStream:
    """A container read for the first time: copied privately, its lines made and hashed as
    snapshot_whole makes and hashes them, but handed on in chunks of whole lines as they come
    instead of written out whole first, so a gigabyte store's first batches load (on other
    workers, etl/shared_batches.py) while its later lines are still being made."""

    def __init__(self, file: SourceFile, workdir: Path, keep_chain: bool = False):
        self._file = file
        self._workdir = workdir
        self._digest = LinesDigest(None, keep_chain)
        #: time spent copying the store and making its lines, loading its batches apart
        self.seconds = 0.0
        t0 = time.monotonic()
        workdir.mkdir(mode=0o700)
        try:
            self._copy, self._size = _copy(file, workdir)
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        self.seconds = time.monotonic() - t0

    def chunks(self, nbytes: int):
        """Whole lines, about `nbytes` at a time; the private copy is removed at the end."""
        try:
            held: list[bytes] = []
            n = 0
            t0 = time.monotonic()
            for item in _lines(self._file, self._copy):
                line = _written(item)
                self._digest.add(line)
                held.append(line)
                n += len(line)
                if n >= nbytes:
                    chunk, held, n = b"".join(held), [], 0
                    self.seconds += time.monotonic() - t0
                    yield chunk
                    t0 = time.monotonic()
            if held:
                chunk = b"".join(held)
                self.seconds += time.monotonic() - t0
                yield chunk
            else:
                self.seconds += time.monotonic() - t0
        finally:
            shutil.rmtree(self._workdir, ignore_errors=True)

    def snapshot(self) -> snap.Snapshot:
        """What snapshot_whole would have returned, once every chunk was taken."""
        return self._digest.stamp(snap.Snapshot(self._workdir, 0, self._size, self._size, 0, ""))


def _copy(file: SourceFile, workdir: Path) -> tuple[Path, int]:
    """The container copied into `workdir` (a SQLite database with its -wal and -journal), and
    the bytes of the original read."""
    if file.container == "sqlite":
        copy = snap.snapshot_sqlite(file.path, workdir)
        return copy, sum(f.stat().st_size for f in workdir.iterdir())
    copy = workdir / file.path.name
    return copy, snap.copy_whole(file.path, copy)


def _lines(file: SourceFile, copy: Path, unchecked: bool = False):
    """The container's JSON lines, as the adapter gives them: bytes, or with `unchecked` and
    an adapter that has to_lines_unchecked, also Unchecked lines; _written makes each the line
    written. A container the adapter cannot read ends with one line that is not JSON,
    quarantined with the reason."""
    from convarch import adapters

    adapter = adapters.get(file.source)
    make = getattr(adapter, "to_lines", None)
    if unchecked:
        make = getattr(adapter, "to_lines_unchecked", None) or make
    try:
        yield from make(copy, file) if make else _default_lines(file.container, copy)
    except Exception as exc:  # noqa: BLE001 - any failure to read becomes a quarantined line
        yield _unreadable_line(file, exc)


def _written(item: bytes | Unchecked) -> bytes:
    """A line as written to the snapshot: checked, on one line, ending with its newline."""
    return _one_line(checked_line(item))


def _one_line(line: bytes) -> bytes:
    return (line.replace(b"\n", b" ") if b"\n" in line else line) + b"\n"


def _default_lines(container: str, copy: Path):
    if container == "jsonl.zst":
        import io

        import zstandard

        with open(copy, "rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as reader:
            for line in io.BufferedReader(reader):
                if line.strip():
                    yield line.rstrip(b"\r\n")
        return
    raise ValueError(f"no reader for container {container!r}")


def _unreadable_line(file: SourceFile, exc: Exception) -> bytes:
    """A line that cannot parse as JSON, so the whole unreadable container is quarantined
    once, with the reason in its text."""
    return f"unreadable {file.container} container: {type(exc).__name__}: {exc}".encode()
