"""One worker's open Parquet files during a run: a file per (table, source, month), a row
group per batch.

Batches stay small so memory stays bounded, but a file per batch and partition left a
gigabyte's first load as a few hundred files of a megabyte or two: every query opened each
footer, and merging them later rewrote the whole load. Keeping one writer open per partition
lets each batch add a row group to the same file instead, closed when it passes FILE_BYTES
or the stage ends. A batch's rows stay addressable as their row groups, which is how the index
stage reads them back.

The search postings are the exception: a query wants the few rows of its terms, and a batch's
postings hold every term, so batch-sized row groups let no reader skip anything. Their rows
are held across batches (RUN_ROWS per worker at most) and written sorted by term in narrow row
groups, whose min/max terms then let a reader skip all but the groups of its own terms.
"""
from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from convarch.etl.duck import sql_literal
from convarch.etl.gather import gathered
from convarch.etl.written import Written

#: A file is closed and the next batch starts another once it passes this size: as big as a
#: merged file (etl/compact.py), so a first load leaves nothing to merge.
FILE_BYTES = 256 << 20
#: At most this many files open per worker: years of history over many sources have hundreds
#: of partitions, and each open file holds a descriptor; the least recently written closes.
MAX_OPEN = 48
PARTITION_COLUMNS = ("source", "month")
#: Tables written in sorted runs instead of a row group per batch, and the column they are
#: sorted by (merging keeps the order too, etl/compact.py).
SORTED_BY = {"postings": "term"}
#: Rows a worker holds before it sorts and writes them (~45 bytes a posting, so ~48 MB). A
#: search reads a row group or two of each run per term, so longer runs are read less of.
RUN_ROWS = 1 << 20
#: Rows per row group of a sorted run; narrower groups are skipped more finely but each costs
#: every reader time in the footer (8k-row groups: more planning than the rows they saved).
RUN_GROUP_ROWS = 1 << 15
#: Rows DuckDB hands over at a time when a write is streamed; they gather into row groups of
#: the caller's size.
STREAM_ROWS = 4096
#: Columns of free text or raw JSON, written without min/max statistics or a dictionary. No
#: query prunes row groups by them, yet their statistics held up to two whole values per row
#: group in every file's footer, which each read-back parses, and the writer hashed every value
#: for a dictionary it then gave up on.
WIDE_COLUMNS = frozenset({"raw", "text", "metadata_raw", "chain_raw", "output_text", "tool_input", "leaf_text",
                          "last_prompt", "summary"})


@dataclass(frozen=True, slots=True)
class RowGroup:
    """One batch's rows of one partition: row group `index` of the staged file at `path`,
    rows [first_row, first_row + rows) of that file."""

    table: str
    path: Path
    index: int
    source: str
    month: str
    first_row: int
    rows: int


@dataclass
class _Open:
    writer: pq.ParquetWriter
    path: Path
    rel: str
    table: str
    source: str
    month: str
    groups: int = 0
    rows: int = 0


@dataclass
class PartitionFiles:
    run_id: int
    staging: Path            # files go to staging/<table>/source=…/month=…/
    worker: int
    prefix: str = "w"        # names the stage in file names: w (load), i (index), g (chains)
    _open: dict[tuple[str, str, str], _Open] = field(default_factory=dict)
    _closed: list[Written] = field(default_factory=list)
    _numbers: itertools.count = field(default_factory=itertools.count)
    _held: dict[tuple[str, str, str], list[pa.Table]] = field(default_factory=dict)
    _held_rows: int = 0

    def write(self, con: duckdb.DuckDBPyConnection, table: str, select: str, *,
              group_bytes: int | None = None) -> list[RowGroup]:
        """Append the rows of `select` (which has source and month columns) as one row group
        per partition they fall in, or, with `group_bytes`, streamed in row groups of about
        that many bytes each. The rows of a table in SORTED_BY are held for a sorted run
        instead, so they have no row groups of their own to return."""
        rel = con.sql(select)
        types = [str(t) for t in rel.types]
        out: list[RowGroup] = []
        chunks = [rel.to_arrow_table()] if group_bytes is None else _chunks(rel.to_arrow_reader(STREAM_ROWS), group_bytes)
        for chunk in chunks:
            rows = _keep_json(chunk, types)
            del chunk
            for source, month, part in _partitions(rows):
                if table in SORTED_BY:
                    self._held.setdefault((table, source, month), []).append(part)
                    self._held_rows += part.num_rows
                else:
                    out.append(self._append(table, source, month, part))
            del rows
        if self._held_rows >= RUN_ROWS:
            self._write_runs()
        # Arrow's allocator (mimalloc) would keep each worker's largest batch for good; handing
        # it back took the 1 GB bench corpus's peak RSS from 631 MB to 551-562 MB
        pa.default_memory_pool().release_unused()
        return out

    def close(self) -> list[Written]:
        """Finish every open file; returns all the files this worker wrote in the run."""
        self._write_runs()
        for f in list(self._open.values()):
            self._close(f)
        return self._closed

    def _append(self, table: str, source: str, month: str, part: pa.Table) -> RowGroup:
        """Write `part` as one row group of its partition's open file."""
        f = self._file(table, source, month, part.schema)
        f.writer.write_table(part, row_group_size=max(part.num_rows, 1))
        group = RowGroup(table, f.path, f.groups, source, month, f.rows, part.num_rows)
        f.groups += 1
        f.rows += part.num_rows
        if os.path.getsize(f.path) >= FILE_BYTES:
            self._close(f)
        return group

    def _write_runs(self) -> None:
        """Sort each partition's held rows by its table's key and write them as one run."""
        held, self._held, self._held_rows = self._held, {}, 0
        for (table, source, month), parts in held.items():
            rows = pa.concat_tables(parts)
            parts.clear()
            order = _sorting(rows[SORTED_BY[table]])
            # a row group at a time, so the sorted copy never holds the whole run
            for start in range(0, rows.num_rows, RUN_GROUP_ROWS):
                self._append(table, source, month, rows.take(order.slice(start, RUN_GROUP_ROWS)))
            del rows, order
        pa.default_memory_pool().release_unused()

    def abandon(self) -> None:
        """Close every open file after a failure; the run's staging folder is deleted anyway."""
        self._held.clear()
        for f in self._open.values():
            try:
                f.writer.close()
            except Exception:      # noqa: BLE001 - a failure is already on its way up
                pass
        self._open.clear()

    def _file(self, table: str, source: str, month: str, schema: pa.Schema) -> _Open:
        key = (table, source, month)
        f = self._open.pop(key, None)
        if f is not None:
            self._open[key] = f            # most recently written last
        else:
            while len(self._open) >= MAX_OPEN:
                self._close(next(iter(self._open.values())))
            name = f"r{self.run_id:06d}_{self.prefix}{self.worker:02d}_{next(self._numbers):05d}.parquet"
            rel = f"{table}/source={source}/month={month}/{name}"
            path = self.staging / rel
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            narrow = [n for n in schema.names if n not in WIDE_COLUMNS]
            writer = pq.ParquetWriter(path, schema, compression="zstd", write_statistics=narrow,
                                      use_dictionary=narrow)
            os.chmod(path, 0o600)
            f = self._open[key] = _Open(writer, path, rel, table, source, month)
        return f

    def _close(self, f: _Open) -> None:
        f.writer.close()
        del self._open[(f.table, f.source, f.month)]
        self._closed.append(Written(f.rel, f.table, f.source, f.month, f.rows, f.path.stat().st_size, f.path))


