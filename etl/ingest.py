"""One ingest run: plan each source file against its watermark, snapshot what changed, parse,
write Parquet, then commit watermarks and data together and publish.

Every step before the final state transaction only writes into the run's private staging
folder, so a run killed at any point leaves the warehouse as it was.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import duckdb
import pyarrow as pa

from convarch.etl import retained, session_parts
from convarch.etl.layout import Layout
from convarch.etl.extract import earlier_context, extract, index
from convarch.etl.look import Look
from convarch.etl.plan import plan_files
from convarch.etl.read_file import Planned
from convarch.etl.chains import materialize
from convarch.etl.live_lines import live_lines
from convarch.etl.compact import SWEPT_KEY, Compaction, compact
from convarch.etl.superseded import Current, current_lines, current_versions
from convarch.etl.written import Written
from convarch.etl.manifest import moved_from, read_manifest
from convarch.etl.publish import TABLES, catalog_digest, ensure_seeds, publish
from convarch.etl.state import open_state
from convarch.etl.summary import Summary
from convarch.etl.workers import Workers, default_workers

Progress = Callable[[int], None]


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def ingest(
    layout: Layout,
    targets: Iterable[tuple[ModuleType, Path]],
    *,
    on_plan: Callable[[int, int], None] | None = None,
    progress: Progress | None = None,
    wait_seconds: float = 30.0,
    redact: bool = False,
    workers: int | None = None,
    defer: Collection[str] = (),
    look: Look | None = None,
) -> Summary:
    """Ingest every (adapter, store root) pair into the warehouse at `layout`.

    With `redact`, secrets are replaced by `[REDACTED:kind]` before anything is stored, and
    the warehouse remembers it: later runs redact too. `workers` threads load files side by
    side (default: one per core, at most 4). A store read whole, or a file appended to, whose
    path is in `defer` is left as it was last read even if it changed (`watch` spaces out the
    reads of big stores and the pick-ups of long transcripts, whose chains are rebuilt whole);
    a later run reads it. With a `look` (`watch`, from change notices), only the files it
    names are looked at (etl/look.py).
    """
    old_umask = os.umask(0o077)  # whatever DuckDB or we create is private to the user
    try:
        return _ingest(layout, list(targets), on_plan, progress, wait_seconds, redact, workers, frozenset(defer),
                       look)
    finally:
        os.umask(old_umask)


def _ingest(layout, targets, on_plan, progress, wait_seconds, redact, n_workers, defer, look) -> Summary:
    t0 = time.monotonic()
    layout.create()
    state = open_state(layout.state_db, wait_seconds=wait_seconds)
    summary = Summary()
    staging: Path | None = None
    try:
        _recover(layout, state)
        if redact:
            state.execute("insert or replace into settings values ('redact', 'true')")
        redacting = state.execute("select value from settings where key = 'redact'").fetchone() == ("true",)
        summary.redacting = redacting
        run_id = state.execute("select nextval('run_id_seq')").fetchone()[0]
        summary.run_id = run_id
        targets = list(targets)
        summary.sources = sorted({a.NAME for a, _ in targets})
        state.execute(
            "insert into ingest_runs (run_id, started_at, status, sources) values (?, ?, 'running', ?)",
            [run_id, _now(), summary.sources],
        )
        staging = layout.tmp / f"run-{run_id:06d}"
        staging.mkdir(mode=0o700)
        plans, gone = plan_files(targets, state, summary, look)
        changed = [p for p in plans if p.action in ("new", "append", "rewrite")]
        if defer:
            # left as last read: its stat is not recorded, so the next run sees the change
            kept = [p for p in changed if not (p.action in ("rewrite", "append") and str(p.file.path) in defer)]
            summary.files_deferred = len(changed) - len(kept)
            changed = kept
        if on_plan:
            on_plan(len(changed), sum(p.stat.size - p.start for p in changed))
        workers = Workers(n_workers or default_workers(), staging / "spill")
        try:
            earlier = earlier_context(layout.lake, state, changed)
            written, updates, sessions, batches, same = extract(staging, run_id, state, changed, summary, progress,
                                                                workers, earlier)
            loaded = [w.staged for w in written if w.table_name == "records"]
            # a store read again whole keeps the sessions it deleted inside itself (their
            # facts carried to its new epoch by derive_kept, as those of the lines it kept)
            retained.retain(layout, state, updates, changed, loaded)
            if session_parts.missing(state):
                loaded += session_parts.lake_records(layout, state)
            written += session_parts.derive(state, loaded, staging / "parts", run_id)
            written += session_parts.derive_kept(
                layout, state, [u for u in updates
                                if u["action"] == "replace_tail" or (u["action"] == "rewrite" and u.get("retained"))],
                staging / "kept", run_id)
            summary.extract_seconds = time.monotonic() - t0
            seeds = ensure_seeds(layout)
            t_index = time.monotonic()
            written += index(workers, staging / "index", batches, run_id, seeds)
            summary.index_seconds = time.monotonic() - t_index
            _move_into_lake(layout, staging, written)
            chain_written, summary.chain_seconds, chain_seconds = materialize(
                layout, state, run_id, [(u["file_id"], u["epoch"], u["source"], live_lines(u)) for u in updates],
                written, staging,
                seeds, workers, records={u["file_id"]: u["prev_records"] + u["records_added"] for u in updates},
                nbytes={u["file_id"]: u["size"] for u in updates})
            paths = {u["file_id"]: u["path"] for u in updates}
            summary.chain_seconds_by_file = {paths[fid]: secs for fid, secs in chain_seconds.items()}
            touched = [p for p in plans if p.action == "touched"] + same
            _move_into_lake(layout, staging, chain_written)
            written += chain_written
            merged = Compaction()
            if written:      # only a run that writes files can leave a partition with too many
                t_compact = time.monotonic()
                current = Current(current_versions(state, [(u["file_id"], u["epoch"]) for u in updates], run_id),
                                  lambda: current_lines(state, updates))
                merged = compact(layout, state, run_id, staging, workers, written, current, updates)
                summary.rows_superseded = merged.superseded
                summary.compact_seconds = time.monotonic() - t_compact
                summary.files_merged = len(merged.retired) + len(merged.dropped)
                dropped = {w.path for w in merged.dropped}
                written = [w for w in written if w.path not in dropped] + merged.written
            summary.sessions = len(sessions)
            # a container that gave the same lines changed nothing, unless it was gone before
            summary.files_changed = len(changed) - sum(1 for p in same if not p.prev.get("gone"))
            _commit(state, run_id, written, updates, touched, gone, summary, t0, merged.retired, merged.swept)
        finally:
            workers.close()
        for w in merged.dropped:      # this run's own small files: never registered, never listed
            (layout.lake / w.path).unlink(missing_ok=True)
        # a file moved, back after it was gone, or its container's kind learnt changes what the
        # catalog reads without a row
        data_changed = bool(written or gone or updates or any(_reread(t) for t in touched))
        manifest = read_manifest(layout)
        last_data_run = state.execute(
            "select max(run_id) from ingest_runs where status = 'committed' and files_changed > 0"
        ).fetchone()[0]
        if (data_changed or not layout.db.exists() or manifest is None or manifest.get("data_run_id") != last_data_run
                or manifest.get("catalog") != catalog_digest() or moved_from(layout, manifest)):
            publish(layout, state, last_data_run or run_id)
    except BaseException:
        if summary.run_id:
            try:
                state.execute("update ingest_runs set status = 'failed', finished_at = ? where run_id = ?", [_now(), summary.run_id])
            except duckdb.Error:
                pass
        raise
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        state.close()
    summary.seconds = time.monotonic() - t0
    return summary


def _recover(layout: Layout, state: duckdb.DuckDBPyConnection) -> None:
    """Clear what a killed run left: its staging folder, Parquet never registered, its row."""
    state.execute("update ingest_runs set status = 'failed' where status = 'running'")
    for leftover in layout.tmp.glob("run-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    registered = {p for (p,) in state.execute("select path from data_files").fetchall()}
    for table in TABLES:
        base = layout.lake / table
        if not base.is_dir():
            continue
        for dirpath, _dirs, names in os.walk(base):
            for name in names:
                p = Path(dirpath) / name
                rel = str(p.relative_to(layout.lake))
                if name.startswith("r") and name.endswith(".parquet") and rel not in registered:
                    p.unlink()


def _commit_versions(state, updates: list[dict]) -> None:
    """Each loaded file's runs of live lines (file_versions: rows only for a file of several)
    and the hashes of the lines a whole container gave, with the groups they came in
    (file_line_hashes), inside the run's transaction."""
    if not updates:
        return
    retained.commit(state, updates)
    ids = pa.table({"file_id": pa.array([u["file_id"] for u in updates], pa.int64())})
    versions = [(u["file_id"], e, first) for u in updates if len(u["versions"]) > 1 for e, first in u["versions"]]
    hashed = [u for u in updates if u["line_hashes"] is not None]
    state.register("loaded_ids", ids)
    state.execute("delete from file_versions where file_id in (select file_id from loaded_ids)")
    state.execute("delete from file_line_hashes where file_id in (select file_id from loaded_ids)")
    state.unregister("loaded_ids")
    if versions:
        state.register("versions_rows", pa.table({
            "file_id": pa.array([v[0] for v in versions], pa.int64()), "epoch": pa.array([v[1] for v in versions], pa.int32()),
            "first_line": pa.array([v[2] for v in versions], pa.int64())}))
        state.execute("insert into file_versions select file_id, epoch, first_line from versions_rows")
        state.unregister("versions_rows")
    if hashed:
        state.register("hash_rows", pa.table({
            "file_id": pa.array([u["file_id"] for u in hashed], pa.int64()),
            "hashes": pa.array([u["line_hashes"] for u in hashed], pa.binary()),
            "groups": pa.array([u.get("line_groups") for u in hashed], pa.binary())}))
        state.execute("insert into file_line_hashes (file_id, hashes, groups) select file_id, hashes, groups from hash_rows")
        state.unregister("hash_rows")


