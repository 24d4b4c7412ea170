"""`convarch sql`: run a read-only query over the warehouse's public views."""
from __future__ import annotations

import click
import duckdb

from convarch.cli.output import emit_rows, format_option
from convarch.etl.errors import ConvarchError
from convarch.etl.warehouse import connect


@click.command("sql")
@click.argument("query")
@format_option
@click.pass_obj
def sql_command(obj, query: str, fmt: str | None) -> None:
    """Run QUERY (read-only; no file access outside the archive).

    Views: sessions, messages, tool_calls, quarantine.
    """
    con = connect(obj.db, locked_down=True)
    try:
        try:
            cur = con.execute(query)
        except duckdb.Error as exc:
            raise ConvarchError(f"query failed: {str(exc).splitlines()[0]}") from exc
        if cur.description is None:
            return
        columns = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    emit_rows(columns, rows, fmt or "table")
