"""The search index, built from the rows a run has just written.

It runs as its own stage over each staged batch's records and blocks, so extraction never
waits on tokenizing, its cost is measured on its own, and the same workers build it in
parallel. The SQL is in sql/search/ (documents, word counts, postings, document lengths); the
words themselves are cut by etl/tokens.py.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from convarch import sql
from convarch.etl.load import Written, copy_partitioned, written_files
from convarch.etl.tokens import words

HIVE = "hive_partitioning = true, hive_types = {'source': 'VARCHAR', 'month': 'VARCHAR'}"


def _files(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def index_batch(con: duckdb.DuckDBPyConnection, batch: Path, run_id: int, seeds: dict[str, Path]) -> list[Written]:
    """Index one staged batch folder (…/bNNNNN holding records/ and blocks/)."""
    records = sorted((batch / "records").rglob("*.parquet"))
    if not records:
        return []
    blocks = sorted((batch / "blocks").rglob("*.parquet")) or [seeds["blocks"]]
    k = batch.name[1:]
    con.execute(f"create or replace temp view records_batch as select * from read_parquet({_files(records)}, {HIVE})")
    con.execute(f"create or replace temp view blocks_batch as select * from read_parquet({_files(blocks)}, {HIVE})")
    con.execute(f"create or replace temp table search_docs_batch as {sql.read('search/docs')}")
    docs = con.sql("select doc_id, body from search_docs_batch").to_arrow_table()
    con.register("search_tokens_batch", words(docs["doc_id"], docs["body"]))
    del docs
    con.execute(f"create or replace temp table search_words_batch as {sql.read('search/words')}")
    con.unregister("search_tokens_batch")
    out: list[Written] = []
    for table, query in (("search_docs", "search/doc_lengths"), ("postings", "search/postings")):
        target = batch / table
        copy_partitioned(con, sql.read(query), target, f"r{run_id:06d}_b{k}_{{i}}")
        out += [Written(str(rel), table, parts["source"], parts["month"], n, p.stat().st_size, p)
                for p, rel, parts, n in written_files(target, batch)]
    con.execute("drop table search_docs_batch; drop table search_words_batch; "
                "drop view records_batch; drop view blocks_batch")
    return out
