"""Publish a run: a fresh catalog of views over the registered Parquet, swapped in atomically.

A reader that holds the old catalog keeps the old inode and the files it names (nothing the
catalog names is deleted while it is current), and the next open sees the new state whole.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from convarch import sql
from convarch.sql import docs
from convarch.adapters import claude_code
from convarch.etl.duck import connect, sql_list, sql_literal
from convarch.etl.layout import Layout, make_private, replace_durably
from convarch.etl.chains import CHAIN_VIEWS, MATERIALIZED, build_chain_tables
from convarch.etl.quarantine import QUARANTINE_SCHEMA
from convarch.etl.manifest import read_manifest
from convarch.etl.readers import keep_outgoing

TABLES = ("records", "blocks", "quarantine", "search_docs", "postings", "session_parts", *MATERIALIZED)
#: Views whose rows the catalog stores, computed once per publish from the views they read:
#: `sessions` combines every file's session parts (a few rows per file, not per record:
#: 0.04 s at publish for the 1 GB bench archive, where aggregating every record took 0.45 s),
#: which search, handoff and listings would otherwise pay on every call; `int_current_files`
#: reads every file's session parts too, and a query reads it once per view it goes through.
STORED_AT_PUBLISH = ("int_current_files", "sessions")
SEED_SOURCE = "_schema"


def _schema_sources() -> str:
    """The text every stored table's columns follow from; its hash names the seed files."""
    names = [claude_code.EXTRACT.records, claude_code.EXTRACT.blocks, "extract/stored_records", "extract/session_parts",
             "search/docs", "search/words",
             "search/postings", "search/doc_lengths", *CHAIN_VIEWS]
    return "\n".join(sql.read(n) for n in names) + str(QUARANTINE_SCHEMA)


@functools.cache
def seed_schemas() -> dict[str, pa.Schema]:
    """The stored column set of each table, taken from the extraction SQL itself run on empty
    input, so the schema and the SQL can never disagree."""
    con = connect()
    con.execute(
        "create temp table lines (file_id bigint, line_no bigint, byte_offset bigint, line varchar);"
        "create temp table batch_files (file_id bigint, source varchar, file_epoch integer, "
        "source_file varchar, file_stem varchar, session_hint varchar, parent_session_hint varchar, "
        "run_id bigint)"
    )
    con.execute(f"create temp table records_batch as {sql.read(claude_code.EXTRACT.records)}")
    con.execute(f"create temp table blocks_batch as {sql.read(claude_code.EXTRACT.blocks)}")
    records = con.sql(f"select * exclude (source, month) from ({sql.read('extract/stored_records')})").to_arrow_table().schema
    blocks = con.sql("select * exclude (source, month) from blocks_batch").to_arrow_table().schema
    con.execute(f"create temp view records_loaded as {sql.read('extract/stored_records')}")
    session_parts = con.sql(
        f"select * exclude (source, month) from ({sql.read('extract/session_parts')})").to_arrow_table().schema
    con.execute(sql.read("search/macros"))
    con.execute(f"create temp table search_docs_batch as {sql.read('search/docs')}")
    con.execute("create temp table search_tokens_batch (doc_id bigint, word varchar)")
    con.execute(f"create temp table search_words_batch as {sql.read('search/words')}")
    docs = con.sql(f"select * exclude (source, month) from ({sql.read('search/doc_lengths')})").to_arrow_table().schema
    postings = con.sql(f"select * exclude (source, month) from ({sql.read('search/postings')})").to_arrow_table().schema
    con.execute(f"create view stg_records as {sql.read('extract/stored_records')}")
    con.execute("create view stg_blocks as select * from blocks_batch")
    build_chain_tables(con)
    chains = {}
    for name in MATERIALIZED:
        cols = [r[0] for r in con.execute(f"describe {name}").fetchall()]
        body = "* exclude (source)" if "source" in cols else "*"
        chains[name] = con.sql(f"select {body}, 0::bigint as chain_run_id from {name}").to_arrow_table().schema
    con.close()
    quarantine = pa.schema([f for f in QUARANTINE_SCHEMA if f.name not in ("source", "month")])
    return {"records": records, "blocks": blocks, "quarantine": quarantine, "search_docs": docs,
            "postings": postings, "session_parts": session_parts, **chains}


def ensure_seeds(layout: Layout) -> dict[str, Path]:
    """One empty Parquet file per table and schema version, so views always bind."""
    seeds: dict[str, Path] = {}
    digest = hashlib.sha256(_schema_sources().encode()).hexdigest()[:12]
    for table in TABLES:
        folder = layout.lake / table / f"source={SEED_SOURCE}" / "month=_"
        path = folder / f"seed-{digest}.parquet"
        if not path.exists():
            schema = seed_schemas()[table]
            folder.mkdir(parents=True, exist_ok=True)
            # earlier seeds stay: a reader may still hold a catalog that names them
            tmp = path.with_suffix(".tmp")
            pq.write_table(schema.empty_table(), tmp, compression="zstd")
            make_private(tmp)
            os.replace(tmp, path)
        seeds[table] = path
    return seeds


