"""`convarch search`: ranked full-text search over every archived conversation."""
from __future__ import annotations

import re
import shlex
from datetime import datetime

import click

from convarch import sql
from convarch.cli.output import emit_json
from convarch.etl.errors import NoMatch, UsageError
from convarch.etl.warehouse import connect


def parse_query(query: str) -> tuple[str, list[str]]:
    """Split a query into its words and its quoted phrases."""
    try:
        parts = shlex.split(query, posix=True)
    except ValueError:
        parts = query.split()
    phrases = [p for p in re.findall(r'"([^"]+)"', query) if p.strip()]
    return " ".join(parts), phrases


def snippet(body: str, terms: list[str], width: int = 160) -> str:
    text = " ".join((body or "").split())
    if not text:
        return ""
    rx = re.compile("|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True) if t), re.I) if terms else None
    m = rx.search(text) if rx else None
    start = max(0, (m.start() if m else 0) - width // 3)
    piece = text[start:start + width]
    if start > 0:
        piece = "…" + piece
    if start + width < len(text):
        piece += "…"
    return rx.sub(lambda mm: f"«{mm.group(0)}»", piece) if rx else piece


def _date(value: str | None, name: str) -> str | None:
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value).isoformat(sep=" ")
    except ValueError:
        raise UsageError(f"{name}: expected a date like 2026-11-30 or 2026-11-30T14:00") from None


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("--source", help="Only this source.")
@click.option("--cwd", type=click.Path(), help="Only sessions run in this folder or below it.")
@click.option("--since", help="Only messages at or after this date (UTC).")
@click.option("--until", help="Only messages before this date (UTC).")
@click.option("--role", type=click.Choice(["user", "assistant", "system"]))
@click.option("--include-tools", is_flag=True, help="Also search tool inputs and outputs.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1, max=1000))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def search(obj, query, source, cwd, since, until, role, include_tools, limit, as_json) -> None:
    """Find messages by words or "quoted phrases", best matches first (BM25).

    The words may come as one argument or several: `search connection pool` is `search
    "connection pool"`; a phrase keeps its quotes inside the argument: `search '"max size"'`.
    """
    import os

    query = " ".join(query)
    words, phrases = parse_query(query)
    con = connect(obj.db)
    try:
        terms = con.execute("select list_distinct(search_tokens(?))", [words]).fetchone()[0] or []
        if not terms:
            raise UsageError("the query has no searchable words")
        params = {
            "terms": terms, "fields": ["message", "tool"] if include_tools else ["message"],
            "source": source.replace("-", "_") if source else None,
            "cwd": os.path.abspath(cwd) if cwd else None,
            "since": _date(since, "--since"), "until": _date(until, "--until"),
            "role": role, "phrases": phrases, "limit": limit,
        }
        cur = con.execute(sql.read("queries/search__bm25"), params)
        cols = [d[0] for d in cur.description]
        hits = [dict(zip(cols, r)) for r in cur.fetchall()]
        positions = {}
        if hits:
            sids = sorted({h["session_id"] for h in hits})
            for sid, mid, seq in con.execute(sql.read("queries/chain__positions"), {"session_ids": sids}).fetchall():
                positions[(sid, mid)] = seq
    finally:
        con.close()
    for h in hits:
        h["seq"] = positions.get((h["session_id"], h["message_id"]))
        h["snippet"] = snippet(h.pop("body") or "", terms)
    if as_json:
        emit_json(hits)
        return
    if not hits:
        raise NoMatch(f"nothing matches {query!r}")
    for h in hits:
        when = h["timestamp"].strftime("%Y-%m-%d %H:%M") if h["timestamp"] else "undated"
        at = f"--at {h['seq']}" if h["seq"] else f"line {h['line_no']}"
        title = (h["title"] or "").strip()
        click.echo(f"{click.style(h['source'], fg='cyan')} {h['session_id']} {at} · {when} · {h['role'] or h['field']}"
                   + (f" · {title[:60]}" if title else ""))
        click.echo(f"    {h['snippet']}")
