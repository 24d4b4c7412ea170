"""`convarch show`: read an archived conversation, whole or around one message."""
from __future__ import annotations

import json

import click

from convarch import sql
from convarch.cli.output import emit_json
from convarch.etl.errors import NoMatch
from convarch.etl.warehouse import connect
from convarch.handoff import resolve


def _header(row: dict) -> str:
    when = row["timestamp"].strftime("%Y-%m-%d %H:%M:%S") if row["timestamp"] else "undated"
    label = row["role"] or "?"
    if row["kind"] and row["kind"] not in ("prompt", "response"):
        label += f" · {row['kind']}"
    if row["harness_kind"]:
        label += f" · harness:{row['harness_kind']}"
    if row["model"]:
        label += f" · {row['model']}"
    return f"── #{row['seq']} {label} · {when} " + "─" * 8


@click.command()
@click.argument("ref")
@click.option("--at", "at", type=int, help="Show the messages around position SEQ (from `convarch search`).")
@click.option("--context", default=3, show_default=True, type=click.IntRange(min=0), help="Messages on each side of --at.")
@click.option("--raw", is_flag=True, help="Print each message's original record (JSON) instead of its text.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--max-output", default=800, show_default=True, help="Characters of each tool output to show.")
@click.pass_obj
def show(obj, ref, at, context, raw, as_json, max_output) -> None:
    """Print session REF's rebuilt conversation (an id, a unique prefix, or `latest`)."""
    con = connect(obj.db)
    try:
        session_id = resolve(con, ref)
        cur = con.execute(sql.read("queries/show__messages"), {"session_id": session_id})
        cols = [d[0] for d in cur.description]
        rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    finally:
        con.close()
    if at is not None:
        if not any(r["seq"] == at for r in rows):
            raise NoMatch(f"session {session_id} has no message #{at} (it has {len(rows)})")
        rows = [r for r in rows if at - context <= r["seq"] <= at + context]
    if as_json:
        for r in rows:
            if not raw:
                r.pop("raw", None)
        emit_json({"session_id": session_id, "messages": rows})
        return
    click.echo(f"session {session_id}")
    for r in rows:
        marker = click.style(" ◀", fg="yellow") if at is not None and r["seq"] == at else ""
        click.echo(_header(r) + marker)
        if raw:
            click.echo(json.dumps(json.loads(r["raw"]), ensure_ascii=False, indent=1) if r["raw"] else "(no record)")
            continue
        if r["text"]:
            click.echo(r["text"].rstrip())
        for c in r["calls"] or []:
            target = c.get("path") or c.get("command") or ""
            click.echo(f"→ {c['tool']}" + (f": {target}" if target else ""))
        if r["output"]:
            out = r["output"].rstrip()
            click.echo("⇐ " + (out if len(out) <= max_output else out[:max_output] + f" [+{len(out) - max_output} chars]"))
