"""Sessions a store deletes inside itself stay in the archive.

A transcript file the agent deletes keeps its rows: the file is marked gone. A database or
document is read again whole as it is now, and the lines it no longer gives leave its
current version, so a session deleted in goose, OpenCode or Cursor (or a task dropped from
an index document) left the archive with them. After such a store is loaded again, the lines
it held before whose session has no line in the new version stay live, as runs of their
earlier epochs (state table file_retained; live_lines reads them). A line whose session goes
on (a message edited, a chat taken up again, a history cut back by a checkpoint restore) is
not kept: the store's new version stands for that session, as before.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from convarch import sql
from convarch.etl import live_lines as live
from convarch.etl.duck import HIVE, sql_list
from convarch.etl.layout import Layout
from convarch.etl.read_file import Planned
from convarch.etl.session_parts import lake_records

_RUNS = ("file_id", "epoch", "first_line", "last_line")


def retain(layout: Layout, state: duckdb.DuckDBPyConnection, updates: list[dict], changed: list[Planned],
           loaded: list[Path]) -> None:
    """Set `retained` on each update of a store read whole that was loaded before: the runs
    of lines it keeps of its earlier versions (those it kept already, which extract gave its
    `prev`, included while their session has still no line in the file). `loaded`: this
    run's records files."""
    prevs = {p.file_id: p.prev for p in changed if p.prev is not None and p.file.container != "jsonl"}
    whole = [u for u in updates if u["file_id"] in prevs]
    if not whole:
        return
    for u in whole:            # lines only added: what it kept stays kept
        u["retained"] = prevs[u["file_id"]].get("retained") or []
    # lines only added can bring back a session kept: what it kept is looked at again then
    todo = [u for u in whole if u["action"] in ("replace_tail", "rewrite") or u["retained"]]
    now = [(u["file_id"], *run) for u in todo for run in live.version_lines(u)]
    before = _minus([(u["file_id"], *run) for u in todo
                     for run in live.before(prevs[u["file_id"]].get("versions") or [], prevs[u["file_id"]]["epoch"],
                                            prevs[u["file_id"]]["lines_read"])], now)
    before += [(u["file_id"], *run) for u in todo for run in u["retained"]]
    if not before:               # nothing it held is gone from it
        return
    id_list = ", ".join(str(int(fid)) for fid in sorted({r[0] for r in before}))
    files = [*lake_records(layout, state), *loaded]
    con = state.cursor()      # as session_parts.derive's: no DuckDB of its own to open
    try:
        con.register("dropped_runs", _runs(before))
        con.register("version_runs", _runs(now))
        con.execute(f"create temp view file_records as select file_id, file_epoch, line_no, session_id "
                    f"from read_parquet({sql_list(files)}, {HIVE}, union_by_name = true) "
                    f"where file_id in ({id_list})")
        kept: dict[int, list[tuple[int, int, int]]] = {}
        for fid, epoch, first, last in con.execute(sql.read("extract/retained_lines")).fetchall():
            kept.setdefault(fid, []).append((epoch, first, last))
    finally:
        con.close()
    for u in todo:
        u["retained"] = kept.get(u["file_id"], [])


def _minus(runs: list[tuple], live: list[tuple]) -> list[tuple]:
    """The parts of (file_id, epoch, first, last) `runs` that no run of `live` covers."""
    cover: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for fid, epoch, first, last in live:
        cover.setdefault((fid, epoch), []).append((first, last))
    out = []
    for fid, epoch, first, last in runs:
        for a, b in sorted(cover.get((fid, epoch), [])):
            if b < first or a > last:
                continue
            if a > first:
                out.append((fid, epoch, first, a - 1))
            first = b + 1
            if first > last:
                break
        if first <= last:
            out.append((fid, epoch, first, last))
    return out


def _runs(rows: list[tuple]) -> pa.Table:
    return pa.table({name: pa.array([r[i] for r in rows], pa.int32() if name == "epoch" else pa.int64())
                     for i, name in enumerate(_RUNS)})


def commit(state: duckdb.DuckDBPyConnection, updates: list[dict]) -> None:
    """The loaded files' retained runs, in place of those they had (inside the run's
    transaction); only files `retain` looked at, which set `retained`."""
    updates = [u for u in updates if "retained" in u]
    if not updates:
        return
    state.register("retained_ids", pa.table({"file_id": pa.array([u["file_id"] for u in updates], pa.int64())}))
    try:
        state.execute("delete from file_retained where file_id in (select file_id from retained_ids)")
    finally:
        state.unregister("retained_ids")
    rows = [(u["file_id"], *run) for u in updates for run in u.get("retained") or ()]
    if rows:
        state.register("retained_rows", _runs(rows))
        try:
            state.execute(f"insert into file_retained select {', '.join(_RUNS)} from retained_rows")
        finally:
            state.unregister("retained_rows")


def retained_by_file(state: duckdb.DuckDBPyConnection,
                     ids: list[int] | None = None) -> dict[int, list[tuple[int, int, int]]]:
    """The retained runs of the files `ids`, or of every file (superseded.current_lines)."""
    where = f" where file_id in ({', '.join(str(int(i)) for i in ids)})" if ids else ""
    out: dict[int, list[tuple[int, int, int]]] = {}
    for fid, epoch, first, last in state.execute(f"select {', '.join(_RUNS)} from file_retained{where}").fetchall():
        out.setdefault(fid, []).append((epoch, first, last))
    return out
