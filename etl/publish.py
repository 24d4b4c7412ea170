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
#: which search, handoff and listings would otherwise pay on every call.
STORED_AT_PUBLISH = ("sessions",)
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
    "ingest_runs": "one row per ingest run",
}


def publish(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int) -> None:
    seeds = ensure_seeds(layout)
    files: dict[str, list[str]] = {t: [str(seeds[t])] for t in TABLES}
    for path, table in state.execute(
        "select path, table_name from data_files where retired_run_id is null order by path"
    ).fetchall():
        files[table].append(str(layout.lake / path))
    rows = {name: state.sql(f"select * from {name}").to_arrow_table() for name in STATE_TABLES}

    tmp = layout.db.with_name(f"{layout.db.name}.tmp-{os.getpid()}")
    _discard(tmp)
    outgoing = read_manifest(layout) or {}
    if not carry_forward(layout, outgoing, tmp, files, rows):
        _discard(tmp)
        _build(tmp, files, rows)
    make_private(tmp)
    base = keep_base(layout, tmp)
    keep_outgoing(layout, state, run_id, [f for paths in outgoing.get("files", {}).values() for f in paths])
    os.replace(tmp, layout.db)
    write_manifest(layout, run_id, files, base)


def _discard(db: Path) -> None:
    for leftover in (db, Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)


def _build(tmp: Path, files: dict[str, list[str]], rows: dict[str, pa.Table]) -> None:
    """A new catalog at `tmp`, every view created and bound."""
    con = connect(tmp)
    con.execute("set parquet_metadata_cache = true")   # every view binds over every lake file again
    try:
        # one transaction: each view and column comment committed alone paid its own commit
        # (the comments took 0.20 s of a 0.97 s publish of the 1 GB bench warehouse)
        con.execute("begin transaction")
        _state_and_lake(con, files, rows)
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


def _state_and_lake(con: duckdb.DuckDBPyConnection, files: dict[str, list[str]], rows: dict[str, pa.Table]) -> None:
    """The parts of a catalog that change with every run: the state tables and the lake views
    over the current file lists."""
    for name, comment in STATE_TABLES.items():
        con.register("state_rows", rows[name])
        con.execute(f"create table {name} as select * from state_rows")
        con.unregister("state_rows")
        con.execute(f"comment on table {name} is {sql_literal(comment)}")
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
                  rows: dict[str, pa.Table]) -> bool:
    """Make the new catalog at `tmp` from the last one's private copy (`keep_base`), with
    only what a run changes made again: the state tables, the lake views over the new file
    lists and the stored tables. False, with nothing committed, where the catalog must be
    built whole instead.

    Creating every view binds it over every lake file, and its comments are written again:
    about 0.15 s of a 0.25 s publish of the 1 GB bench warehouse, paid at every pick-up under
    `watch` for views that had not changed. A view keeps the column types it was bound with
    and fails at query time if they change, so views are carried forward only when nothing
    they bind to can differ from the catalog they were bound in: the same SQL
    (`catalog_digest`) and DuckDB version, the copy as the last publish left it, and the
    same column names and types in every relation made again.

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
        for name in [*STATE_TABLES, *STORED_AT_PUBLISH]:
            con.execute(f"drop table {name}")
        for table in TABLES:
            con.execute(f"drop view lake_{table}")
        _state_and_lake(con, files, rows)
        for view in STORED_AT_PUBLISH:
            _stored(con, view)
        if _columns(con, replaced) != before:
            return False
        con.execute("commit")
        con.execute("checkpoint")
        return True
    except duckdb.Error:
        return False
    finally:
        con.close()          # uncommitted, everything above is rolled back


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