@functools.cache
def catalog_digest() -> str:
    """A hash of everything the catalog is made of: the public views' SQL, the search macros
    and the stored columns. A new version whose views differ publishes again at its first
    ingest, even with no new data (the manifest keeps the hash the catalog was made with)."""
    texts = [sql.read(name) for name in sql.VIEWS] + [sql.read("materialized"), sql.read("search/macros"),
                                                       _schema_sources(), str(STORED_AT_PUBLISH)]
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]


#: The state tables a catalog carries, each with its comment.
STATE_TABLES = {
    "source_files": "one row per source file read: watermark, epoch and counts",
    "file_versions": "one row per run of lines of a file whose current version is several runs: its epoch "
                     "(0: lines no longer live) and first line; a run ends at the line before the next one",
    "file_retained": "one row per run of lines a store read whole no longer gives, kept: their session has no line left",
    "ingest_runs": "one row per ingest run",
}


def publish(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int) -> None:
    seeds = ensure_seeds(layout)
    files: dict[str, list[str]] = {t: [str(seeds[t])] for t in TABLES}
    for path, table in state.execute(
        "select path, table_name from data_files where retired_run_id is null order by path"
    ).fetchall():
        files[table].append(str(layout.lake / path))
    tmp = layout.db.with_name(f"{layout.db.name}.tmp-{os.getpid()}")
    _discard(tmp)
    outgoing = read_manifest(layout) or {}
    if not carry_forward(layout, outgoing, tmp, files, state):
        _discard(tmp)
        _build(tmp, files, state)
    make_private(tmp)
    base = keep_base(layout, tmp)
    keep_outgoing(layout, state, run_id, [f for paths in outgoing.get("files", {}).values() for f in paths])
    os.replace(tmp, layout.db)
    write_manifest(layout, run_id, files, base)


def _discard(db: Path) -> None:
    for leftover in (db, Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)


def _build(tmp: Path, files: dict[str, list[str]], state: duckdb.DuckDBPyConnection) -> None:
    """A new catalog at `tmp`, every view created and bound."""
    con = connect(tmp)
    con.execute("set parquet_metadata_cache = true")   # every view binds over every lake file again
    try:
        # one transaction: each view and column comment committed alone paid its own commit
        # (the comments took 0.20 s of a 0.97 s publish of the 1 GB bench warehouse)
        con.execute("begin transaction")
        for name, comment in STATE_TABLES.items():
            _from_state(con, state, name, f"create table {name} as select * from state_rows")
            con.execute(f"comment on table {name} is {sql_literal(comment)}")
        _lake(con, files)
        con.execute(sql.read("search/macros"))
        for name in sql.VIEWS:
            text = sql.read(name)
            view = sql.view_name(name)
            if view.startswith("int_chain_"):
                continue          # only ingest needs these: it materializes the chains
            if view in STORED_AT_PUBLISH:
                _stored(con, view)
                continue
            body = sql.read("materialized").replace("{name}", view) if view in MATERIALIZED else text
            con.execute(f"create view {view} as {body}")
            if g := docs.grain(text):
                con.execute(f"comment on view {view} is {sql_literal(g)}")
            docs.apply_comments(con, view, text)
        con.execute("commit")
        con.execute("checkpoint")
    finally:
        con.close()


def _lake(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]]) -> None:
    """The views over the lake's current files, which change with every run."""
    for table in TABLES:
        con.execute(
            f"create view lake_{table} as select * from read_parquet({sql_list(files[table])}, "
            "hive_partitioning = true, union_by_name = true)"
        )


def _stored(con: duckdb.DuckDBPyConnection, view: str) -> None:
    text = sql.read(f"views/{view}")
    con.execute(f"create table {view} as {text}")
    if g := docs.grain(text):
        con.execute(f"comment on table {view} is {sql_literal(g)}")
    docs.apply_comments(con, view, text)


