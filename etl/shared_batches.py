"""Full batches of one unit handed to whichever worker is free.

A run's files are cut into units of about one batch, a worker each, so one big file (a Cursor
store of a gigabyte, a long transcript, a busy goose database) was loaded batch after batch by
a single worker while the others had nothing left to do. Where an adapter's SQL carries
nothing from one batch to the next (no Extract.context), a unit's full batches are queued as
they fill instead: a worker with no unit left loads them, and the worker cutting them loads
one itself whenever `limit` are waiting, so memory stays bounded by the batch size. The unit
collects what its batches wrote before it reports its files, so a file's counts and row groups
are whole whoever loaded them.
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb

from convarch.adapters.base import Extract
from convarch.etl.load import BatchWriter, Pending


@dataclass(eq=False)
class Job:
    """One full batch taken out of a unit's writer, and what loading it wrote."""

    extract: Extract
    pending: Pending
    loaded: BatchWriter | None = None      # the writer that loaded it, for what it wrote
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class SharedBatches:
    """The queue of full batches of a run's units, for `workers` threads."""

    def __init__(self, workers: int, units: int, make_writer: Callable[[duckdb.DuckDBPyConnection, Extract], BatchWriter]):
        self.limit = max(1, workers - 1)     # batches waiting; one more is being loaded
        self._make_writer = make_writer
        self._cv = threading.Condition()
        self._queue: deque[Job] = deque()
        # units not yet finished: counted from the start, so a helper that starts before the
        # last unit has begun still waits for its batches
        self._producing = units
        self._stopped = False

    def hand_over(self, con: duckdb.DuckDBPyConnection, writer: BatchWriter, mine: list[Job]) -> None:
        """Queue `writer`'s pending batch (it starts empty again); while the queue is full,
        load its oldest batch on this thread."""
        if self._stopped:
            raise RuntimeError("the run is stopping: another unit failed")
        job = Job(writer.extract, writer.take_pending())
        mine.append(job)
        with self._cv:
            self._queue.append(job)
            self._cv.notify()
        while True:
            with self._cv:
                if len(self._queue) <= self.limit:
                    return
                oldest = self._queue.popleft()
            self._run(con, oldest)

    def collect(self, con: duckdb.DuckDBPyConnection, writer: BatchWriter, mine: list[Job]) -> None:
        """Wait for the unit's batches (loading on this thread those no worker has taken) and
        add what they wrote to `writer`'s own; the first failure is raised."""
        for job in mine:
            with self._cv:
                waiting = job in self._queue
                if waiting:
                    self._queue.remove(job)
            if waiting:
                self._run(con, job)
            job.done.wait()
        for job in mine:
            if job.error is not None:
                raise job.error
            writer.absorb(job.loaded)

    def finished(self, mine: list[Job]) -> None:
        """A unit is done (or failed: its batches still waiting are dropped)."""
        with self._cv:
            for job in mine:
                if job in self._queue:
                    self._queue.remove(job)
                    job.done.set()
            self._producing -= 1
            self._cv.notify_all()

    def help(self, con: duckdb.DuckDBPyConnection) -> None:
        """Load queued batches until every unit has finished and none is left."""
        while True:
            with self._cv:
                while not self._queue and self._producing > 0 and not self._stopped:
                    self._cv.wait()
                if not self._queue or self._stopped:
                    return
                job = self._queue.popleft()
            self._run(con, job)

    def stop(self) -> None:
        """The run is over or failing: helpers return, and batches still waiting are dropped
        (their units fail, if they are still running)."""
        with self._cv:
            self._stopped = True
            for job in self._queue:
                job.error = RuntimeError("the run stopped before this batch was loaded")
                job.done.set()
            self._queue.clear()
            self._cv.notify_all()

    def _run(self, con: duckdb.DuckDBPyConnection, job: Job) -> None:
        try:
            w = self._make_writer(con, job.extract)
            w.load_pending(job.pending)
            job.loaded = w
        except BaseException as exc:      # noqa: BLE001 - handed to the unit, which raises it
            job.error = exc
        finally:
            job.done.set()
