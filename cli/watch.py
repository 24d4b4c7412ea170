"""`convarch watch`: keep the warehouse current while agents write.

It ingests, then waits for the stores to change: the operating system's change notices wake it
(cli/changes.py) a short debounce after a burst of writes ends, and a poll every `--interval`
catches whatever notices cannot see (a store created after watch started, a network file
system, a full notice queue). Each run is an ordinary ingest, so a wake-up with nothing new
costs a stat per file.
"""
from __future__ import annotations

import os
import time

import click

from convarch import adapters
from convarch.cli.changes import StoreChanges
from convarch.cli.targets import default_targets
from convarch.etl.errors import Busy
from convarch.etl.ingest import ingest as run_ingest


def _say(text: str) -> None:
    click.echo(f"{time.strftime('%H:%M:%S')} {text}", err=True)


@click.command()
@click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(min=0.5),
              help="Seconds between looks when no change notice arrives.")
@click.option("--debounce", default=2.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds of quiet after a change before looking.")
@click.option("--max-wait", default=20.0, show_default=True, type=click.FloatRange(min=0),
              help="Longest wait after a change, however busy the store stays.")
@click.option("--runs", type=click.IntRange(min=1), help="Stop after this many runs (default: until Ctrl-C).")
@click.pass_obj
def watch(obj, interval: float, debounce: float, max_wait: float, runs: int | None) -> None:
    """Ingest every found store now and again whenever it changes; Ctrl-C stops."""
    layout = obj.layout
    changes = StoreChanges(ignore=(str(layout.data_dir) + os.sep, str(layout.db)))
    if not changes.native:
        _say(f"no file-system change notices on this platform: looking every {interval:g} s")
    done = 0
    try:
        while runs is None or done < runs:
            targets = [t for a in adapters.ADAPTERS.values() for t in default_targets(a)]
            for problem in changes.watch(root for _, root in targets):
                _say(f"cannot watch {problem}")
            changes.seen()
            try:
                s = run_ingest(layout, targets, wait_seconds=interval)
            except Busy as exc:
                _say(f"skipped: {exc}")
                s = None
            done += 1
            if s is not None and (s.files_changed or s.quarantined):
                _say(f"{s.files_changed} files changed, {s.records_added} records added, {s.quarantined} quarantined")
            if runs is not None and done >= runs:
                break
            if changes.native:
                changes.wait(interval, debounce, max_wait)
            else:
                time.sleep(debounce if s is not None and s.files_changed else interval)
    except KeyboardInterrupt:
        _say("stopped; the warehouse holds the last completed run")
    finally:
        changes.stop()
