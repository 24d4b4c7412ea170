"""The search index, built from the rows a run has just written.

It runs as its own stage over each loading batch's records and blocks (their row groups in
the files the load left in staging, etl/partfiles.py), so extraction never waits on
tokenizing, its cost is measured on its own, and the same workers build it in parallel. The SQL is in sql/search/ (documents, word counts, postings, document lengths); the
words themselves are cut by etl/tokens.py.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from convarch import sql
from convarch.etl.duck import HIVE, sql_list
from convarch.etl.partfiles import PartitionFiles, RowGroup, rows_of
from convarch.etl.tokens import words

#: Bytes of document text cut into words and counted at once (see index_batch): pieces of 1,
#: 2, 4 and 16 MB peaked at 570, 602, 641-657 and 885 MB on that session, in the same time;
#: on the 1 GB bench corpus the index stage took 5.77 and 5.71 s against 5.93 and 5.84 whole.
PIECE_BYTES = 2 << 20


def pieces(docs: pa.Table, nbytes: int) -> Iterator[pa.Table]:
    """`docs` in runs of whole rows of about `nbytes` of body each (at least one row a run, and
    one empty run for no rows, so the words table is always made)."""
    if docs.num_rows == 0:
        yield docs
        return
    ends = pc.cumulative_sum(pc.fill_null(pc.binary_length(docs["body"]), 0)).to_pylist()
    start = 0
    while start < docs.num_rows:
        base = ends[start - 1] if start else 0
        stop = max(start + 1, bisect.bisect_right(ends, base + nbytes))
        yield docs.slice(start, stop - start)
        start = stop


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
    for i, piece in enumerate(pieces(docs, PIECE_BYTES)):
        # counted a piece at a time (a document's words all fall in one piece): every word
        # occurrence of a whole batch at once held hundreds of megabytes per worker for
        # batches of long messages (a 145 MB Gemini CLI session: index stage peak 1,189 MB on
        # two workers, 641-657 MB in pieces of 4 MB)
        con.register("search_tokens_batch", words(piece["doc_id"], piece["body"]))
        verb = "insert into search_words_batch" if i else "create or replace temp table search_words_batch as"
        con.execute(f"{verb} {sql.read('search/words')}")
        con.unregister("search_tokens_batch")
    del docs
    for table, query in (("search_docs", "search/doc_lengths"), ("postings", "search/postings")):
        parts.write(con, table, sql.read(query))
    con.execute("drop table search_docs_batch; drop table search_words_batch; "
                "drop view records_batch; drop view blocks_batch")
