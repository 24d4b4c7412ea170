"""A few threads, each with its own single-threaded DuckDB, to use every core.

A batch of transcript lines is a few thousand fat rows, well under one DuckDB row group, so a
single connection would run it on one core whatever its thread setting; DuckDB releases the
GIL while it works, so one connection per thread loads batches side by side. Memory stays
bounded by (workers x batch size), never by the corpus.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TypeVar

import duckdb

from convarch.etl.duck import connect

T = TypeVar("T")
R = TypeVar("R")

#: Workers a run starts unless told (`--workers N`): one per core, at most this many. Each
#: worker holds its own batches, so peak memory follows the worker count, not the cores:
#: the bench's 1 GB corpus, loaded by 2, 4, 6 and 8 workers (threads, on 2 cores), peaked at
#: 564, 835, 1,034 and 1,289 MB. Four keeps a run under its 1 GiB target on a machine of any
#: size; `make bench` measures it.
MAX_WORKERS = 4
#: DuckDB memory of the run's workers together, when each gets at least WORKER_MEMORY_MB.
MEMORY_BUDGET_MB = 600
#: The least DuckDB memory a worker gets: what the adapters' queries need for a full batch of
#: long lines (tests/test_batch_memory.py). With 200 MB, as 3 or 4 workers had, 16 of the 25
#: adapters ran out on such a batch and loaded it again in halves: the bench's 60 MB Cline
#: and Gemini CLI stores took 4.0 and 4.5 s on 4 workers (14 and 17 halvings) instead of 2.9
#: and 3.4 s. Peak RSS with 4 workers stayed within 1 GiB (the 1 GB corpus 794 MB, a 1.3 GB
#: Cursor store 946 MB).
WORKER_MEMORY_MB = 300


POOL_PREFIX = "convarch-load"


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def default_workers() -> int:
    return max(1, min(MAX_WORKERS, cores()))


class Workers:
    """Run `fn(connection, item)` over items on `n` threads; results come back as they finish."""

    def __init__(self, n: int, spill: Path, setup: Callable[[duckdb.DuckDBPyConnection], None] | None = None):
        self.n = max(1, n)
        self.spill = spill
        self.setup = setup
        self.memory_mb = max(WORKER_MEMORY_MB, MEMORY_BUDGET_MB // self.n)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._cons: list[duckdb.DuckDBPyConnection] = []     # instances, then cursors of them
        self._instances = 0
        #: an instance one side has opened and the other may take a cursor of, by the side that
        #: may: the caller's thread ("caller") or one of the pool's ("pool")
        self._spare: dict[str, list[duckdb.DuckDBPyConnection]] = {"caller": [], "pool": []}
        self._pool: ThreadPoolExecutor | None = None

    def _con(self, side: str) -> duckdb.DuckDBPyConnection:
        """This thread's connection; `side` says whose thread it is, the caller's or one of
        the pool's. The caller's thread works only while the pool's threads are idle
        (map_unordered), so it shares a DuckDB with one of them, by a cursor: a pick-up under
        `watch` of a single file, whose first steps ran on the caller's thread and its chains
        on two of the pool's, opened three DuckDBs at 15-20 ms each."""
        con = getattr(self._local, "con", None)
        if con is None:
            with self._lock:
                base = self._spare[side].pop() if self._spare[side] else None
                k = self._instances
                self._instances += base is None
            if base is not None:
                con = base.cursor()
            else:
                folder = self.spill / f"w{k}"
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
                con = connect(":memory:", threads=1, preserve_insertion_order=False,
                              memory_limit=f"{self.memory_mb}MB", temp_directory=str(folder))
            if self.setup:
                self.setup(con)
            with self._lock:
                self._cons.append(con)
                if base is None:
                    self._spare["caller" if side == "pool" else "pool"].append(con)
            self._local.con = con
        return con

    def map_unordered(self, fn: Callable[[duckdb.DuckDBPyConnection, T], R], items: Iterable[T],
                      stop: Callable[[], None] | None = None) -> Iterator[R]:
        """`fn` over `items` on the threads; `stop`, when given, is called once the results
        are all in or the caller stopped early (a failure, Ctrl-C), before waiting for the
        tasks still running: a task that waits on others (etl/shared_batches.py) is told to end."""
        items = list(items)
        if self.n == 1 or len(items) <= 1:
            for item in items:
                yield fn(self._con("caller"), item)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n, thread_name_prefix=POOL_PREFIX)
        futures = [self._pool.submit(lambda it=item: fn(self._con("pool"), it)) for item in items]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()
            if stop is not None:
                stop()
            for fut in futures:      # nothing may still write into staging once we return
                if not fut.cancelled():
                    fut.exception()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        with self._lock:
            for con in reversed(self._cons):     # a cursor before the DuckDB it is of
                con.close()
            self._cons.clear()
            self._spare = {"caller": [], "pool": []}
            self._instances = 0
