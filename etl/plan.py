"""What a run has to do with each file it finds: compare it with what the state knows of it
(its stat, and for a JSONL file the bytes before its watermark) and call it new, appended,
rewritten, touched (moved, or back after it was gone) or unchanged.

An unchanged file costs a stat and a look-up, nothing more: a run over 20,000 transcripts
that finds nothing changed takes about a third of a second, all of it included. Under `watch`
a pick-up looks only at the files change notices named (etl/look.py).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import duckdb
import pyarrow as pa

from convarch.adapters.base import SourceFile
from convarch.etl import snapshot as snap
from convarch.etl.look import Look, Named
from convarch.etl.read_file import Planned, reason
from convarch.etl.summary import Summary


class Known(NamedTuple):
    """A file the state knows, as far as a run compares it with the file it finds."""

    source: str
    path: str
    file_id: int
    dev: int
    inode: int
    size: int
    mtime_ns: int
    data_version: str | None
    gone: bool
    offset: int
    container: str | None


def known_files(state: duckdb.DuckDBPyConnection,
                keys: set[tuple[str, str]] | None = None) -> dict[tuple[str, str], Known]:
    """The files the state knows, by (source, path), narrowed to what tells one unchanged (a
    changed file's whole row is read apart, _rows: read whole for 20,000 files, the rows were
    a sixth of a run that found nothing changed); only those of `keys` when given. A pick-up
    under `watch` that looks at a few files reads their rows alone: reading all 20,000 was
    60 ms of a pick-up that changed one."""
    cols = ", ".join(f'"{c}"' for c in Known._fields)
    if keys is None:
        return {(r[0], r[1]): Known(*r) for r in state.execute(f"select {cols} from source_files").fetchall()}
    if not keys:
        return {}
    wanted = sorted(keys)
    state.register("wanted_keys", pa.table({"source": pa.array([k[0] for k in wanted], pa.string()),
                                            "path": pa.array([k[1] for k in wanted], pa.string())}))
    try:
        rows = state.execute(f"select {cols} from source_files semi join wanted_keys using (source, path)").fetchall()
    finally:
        state.unregister("wanted_keys")
    return {(r[0], r[1]): Known(*r) for r in rows}


def _rows(state: duckdb.DuckDBPyConnection, ids: list[int]) -> dict[int, dict]:
    """The whole source_files rows of these files, by file id."""
    if not ids:
        return {}
    state.register("planned_ids", pa.table({"file_id": pa.array(ids, pa.int64())}))
    try:
        cur = state.execute("select * from source_files where file_id in (select file_id from planned_ids)")
        cols = [d[0] for d in cur.description]
        at = cols.index("file_id")
        return {r[at]: dict(zip(cols, r)) for r in cur.fetchall()}
    finally:
        state.unregister("planned_ids")


def _unchanged(row: Known, st: snap.FileStat) -> bool:
    """Whether the file is as the state last saw it (a SQLite database's change marks too,
    where both are known)."""
    same_version = st.version is None or row.data_version is None or st.version == row.data_version
    return (st.inode, st.size, st.mtime_ns) == (row.inode, row.size, row.mtime_ns) and same_version and not row.gone


def plan_files(targets, state: duckdb.DuckDBPyConnection, summary: Summary,
               look: Look | None = None) -> tuple[list[Planned], list[int]]:
    """The files found that a run has to do something with (new, changed, touched: an unchanged
    file needs nothing), and the ids of known files no longer found under the roots. With a
    `look`, only the files it names are looked at, and only they can be found gone; when it
    names only files, only their rows are read from the state."""
    listed: list[tuple[SourceFile, snap.FileStat]] = []
    seen: set[tuple[str, str]] = set()
    roots: list[tuple[str, str, Named | None]] = []
    for adapter, root in targets:
        files, named = (adapter.discover(root), None) if look is None else look.files(adapter, root)
        if files is None:
            continue           # nothing noticed under it
        roots.append((adapter.NAME, str(root), named))
        for sf in files:
            key = (sf.source, str(sf.path))
            if key in seen:
                continue
            seen.add(key)
            summary.files_scanned += 1
            try:
                st = snap.stat_family(sf.path) if sf.container == "sqlite" else snap.stat_source(sf.path)
            except (OSError, snap.NotRegularFile) as exc:
                summary.files_skipped += 1
                summary.skipped.append((str(sf.path), reason(exc)))
                continue
            listed.append((sf, st))
    narrowed = all(named is not None and not named.folders for _, _, named in roots)
    known = known_files(state, seen | {(s, p) for s, _, named in roots for p in named.paths} if narrowed else None)
    everything: dict[tuple[str, str], Known] | None = None if narrowed else known
    found: list[tuple[SourceFile, snap.FileStat, Known | None, bool]] = []
    by_inode: dict | None = None           # made at the first new file: most runs have none
    moved: set[int] = set()
    for sf, st in listed:
        row = known.get((sf.source, str(sf.path)))
        if row is not None and _unchanged(row, st) and row.container is not None:
            continue
        twin = False
        if row is None:
            # a file the agent moved (e.g. into an archive folder) keeps its rows and watermark
            if by_inode is None:
                everything = known_files(state) if everything is None else everything
                by_inode = {}
                for r in everything.values():     # files still there first, then those gone
                    by_inode.setdefault((r.source, r.dev, r.inode), []).append(r)
                for rows in by_inode.values():
                    rows.sort(key=lambda r: r.gone)
            other = next((r for r in by_inode.get((sf.source, st.dev, st.inode), ())
                          if r.file_id not in moved and not os.path.lexists(r.path)
                          and _same_file(state, sf, st, r)), None)
            if other is not None:
                row, twin = other, True
                moved.add(other.file_id)
        found.append((sf, st, row, twin))
    whole = _rows(state, [row.file_id for _, _, row, _ in found if row is not None])
    plans: list[Planned] = []
    for sf, st, row, twin in found:
        prev = None if row is None else whole[row.file_id]
        if twin:
            prev = dict(prev, moved_from=prev["path"])
        try:
            plans.append(_classify(sf, st, row, prev))
        except (OSError, snap.NotRegularFile) as exc:
            summary.files_skipped += 1
            summary.skipped.append((str(sf.path), reason(exc)))
    return plans, _gone(known, seen, moved, roots)


def _same_file(state: duckdb.DuckDBPyConnection, sf: SourceFile, st: snap.FileStat, row: Known) -> bool:
    """Whether a new path that holds the inode of a file gone from its own path is that file
    moved: of the same size and time (a rename keeps both), or a log beginning with the bytes
    it began with (appended to on the way). File systems give a deleted file's inode to the
    next file made: taken for the deleted transcript moved, a new session's file was loaded as
    that file rewritten, and the deleted session left the archive. A document is written out
    whole, so its first bytes say nothing of the rest (two subagents' .meta.json can begin
    with the same long description): changed, it is a new file, the old one kept as gone. A
    database of the same inode is the file moved, changed or not (a project folder renamed
    and crush run in it again): taken for a new file, every session it held counted twice. A
    new store given a deleted one's inode is then read as that one rewritten, which loses
    nothing either: the sessions it lacks stay, as in a store that deleted them itself
    (etl/retained.py)."""
    if (st.size, st.mtime_ns) == (row.size, row.mtime_ns) or sf.container == "sqlite":
        return True
    if sf.container != "jsonl":
        return False
    prev = _rows(state, [row.file_id])[row.file_id]
    length = prev["head_len"] or 0
    try:
        return 0 < length <= st.size and snap.head_hash(sf.path, length) == prev["head_hash"]
    except (OSError, snap.NotRegularFile):
        return False


def _gone(known: dict[tuple[str, str], Known], seen: set, moved: set[int], roots: list) -> list[int]:
    """The ids of known files under the roots looked at that were not found there (nor moved);
    under a narrowed root, only files a notice named. When every root is narrowed to files,
    only those are looked up, not every file the state knows. A file of a source looked at
    whole that lies under none of its roots is gone when its path no longer exists: a store
    copied to another disk and named by its new root left its old files, under no root any
    more, live beside their copies, each session counted twice; and a crush.db that crush's
    project list names outside its folder was never found gone."""
    rows = known.items()
    if all(named is not None and not named.folders for _, _, named in roots):
        rows = [((s, p), known[(s, p)]) for s, _, named in roots for p in named.paths if (s, p) in known]
    whole = {s for s, _, named in roots if named is None}
    out = []
    for (source, path), row in rows:
        if row.gone or (source, path) in seen or row.file_id in moved:
            continue
        under = [named for s, r, named in roots
                 if source == s and (path == r or path.startswith(r.rstrip(os.sep) + os.sep))]
        if any(named is None or named(path) for named in under) or (
                not under and source in whole and not os.path.lexists(path)):
            out.append(row.file_id)
    return out


def _classify(sf: SourceFile, st: snap.FileStat, row: Known | None, prev: dict | None) -> Planned:
    """`row` and `prev`: the file's narrowed and whole rows (None for a new file); a file found
    unchanged here is one moved, or one whose kind of container the state does not know yet
    (loaded before it was kept, 0010): touched, its row brought up to date, nothing read. Its
    kind is what lets the catalog tell a database from the files around it (a JSON tree that a
    database took in counts once), so an archive made before then waits for no change to
    count right."""
    if prev is None:
        return Planned(sf, st, None, "new", 0)
    if _unchanged(row, st):
        touched = prev.get("moved_from") or prev.get("container") is None
        return Planned(sf, st, prev, "touched" if touched else "unchanged", prev["offset"])
    if sf.container != "jsonl":
        return Planned(sf, st, prev, "rewrite", 0)
    offset = prev["offset"]
    same_head = st.size >= offset and snap.head_hash(sf.path, prev["head_len"]) == prev["head_hash"]
    if same_head and (offset == 0 or snap.byte_at(sf.path, offset - 1) in (b"\n", b"}")):
        quiet = st.size == prev["size"] and prev["tail_bytes"] == 0 and not prev["gone"]
        return Planned(sf, st, prev, "touched" if quiet else "append", offset)
    return Planned(sf, st, prev, "rewrite", 0)
