"""Copy what ingest will read out of a live store before reading it.

The original is opened read-only without following symlinks, never locked, renamed or written,
and read only up to the size it had when opened, so a file that grows meanwhile is picked up
next run. Only the complete lines after the watermark are copied: the snapshot of an appended
file is proportional to what is new.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from convarch.etl.settled import COPY_ATTEMPTS, StillWriting, being_written, same_file, written_ago

HEAD_LEN = 4096
CHUNK = 1 << 20


class NotRegularFile(OSError):
    """Symlinks, FIFOs, devices and sockets are never read."""


@dataclass(frozen=True, slots=True)
class FileStat:
    dev: int
    inode: int
    size: int
    mtime_ns: int
    #: a SQLite database's own marks of change (data_version); None for other files
    version: str | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    path: Path          # the private copy
    start: int          # byte offset in the original where the copy begins
    end: int            # byte offset just past the last complete line copied
    size: int           # size of the original when it was read
    head_len: int
    head_hash: str
    #: for a whole container, the JSON lines it gave: how many, their hash (LinesDigest; and,
    #: when the version read before was hashed the old way, that hash too), which of the lines
    #: before are kept ([first, end) runs of their indices) and each line's own hash, if kept,
    #: with the groups the lines came in (containers.GROUP each)
    lines: int = 0
    lines_hash: str = ""
    legacy_hash: str = ""
    kept: tuple[tuple[int, int], ...] = ()
    line_hashes: bytes | None = None
    line_groups: bytes | None = None
    #: bytes of lines left out of the copy: the lines kept, when only the new lines can load
    #: (etl/containers.py); the copy's first byte is this far into the lines
    omitted: int = 0


def stat_source(path: Path) -> FileStat:
    st = os.stat(path, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFile(f"{path}: not a regular file")
    return FileStat(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _open_readonly(path: Path | str) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(f"{path}: not a regular file")
    return fd


def head_hash(path: Path, length: int) -> str:
    """Hash of the first `length` bytes: tells an appended file from a rewritten one."""
    fd = _open_readonly(path)
    try:
        return _hash(os.pread(fd, length, 0)) if length else _hash(b"")
    finally:
        os.close(fd)


def byte_at(path: Path, offset: int) -> bytes:
    fd = _open_readonly(path)
    try:
        return os.pread(fd, 1, offset)
    finally:
        os.close(fd)


def snapshot_document(path: Path, dest: Path, limit: int = 64 << 20) -> Snapshot:
    """Copy a whole JSON document as one line (compacted), so it loads as a single record.

    A document that does not parse is copied with its newlines blanked; it then fails to parse
    again downstream and is quarantined with its bytes, unless it was written so recently that
    it may be half written (StillWriting).
    """
    data, st = _read_settled(path, limit)
    try:
        value = json.loads(data)
        line = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (ValueError, RecursionError) as exc:
        if being_written(st):
            raise StillWriting(f"does not parse as JSON {written_ago(st)} after its last write; "
                               f"read again next run ({exc})") from None
        line = data.replace(b"\r", b" ").replace(b"\n", b" ")
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(out, line + b"\n")
    finally:
        os.close(out)
    head_len = min(HEAD_LEN, len(data))
    return Snapshot(dest, 0, len(data), len(data), head_len, _hash(data[:head_len]))


def _read_settled(path: Path, limit: int) -> tuple[bytes, os.stat_result]:
    """A file's bytes (up to `limit`) as they were while its stat stayed the same."""
    for attempt in range(COPY_ATTEMPTS):
        fd = _open_readonly(path)
        try:
            st = os.fstat(fd)
            data = os.pread(fd, min(st.st_size, limit), 0)
            if same_file(st, os.fstat(fd)):
                return data, st
        finally:
            os.close(fd)
        time.sleep(0.02 * (attempt + 1))
    raise StillWriting(f"kept changing while it was read ({COPY_ATTEMPTS} attempts); read again next run")