def _reread(touched: Planned) -> bool:
    """Whether a file touched changes what the catalog reads: moved, back after it was gone,
    or its container's kind learnt (etl/plan.py _classify)."""
    prev = touched.prev
    return bool(prev.get("moved_from") or prev.get("gone") or prev.get("container") is None)


def _move_into_lake(layout: Layout, staging: Path, written: list[Written]) -> None:
    for w in written:
        src = w.staged
        dst = layout.lake / w.path
        dst.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.replace(src, dst)


def _commit(state, run_id, written, updates, touched, gone, summary: Summary, t0: float,
            retired: list[str] = (), swept: dict[str, int] = {}) -> None:
    state.execute("begin")
    try:
        for source, dead in swept.items():      # etl/compact.py stale_sources
            state.execute("insert or replace into settings values (?, ?)", [SWEPT_KEY + source, str(dead)])
        if written:     # one insert of many rows: per-row statements cost seconds on big runs
            rows = pa.table({
                "path": [w.path for w in written], "table_name": [w.table_name for w in written],
                "source": [w.source for w in written], "month": [w.month for w in written],
                "run_id": pa.array([run_id] * len(written), pa.int64()),
                "row_count": pa.array([w.row_count for w in written], pa.int64()),
                "bytes": pa.array([w.bytes for w in written], pa.int64()),
            })
            state.register("written_rows", rows)
            state.execute("insert into data_files (path, table_name, source, month, run_id, row_count, bytes) "
                          "select * from written_rows")
            state.unregister("written_rows")
        if retired:     # files merged by compaction: kept on disk for readers of older catalogs
            state.register("retired_paths", pa.table({"path": pa.array(list(retired), pa.string())}))
            state.execute("update data_files set retired_run_id = ? where path in (select path from retired_paths)",
                          [run_id])
            state.unregister("retired_paths")
        new_files, changed = [], []
        for u in updates:
            st: snap.FileStat = u["stat"]
            added, quarantined = u.get("records_added", 0), u.get("quarantined_added", 0)
            summary.records_added += added
            summary.quarantined += quarantined
            row = {"file_id": u["file_id"], "source": u["source"], "path": u["path"], "dev": st.dev, "inode": st.inode,
                   "size": u["size"], "mtime_ns": st.mtime_ns, "data_version": st.version,
                   "offset": u["offset"], "head_len": u["head_len"],
                   "head_hash": u["head_hash"], "epoch": u["epoch"], "tail_bytes": u["tail_bytes"],
                   "lines_read": u["lines_read"], "records": added, "quarantined": quarantined,
                   "lines_hash": u["lines_hash"], "container": u["container"]}
            if u["action"] == "new":
                new_files.append(row | {"session_hint": u["session_hint"], "parent_session_hint": u["parent_session_hint"],
                                        "first_run_id": run_id, "last_run_id": run_id, "chain_run_id": run_id})
            elif u["action"] == "replace_tail":      # its records: those it kept and the new ones
                changed.append(row | {"records": added + u["prev_records"], "reset": True, "reset_quarantined": False})
            else:
                changed.append(row | {"reset": u["action"] == "rewrite", "reset_quarantined": u["action"] == "rewrite"})
        # a statement per file took about a millisecond each: whole tables of rows instead, so
        # a run that finds thousands of files appended, touched or gone commits at once
        if new_files:
            cols = list(new_files[0])
            state.register("new_files", pa.Table.from_pylist(new_files))
            state.execute(f"insert into source_files ({', '.join(chr(34) + c + chr(34) for c in cols)}) "
                          f"select {', '.join(chr(34) + c + chr(34) for c in cols)} from new_files")
            state.unregister("new_files")
        if changed:
            state.register("changed_files", pa.Table.from_pylist(changed))
            state.execute(
                "update source_files as f set path = c.path, dev = c.dev, inode = c.inode, size = c.size, "
                "mtime_ns = c.mtime_ns, data_version = c.data_version, \"offset\" = c.\"offset\", "
                "head_len = c.head_len, head_hash = c.head_hash, epoch = c.epoch, tail_bytes = c.tail_bytes, "
                "lines_read = c.lines_read, lines_hash = c.lines_hash, container = c.container, "
                "records = (case when c.reset then 0 else f.records end) + c.records, "
                "quarantined = (case when c.reset_quarantined then 0 else f.quarantined end) + c.quarantined, "
                "last_run_id = ?, chain_run_id = ?, gone = false "
                "from changed_files as c where f.file_id = c.file_id",
                [run_id, run_id],
            )
            state.unregister("changed_files")
        _commit_versions(state, updates)
        if touched:
            state.register("touched_files", pa.Table.from_pylist([
                {"file_id": p.prev["file_id"], "path": str(p.file.path), "dev": p.stat.dev, "inode": p.stat.inode,
                 "size": p.stat.size, "mtime_ns": p.stat.mtime_ns, "data_version": p.stat.version,
                 "container": p.file.container} for p in touched]))
            state.execute(
                "update source_files as f set path = t.path, dev = t.dev, inode = t.inode, size = t.size, "
                "mtime_ns = t.mtime_ns, data_version = coalesce(t.data_version, f.data_version), "
                "container = t.container, gone = false "
                "from touched_files as t where f.file_id = t.file_id")
            state.unregister("touched_files")
        for p in touched:
            if p.regrouped is not None:
                state.execute("update file_line_hashes set groups = ? where file_id = ?", [p.regrouped, p.prev["file_id"]])
        if gone:
            state.register("gone_files", pa.table({"file_id": pa.array(list(gone), pa.int64())}))
            state.execute("update source_files set gone = true where file_id in (select file_id from gone_files)")
            state.unregister("gone_files")
        state.execute(
            "update ingest_runs set status = 'committed', finished_at = ?, files_scanned = ?, files_changed = ?, "
            "records_added = ?, quarantined = ?, seconds = ? where run_id = ?",
            [_now(), summary.files_scanned, len(updates) + len(gone) + sum(1 for t in touched if _reread(t)),
             summary.records_added, summary.quarantined,
             time.monotonic() - t0, run_id],
        )
        state.execute("commit")
    except BaseException:
        state.execute("rollback")
        raise
