"""Where a run's loading time goes, stage by stage, summed over the worker threads.

The benchmark holds ingest against the bare parse of the same bytes; these figures say which
stage the difference lies in, measured in every run (and in `ingest --json`) rather than once
under a profiler that slows what it watches.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

#: the stages, in the order a line goes through them
STAGES = (
    "copy",            # the private copy; a container also turned into lines by its adapter
    "cut",             # lines cut out of the copy into Arrow batches
    "parse",           # the adapter's records SQL: every line parsed and normalized
    "blocks",          # the adapter's blocks SQL, from the parsed records
    "write_records",   # records (raw lines included) handed to Arrow and written as Parquet
    "write_blocks",    # blocks handed to Arrow and written as Parquet
    "quarantine",      # lines set aside, written with their reasons
)


class StageClock:
    """Seconds per stage; each worker thread adds its own, so the sum over stages can be up
    to the run's wall time times its workers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - t0)

    def timed(self, stage: str, items: Iterator):
        """The items of `items`, the time spent making each added to `stage`."""
        it = iter(items)
        while True:
            t0 = time.perf_counter()
            try:
                item = next(it)
            except StopIteration:
                self.add(stage, time.perf_counter() - t0)
                return
            self.add(stage, time.perf_counter() - t0)
            yield item

    def as_json(self) -> dict[str, float]:
        with self._lock:
            return {s: round(self.seconds[s], 3) for s in STAGES if s in self.seconds}
