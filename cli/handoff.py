"""`convarch handoff`: the document a fresh agent reads to continue an archived session."""
from __future__ import annotations

from pathlib import Path

import click

from convarch.etl.layout import make_private
from convarch.etl.warehouse import connect
from convarch.handoff import Options, build, resolve
from convarch.handoff.render import DEFAULT_MAX_CHARS


@click.command()
@click.argument("ref")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--max-chars", type=click.IntRange(min=2000), default=DEFAULT_MAX_CHARS, show_default=True,
              help="Size budget of the Markdown document.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write to FILE (0600).")
@click.option("--cwd", type=click.Path(path_type=Path), help="With `latest`: the newest session run in DIR or below.")
@click.option("--show-superseded", is_flag=True, help="List superseded values in their own section.")
@click.option("--raw-quotes", is_flag=True, help="Do not mask superseded values inside quotes.")
@click.pass_obj
def handoff(obj, ref: str, fmt: str, max_chars: int, output: Path | None, cwd: Path | None,
            show_superseded: bool, raw_quotes: bool) -> None:
    """Render a handoff for session REF (an id, a unique prefix, or `latest`)."""
    con = connect(obj.db)
    try:
        session_id = resolve(con, ref, str(cwd) if cwd else None)
        text = build(con, session_id, fmt=fmt,
                     options=Options(max_chars=max_chars, show_superseded=show_superseded, raw_quotes=raw_quotes))
    finally:
        con.close()
    if output:
        output.write_text(text, encoding="utf-8")
        make_private(output)
    else:
        click.echo(text, nl=False)
