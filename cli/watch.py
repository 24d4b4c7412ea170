"""`convarch watch`: keep the warehouse current while agents write.

Polling, because a no-change ingest costs one stat per file (milliseconds for thousands of
files) and works on every platform and file system without an extra dependency. After a run
that found changes it waits a short debounce before looking again, so a burst of writes from a
live session is picked up in a few runs, not hundreds.
"""
from __future__ import annotations

import time

import click

from convarch import adapters
from convarch.cli.targets import default_targets
from convarch.etl.errors import Busy
from convarch.etl.ingest import ingest as run_ingest


@click.command()
@click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(min=0.5),
              help="Seconds between looks when nothing changed.")
@click.option("--debounce", default=3.0, show_default=True, type=click.FloatRange(min=0),
              help="Seconds to wait after a run that found changes.")
@click.option("--runs", type=click.IntRange(min=1), help="Stop after this many runs (default: until Ctrl-C).")
@click.pass_obj
def watch(obj, interval: float, debounce: float, runs: int | None) -> None:
    """Ingest every found store now and again whenever it changes; Ctrl-C stops."""
    done = 0
    try:
        while runs is None or done < runs:
            targets = [t for a in adapters.ADAPTERS.values() for t in default_targets(a)]
            try:
                s = run_ingest(obj.layout, targets, wait_seconds=interval)
            except Busy as exc:
                click.echo(f"{time.strftime('%H:%M:%S')} skipped: {exc}", err=True)
                s = None
            done += 1
            if s is not None and (s.files_changed or s.quarantined):
                click.echo(f"{time.strftime('%H:%M:%S')} {s.files_changed} files changed, "
                           f"{s.records_added} records added, {s.quarantined} quarantined", err=True)
            if runs is not None and done >= runs:
                break
            time.sleep(debounce if s is not None and s.files_changed else interval)
    except KeyboardInterrupt:
        click.echo("stopped; the warehouse holds the last completed run", err=True)
