"""`convarch watch`: keep the warehouse current while agents write.

It ingests, then waits for the stores to change: the operating system's change notices wake it
(cli/changes.py) a short debounce after a burst of writes ends, and a run woken so looks only
at the paths noticed since the last full look (etl/look.py). A full look, every file of every
store, comes at least every `--interval`, and catches whatever notices cannot see (a store
created after watch started, a network file system, a full notice queue); where there are no
notices every run is one. After each run it rests long enough that running takes at most
`--share` of the time.
"""
from __future__ import annotations

import os
import time

import click

from convarch import adapters
from convarch.cli.changes import StoreChanges
from convarch.cli.ingest import workers_option
from convarch.cli.targets import default_targets
from convarch.etl.errors import Busy
from convarch.etl.ingest import ingest as run_ingest
from convarch.etl.look import Look
from convarch.etl.summary import Summary


def _say(text: str) -> None:
    click.echo(f"{time.strftime('%H:%M:%S')} {text}", err=True)


#: Stores read whole in less than this are read again at every change.
CHEAP_READ_SECONDS = 0.5


class ReadBudget:
    """When a store read whole may be read again.

    A database or JSON history is copied and read whole whenever it changes, and some agents
    write theirs every few seconds while they run (Cursor keeps its UI state in the same
    database as its chats). Read at every change, a gigabyte store took 7-10 s a time and kept
    a core busy for as long as the agent did. A store whose read took `t` seconds is now read
    again no sooner than t / share seconds after it, so re-reading any one store takes at most
    about `share` of the time; cheap reads are never put off. A transcript appended to costs
    little to read but has its chains rebuilt whole, which for a very long one is the same
    story, so that time counts as its read (`pick_up_seconds`). A store put off is read by the
    first run after its time, with every change since: nothing is lost, only later."""

    def __init__(self, share: float):
        self.share = share
        self._not_before: dict[str, float] = {}

    def deferred(self, now: float) -> set[str]:
        return {path for path, t in self._not_before.items() if t > now}

    def spaced(self) -> set[str]:
        """Every store being spaced out: a run woken by other notices looks at these too, so
        one put off is read once its time comes even if it was not written again since."""
        return set(self._not_before)

    def note(self, read_seconds: dict[str, float], now: float) -> list[tuple[str, float, float]]:
        """Remember this run's reads; returns (path, read seconds, gap) for each store newly
        put off, to be said once."""
        new = []
        for path, secs in read_seconds.items():
            if secs < CHEAP_READ_SECONDS:
                self._not_before.pop(path, None)
                continue
            if path not in self._not_before:
                new.append((path, secs, secs / self.share))
            self._not_before[path] = now + secs / self.share
        return new


def rest_after(run_seconds: float, share: float, max_wait: float) -> float:
    """Seconds to rest after a run before the next, so that while stores keep changing,
    running takes at most `share` of the time: a pick-up has a fixed cost (about 0.7 s of a
    core on the 1 GB bench archive, the catalog published and the changed files' chains made
    again), and an agent appending a line every few seconds woke a run each time, a quarter
    of a core for as long as the agent ran. Never more than `max_wait`, the longest a change
    waits to be looked at."""
    return min(max_wait, run_seconds * (1 - share) / share)


def pick_up_seconds(s: Summary) -> dict[str, float]:
    """What each changed file cost this run where that cost follows its whole size, not its
    change: a store read whole, and a transcript's chains, which are rebuilt whole (a session
    of 600,000 records took 13 s at every line an agent appended)."""
    costs = dict(s.read_seconds)
    for path, secs in s.chain_seconds_by_file.items():
        costs[path] = costs.get(path, 0.0) + secs
    return costs


@click.command()
@click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(min=0.5),
              help="Seconds between looks when no change notice arrives, and at most between full looks at "
                   "every file (a run woken by a notice looks only at the paths noticed).")
@click.option("--debounce", default=2.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds of quiet after a change before looking.")
@click.option("--max-wait", default=20.0, show_default=True, type=click.FloatRange(min=0),
              help="Longest wait after a change, however busy the store stays.")
@click.option("--share", default=0.1, show_default=True, type=click.FloatRange(min=0.01, max=1),
              help="Most of the time to spend ingesting while stores keep changing (each run is followed by a "
                   "rest, at most --max-wait), and reading again any one store that is read whole "
                   "(a database, a JSON history) or picking up a long transcript.")
@click.option("--runs", type=click.IntRange(min=1), help="Stop after this many runs (default: until Ctrl-C).")
@workers_option
@click.pass_obj
def watch(obj, interval: float, debounce: float, max_wait: float, share: float, runs: int | None,
          workers: int | None) -> None:
    """Ingest every found store now and again whenever it changes; Ctrl-C stops."""
    layout = obj.layout
    budget = ReadBudget(share)
    changes = StoreChanges(ignore=(str(layout.data_dir) + os.sep, str(layout.db)))
    if not changes.native:
        _say(f"no file-system change notices on this platform: looking every {interval:g} s")
    done = 0
    listings: dict = {}                         # each store's files as last listed (etl/look.py)
    written: set[str] = set()                   # paths noticed since the last full look
    listed: set[str] = set()
    last_full: float | None = None
    try:
        while runs is None or done < runs:
            targets = [t for a in adapters.ADAPTERS.values() for t in default_targets(a)]
            # a store not watched before now may have changed unnoticed: looked at whole
            unwatched = frozenset(str(root) for _, root in targets if not changes.watching(root))
            for problem in changes.watch(root for _, root in targets):
                _say(f"cannot watch {problem}")
            noticed = changes.seen()
            written |= noticed.written
            listed |= noticed.listed
            started = time.monotonic()
            full = last_full is None or noticed.lost or started - last_full >= interval
            look = Look(frozenset(written | budget.spaced()), frozenset(listed), unwatched, full, listings)
            try:
                s = run_ingest(layout, targets, wait_seconds=interval, defer=budget.deferred(time.monotonic()),
                               workers=workers, look=look)
            except Busy as exc:
                _say(f"skipped: {exc}")
                s = None
            if s is not None and full:
                last_full = started
                written.clear()
                listed.clear()
            rest = rest_after(time.monotonic() - started, share, max_wait)
            done += 1
            if s is not None:
                for path, secs, gap in budget.note(pick_up_seconds(s), time.monotonic()):
                    what = "to read whole" if path in s.read_seconds else "to pick up, as its chains are rebuilt whole"
                    _say(f"{path} takes {secs:.1f} s {what}: while it keeps changing, "
                         f"it is read again at most every {gap:.0f} s (--share {share:g})")
            if s is not None and (s.files_changed or s.quarantined):
                _say(f"{s.files_changed} files changed, {s.records_added} records added, {s.quarantined} quarantined")
            if runs is not None and done >= runs:
                break
            if changes.native:
                time.sleep(rest)         # what changes meanwhile is noticed, and looked at next
                changes.wait(interval, debounce, max_wait)
            else:
                time.sleep(max(rest, debounce if s is not None and s.files_changed else interval))
    except KeyboardInterrupt:
        _say("stopped; the warehouse holds the last completed run")
    finally:
        changes.stop()
