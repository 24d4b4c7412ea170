"""Handoffs: a deterministic, redacted, bounded Markdown (or JSON) document from which a fresh
agent of any brand can continue an archived session, built from the normalized views only."""
from __future__ import annotations

import os

import duckdb

from convarch import sql
from convarch.etl.errors import NoMatch
from convarch.handoff.facts import Facts, load
from convarch.handoff.render import Options, render_json, render_markdown

__all__ = ["Options", "resolve", "build", "Facts"]


class AmbiguousRef(NoMatch):
    """More than one session matches; the candidates are in the message."""


def resolve(con: duckdb.DuckDBPyConnection, ref: str, cwd: str | None = None) -> str:
    """A session id from an id, a unique id prefix, or `latest` (in `cwd` when given)."""
    params = {"ref": ref, "cwd": os.path.abspath(cwd) if cwd else None}
    rows = con.execute(sql.read("queries/session__resolve"), params).fetchall()
    if not rows:
        where = f" in {params['cwd']}" if cwd else ""
        raise NoMatch(f"no session matches {ref!r}{where} (see `convarch sessions`)")
    if len(rows) > 1:
        top = [r for r in rows if r[4] is None]
        if len(top) == 1:
            return top[0][0]
        listing = "\n".join(f"  {r[0]}  {r[1]}  {r[2] or ''}" for r in rows[:20])
        raise AmbiguousRef(f"{ref!r} matches {len(rows)} sessions:\n{listing}")
    return rows[0][0]


def build(con: duckdb.DuckDBPyConnection, session_id: str, *, fmt: str = "markdown", options: Options = Options()) -> str:
    facts = load(con, session_id)
    return render_json(facts, options) if fmt == "json" else render_markdown(facts, options)
