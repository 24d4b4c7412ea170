"""Which rows of the lake no view reads any more, once a run commits.

Derived rows a later run made again (a file's chains, a rewritten file's session facts) and
the search index of lines a file no longer holds stay in the lake until compaction rewrites
their files without them (etl/compact.py); this module says which they are, from what every
file holds after the run (`Current`), as SQL over the registered tables.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import duckdb
import pyarrow as pa

from convarch.etl.live_lines import live_lines
from convarch.etl.retained import retained_by_file

#: Derived tables whose rows a later run supersedes, by the column that says which run or
#: version made a row and the column of `current_versions` it is compared with. A file's
#: chains are computed again whole at each change, under the run's id, and a rewritten file's
#: session facts again under its new epoch; the views read only the newest (sql/materialized.sql,
#: int_session_parts). Kept, the older rows were dead weight that merging carried on forever:
#: a 200,000-record transcript gaining 10 lines added 20 MB of chain rows at each pick-up.
SUPERSEDED = {
    "branches": ("chain_run_id", "chain_run_id"),
    "chain_messages": ("chain_run_id", "chain_run_id"),
    "resume_messages": ("chain_run_id", "chain_run_id"),
    "session_state": ("chain_run_id", "chain_run_id"),
    "chain_issues": ("chain_run_id", "chain_run_id"),
    "session_parts": ("file_epoch", "epoch"),
}
#: Tables of one row per line of a source file (or a field of one), read through
#: int_current_lines: a row of a line its file no longer holds is read by no view. Such lines
#: are those of a file's older epochs, and those a store rewritten in place gave before and
#: gives no longer (a Cursor chat taken up again, a Cline message rewritten, etl/live_lines.py).
#: Only the search index: the records and blocks of those lines are the archive's history.
LINE_TABLES = ("postings", "search_docs")


class Current:
    """What every file holds once this run commits, which decides the rows superseded:
    `versions` its chain run and epoch (current_versions), `lines` its runs of live lines
    (current_lines). The lines are made only when a query needs them, the first time from
    the run's own thread (`make_lines`): a row per file of the warehouse, 50 ms of every
    pick-up over 20,000 transcripts, where most pick-ups only weigh chain rows, by version."""

    def __init__(self, versions: pa.Table, make_lines: Callable[[], pa.Table]):
        self.versions = versions
        self._make_lines = make_lines

    @functools.cached_property
    def lines(self) -> pa.Table:
        return self._make_lines()

    def register(self, con: duckdb.DuckDBPyConnection, tables: Iterable[str]) -> None:
        """Register what a query over `tables` reads (superseded, kept_rows)."""
        con.register("current_versions", self.versions)
        if any(t in LINE_TABLES for t in tables):
            con.register("current_lines", self.lines)

    def unregister(self, con: duckdb.DuckDBPyConnection) -> None:
        con.unregister("current_versions")
        con.unregister("current_lines")         # never registered is no error


def current_versions(state: duckdb.DuckDBPyConnection, updates: list[tuple[int, int]], run_id: int) -> pa.Table:
    """Each file's chain run and epoch as they stand once this run commits: `updates` are
    (file_id, epoch) of the files it loaded, whose chains it computed again (etl/ingest.py
    records this run as their chain run). A row made by an older run or epoch than its file's
    is superseded; one of a file not listed here is never taken for superseded."""
    now = dict(updates)
    ids, runs, epochs = [], [], []
    for fid, chain_run, epoch in state.execute("select file_id, chain_run_id, epoch from source_files").fetchall():
        ids.append(fid)
        runs.append(run_id if fid in now else chain_run)
        epochs.append(now.pop(fid, epoch))
    for fid, epoch in now.items():      # new files
        ids.append(fid)
        runs.append(run_id)
        epochs.append(epoch)
    return pa.table({"file_id": pa.array(ids, pa.int64()), "chain_run_id": pa.array(runs, pa.int64()),
                     "epoch": pa.array(epochs, pa.int64())})


def current_lines(state: duckdb.DuckDBPyConnection, updates: list[dict]) -> pa.Table:
    """(file_id, epoch, first_line, last_line) of each run of live lines of every file as it
    stands once this run commits, as int_current_lines reads them: `updates` are the files
    this run loaded. A file the agent deleted keeps its lines (the archive keeps them), and so
    does a store of the sessions it deleted inside itself (etl/retained.py)."""
    versions: dict[int, list[tuple[int, int]]] = {}
    for fid, epoch, first in state.execute("select file_id, epoch, first_line from file_versions").fetchall():
        versions.setdefault(fid, []).append((epoch, first))
    kept = retained_by_file(state)
    files = {fid: {"epoch": epoch, "versions": versions.get(fid, []), "retained": kept.get(fid)}
             for fid, epoch in state.execute("select file_id, epoch from source_files").fetchall()}
    files.update({u["file_id"]: u for u in updates})
    rows = [(fid, *run) for fid, f in files.items() for run in live_lines(f)]
    return pa.table({name: pa.array([r[i] for r in rows], pa.int64())
                     for i, name in enumerate(("file_id", "epoch", "first_line", "last_line"))})


def superseded(table: str) -> tuple[str, str]:
    """The joins, and the condition on them, that make a row of `table` (aliased t)
    superseded; the connection has `Current` registered."""
    if table in LINE_TABLES:
        return ("left join (select distinct file_id from current_lines) as k on k.file_id = t.file_id "
                "left join current_lines as l on l.file_id = t.file_id and l.epoch = t.file_epoch "
                "and t.line_no between l.first_line and l.last_line",
                "k.file_id is not null and l.file_id is null")
    column, key = SUPERSEDED[table]      # a row of a file not listed, or of no run, never is
    return "left join current_versions as c on c.file_id = t.file_id", f"t.{column} < c.{key}"


def kept_rows(table: str, relation: str) -> str:
    """`relation` (aliased t) without the rows superseded, for a table of SUPERSEDED or
    LINE_TABLES."""
    if table not in SUPERSEDED and table not in LINE_TABLES:
        return f"select * from {relation} as t"
    joins, dead = superseded(table)
    return f"select t.* from {relation} as t {joins} where not coalesce({dead}, false)"