def carry_forward(layout: Layout, manifest: dict, tmp: Path, files: dict[str, list[str]],
                  state: duckdb.DuckDBPyConnection) -> bool:
    """Make the new catalog at `tmp` from the last one's private copy (`keep_base`), with
    only what a run changes made again: the lake views over the new file lists, the state
    tables (a big one by the rows that differ from the state's, ROWS_SYNCED), and the stored
    tables' rows that follow from them. False, with nothing committed, where the catalog must
    be built whole instead.

    Creating every view binds it over every lake file, and its comments are written again:
    about 0.15 s of a 0.25 s publish of the 1 GB bench warehouse, paid at every pick-up under
    `watch` for views that had not changed. A view keeps the column types it was bound with
    and fails at query time if they change, so views are carried forward only when nothing
    they bind to can differ from the catalog they were bound in: the same SQL
    (`catalog_digest`) and DuckDB version, the copy as the last publish left it, the same
    columns in the state's tables as in the catalog's, and the same column names and types
    in every relation made again.

    The published catalog itself is never read: opening and closing it in this process would
    drop the locks by which a notebook running ingest here shows it still reads an older one
    (etl/readers.py), and a reader may have written into it."""
    base = layout.catalog_base
    if manifest.get("catalog") != catalog_digest() or manifest.get("engine") != duckdb.__version__:
        return False
    try:
        if manifest.get("catalog_base") != file_identity(base):
            return False
        shutil.copyfile(base, tmp)
        con = connect(tmp)
    except (OSError, duckdb.Error):
        return False
    replaced = [*STATE_TABLES, *(f"lake_{t}" for t in TABLES), *STORED_AT_PUBLISH]
    try:
        con.execute("set parquet_metadata_cache = true")
        con.execute("begin transaction")
        before = _columns(con, replaced)
        if _columns(state, list(STATE_TABLES)) != _columns(con, list(STATE_TABLES)):
            return False
        counts = state.execute("select " + ", ".join(f"(select count(*) from {name})" for name in STATE_TABLES)
                               ).fetchall()[0]
        changed = {name: _sync_rows(con, state, name) if n > ROWS_SYNCED else _replace_rows(con, state, name)
                   for name, n in zip(STATE_TABLES, counts)}
        sessions = None
        if changed["source_files"] is not None:
            ids = set(changed["source_files"]) | _part_file_ids(
                manifest.get("files", {}).get("session_parts", []), files["session_parts"])
            sessions = _sessions_of(con, ids) if len(ids) <= SESSIONS_RECOMPUTED else None
        for table in TABLES:
            con.execute(f"drop view lake_{table}")
        _lake(con, files)
        for view in STORED_AT_PUBLISH if sessions is None else ("int_current_files",):
            con.execute(f"drop table {view}")
            _stored(con, view)
        if sessions is not None:
            _restore_sessions(con, sessions | _sessions_of(con, ids))
        if _columns(con, replaced) != before:
            return False
        con.execute("commit")
        con.execute("checkpoint")
        return True
    except (duckdb.Error, OSError):
        return False
    finally:
        con.close()          # uncommitted, everything above is rolled back


#: The most source files whose sessions a carried catalog computes again, row by row; past
#: it, the `sessions` table is made again whole (a run that loaded much, a compaction of
#: session parts). Made whole for 20,000 transcripts it took 50 ms, and writing it and the
#: state tables whole at commit and checkpoint 70 ms more, at each pick-up of one line.
SESSIONS_RECOMPUTED = 1000

#: The fewest rows of a state table that a carried catalog changes row by row (_sync_rows);
#: a smaller one is copied whole, and when `source_files` is, the `sessions` table is made
#: whole too. Telling rows apart costs a few statements a table whatever its size: a publish
#: at a pick-up row by row / whole, medians of 7 paired runs: 1.06 at 2,000 transcripts,
#: 0.97-1.16 at 5,000 and 6,000, 0.93 at 7,500, 0.86 at 10,000, 0.76 at 15,000.
ROWS_SYNCED = 5000

#: The state tables whose rows name a source file.
FILE_ROWS = ("source_files", "file_versions", "file_retained")


def _sync_rows(con: duckdb.DuckDBPyConnection, state: duckdb.DuckDBPyConnection, name: str) -> list[int]:
    """Make the catalog's copy of a state table hold the state's rows again, deleting and
    inserting only the rows that differ, told apart by a hash of the whole row (whatever
    wrote them); returns the file ids of those rows (none for a table without file ids)."""
    con.register("state_hashes", state.sql(f"select hash(t) as h from {name} as t").to_arrow_table())
    try:
        fresh = con.sql(f"select h from state_hashes except select hash(t) from {name} as t").to_arrow_table()
        gone = con.execute(f"delete from {name} as t where hash(t) not in (select h from state_hashes) "
                           f"returning {'file_id' if name in FILE_ROWS else 'null'}").fetchall()
    finally:
        con.unregister("state_hashes")
    ids = [r[0] for r in gone]
    if fresh.num_rows:
        state.register("fresh_hashes", fresh)
        try:
            rows = state.sql(f"select t.* from {name} as t semi join fresh_hashes as f "
                             "on f.h = hash(t)").to_arrow_table()
        finally:
            state.unregister("fresh_hashes")
        con.register("fresh_rows", rows)
        try:
            con.execute(f"insert into {name} select * from fresh_rows")
        finally:
            con.unregister("fresh_rows")
        if name in FILE_ROWS:
            ids += rows.column("file_id").to_pylist()
    return ids


