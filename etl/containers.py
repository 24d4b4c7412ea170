"""Snapshots of stores that are not append-only JSONL: whole JSON documents, zstd JSONL and
SQLite families are copied privately and turned into JSON lines (by the adapter's `to_lines`
where it has one), so every container reaches the same line-parsing path.

Such a container is rewritten in place, and read again whole, whenever it changes. The lines
it gives are hashed as they are written, so the run can tell what really changed: a SQLite
store whose writes touched only tables the adapter does not read (or a WAL checkpoint), or a
document saved again unchanged, gives the same lines and loads nothing; a history that only
grew gives the lines it gave before and then new ones (etl/extract.py).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path

from convarch.adapters.base import SourceFile
from convarch.etl import snapshot as snap


class LinesDigest:
    """A running hash of the lines written, and how many of the first lines are those of the
    version read before: `known` is (count, hash) of its lines, `chain` its running hash after
    each line (8 bytes a line, from `chain` of that read; None where none was kept)."""

    def __init__(self, known: tuple[int, str] | None, chain: bytes | None = None, keep_chain: bool = False):
        self._hash = hashlib.blake2b(digest_size=16)
        self.lines = 0
        self.nbytes = 0
        self.known = known
        self.known_end: int | None = 0 if known == (0, self.hexdigest()) else None
        self._old = chain
        self.common = 0              # first lines the same as the version before's
        self.common_end = 0          # bytes of those lines
        self.chain = bytearray() if keep_chain else None

    def add(self, line: bytes) -> None:
        self._hash.update(line)
        self.lines += 1
        self.nbytes += len(line)
        if self.chain is not None or self._old is not None:
            step = self._hash.digest()[:8]
            if self.chain is not None:
                self.chain += step
            if self._old is not None and self.common == self.lines - 1 \
                    and self._old[8 * self.common:8 * self.lines] == step:
                self.common, self.common_end = self.lines, self.nbytes
        if self.known is not None and self.lines == self.known[0] and self.hexdigest() == self.known[1]:
            self.known_end = self.nbytes

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def stamp(self, s: snap.Snapshot) -> snap.Snapshot:
        return dataclasses.replace(s, lines=self.lines, lines_hash=self.hexdigest(), known_end=self.known_end,
                                   common=self.common, common_end=self.common_end,
                                   chain=bytes(self.chain) if self.chain is not None else None)


def snapshot_whole(file: SourceFile, dest: Path, workdir: Path, known: tuple[int, str] | None = None,
                   chain: bytes | None = None, keep_chain: bool = False) -> snap.Snapshot:
    """Copy a non-line container privately and write the JSON lines the adapter makes of it;
    `known` is (count, hash) of the lines the version read before gave and `chain` their
    running hashes, if kept; with `keep_chain` the new lines' running hashes are returned.

    A container the adapter cannot read (a corrupt zstd frame, a file that is not SQLite, a
    document that is not JSON) becomes one quarantined line carrying the reason.
    """
    from convarch import adapters

    adapter = adapters.get(file.source)
    to_lines = getattr(adapter, "to_lines", None)
    digest = LinesDigest(known, chain, keep_chain)
    if file.container == "json" and to_lines is None:
        s = snap.snapshot_document(file.path, dest)
        digest.add(dest.read_bytes())
        return digest.stamp(s)
    workdir.mkdir(mode=0o700)
    try:
        if file.container == "sqlite":
            copy = snap.snapshot_sqlite(file.path, workdir)
            size = sum(f.stat().st_size for f in workdir.iterdir())
        else:
            copy = workdir / file.path.name
            size = snap.copy_whole(file.path, copy)
        with open(dest, "wb") as out:
            try:
                lines = to_lines(copy, file) if to_lines else _default_lines(file.container, copy)
                for line in lines:
                    line = line.replace(b"\n", b" ") + b"\n"
                    out.write(line)
                    digest.add(line)
            except Exception as exc:  # noqa: BLE001 - any failure to read becomes a quarantined line
                line = _unreadable_line(file, exc) + b"\n"
                out.write(line)
                digest.add(line)
        os.chmod(dest, 0o600)
        return digest.stamp(snap.Snapshot(dest, 0, size, size, 0, ""))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


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
