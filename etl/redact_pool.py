"""Redaction on every core for `ingest --redact`.

The redactor is Python and holds the GIL, so the ingest's worker threads redacted one line at a
time between them: about 17 MB/s of Claude Code lines, where the rest of the load runs at
100 MB/s and more. A batch's lines are therefore cut into chunks that a pool of processes
redacts side by side; each line's result is exactly what the redactor gives in-thread, in the
same order, with the same counts. Batches too small to be worth the trip (a few appended lines)
stay in-thread, and so does everything when no pool can be started or one breaks.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import types
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from convarch.etl.gather import gathered
from convarch.etl.redact import Redactor, redact_json_line

#: Bytes of lines one task carries: big enough that pickling them both ways is a small part
#: of redacting them, small enough that every process gets a share of one batch.
CHUNK_BYTES = 1 << 20
#: Batches below this are redacted in the calling thread.
IN_THREAD_BYTES = 256 << 10
#: Processes at most (each holds only the chunk it redacts).
MOST_PROCESSES = 8

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_failed = False


def redact_lines(lines: list[str], redactor: Redactor) -> list[str]:
    """`redact_json_line` of each line, in order; the kinds found are added to
    `redactor.counts`."""
    size = sum(map(len, lines))
    pool = _get_pool() if size >= IN_THREAD_BYTES else None
    if pool is not None:
        try:
            out: list[str] = []
            found = Counter()           # added once every chunk is back: a retry counts once
            for done, counts in pool.map(_redact_chunk, gathered(lines, len, CHUNK_BYTES)):
                out += done
                found.update(counts)
            redactor.counts.update(found)
            return out
        except (BrokenProcessPool, OSError, RuntimeError):
            _drop_pool()            # a process died (out of memory, killed): go on in-thread
    return [redact_json_line(line, redactor) for line in lines]


def _redact_chunk(lines: list[str]) -> tuple[list[str], dict[str, int]]:
    redactor = Redactor()
    return [redact_json_line(line, redactor) for line in lines], dict(redactor.counts)


def processes() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(MOST_PROCESSES, cores))


def _get_pool() -> ProcessPoolExecutor | None:
    """The process's one pool, started on first use and kept for later runs (`watch`); None
    when this machine has one core or a pool cannot be started."""
    global _pool, _failed
    with _lock:
        if _pool is None and not _failed:
            n = processes()
            if n < 2:
                _failed = True
                return None
            try:
                # a fresh interpreter per process, not a fork of this one: the ingest's
                # threads and DuckDB's hold locks a fork would copy held
                method = "forkserver" if sys.platform.startswith("linux") else "spawn"
                ctx = multiprocessing.get_context(method)
                if method == "forkserver":
                    ctx.set_forkserver_preload(["convarch.etl.redact"])
                _pool = _started(ProcessPoolExecutor(max_workers=n, mp_context=ctx), n)
            except (OSError, ValueError, ImportError, RuntimeError, BrokenProcessPool):
                _failed = True
        return _pool


def _started(pool: ProcessPoolExecutor, n: int) -> ProcessPoolExecutor:
    """The pool with its `n` processes started, each handed an empty `__main__`: a new
    process otherwise runs the parent's main script again first, which a script calling
    `ingest(redact=True)` without an `if __name__ == "__main__"` guard would make a second
    ingest of (a process starts on a submit finding none idle, so n quick submits start n)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        waits = [pool.submit(len, "") for _ in range(n)]
    finally:
        sys.modules["__main__"] = main
    for w in waits:
        w.result()
    return pool


def _drop_pool() -> None:
    _close(wait=False, failed=True)


def shutdown() -> None:
    """Stop the pool's processes (tests; the interpreter's exit does it too)."""
    _close(wait=True, failed=False)


def _close(*, wait: bool, failed: bool) -> None:
    """Stop the pool; with `failed`, later batches are redacted in-thread."""
    global _pool, _failed
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=wait, cancel_futures=True)
        _pool, _failed = None, failed
