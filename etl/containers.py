"""Snapshots of stores that are not append-only JSONL: whole JSON documents, zstd JSONL and
SQLite families are copied privately and turned into JSON lines (by the adapter's `to_lines`
where it has one), so every container reaches the same line-parsing path.

Such a container is rewritten in place, and read again whole, whenever it changes. The lines
it gives are hashed as they are written, so the run can tell what really changed: a SQLite
store whose writes touched only tables the adapter does not read (or a WAL checkpoint), or a
document saved again unchanged, gives the same lines and loads nothing; one whose lines are,
in order, lines it gave before and then new ones keeps those where they were loaded and loads
only the new ones (etl/read_file.py, etl/live_lines.py).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import struct
import time
from collections.abc import Callable
from pathlib import Path

from convarch.adapters.base import Group, SourceFile, Unchecked, checked_line
from convarch.etl import settled
from convarch.etl import snapshot as snap
from convarch.etl.lines import chunk_bytes


#: How the lines' hash is written since each line has its own (LinesDigest); a hash without it
#: is of the kind kept before (_LegacyDigest).
HASH_KIND = "2:"

#: A group of lines as kept for the next read (adapters/base.py Group): its key, the index of
#: its first line among the lines read, how many lines it gave and their bytes.
GROUP = struct.Struct("<16sQQQ")


def _line_hash(line: bytes) -> bytes:
    return hashlib.blake2b(line, digest_size=8).digest()


class LinesDigest:
    """The hashes of the lines a container gives, line by line, and which of them are lines it
    gave before.

    Each line has its own hash (8 bytes); the hash of all the lines is the hash of those. With
    `before`, the hashes of the lines the version read before holds, in line order, the lines
    are matched against them: a line that is the next line before, or a line further on (those
    passed over are gone), is kept where it was loaded (`kept`: runs of indices into the lines
    before, in order); from the first line that is neither, every line is new. A chat taken up
    again moves to the end of a Cursor store: the chats after its old place are kept, only it
    loads again. With `keep`, the new lines' hashes are kept for the next read.

    `legacy`: the version read before was hashed as before 2026-12 (_LegacyDigest, `before`
    then its running hashes): its hash is computed too, and only its first lines can be kept.

    Lines may come as groups (take_group, end_group): `groups` holds the groups of the lines
    before (GROUP each), and a group whose key is one of those, found where a line of it
    could be, is taken whole, its lines' hashes those kept, as if each line had been matched.
    With `keep`, the groups read are kept too.
    """

    def __init__(self, before: bytes | None = None, keep: bool = False, legacy: bool = False,
                 groups: bytes | None = None):
        self._hash = hashlib.blake2b(digest_size=16)
        self.lines = 0
        self.nbytes = 0
        self.kept: list[list[int]] = []      # [first, end) indices of the lines before kept
        self.kept_bytes = 0
        self._legacy = _LegacyDigest(before) if legacy else None
        self._before = None if legacy else before
        self._next = 0                        # index of the next line before to look for
        self._new_only = before is None       # from here on every line is new
        self.hashes = bytearray() if keep else None
        self._groups_before = _groups_of(groups, len(before) // 8) if before is not None and not legacy else {}
        self._group: tuple[bytes, int, int] | None = None    # the group being read line by line
        self.groups = bytearray() if keep else None

    def add(self, line: bytes) -> bool:
        """Take a line; True when it is a line before, kept (it need not be written again)."""
        h = _line_hash(line)
        if self._legacy is not None:
            at = self._legacy.add(line)
        else:
            at = self._find(h)
        if at is None:
            self._new_only = True
        self._took(line, h, at)
        return at is not None

    def add_known(self, line: bytes) -> bool:
        """Take `line` only if it is a line before (True); otherwise take nothing (False): a
        line given unchecked must be checked first, and the line checked is then added."""
        h = _line_hash(line)
        at = self._legacy.add_known(line) if self._legacy is not None else self._find(h)
        if at is None:
            return False
        self._took(line, h, at)
        return True

    def take_group(self, key: bytes) -> bool:
        """Start a group of lines; True when it is taken whole (its lines need not be made),
        else its lines follow and end_group closes it."""
        if self._group is not None:
            raise ValueError("a group of lines inside another")
        found = None if self._new_only else self._groups_before.get(key)
        if found is None or found[0] < self._next:
            self._group = (key, self.lines, self.nbytes)
            return False
        first, n, nbytes = found
        hashes = self._before[8 * first:8 * (first + n)]
        self._keep_group(key, self.lines, n, nbytes)
        self.lines += n
        self.nbytes += nbytes
        self.kept_bytes += nbytes
        self._hash.update(hashes)
        if self.hashes is not None:
            self.hashes += hashes
        if self.kept and self.kept[-1][1] == first:
            self.kept[-1][1] = first + n
        else:
            self.kept.append([first, first + n])
        self._next = first + n
        return True

    def end_group(self) -> None:
        key, first, nbytes = self._group
        self._group = None
        self._keep_group(key, first, self.lines - first, self.nbytes - nbytes)

    def _keep_group(self, key: bytes, first: int, n: int, nbytes: int) -> None:
        if self.groups is not None and n:
            self.groups += GROUP.pack(key, first, n, nbytes)

    def _find(self, h: bytes) -> int | None:
        """Where the next line before with hash `h` is, if any is still to come."""
        if self._new_only:
            return None
        at, before = self._next, self._before
        if before[8 * at:8 * at + 8] == h:
            return at
        pos = before.find(h, 8 * at)
        while pos != -1 and pos % 8:          # a hash starts every 8 bytes
            pos = before.find(h, pos + 1)
        return None if pos == -1 else pos // 8

    def _took(self, line: bytes, h: bytes, at: int | None) -> None:
        self.lines += 1
        self.nbytes += len(line)
        self._hash.update(h)
        if self.hashes is not None:
            self.hashes += h
        if at is None:
            return
        self.kept_bytes += len(line)
        self._next = at + 1
        if self.kept and self.kept[-1][1] == at:
            self.kept[-1][1] = at + 1
        else:
            self.kept.append([at, at + 1])

    def stamp(self, s: snap.Snapshot) -> snap.Snapshot:
        return dataclasses.replace(
            s, lines=self.lines, lines_hash=HASH_KIND + self._hash.hexdigest(),
            legacy_hash=self._legacy.hexdigest() if self._legacy is not None else "",
            kept=tuple((a, b) for a, b in self.kept), line_hashes=bytes(self.hashes) if self.hashes is not None else None,
            line_groups=bytes(self.groups) if self.groups is not None else None)


def _groups_of(kept: bytes | None, lines: int) -> dict[bytes, tuple[int, int, int]]:
    """The groups of the lines before by key: (first line, lines, bytes). None at all when one
    does not fit the `lines` hashes kept, or they overlap (state that is not this version's)."""
    if not kept or len(kept) % GROUP.size:
        return {}
    out: dict[bytes, tuple[int, int, int]] = {}
    end = 0
    for key, first, n, nbytes in GROUP.iter_unpack(kept):
        if first < end or first + n > lines or key in out:
            return {}
        out[key] = (first, n, nbytes)
        end = first + n
    return out


class _LegacyDigest:
    """The lines' hash as versions before 2026-12 kept it: one running hash over their bytes,
    and, compared with `chain` (its value after each line before, 8 bytes a line), how many of
    the first lines are those before. A store such a version read is compared so once; its
    lines' own hashes are kept from then on."""

    def __init__(self, chain: bytes | None):
        self._hash = hashlib.blake2b(digest_size=16)
        self._chain = chain
        self._lines = 0
        self._common = 0         # first lines the same as before's

    def add(self, line: bytes) -> int | None:
        """Take a line; its index when it is still one of the first lines before."""
        self._hash.update(line)
        self._lines += 1
        if self._chain is None or self._common != self._lines - 1:
            return None
        if self._chain[8 * self._common:8 * self._lines] != self._hash.digest()[:8]:
            return None
        self._common = self._lines
        return self._lines - 1

    def add_known(self, line: bytes) -> int | None:
        """The same, taking nothing when the line is not the line before at its place."""
        if self._chain is None or self._common != self._lines:
            return None
        h = self._hash.copy()
        h.update(line)
        if self._chain[8 * self._lines:8 * self._lines + 8] != h.digest()[:8]:
            return None
        self._hash = h
        self._lines += 1
        self._common = self._lines
        return self._lines - 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def snapshot_whole(file: SourceFile, dest: Path, workdir: Path, before: bytes | None = None,
                   keep: bool = False, legacy: bool = False, groups: bytes | None = None) -> snap.Snapshot:
    """Copy a non-line container privately and write the JSON lines the adapter makes of it,
    hashed as they are written (LinesDigest: `before` holds the hashes of the lines the version
    read before holds, if kept, and `groups` its groups of lines; with `keep` the new lines'
    are returned; `legacy` when that version was hashed the old way).

    With `before`, the lines that are lines before (LinesDigest.kept) are not written
    (Snapshot.omitted counts their bytes): only the new lines can load, and a gigabyte store
    that changed in one chat, or not at all, was written out whole to be skipped. Those lines
    are also made unchecked where the adapter can (`to_lines_unchecked`, adapters/base.py): a
    line equal to one before needs no check; and a group of lines (adapters/base.py Group)
    whose rows are those it was made of before is not made at all.

    A container the adapter cannot read (a corrupt zstd frame, a file that is not SQLite, a
    document that is not JSON) becomes one quarantined line carrying the reason.
    """
    digest = LinesDigest(before, keep, legacy, groups)
    if not makes_lines(file):
        s = snap.snapshot_document(file.path, dest)
        digest.add(dest.read_bytes())
        return digest.stamp(s)
    workdir.mkdir(mode=0o700)
    try:
        copy, size = _copy(file, workdir)
        comparing = before is not None
        with open(dest, "wb") as out:
            for item in _lines(file, copy, digest, unchecked=comparing):
                if comparing and isinstance(item, Unchecked) and digest.add_known(_one_line(item.line)):
                    continue          # a line before: it was checked then
                line = _written(item)
                if digest.add(line):
                    continue          # a line before, kept where it was loaded
                out.write(line)
        os.chmod(dest, 0o600)
        return dataclasses.replace(digest.stamp(snap.Snapshot(dest, 0, size, size, 0, "")), omitted=digest.kept_bytes)
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

    def __init__(self, file: SourceFile, workdir: Path, keep: bool = False):
        self._file = file
        self._workdir = workdir
        self._digest = LinesDigest(None, keep)
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

    def chunks(self, room: Callable[[], int] | None = None):
        """Whole lines, `room()` bytes at a time and the rest of the line that reaches them
        (as etl/lines.py cuts a snapshot); the private copy is removed at the end."""
        try:
            held: list[bytes] = []
            n = 0
            nbytes = chunk_bytes(room)
            t0 = time.monotonic()
            for item in _lines(self._file, self._copy, self._digest):
                line = _written(item)
                self._digest.add(line)
                held.append(line)
                n += len(line)
                if n >= nbytes:
                    chunk, held, n = b"".join(held), [], 0
                    self.seconds += time.monotonic() - t0
                    yield chunk
                    t0 = time.monotonic()
                    nbytes = chunk_bytes(room)
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
    the bytes of the original read.

    A JSON document or log written in the last few seconds that does not end as one does may
    be half written (an agent that truncates its file and writes it out again, or is writing
    its last line): it is not read this run (settled.StillWriting), where it would have lost
    its lines until the next run, or had its torn tail quarantined and what follows loaded
    again. Older, it is read as it is, its complete elements loaded and the rest quarantined."""
    if file.container == "sqlite":
        copy = snap.snapshot_sqlite(file.path, workdir)
        return copy, sum(f.stat().st_size for f in workdir.iterdir())
    copy = workdir / file.path.name
    size, st = snap.copy_whole(file.path, copy)
    if file.container == "json" and settled.being_written(st) and not settled.looks_whole(copy):
        raise settled.StillWriting(f"does not end as a whole {copy.suffix[1:]} file {settled.written_ago(st)} after "
                                   "its last write; read again next run")
    return copy, size


def _lines(file: SourceFile, copy: Path, digest: LinesDigest, unchecked: bool = False):
    """The container's JSON lines, as the adapter gives them: bytes, or with `unchecked` and
    an adapter that has to_lines_unchecked, also Unchecked lines; _written makes each the line
    written. A group of lines gives its lines only when `digest` does not take it whole. A
    container the adapter cannot read ends with one line that is not JSON, quarantined with
    the reason."""
    from convarch import adapters

    adapter = adapters.get(file.source)
    make = getattr(adapter, "to_lines", None)
    if unchecked:
        make = getattr(adapter, "to_lines_unchecked", None) or make
    try:
        for item in make(copy, file) if make else _default_lines(file.container, copy):
            if not isinstance(item, Group):
                yield item
            elif not digest.take_group(item.key):
                yield from item.lines()
                digest.end_group()
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
