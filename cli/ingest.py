"""`convarch ingest`: copy agent stores into the warehouse, incrementally."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from convarch import adapters
from convarch.cli.output import emit_json
from convarch.cli.targets import adapter_named, default_targets, explicit_target
from convarch.etl.errors import UsageError
from convarch.etl.ingest import ingest as run_ingest

#: `--workers`, shared by ingest and watch.
workers_option = click.option(
    "--workers", type=click.IntRange(1, 64), default=None,
    help="Threads loading files side by side (default: one per core, at most 4; each adds ~130 MB at peak).")


@click.command()
@click.argument("source", required=False)
@click.option("--all", "all_", is_flag=True, help="Every known source found on this machine.")
@click.option("--root", type=click.Path(path_type=Path),
              help="The store to read (the agent's home override, e.g. CLAUDE_CONFIG_DIR, or the store folder itself).")
@click.option("--wait", default=30.0, show_default=True, help="Seconds to wait for another ingest to finish.")
@click.option("--redact", is_flag=True,
              help="Store secrets redacted as [REDACTED:kind] (this warehouse keeps doing so from now on).")
@workers_option
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.pass_obj
def ingest(obj, source: str | None, all_: bool, root: Path | None, wait: float, redact: bool, workers: int | None,
           as_json: bool) -> None:
    """Copy agent session stores into the warehouse (only what changed since the last run)."""
    if all_ and (source or root):
        raise UsageError("give either --all or SOURCE [--root PATH], not both")
    if not all_ and not source:
        raise UsageError("name a SOURCE or pass --all (see `convarch sources`)")
    if root and not source:
        raise UsageError("--root needs a SOURCE")
    if all_:
        targets = [t for a in adapters.ADAPTERS.values() for t in default_targets(a)]
    elif root:
        targets = [explicit_target(adapter_named(source), root)]
    else:
        targets = default_targets(adapter_named(source))
    show_bar = sys.stderr.isatty() and not as_json
    bar = None

    def on_plan(files: int, nbytes: int) -> None:
        nonlocal bar
        if show_bar and files:
            bar = click.progressbar(length=max(nbytes, 1), label=f"Ingesting {files} files", file=sys.stderr)
            bar.__enter__()

    def progress(n: int) -> None:
        if bar is not None:
            bar.update(n)

    try:
        summary = run_ingest(obj.layout, targets, on_plan=on_plan, progress=progress, wait_seconds=wait, redact=redact,
                             workers=workers)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        emit_json(summary.as_json())
        return
    if not targets:
        click.echo("No agent stores found (see `convarch sources`).", err=True)
    click.echo(
        f"{summary.files_scanned} files scanned, {summary.files_changed} changed, "
        f"{summary.files_skipped} skipped; {summary.sessions} sessions, "
        f"{summary.records_added} records added, {summary.quarantined} quarantined "
        f"in {summary.seconds:.2f}s"
    )
    for path, reason in summary.skipped[:10]:
        click.echo(f"  skipped {path}: {reason}", err=True)
    if summary.quarantined:
        click.echo(f"  {summary.quarantined} bad records kept aside with the reason; list them with: convarch quarantine",
                   err=True)
    if summary.redacted:
        click.echo(f"  {summary.redacted} secrets redacted before storing", err=True)