class PerWorker:
    """The PartitionFiles of each worker thread in one stage of a run (loading, index, chains):
    a thread writes only its own, and the stage closes them all when its work is done."""

    def __init__(self, run_id: int, staging: Path, prefix: str):
        self.run_id = run_id
        self.staging = staging
        self.prefix = prefix
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[PartitionFiles] = []

    def mine(self) -> PartitionFiles:
        files = getattr(self._local, "files", None)
        if files is None:
            with self._lock:
                files = self._local.files = PartitionFiles(self.run_id, self.staging, len(self._all), self.prefix)
                self._all.append(files)
        return files

    def close(self) -> list[Written]:
        written: list[Written] = []
        for files in self._all:
            written += files.close()
        return written

    def abandon(self) -> None:
        for files in self._all:
            files.abandon()


def _sorting(column: pa.ChunkedArray) -> pa.Array:
    """The indices that sort a string column, stably. A run repeats each term many times, so
    the distinct strings are ranked once and the rows sorted by their integer rank: 2.2 times
    faster than sorting the strings themselves (512k postings: 88 ms instead of 198 ms)."""
    encoded = pc.dictionary_encode(column).combine_chunks()
    ranks = pc.rank(encoded.dictionary, sort_keys="ascending", tiebreaker="first")
    return pc.sort_indices(pc.take(ranks, encoded.indices))


def _chunks(reader: pa.RecordBatchReader, group_bytes: int) -> Iterator[pa.Table]:
    """The reader's batches gathered into tables of about `group_bytes` each; none when it
    has no rows."""
    for held in gathered(reader, lambda b: b.nbytes, group_bytes):
        yield pa.Table.from_batches(held, reader.schema)


def _partitions(rows: pa.Table):
    """(source, month, rows without those two columns) for each partition of `rows`, in order."""
    if rows.num_rows == 0:
        return
    order = [(c, "ascending") for c in PARTITION_COLUMNS]
    keys = rows.select(list(PARTITION_COLUMNS)).group_by(list(PARTITION_COLUMNS)).aggregate(
        [([], "count_all")]).sort_by(order)
    if keys.num_rows > 1:
        # one stable sort by partition and a slice each: a filter per partition copied the
        # batch once per month it spans, and batches span several
        rows = rows.take(pc.sort_indices(rows, order))
    start = 0
    for source, month, n in zip(*(keys[c].to_pylist() for c in (*PARTITION_COLUMNS, "count_all"))):
        yield source, month, rows.slice(start, n).drop_columns(list(PARTITION_COLUMNS))
        start += n


_JSON = pa.json_(pa.string())


def _keep_json(rows: pa.Table, types: list[str]) -> pa.Table:
    """Arrow has no plain JSON type, so DuckDB hands JSON columns over as strings; mark them
    as JSON again so the Parquet files say so, as DuckDB's own writer does."""
    for i, t in enumerate(types):
        if t == "JSON":
            col = rows.column(i)
            rows = rows.set_column(i, pa.field(rows.schema.field(i).name, _JSON), pa.chunked_array(
                [pa.ExtensionArray.from_storage(_JSON, c) for c in col.chunks], type=_JSON))
    return rows


def rows_of(groups: list[RowGroup]) -> str:
    """A query over exactly the rows of some row groups (of one table), partition columns
    included. DuckDB skips every other row group of a file by its row numbers, and reads only
    the columns the query around it uses."""
    parts = [
        f"select * exclude (file_row_number), {sql_literal(g.source)} as source, {sql_literal(g.month)} as month "
        f"from read_parquet({sql_literal(str(g.path))}, file_row_number = true) "
        f"where file_row_number >= {int(g.first_row)} and file_row_number < {int(g.first_row + g.rows)}"
        for g in groups
    ]
    return " union all ".join(parts)
