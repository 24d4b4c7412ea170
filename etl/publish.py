"""Publish a run: a fresh catalog of views over the registered Parquet, swapped in atomically.

A reader that holds the old catalog keeps the old inode and the files it names (nothing the
catalog names is deleted while it is current), and the next open sees the new state whole.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
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


def publish(layout: Layout, state: duckdb.DuckDBPyConnection, run_id: int) -> None:
    seeds = ensure_seeds(layout)
    files: dict[str, list[str]] = {t: [str(seeds[t])] for t in TABLES}
    for path, table in state.execute(
        "select path, table_name from data_files where retired_run_id is null order by path"
    ).fetchall():
        files[table].append(str(layout.lake / path))
    source_files = state.sql("select * from source_files").to_arrow_table()
    file_versions = state.sql("select * from file_versions").to_arrow_table()
    ingest_runs = state.sql("select * from ingest_runs").to_arrow_table()

    tmp = layout.db.with_name(f"{layout.db.name}.tmp-{os.getpid()}")
    for leftover in (tmp, Path(f"{tmp}.wal")):
        leftover.unlink(missing_ok=True)
    con = connect(tmp)
    con.execute("set parquet_metadata_cache = true")   # every view binds over every lake file again
    try:
        # one transaction: each view and column comment committed alone paid its own commit
        # (the comments took 0.20 s of a 0.97 s publish of the 1 GB bench warehouse)
        con.execute("begin transaction")
        con.register("sf", source_files)
        con.register("runs", ingest_runs)
        con.execute("create table source_files as select * from sf")
        con.register("fv", file_versions)
        con.execute("create table file_versions as select * from fv")
        con.execute("create table ingest_runs as select * from runs")
        con.execute("comment on table source_files is 'one row per source file read: watermark, epoch and counts'")
        con.execute("comment on table ingest_runs is 'one row per ingest run'")
        con.execute("comment on table file_versions is 'one row per run of lines of a file whose current "
                    "version is several runs: its epoch (0: lines no longer live) and first line; a run ends "
                    "at the line before the next one'")
        for table in TABLES:
            con.execute(
                f"create view lake_{table} as select * from read_parquet({sql_list(files[table])}, "
                "hive_partitioning = true, union_by_name = true)"
            )
        con.execute(sql.read("search/macros"))
        for name in sql.VIEWS:
            text = sql.read(name)
            view = sql.view_name(name)
            if view.startswith("int_chain_"):
                continue          # only ingest needs these: it materializes the chains
            body = sql.read("materialized").replace("{name}", view) if view in MATERIALIZED else text
            kind = "table" if view in STORED_AT_PUBLISH else "view"
            con.execute(f"create {kind} {view} as {body}")
            if g := docs.grain(text):
                con.execute(f"comment on {kind} {view} is {sql_literal(g)}")
            docs.apply_comments(con, view, text)
        con.execute("commit")
        con.execute("checkpoint")
    finally:
        con.close()
    make_private(tmp)
    outgoing = read_manifest(layout) or {}
    keep_outgoing(layout, state, run_id, [f for paths in outgoing.get("files", {}).values() for f in paths])
    os.replace(tmp, layout.db)
    write_manifest(layout, run_id, files)


def write_manifest(layout: Layout, run_id: int, files: dict[str, list[str]]) -> None:
    body = json.dumps({"format": 1, "data_run_id": run_id, "catalog": catalog_digest(), "files": files},
                      indent=1).encode()
    replace_durably(layout.manifest, body, layout.manifest.with_suffix(".tmp"))
