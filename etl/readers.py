"""Which replaced catalogs a reader still holds open, so files merged away can go once none does.

Each ingest swaps in a new catalog; a notebook that opened an older one keeps reading the
Parquet files that one names, so compaction's merged-away files used to wait a day
(etl/compact.py RETIRED_GRACE) before they went. Under `watch`, a long session picked up every
few seconds retires its whole chain each time: a day of that is gigabytes on disk.

DuckDB holds a POSIX lock on a database file for as long as it has it open, read-only too.
Publishing keeps a hard link to each catalog it replaces, beside the list of files it names; a
later run drops the kept catalogs no process holds, and a merged-away file that no held
catalog names can go at once.

A kept catalog our own process has open is held: its open files are listed in /proc/self/fd
(/dev/fd on macOS), and a notebook may run ingest from the process that reads the catalog.
Any other is opened and asked with F_GETLK whether another process holds a lock on it. It is
opened only then, since closing any file of an inode drops every lock the closing process
holds on it, and a process holds no lock on a file it has not open. No one opens a kept
catalog anew: the published catalog is never among them, only those it replaced.

Where the kernel's lock record is laid out in a way this module does not know (FLOCK), Linux's
list of every lock in /proc/locks tells it instead; where neither is there, nothing is kept and
the day's wait stands.
"""
from __future__ import annotations

import fcntl
import functools
import json
import os
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import duckdb

from convarch.etl.layout import Layout, make_private

LOCKS = Path("/proc/locks")
#: struct flock as the kernel lays it out, for F_GETLK: its struct format and the order of its
#: fields. Linux: short l_type, l_whence; off_t l_start, l_len; pid_t l_pid (padded to 32
#: bytes). macOS: off_t l_start, l_len; pid_t l_pid; short l_type, l_whence.
FLOCK = {"linux": ("hhqqi4x", ("type", "whence", "start", "len", "pid")),
         "darwin": ("qqihh", ("start", "len", "pid", "type", "whence"))}.get(sys.platform)
#: The state setting naming the first run from which every replaced catalog was kept: files
#: registered before it may be named by a catalog no one kept, and wait out the grace.
KEPT_SINCE = "catalogs_kept_since_run"


def kept_dir(layout: Layout) -> Path:
    return layout.data_dir / "catalogs"


def can_tell() -> bool:
    return LOCKS.is_file() or (FLOCK is not None and _getlk_works(FLOCK))


@functools.lru_cache(maxsize=None)
def _getlk_works(_layout: tuple) -> bool:
    """Whether F_GETLK answers as this module reads it: on a file no one locks, "unlocked"."""
    try:
        with tempfile.NamedTemporaryFile() as f:
            return not _locked_elsewhere(Path(f.name))
    except (OSError, struct.error):
        return False


def _pack(kind: int) -> bytes:
    fmt, order = FLOCK
    fields = {"type": kind, "whence": os.SEEK_SET, "start": 0, "len": 0, "pid": 0}
    return struct.pack(fmt, *(fields[name] for name in order))


def _lock_type(record: bytes) -> int:
    fmt, order = FLOCK
    return dict(zip(order, struct.unpack(fmt, record)))["type"]


def _locked_elsewhere(path: Path) -> bool:
    """Whether another process holds a lock anywhere on the file: F_GETLK answers which lock
    would stop ours, and a process's own locks never do. Raises OSError when it cannot be told."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _lock_type(fcntl.fcntl(fd, fcntl.F_GETLK, _pack(fcntl.F_WRLCK))) != fcntl.F_UNLCK
    finally:
        os.close(fd)


def _open_here() -> set[tuple[int, int]]:
    """(device, inode) of every file this process has open."""
    folder = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"
    here = set()
    for name in os.listdir(folder):
        try:
            st = os.fstat(int(name))
        except (OSError, ValueError):
            continue            # the listing's own descriptor, closed by now
        here.add((st.st_dev, st.st_ino))
    return here


def _holder() -> Callable[[Path, os.stat_result], bool]:
    """A test of whether a process holds a catalog open, given its path and stat."""
    if FLOCK is not None and _getlk_works(FLOCK):
        here = _open_here()

        def held(path: Path, st: os.stat_result) -> bool:
            if (st.st_dev, st.st_ino) in here:
                return True
            try:
                return _locked_elsewhere(path)
            except OSError:
                return True         # kept: its files wait out the day's grace
        return held
    locked = _locked()
    return lambda _path, st: (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) in locked


def _locked() -> set[tuple[int, int, int]]:
    """(major, minor, inode) of every file some process holds a lock on."""
    held = set()
    for line in LOCKS.read_text().splitlines():
        fields = line.split()
        # "1: POSIX  ADVISORY  READ 4253 fe:00:2146351 0 EOF"; a blocked waiter's line has
        # "->" after its number, which shifts the fields by one
        for field in fields[4:7]:
            parts = field.split(":")
            if len(parts) == 3:
                try:
                    held.add((int(parts[0], 16), int(parts[1], 16), int(parts[2])))
                except ValueError:
                    pass
                break
    return held


def keep_outgoing(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int, files: list[str]) -> None:
    """Before a new catalog replaces the current one (which names `files`), keep a link to the
    current one and that list. Where locks cannot be read, say that catalogs are not kept."""
    if not can_tell():
        state.execute("delete from settings where key = ?", [KEPT_SINCE])
        return
    if state.execute("select 1 from settings where key = ?", [KEPT_SINCE]).fetchone() is None:
        state.execute("insert into settings values (?, ?)", [KEPT_SINCE, str(run_id)])
    if not layout.db.exists():
        return
    folder = kept_dir(layout)
    folder.mkdir(mode=0o700, exist_ok=True)
    name = f"{run_id:06d}-{time.time_ns()}"
    listing = folder / f"{name}.json"
    listing.write_text(json.dumps(files))
    make_private(listing)
    os.link(layout.db, folder / f"{name}.duckdb")      # the list first: a link never lacks one


def _kept(layout: Layout) -> list[tuple[Path, Path, bool | None]]:
    """Each kept catalog: its file list, its link, and whether a process holds it open (None:
    the link is gone, a run having died between writing the two)."""
    folder = kept_dir(layout)
    if not folder.is_dir():
        return []
    held = _holder()
    kept = []
    for listing in sorted(folder.glob("*.json")):
        link = listing.with_suffix(".duckdb")
        try:
            st = link.stat()
        except FileNotFoundError:
            kept.append((listing, link, None))
            continue
        kept.append((listing, link, held(link, st)))
    return kept


def held_files(layout: Layout, state: duckdb.DuckDBPyConnection) -> tuple[set[str], int] | None:
    """The files named by kept catalogs that a process still holds open, and the run from which
    every replaced catalog was kept; the kept catalogs no process holds are dropped. None when
    this cannot be told."""
    row = state.execute("select value from settings where key = ?", [KEPT_SINCE]).fetchone()
    if row is None or not can_tell():
        return None
    held: set[str] = set()
    for listing, link, in_use in _kept(layout):
        if in_use:
            held.update(json.loads(listing.read_text()))
        else:
            link.unlink(missing_ok=True)
            listing.unlink(missing_ok=True)
    return held, int(row[0])


def held_count(layout: Layout) -> tuple[int, int] | None:
    """(catalogs kept, of which a process holds open), without dropping any; None when locks
    cannot be read. For reports: a run drops the free ones itself."""
    if not can_tell():
        return None
    kept = [in_use for _, _, in_use in _kept(layout) if in_use is not None]
    return len(kept), sum(kept)