def _is_json_object(data: bytes) -> bool:
    text = data.strip()
    if not text.startswith(b"{") or not text.endswith(b"}"):
        return False
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def snapshot_lines(path: Path, start: int, dest: Path) -> Snapshot:
    """Copy [start, last newline) of `path` into `dest` (0600).

    The end is found first, by reading back from the size the file has now; the bytes before it
    are then copied by the kernel (copy_file_range, else sendfile), which neither copies them
    through this process nor reads a line twice. A file cut short meanwhile makes the kernel
    copy fall short, and the careful copy below then redoes it chunk by chunk."""
    fd = _open_readonly(path)
    try:
        size = os.fstat(fd).st_size
        end = _last_line_end(fd, start, size)
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            if end is not None and _kernel_copy(fd, out, start, end - start):
                tail = os.pread(fd, size - end, end) if size > end else b""
                size = end + len(tail)
                if tail and _is_json_object(tail):
                    # a complete record that merely lacks its final newline: take it whole
                    os.write(out, tail + b"\n")
                    end += len(tail)
            else:
                os.ftruncate(out, 0)
                os.lseek(out, 0, os.SEEK_SET)
                end, size = _copy_lines(fd, out, start, size)
        finally:
            os.close(out)
        head_len = min(HEAD_LEN, end)
        head = os.pread(fd, head_len, 0) if head_len else b""
    finally:
        os.close(fd)
    return Snapshot(dest, start, end, size, head_len, _hash(head))


def _last_line_end(fd: int, start: int, size: int) -> int | None:
    """The offset just past the last newline in [start, size), `start` if there is none, or
    None if the file turned out shorter than `size` (cut short meanwhile)."""
    pos = size
    while pos > start:
        n = min(CHUNK, pos - start)
        block = os.pread(fd, n, pos - n)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return pos - n + cut + 1
        if len(block) < n:          # cut short while being read: the careful copy decides
            return None
        pos -= n
    return start


def _kernel_copy(src: int, dst: int, offset: int, count: int) -> bool:
    """Copy `count` bytes of `src` from `offset` to the end of `dst` inside the kernel. False
    when the source ended early (it was truncated meanwhile)."""
    done = 0
    for copy in (_copy_file_range, _sendfile, _read_write):
        try:
            while done < count:
                n = copy(src, dst, offset + done, count - done)
                if n == 0:
                    return False
                done += n
            return True
        except OSError as exc:
            if exc.errno not in _NOT_SUPPORTED or done:
                raise
    return False


def _copy_file_range(src: int, dst: int, offset: int, count: int) -> int:
    if not hasattr(os, "copy_file_range"):
        raise OSError(errno.ENOSYS, "copy_file_range")
    return os.copy_file_range(src, dst, count, offset)


def _sendfile(src: int, dst: int, offset: int, count: int) -> int:
    if not sys.platform.startswith("linux"):          # elsewhere it only writes to sockets
        raise OSError(errno.ENOSYS, "sendfile")
    return os.sendfile(dst, src, offset, min(count, 1 << 30))


def _read_write(src: int, dst: int, offset: int, count: int) -> int:
    chunk = os.pread(src, min(CHUNK, count), offset)
    if chunk:
        os.write(dst, chunk)
    return len(chunk)


_NOT_SUPPORTED = {errno.ENOSYS, errno.EXDEV, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EBADF}


