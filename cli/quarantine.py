"""`convarch quarantine`: the inputs ingest kept aside, and why."""
from __future__ import annotations

import click

from convarch import sql
from convarch.cli.output import emit_rows, format_option
from convarch.etl.warehouse import connect


@click.command()
@click.option("--source", help="Only this source.")
@click.option("--reason", help="Only this reason (invalid_json, invalid_utf8, not_object, too_large, truncated_tail, "
                                "malformed_row, unreadable_container).")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(min=1))
@format_option
@click.pass_obj
def quarantine(obj, source, reason, limit, fmt) -> None:
    """List input lines that could not be loaded, with file, line, offset and reason."""
    con = connect(obj.db)
    try:
        cur = con.execute(sql.read("queries/quarantine__list"),
                          {"source": source.replace("-", "_") if source else None, "reason": reason, "limit": limit})
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    if fmt:
        emit_rows(cols, rows, fmt)
    else:
        shown = ["source", "reason", "source_file", "line_no", "error"]
        emit_rows(shown, [[r[cols.index(c)] for c in shown] for r in rows], "table", max_width=70)
