"""A batch of long lines loads within a worker's memory.

DuckDB holds a few times each vector's bytes (2,048 rows) per operator, so an adapter's SQL
that keeps several copies of a message's content (a list parsed again inside an unnest, JSON
built by the records query and parsed back by the blocks query, a type test that parses a
whole value) runs out of memory on a batch of long tool output. The loader survives that by
loading the batch again in halves, at the price of the failed attempt and of smaller batches.
Here each adapter's contract store, its long strings grown to a few KB as tool output is,
fills one full batch (FLUSH_BYTES) and goes through the adapter's queries with the least
memory a worker gets, however many a run starts (WORKER_MEMORY_MB)."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from convarch import adapters, sql
from convarch.etl.duck import connect
from convarch.etl.extract import FLUSH_BYTES
from convarch.etl.workers import WORKER_MEMORY_MB, Workers
from test_lines_stand_alone import store_lines

LONG = 6000


def grown(value):
    """`value` with each string of 40 characters or more repeated to about LONG characters,
    inside JSON text too (a tool's arguments, a wrapped line)."""
    if isinstance(value, list):
        return [grown(v) for v in value]
    if isinstance(value, dict):
        return {k: grown(v) for k, v in value.items()}
    if isinstance(value, str) and value.startswith(("{", "[")):
        try:
            return json.dumps(grown(json.loads(value)))
        except ValueError:
            return value
    if isinstance(value, str) and len(value) >= 40:
        return (value + " ") * max(1, LONG // (len(value) + 1))
    return value


def full_batch(name: str, tmp_path) -> tuple[pa.Table, pa.Table]:
    lines, files = store_lines(name, tmp_path)
    fat = [(row["file_id"], json.dumps(grown(json.loads(row["line"])), ensure_ascii=False))
           for row in lines.to_pylist()]
    rows, nbytes = [], 0
    while nbytes < FLUSH_BYTES:
        file_id, text = fat[len(rows) % len(fat)]
        rows.append({"file_id": file_id, "line_no": len(rows) + 1, "byte_offset": nbytes, "line": text})
        nbytes += len(text.encode()) + 1
    return pa.Table.from_pylist(rows), files


@pytest.mark.parametrize("name", sorted(adapters.ADAPTERS))
def test_a_full_batch_of_long_lines_loads_within_a_workers_memory(name, tmp_path):
    lines, files = full_batch(name, tmp_path)
    ext = adapters.ADAPTERS[name].EXTRACT
    con = connect(threads=1, preserve_insertion_order=False, memory_limit=f"{WORKER_MEMORY_MB}MB")
    con.register("batch_files", files)
    con.register("lines", lines)
    con.execute(f"create temp table records_batch as {sql.read(ext.records)}")
    con.execute(sql.read("extract/fill_month"))
    con.execute(f"create temp table blocks_batch as {sql.read(ext.blocks)}")
    assert con.execute("select count(*) from records_batch").fetchone()[0] == lines.num_rows
    assert con.execute("select count(*) from blocks_batch").fetchone()[0] > 0


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_every_worker_gets_the_memory_a_full_batch_needs(n, tmp_path):
    """However many workers a run starts, each gets at least the memory the test above loads a
    full batch in: with 3 or 4 workers each had 200 MB, and most adapters' batches of long
    lines ran out of it and loaded again in halves."""
    assert Workers(n, tmp_path).memory_mb >= WORKER_MEMORY_MB
