"""`convarch sessions`: list archived sessions, newest first."""
from __future__ import annotations

import os
from pathlib import Path

import click

from convarch import sql
from convarch.cli.output import emit_rows, format_option
from convarch.etl.warehouse import connect


@click.command()
@click.option("--source", help="Only this source (e.g. claude_code).")
@click.option("--cwd", type=click.Path(path_type=Path), help="Only sessions that ran in this folder or below it.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(min=1))
@format_option
@click.pass_obj
def sessions(obj, source: str | None, cwd: Path | None, limit: int, fmt: str | None) -> None:
    """List archived sessions, newest first."""
    con = connect(obj.db)
    try:
        params = {
            "source": source.replace("-", "_") if source else None,
            "cwd": os.path.abspath(cwd) if cwd else None,
            "limit": limit,
        }
        cur = con.execute(sql.read("queries/sessions__list"), params)
        columns = [d[0] for d in cur.description]
        rows = cur.fetchall()
    finally:
        con.close()
    if fmt:
        emit_rows(columns, rows, fmt)
    else:
        shown = ["session_id", "source", "started_at", "message_count", "title", "cwd"]
        idx = [columns.index(c) for c in shown]
        emit_rows(shown, [[r[i] for i in idx] for r in rows], "table", max_width=50)