def _copy_lines(fd: int, out: int, start: int, size: int) -> tuple[int, int]:
    """Copy the complete lines of [start, size) chunk by chunk; returns (end, size read)."""
    end = pos = start
    pending = bytearray()
    while pos < size:
        chunk = os.pread(fd, min(CHUNK, size - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        pending += chunk
        cut = pending.rfind(b"\n")
        if cut >= 0:
            os.write(out, pending[: cut + 1])
            end += cut + 1
            del pending[: cut + 1]
    if pending and _is_json_object(bytes(pending)):
        os.write(out, bytes(pending) + b"\n")
        end += len(pending)
    return end, pos


SQLITE_SIDECARS = ("-wal", "-journal")


def stat_family(path: Path) -> FileStat:
    """The stat of a SQLite database and its sidecars folded into one, with the database's own
    marks of change: a commit that only reached the -wal still counts as a change, and so does
    one that left every size and time as they were."""
    main = stat_source(path)
    size, mtime = main.size, main.mtime_ns
    marks = {"": _mark(str(path), *CHANGE_MARKS[""])}
    for suffix in SQLITE_SIDECARS:
        try:
            st = os.stat(f"{path}{suffix}", follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            size += st.st_size
            mtime = max(mtime, st.st_mtime_ns)
            if suffix in CHANGE_MARKS:         # only a sidecar found is opened for its marks
                marks[suffix] = _mark(f"{path}{suffix}", *CHANGE_MARKS[suffix])
    # as hex, one field a file of CHANGE_MARKS ("" for one missing or too short to hold them)
    return FileStat(main.dev, main.inode, size, mtime, ".".join(marks.get(s, "") for s in CHANGE_MARKS))


#: Where SQLite marks a change in each file of a database, (offset, length), read into the
#: store's data version (FileStat.version, kept as source_files.data_version): the database
#: header's file change counter, which every commit in rollback-journal mode raises, and the
#: -wal header's checkpoint sequence and salts, new each time the -wal starts over from its
#: first frame (and may then keep its size). A file's time alone misses a commit that keeps
#: its size: the kernel stamps times from a clock that ticks every few milliseconds (some file
#: systems keep whole seconds), and two commits inside one tick leave the same time.
CHANGE_MARKS = {"": (24, 4), "-wal": (12, 12)}


def _mark(path: str, offset: int, length: int) -> str:
    """A file's change mark as hex, read from the live file without SQLite."""
    try:
        fd = _open_readonly(path)
    except (FileNotFoundError, NotRegularFile):
        return ""
    try:
        got = os.pread(fd, length, offset)
    finally:
        os.close(fd)
    return got.hex() if len(got) == length else ""


def _copy_file(src: str, dst: Path) -> None:
    """Copy a whole file: the bytes it has when opened by the kernel (a gigabyte SQLite store
    copied through this process took 1.5 s, by copy_file_range 0.5 s), then any it gained
    meanwhile chunk by chunk. A file cut short meanwhile is copied as far as it goes: the
    caller compares its stat before and after."""
    fd = _open_readonly(Path(src))
    try:
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            size = os.fstat(fd).st_size
            pos = size if size and _kernel_copy(fd, out, 0, size) else os.lseek(out, 0, os.SEEK_CUR)
            while chunk := os.pread(fd, CHUNK, pos):
                os.write(out, chunk)
                pos += len(chunk)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def snapshot_sqlite(path: Path, dest_dir: Path, attempts: int = COPY_ATTEMPTS) -> Path:
    """Copy a SQLite database with its -wal and -journal into `dest_dir` and return the copy.

    The live store is only ever read: no SQLite connection is opened on it (even a read-only
    one may create a -shm file or take a lock a writer would see). The family is copied and
    the copy accepted only if no file of it changed while it was copied, so a writer that
    commits or checkpoints meanwhile costs a retry, never a torn snapshot. SQLite itself then
    replays the copied -wal or rolls back the copied hot journal when the copy is opened.
    """
    for _ in range(attempts):
        before = _family_stats(path)
        dest = dest_dir / path.name
        for suffix in ("",) + SQLITE_SIDECARS:
            target = Path(f"{dest}{suffix}")
            target.unlink(missing_ok=True)
            if f"{path}{suffix}" in before:
                _copy_file(f"{path}{suffix}", target)
        if _family_stats(path) == before:
            return dest
    raise StillWriting(f"kept changing while it was copied ({attempts} attempts); read again next run")


def _family_stats(path: Path) -> dict[str, tuple[int, int, int, str]]:
    out = {}
    for suffix in ("",) + SQLITE_SIDECARS:
        p = f"{path}{suffix}"
        try:
            st = os.stat(p, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if suffix == "" or stat.S_ISREG(st.st_mode):
            mark = CHANGE_MARKS.get(suffix)
            out[p] = (st.st_ino, st.st_size, st.st_mtime_ns, _mark(p, *mark) if mark else "")
    return out


def copy_whole(path: Path, dest: Path) -> tuple[int, os.stat_result]:
    """A private copy of one file, taken while its stat stayed the same (a writer at work
    meanwhile costs another copy, never a torn one); returns its size and the stat."""
    for attempt in range(COPY_ATTEMPTS):
        before = os.stat(path, follow_symlinks=False)
        _copy_file(str(path), dest)
        after = os.stat(path, follow_symlinks=False)
        if same_file(before, after):
            return dest.stat().st_size, after
        time.sleep(0.02 * (attempt + 1))
    raise StillWriting(f"kept changing while it was copied ({COPY_ATTEMPTS} attempts); read again next run")
