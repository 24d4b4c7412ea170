"""The search index, built from the rows a run has just written.

It runs as its own stage over each loading batch's records and blocks (their row groups in
the files the load left in staging, etl/partfiles.py), so extraction never waits on
tokenizing, its cost is measured on its own, and the same workers build it in parallel. The SQL is in sql/search/ (documents, word counts, postings, document lengths); the
words themselves are cut by etl/tokens.py.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from convarch import sql
from convarch.etl.duck import HIVE, sql_list
from convarch.etl.partfiles import PartitionFiles, RowGroup, rows_of
from convarch.etl.tokens import words



def index_batch(con: duckdb.DuckDBPyConnection, parts: PartitionFiles, groups: list[RowGroup],
                seeds: dict[str, Path]) -> None:
    """Index one loading batch, read back from its row groups, into the worker's open files."""
    records = [g for g in groups if g.table == "records"]
    if not records:
        return
    blocks = [g for g in groups if g.table == "blocks"]
    con.execute(f"create or replace temp view records_batch as {rows_of(records)}")
    blocks_rows = rows_of(blocks) if blocks else f"select * from read_parquet({sql_list([seeds['blocks']])}, {HIVE})"
    con.execute(f"create or replace temp view blocks_batch as {blocks_rows}")
    con.execute(f"create or replace temp table search_docs_batch as {sql.read('search/docs')}")
    docs = con.sql("select doc_id, body from search_docs_batch").to_arrow_table()
    con.register("search_tokens_batch", words(docs["doc_id"], docs["body"]))
    del docs
    con.execute(f"create or replace temp table search_words_batch as {sql.read('search/words')}")
    con.unregister("search_tokens_batch")
    for table, query in (("search_docs", "search/doc_lengths"), ("postings", "search/postings")):
        parts.write(con, table, sql.read(query))
    con.execute("drop table search_docs_batch; drop table search_words_batch; "
                "drop view records_batch; drop view blocks_batch")
