"""Wake `convarch watch` as soon as a store changes, not only when its polling interval ends.

The operating system's own change notices (inotify, FSEvents, kqueue, ReadDirectoryChangesW;
watchdog puts one interface over them) name the paths written, created, deleted or moved; a
pick-up looks at just those (etl/look.py) and still finds *what* changed in them from its
watermarks. So a spurious notice costs a stat, and a missed one is caught by the full look
watch makes every `--interval`: notices make watch prompt and cheap, never responsible for
correctness. Where the platform has no native notices, watch polls alone:
watchdog's own fallback would stat every file every second, which a no-change ingest already
does more cheaply.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

#: Notices that a file was only read, which ingest itself causes when it snapshots a store.
READ_ONLY = frozenset({"opened", "closed_no_write"})
#: Notices that a file's bytes or times changed.
WRITTEN = frozenset({"modified", "closed", "attrib"})
#: Notices that a path came, went or moved: the store is listed again.
LISTED = frozenset({"created", "deleted", "moved"})


#: Linux's limit on the folders one user's processes may have inotify watch, shared by all of
#: them (editors, sync clients); a recursive watch takes one per folder.
WATCH_LIMIT = Path("/proc/sys/fs/inotify/max_user_watches")


def native_notices() -> bool:
    """Whether this platform gives change notices (else watchdog would poll, and watch polls)."""
    return Observer is not PollingObserver


def folders_to_watch(roots: Iterable[Path]) -> int:
    """How many folders watching these store roots takes: every folder under a store folder,
    and the folder holding a database file."""
    folders: set[str] = set()
    for root in roots:
        if not root.is_dir():
            folders.add(str(root.parent))
            continue
        for dirpath, _dirs, _names in os.walk(root, followlinks=False):
            folders.add(dirpath)
    return len(folders)


def watch_limit() -> int | None:
    try:
        return int(WATCH_LIMIT.read_text().strip())
    except (OSError, ValueError):
        return None


class Noticed(NamedTuple):
    """The paths noticed between two looks (etl/look.py spells them as Look does); `lost`
    when the system said notices were dropped, or gave one of a kind not known here."""

    written: frozenset[str]
    listed: frozenset[str]
    lost: bool


class StoreChanges(FileSystemEventHandler):
    """Change notices under the stores' folders, turned into "look now" moments.

    A burst of writes (a live session appends a line every few seconds) is waited out: watch
    looks `debounce` seconds after the last notice, but never later than `max_wait` seconds
    after the first one it has not looked at, so a store that never goes quiet is still
    archived regularly."""

    def __init__(self, ignore: Iterable[str] = ()):
        super().__init__()
        self._cv = threading.Condition()
        self._first: float | None = None     # monotonic time of the first notice not yet looked at
        self._last: float | None = None
        self._ignore = tuple(ignore)      # path prefixes whose changes are ours (the warehouse)
        self._written: set[str] = set()
        self._listed: set[str] = set()
        self._lost = False
        self._watched: dict[Path, bool] = {}      # folder: whether everything below it is too
        self._watches: dict[Path, list] = {}     # folder: its scheduled watches
        self._gone: set[Path] = set()             # watched folders since deleted or moved away
        self._observer = Observer() if native_notices() else None
        self._started = False

    @property
    def native(self) -> bool:
        return self._observer is not None

    def watch(self, roots: Iterable[Path]) -> list[str]:
        """Start noticing changes under each store root that exists and is not watched yet
        (a folder and everything below it; for a database file, its folder). Returns one line
        per root that could not be watched (e.g. the inotify watch limit); every run looks at all
        the files of those (cli/watch.py)."""
        problems: list[str] = []
        if self._observer is None:
            return problems
        if not self._started:
            # started first, so each watch starts as it is scheduled and a failing one (past
            # the inotify watch limit, a folder that cannot be read) fails there, for its store
            # alone: started after, the first to fail stopped the observer and watch with it
            self._observer.start()
            self._started = True
        with self._cv:
            gone, self._gone = self._gone, set()
        for folder in gone:
            # its watch ended with it; scheduled again, the same folder would get the dead one
            for w in self._watches.pop(folder, []):
                with contextlib.suppress(KeyError):
                    self._observer.unschedule(w)
            self._watched.pop(folder, None)
        for root in roots:
            recursive = root.is_dir()
            folder = (root if recursive else root.parent).absolute()
            if self._watched.get(folder, False) or (folder in self._watched and not recursive) or not folder.is_dir():
                continue
            try:
                self._watches.setdefault(folder, []).append(self._observer.schedule(self, str(folder), recursive=recursive))
            except OSError as exc:
                problems.append(f"{folder}: {exc.strerror or exc}; every run looks at all its files instead")
                continue
            self._watched[folder] = recursive
        return problems

    def watching(self, root: Path) -> bool:
        """Whether notices speak for everything under `root` (its folder is watched)."""
        if self._observer is None:
            return False
        is_dir = root.is_dir()
        folder = (root if is_dir else root.parent).absolute()
        return any((folder == w and (below or not is_dir)) or (below and folder.is_relative_to(w))
                   for w, below in self._watched.items())

    def on_any_event(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind in READ_ONLY:
            return
        if event.is_directory and kind in ("modified", "attrib"):
            return        # an entry came or went: that entry has its own notice
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        paths = [os.path.abspath(p.decode(errors="replace") if isinstance(p, bytes) else p) for p in paths if p]
        paths = [p for p in paths if not (p + os.sep).startswith(self._ignore)]
        known = kind in WRITTEN or kind in LISTED
        if known and not paths:
            return
        with self._cv:
            if event.is_directory and kind in ("deleted", "moved") and Path(paths[0]) in self._watched:
                self._gone.add(Path(paths[0]))       # watched again at the next look, if back
            if kind in WRITTEN:
                self._written.update(paths)
            elif kind in LISTED:
                self._listed.update(p + os.sep if event.is_directory else p for p in paths)
            else:               # events lost, or a kind this does not know: look at everything
                self._lost = True
            now = time.monotonic()
            if self._first is None:
                self._first = now
            self._last = now
            self._cv.notify_all()

    def seen(self) -> Noticed:
        """Everything noticed so far is about to be looked at (called just before a run):
        the paths, handed over and forgotten here."""
        with self._cv:
            self._first = self._last = None
            noticed = Noticed(frozenset(self._written), frozenset(self._listed), self._lost)
            self._written, self._listed, self._lost = set(), set(), False
            return noticed

    def wait(self, interval: float, debounce: float, max_wait: float) -> bool:
        """Block until the stores should be looked at again; True when a change woke us,
        False when `interval` passed without one."""
        deadline = time.monotonic() + interval
        with self._cv:
            while True:
                now = time.monotonic()
                if self._first is not None:
                    due = min(self._last + debounce, self._first + max_wait)
                    if now >= due:
                        return True
                    self._cv.wait(due - now)
                elif now >= deadline:
                    return False
                else:
                    self._cv.wait(deadline - now)

    def stop(self) -> None:
        if self._observer is not None and self._started:
            self._observer.stop()
            self._observer.join(timeout=5)
