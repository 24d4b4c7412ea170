"""`convarch export`: the public tables as partitioned Parquet any engine can read."""
from __future__ import annotations

from pathlib import Path

import click

from convarch.cli.output import emit_json
from convarch.etl import export as exporter


@click.command("export")
@click.argument("dest", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--since", help="Only rows at or after this date (UTC), e.g. 2026-11-01.")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
@click.pass_obj
def export(obj, dest: Path, since: str | None, as_json: bool) -> None:
    """Write sessions, messages, tool_calls and chain_messages to DIR as Parquet.

    Partitioned by source and month, zstd, with a README.md describing every column.
    Running it again rewrites only the partitions whose rows changed; a reader never sees a
    half-written partition.
    """
    result = exporter.export(obj.db, dest, since=since)
    if as_json:
        emit_json(result.as_dict())
        return
    for name, t in result.tables.items():
        click.echo(f"{name:<15} {t.rows:>9} rows  {t.partitions:>4} partitions  "
                   f"{len(t.written):>4} written  {t.unchanged:>4} unchanged  {len(t.removed):>4} removed")
    click.echo(f"exported to {result.dir}" + (f" (since {result.since})" if result.since else ""), err=True)
