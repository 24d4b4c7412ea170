"""Write one export partition's rows in order, in memory that does not grow with the partition.

DuckDB's ORDER BY holds a sort's wide rows in memory: a partition of tool calls with 700 MB of
output text took 1.5 GB to sort, and under a 500 MB limit the sort failed instead of spilling.
So the order is worked out on narrow columns alone (the sort key, a row's size, and where the
row lies in the staging files); the rows are cut, in that order, into slices of about
SLICE_BYTES, written apart by slice in one streaming pass, and each slice is sorted on its own
and appended to the one file as its next row groups. A partition that fits in one slice is
sorted straight from its staging files.
"""
from __future__ import annotations

import queue
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from convarch.etl.duck import sql_ident, sql_literal
from convarch.etl.gather import gathered

#: Text a slice holds at most (a row bigger than that is a slice of its own): what one sort
#: keeps in memory, about four times over.
SLICE_BYTES = 64 << 20
#: Arrow bytes of an exported file's row group: held in memory until written.
ROW_GROUP_BYTES = 64 << 20
#: Rows DuckDB hands over at a time (tool outputs make rows of megabytes).
BATCH_ROWS = 1024
#: Batches fetched ahead of the writer.
QUEUED_BATCHES = 4
#: DuckDB's own zstd level, so the files are no bigger than its writer made them.
ZSTD_LEVEL = 3
#: What each row counts for besides its text.
ROW_OVERHEAD = 64

_SLICE, _ORDINAL = "_export_slice", "_export_ordinal"


def _size_of(columns: list[tuple[str, str]]) -> str:
    """A row's size in bytes, near enough to cut slices by: its text plus an overhead."""
    texts = [f"coalesce(strlen({sql_ident(c)}), 0)" for c, t in columns if t == "VARCHAR"]
    return " + ".join([*texts, str(ROW_OVERHEAD)])


def write_sorted(con: duckdb.DuckDBPyConnection, staged: str, keep: str, params: dict,
                 columns: list[tuple[str, str]], order_by: str, dest: Path, cut: Path) -> int:
    """Write the rows of the staging files `staged` (a read_parquet glob) that pass `keep`
    into `dest`, in `order_by` order, with only `columns`; the slices are written into the
    folder `cut`, which is removed again, whether or not the write succeeds. Returns the
    number of slices the rows were cut into."""
    cols = ", ".join(f"s.{sql_ident(c)}" for c, _ in columns)
    source = f"read_parquet({staged}, hive_partitioning = false, filename = true, file_row_number = true)"
    con.execute(
        f"create or replace temp table export_order as "
        f"select filename, file_row_number, row_number() over w as {_ORDINAL}, "
        f"(sum({_size_of(columns)}) over (w rows unbounded preceding) - 1) // {SLICE_BYTES} as {_SLICE} "
        f"from {source} as s where {keep} window w as (order by {order_by})",
        params,
    )
    try:
        slices = con.execute(f"select count(distinct {_SLICE}) from export_order").fetchall()[0][0]
        if slices <= 1:
            _append(dest, [con.sql(f"select {cols} from {source} as s where {keep} order by {order_by}",
                                   params=params).to_arrow_reader(BATCH_ROWS)])
            return slices
        shutil.rmtree(cut, ignore_errors=True)
        con.execute(
            f"copy (select {cols}, o.{_ORDINAL}, o.{_SLICE} from {source} as s "
            f"join export_order as o using (filename, file_row_number)) "
            f"to {sql_literal(str(cut))} (format parquet, compression snappy, partition_by ({_SLICE}), "
            f"row_group_size_bytes '8MB')"
        )
        numbers = sorted(int(p.name.split("=", 1)[1]) for p in cut.iterdir() if p.name.startswith(f"{_SLICE}="))
        plain = ", ".join(sql_ident(c) for c, _ in columns)
        _append(dest, (con.sql(
            f"select {plain} from read_parquet({sql_literal(str(cut / f'{_SLICE}={n}' / '*.parquet'))}, hive_partitioning = false) "
            f"order by {_ORDINAL}").to_arrow_reader(BATCH_ROWS) for n in numbers))
        return len(numbers)
    finally:
        shutil.rmtree(cut, ignore_errors=True)
        con.execute("drop table if exists export_order")


def _append(dest: Path, readers) -> None:
    """Stream record batches from each reader, in turn, into one zstd Parquet file whose row
    groups are cut at about ROW_GROUP_BYTES. The batches are fetched on a thread of their own,
    so DuckDB sorts the next slice while this one is compressed (both let go of the GIL)."""
    batches: queue.Queue = queue.Queue(maxsize=QUEUED_BATCHES)
    stop = threading.Event()

    def produce() -> None:
        try:
            for reader in readers:
                for batch in reader:
                    while not stop.is_set():
                        try:
                            batches.put(batch, timeout=0.1)
                            break
                        except queue.Full:
                            continue
                    if stop.is_set():
                        return
            batches.put(None)
        except BaseException as exc:       # handed to the writing thread, which raises it
            batches.put(exc)

    def received() -> Iterator[pa.RecordBatch]:
        while (batch := batches.get()) is not None:
            if isinstance(batch, BaseException):
                raise batch
            yield batch

    fetcher = threading.Thread(target=produce, name="export-fetch", daemon=True)
    fetcher.start()
    writer = None
    try:
        for held in gathered(received(), lambda b: b.nbytes, ROW_GROUP_BYTES):
            if writer is None:
                writer = pq.ParquetWriter(dest, held[0].schema, compression="zstd", compression_level=ZSTD_LEVEL)
            if rows := [b for b in held if b.num_rows]:
                table = pa.Table.from_batches(rows)
                writer.write_table(table, row_group_size=table.num_rows)
    finally:
        stop.set()
        fetcher.join()
        if writer is not None:
            writer.close()