def _replace_rows(con: duckdb.DuckDBPyConnection, state: duckdb.DuckDBPyConnection, name: str) -> None:
    """Make the catalog's copy of a state table hold the state's rows again, all of them."""
    con.execute(f"delete from {name}")
    _from_state(con, state, name, f"insert into {name} select * from state_rows")


def _from_state(con: duckdb.DuckDBPyConnection, state: duckdb.DuckDBPyConnection, name: str, statement: str) -> None:
    """Run `statement` in the catalog with the state table's rows as `state_rows`."""
    con.register("state_rows", state.sql(f"select * from {name}").to_arrow_table())
    try:
        con.execute(statement)
    finally:
        con.unregister("state_rows")


def _part_file_ids(before: list[str], after: list[str]) -> set[int]:
    """The source files whose session parts are in a Parquet file the catalog named before or
    names now, not both: a run's new parts, and the files compaction merged. A file gone
    from the disk raises OSError: the caller then builds the catalog whole."""
    moved = sorted(set(before) ^ set(after))
    if not moved:
        return set()
    return {fid for path in moved for fid in pq.read_table(path, columns=["file_id"]).column("file_id").to_pylist()}


def _sessions_of(con: duckdb.DuckDBPyConnection, ids: set[int]) -> set[tuple[str, str]]:
    """The (source, session id) of every session part of these source files in the lake the
    catalog reads now, of any version: a superset of the sessions they add to. Asked of the
    lake before a run and after it: a file that a run made another session's (Gemini CLI names
    its session inside) left parts of the old one that compaction may drop in the same run."""
    if not ids:
        return set()
    return set(con.execute(f"select distinct source, session_id from lake_session_parts "
                           f"where file_id in ({', '.join(str(int(i)) for i in sorted(ids))})").fetchall())


def _restore_sessions(con: duckdb.DuckDBPyConnection, sessions: set[tuple[str, str]]) -> None:
    """The `sessions` rows of these sessions computed again from the lake the catalog reads,
    the rest left as they were. The literal lists let DuckDB read only their parts."""
    if not sessions:
        return
    keys = sorted(sessions)
    con.register("recomputed", pa.table({"source": pa.array([k[0] for k in keys], pa.string()),
                                         "session_id": pa.array([k[1] for k in keys], pa.string())}))
    try:
        con.execute("delete from sessions as s where exists (select 1 from recomputed as r "
                    "where r.source = s.source and r.session_id = s.session_id)")
        sources = ", ".join(sql_literal(s) for s in sorted({k[0] for k in keys}))
        ids = ", ".join(sql_literal(k[1]) for k in keys)
        con.execute(f"insert into sessions select * from ({sql.read('views/sessions')}) as s "
                    f"where s.source in ({sources}) and s.session_id in ({ids}) and exists "
                    "(select 1 from recomputed as r where r.source = s.source and r.session_id = s.session_id)")
    finally:
        con.unregister("recomputed")


def keep_base(layout: Layout, catalog: Path) -> list[int] | None:
    """Keep a private copy of the catalog about to be published, for the next run to carry
    forward; returns its identity, which the manifest keeps (None when it could not be kept:
    the next run builds its catalog whole)."""
    base = layout.catalog_base
    for leftover in base.parent.glob(f"{base.name}.tmp-*"):       # of a run that died here
        leftover.unlink(missing_ok=True)
    staged = base.with_name(f"{base.name}.tmp-{os.getpid()}")
    try:
        shutil.copyfile(catalog, staged)
        make_private(staged)
        os.replace(staged, base)
        return file_identity(base)
    except OSError:
        staged.unlink(missing_ok=True)
        return None


def file_identity(path: Path) -> list[int]:
    """What tells a file apart from any other, or from itself after a write."""
    st = path.stat()
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _columns(con: duckdb.DuckDBPyConnection, names: list[str]) -> list[tuple]:
    return con.execute(
        "select table_name, column_name, data_type from duckdb_columns() where schema_name = 'main' "
        f"and table_name in ({', '.join(sql_literal(n) for n in names)}) order by table_name, column_index"
    ).fetchall()


def write_manifest(layout: Layout, run_id: int, files: dict[str, list[str]], base: list[int] | None = None) -> None:
    body = json.dumps({"format": 1, "data_run_id": run_id, "catalog": catalog_digest(), "engine": duckdb.__version__,
                       "catalog_base": base, "files": files},
                      indent=1).encode()
    replace_durably(layout.manifest, body, layout.manifest.with_suffix(".tmp"))
