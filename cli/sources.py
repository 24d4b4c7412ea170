"""`convarch sources`: every agent convarch reads, where it looks, and what it finds."""
from __future__ import annotations

import os

import click

from convarch import adapters
from convarch.adapters.base import RootError
from convarch.cli.output import emit_json, emit_table
from convarch.cli.targets import home


def _describe(adapter) -> dict:
    locations = []
    listed: set[str] = set()
    for root in adapter.default_roots(os.environ, home()):
        # a variable naming the default place (XDG_DATA_HOME=~/.local/share) gives it twice;
        # ingest --all reads it once, so it is listed and counted once
        if (real := os.path.realpath(root)) in listed:
            continue
        listed.add(real)
        entry = {"path": str(root), "found": False, "files": 0, "bytes": 0}
        try:
            store = adapter.resolve_root(root)
        except RootError:
            locations.append(entry)
            continue
        entry["found"] = True
        entry["store"] = str(store)
        for sf in adapter.discover(store):
            try:
                st = os.stat(sf.path, follow_symlinks=False)
            except OSError:
                continue
            entry["files"] += 1
            entry["bytes"] += st.st_size
        locations.append(entry)
    return {
        "source": adapter.NAME,
        "title": adapter.TITLE,
        "env_vars": list(adapter.ENV_VARS),
        "evidence": adapters.EVIDENCE.get(adapter.NAME, adapters.OWN),
        "found": any(loc["found"] for loc in locations),
        "files": sum(loc["files"] for loc in locations),
        "bytes": sum(loc["bytes"] for loc in locations),
        "locations": locations,
    }


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sources(as_json: bool) -> None:
    """List every known source, where it looks, and whether it was found."""
    rows = [_describe(a) for a in adapters.ADAPTERS.values()]
    if as_json:
        emit_json(rows)
        return
    table = []
    for r in rows:
        for loc in r["locations"]:
            table.append([r["source"], "yes" if loc["found"] else "no", loc["files"], _size(loc["bytes"]),
                          r["evidence"], loc["path"]])
    emit_table(["source", "found", "files", "size", "tested on", "location"], table, max_width=80)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)
