"""Wake `convarch watch` as soon as a store changes, not only when its polling interval ends.

The operating system's own change notices (inotify, FSEvents, kqueue, ReadDirectoryChangesW;
watchdog puts one interface over them) say only *that* something under a store moved; ingest
still finds *what* changed from its watermarks. So a spurious notice costs one no-change run
(a stat per file) and a missed one is caught by the next poll: notices make watch prompt, never
responsible for correctness. Where the platform has no native notices, watch polls alone:
watchdog's own fallback would stat every file every second, which a no-change ingest already
does more cheaply.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

#: Notices that a file was only read, which ingest itself causes when it snapshots a store.
READ_ONLY = frozenset({"opened", "closed_no_write"})


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
        self._watched: set[Path] = set()
        self._observer = None if Observer is PollingObserver else Observer()
        self._started = False

    @property
    def native(self) -> bool:
        return self._observer is not None

    def watch(self, roots: Iterable[Path]) -> list[str]:
        """Start noticing changes under each store root that exists and is not watched yet
        (a folder and everything below it; for a database file, its folder). Returns one line
        per root that could not be watched (e.g. the inotify watch limit); those are polled."""
        problems: list[str] = []
        if self._observer is None:
            return problems
        for root in roots:
            recursive = root.is_dir()
            folder = (root if recursive else root.parent).absolute()
            if folder in self._watched or not folder.is_dir():
                continue
            try:
                self._observer.schedule(self, str(folder), recursive=recursive)
            except OSError as exc:
                problems.append(f"{folder}: {exc.strerror or exc}; polled every interval instead")
                continue
            self._watched.add(folder)
        if self._watched and not self._started:
            self._observer.start()
            self._started = True
        return problems

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in READ_ONLY:
            return
        if event.is_directory and event.event_type == "modified":
            return        # an entry came or went: that entry has its own notice
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        paths = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in paths]
        if all(not p or (p + os.sep).startswith(self._ignore) for p in paths):
            return
        with self._cv:
            now = time.monotonic()
            if self._first is None:
                self._first = now
            self._last = now
            self._cv.notify_all()

    def seen(self) -> None:
        """Everything noticed so far is about to be looked at (called just before a run)."""
        with self._cv:
            self._first = self._last = None

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
