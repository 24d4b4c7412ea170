"""`convarch schema`: the public views, their columns, types and what each one means."""
from __future__ import annotations

import click

from convarch import sql
from convarch.cli.output import emit_json
from convarch.etl.errors import UsageError
from convarch.etl.warehouse import connect
from convarch.sql import docs


@click.command()
@click.argument("views", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def schema(obj, views: tuple[str, ...], as_json: bool) -> None:
    """Describe the public views (or only VIEWS): grain, columns, types, descriptions."""
    unknown = [v for v in views if v not in sql.PUBLIC_VIEWS]
    if unknown:
        raise UsageError(f"no public view {unknown[0]!r}; the views are: {', '.join(sql.PUBLIC_VIEWS)}")
    con = connect(obj.db)
    try:
        described = docs.describe(con, views or None)
    finally:
        con.close()
    if as_json:
        emit_json([v.as_dict() for v in described])
        return
    for i, view in enumerate(described):
        if i:
            click.echo()
        click.echo(click.style(view.name, bold=True) + (f" — {view.grain}" if view.grain else ""))
        name_w = max((len(c.name) for c in view.columns), default=0)
        type_w = max((len(c.type) for c in view.columns), default=0)
        for c in view.columns:
            click.echo(f"  {c.name.ljust(name_w)}  {c.type.ljust(type_w)}  {c.description}".rstrip())
