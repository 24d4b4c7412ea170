"""Turn batches of lines into Parquet: parse and normalize them with the adapter's SQL, write
records and blocks (as row groups of the worker's open files, etl/partfiles.py) and
quarantine, partitioned by source and month.

Files are written under the run's staging folder and only later moved into the lake and
registered in one state transaction, so a crash leaves nothing a reader can see.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import duckdb
import pyarrow as pa
import pyarrow.compute  # noqa: F401 - pa.compute, for a line's length

from convarch import sql
from convarch.adapters.base import Extract
from convarch.etl.duck import is_json_object
from convarch.etl.lines import BadLine
from convarch.etl.quarantine import json_error, quarantine_rows
from convarch.etl.stage_clock import StageClock
from convarch.etl.written import Written, copy_partitioned, written_files

if TYPE_CHECKING:
    from convarch.etl.partfiles import PartitionFiles, RowGroup

# a single line that does not load within a worker's memory gets this many times its bytes,
# within the cap, before it is quarantined as too_large (a 50 MB line gets 1.4 GB and loads)
LINE_MEMORY_FACTOR = 24
LINE_MEMORY_CAP_MB = 4096

# context lines (Extract.context) keep their order and come before every line of a batch
CONTEXT_LINE_SHIFT = 1 << 50

BATCH_FILES_SCHEMA = pa.schema(
    [
        ("file_id", pa.int64()),
        ("source", pa.string()),
        ("file_epoch", pa.int32()),
        ("source_file", pa.string()),
        ("file_stem", pa.string()),
        ("session_hint", pa.string()),
        ("parent_session_hint", pa.string()),
        ("run_id", pa.int64()),
    ]
)


@dataclass(frozen=True, slots=True)
class FileContext:
    file_id: int
    source: str
    epoch: int
    source_file: str
    file_stem: str
    session_hint: str | None
    parent_session_hint: str | None


class Pending(NamedTuple):
    """A batch a writer gathered and has not loaded yet."""

    files: dict[int, FileContext]
    tables: list[pa.Table]
    bad: list[tuple[BadLine, FileContext]]
    nbytes: int


class BatchWriter:
    """Collects line batches of one source and flushes them through DuckDB into Parquet.

    Batch numbers come from a counter shared by all workers of a run, so file names never
    collide."""

    def __init__(self, run_id: int, staging: Path, extract: Extract, con: duckdb.DuckDBPyConnection,
                 batch_numbers: Iterator[int], parts: PartitionFiles, earlier: pa.Table | None = None,
                 learnt: dict[str, int] | None = None, clock: StageClock | None = None):
        self.run_id = run_id
        self.staging = staging
        self.extract = extract
        self.con = con
        self.batch_numbers = batch_numbers
        self.parts = parts
        self.tables: list[pa.Table] = []
        self.files: dict[int, FileContext] = {}
        self.bad: list[tuple[BadLine, FileContext]] = []
        self.pending_bytes = 0
        self.written: list[Written] = []
        self.batches: list[list[RowGroup]] = []    # each flush's rows, for the index
        self.records_by_file: dict[int, int] = {}
        self.quarantined_by_file: dict[int, int] = {}
        self.sessions: set[tuple[str, str]] = set()
        # bytes of lines the adapter's queries ran out of memory on, halved (see _load_lines),
        # shared by the run's writers: a run makes a writer for each ~16 MB of files, and each
        # would otherwise fail once on its first batch before it learnt to cut its batches
        self.learnt = learnt if learnt is not None else {}
        # the adapter's context lines of the files loaded so far (Extract.context), from the lake
        # for appended files and from each batch as it loads
        self.earlier = earlier
        self.clock = clock if clock is not None else StageClock()

    def add(self, ctx: FileContext, table: pa.Table, bad: list[BadLine], nbytes: int) -> None:
        self.files[ctx.file_id] = ctx
        if table.num_rows:
            self.tables.append(table)
        self.bad.extend((b, ctx) for b in bad)
        self.pending_bytes += nbytes

    def take_pending(self) -> Pending:
        """The batch gathered so far, taken out to be loaded elsewhere (etl/shared_batches.py);
        the writer gathers a new one."""
        pending = Pending(self.files, self.tables, self.bad, self.pending_bytes)
        self.files, self.tables, self.bad, self.pending_bytes = {}, [], [], 0
        return pending

    def load_pending(self, pending: Pending) -> None:
        """Load a batch another writer gathered, as this writer's own."""
        self.files, self.tables, self.bad, self.pending_bytes = pending
        self.flush()

    def absorb(self, other: BatchWriter) -> None:
        """Count what `other` wrote (batches of this writer's files it loaded) as this
        writer's own."""
        self.written += other.written
        self.batches += other.batches
        self.sessions |= other.sessions
        for counts, theirs in ((self.records_by_file, other.records_by_file),
                               (self.quarantined_by_file, other.quarantined_by_file)):
            for fid, n in theirs.items():
                counts[fid] = counts.get(fid, 0) + n

    def flush(self) -> None:
        if not self.tables and not self.bad:
            return
        k = next(self.batch_numbers)
        out = self.staging / f"b{k:05d}"
        con = self.con
        groups: list[RowGroup] = []
        if self.tables:
            # one chunk: DuckDB pays ~2 ms for each Arrow chunk it scans in the records query, so
            # a batch of 1,100 small files (a chunk each) took 2.8 s instead of 0.16 s
            with self.clock.timing("cut"):
                lines_all = pa.concat_tables(self.tables).combine_chunks()
            con.register("batch_files", self._files_table())
            groups += self._load_lines(lines_all)
            con.unregister("batch_files")
        if self.bad:
            with self.clock.timing("quarantine"):
                self._quarantine(out, k)
        if groups:
            self.batches.append(groups)
        self.tables.clear()
        self.bad.clear()
        self.files = {}
        self.pending_bytes = 0

    def _quarantine(self, out: Path, k: int) -> None:
        con = self.con
        con.register("quarantine_batch", quarantine_rows(self.bad, self.run_id))
        for fid, n in con.execute("select file_id, count(*) from quarantine_batch group by 1").fetchall():
            self.quarantined_by_file[fid] = self.quarantined_by_file.get(fid, 0) + n
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._copy("quarantine", "select * from quarantine_batch", out, k)
        con.unregister("quarantine_batch")

    def _load_lines(self, lines: pa.Table, roomy: bool = False) -> list[RowGroup]:
        """Parse, normalize and write a batch's lines; returns their row groups.

        DuckDB's memory for the adapter's queries grows with the bytes in each vector of 2,048
        rows, ten times them and more: a batch of big lines (tool results of 50 KB) ran out of
        a worker's memory where the same bytes in small lines load easily, and ended the whole
        run. So on running out of memory the lines are loaded in halves (and the run's later
        batches for the same queries in pieces of the size that fitted); a single line that
        still does not fit is tried once more with room for it (_load_alone), and only then
        quarantined as too_large with its bytes. Nothing is written until the queries have
        succeeded, so no half is written twice."""
        con = self.con
        nbytes = pa.compute.sum(pa.compute.binary_length(lines["line"])).as_py() or 0
        learnt = self.learnt.get(self.extract.records)
        if learnt is not None and nbytes > learnt and lines.num_rows > 1:
            return self._load_halves(lines)     # lines like these ran out of memory already: no retry
        bad_before = len(self.bad)
        try:
            with self.clock.timing("parse"):
                self._records_batch(lines)
            with self.clock.timing("blocks"):
                con.execute(sql.read("extract/fill_month"))
                con.execute(f"create or replace temp table blocks_batch as {sql.read(self.extract.blocks)}")
        except duckdb.OutOfMemoryException as exc:
            con.execute("drop table if exists records_batch; drop table if exists blocks_batch")
            con.unregister("lines")
            del self.bad[bad_before:]          # the halves set their own bad lines aside again
            if lines.num_rows > 1:
                # later batches of these queries, in this writer and the run's others, are cut
                # this small up front
                key = self.extract.records
                self.learnt[key] = min(self.learnt.get(key) or nbytes, nbytes // 2)
                return self._load_halves(lines)
            if not roomy:
                return self._load_alone(lines)
            self._too_large(lines, exc)
            return []
        if self.extract.context:
            with self.clock.timing("parse"):
                self._remember_context()
        for fid, n in con.execute("select file_id, count(*) from records_batch group by 1").fetchall():
            self.records_by_file[fid] = self.records_by_file.get(fid, 0) + n
        self.sessions.update(
            (s, sid) for s, sid in con.execute("select distinct source, session_id from records_batch").fetchall()
        )
        with self.clock.timing("write_records"):
            groups = self.parts.write(con, "records", sql.read("extract/stored_records"))
        with self.clock.timing("write_blocks"):
            groups += self.parts.write(con, "blocks", "select * from blocks_batch")
        con.unregister("lines")
        con.execute("drop table records_batch; drop table blocks_batch")
        return groups

    def _load_halves(self, lines: pa.Table) -> list[RowGroup]:
        half = lines.num_rows // 2
        return self._load_lines(lines.slice(0, half)) + self._load_lines(lines.slice(half))

    def _remember_context(self) -> None:
        """The context lines of every file loaded so far, this batch's lines included."""
        con = self.con
        loaded = "select file_id, line_no, byte_offset, raw, record_type, subtype, role from records_batch"
        if self.earlier is not None and self.earlier.num_rows:
            con.register("earlier_before", self.earlier)
            loaded = f"select * from earlier_before union all {loaded}"
        con.execute(f"create or replace temp view earlier as {loaded}")
        self.earlier = con.sql(sql.read(self.extract.context)).to_arrow_table()
        con.execute("drop view earlier")
        con.unregister("earlier_before")

    def _with_context(self, objects: pa.Table) -> pa.Table:
        """The batch's lines behind the context lines of their files, numbered below zero so
        the records SQL reads them before the file's lines and returns none of them."""
        if self.earlier is None or not self.earlier.num_rows:
            return objects
        mine = self.earlier.filter(pa.compute.is_in(self.earlier["file_id"], objects["file_id"].unique()))
        if not mine.num_rows:
            return objects
        ctx = pa.table({
            "file_id": mine["file_id"], "line_no": pa.compute.subtract(mine["line_no"], CONTEXT_LINE_SHIFT),
            "byte_offset": mine["byte_offset"], "line": mine["raw"].cast(pa.string())}, schema=objects.schema)
        return pa.concat_tables([ctx, objects]).combine_chunks()

    def _load_alone(self, line: pa.Table) -> list[RowGroup]:
        """One line too big for a worker's memory (a 50 MB line needs several hundred MB), with
        the memory limit raised for it alone: its bytes times LINE_MEMORY_FACTOR, at most
        LINE_MEMORY_CAP_MB. The limit is set back whatever happens."""
        con = self.con
        limit = con.execute("select current_setting('memory_limit')").fetchone()[0]
        nbytes = pa.compute.sum(pa.compute.binary_length(line["line"])).as_py() or 0
        room = min(LINE_MEMORY_CAP_MB, (nbytes * LINE_MEMORY_FACTOR >> 20) + 256)
        con.execute(f"set memory_limit = '{room}MB'")
        try:
            return self._load_lines(line, roomy=True)
        finally:
            con.execute(f"set memory_limit = '{limit}'")

    def _too_large(self, line: pa.Table, exc: Exception) -> None:
        row = line.to_pylist()[0]
        raw = row["line"].encode("utf-8")
        error = (f"a line of {len(raw):,} bytes does not load within a worker's memory "
                 f"({str(exc).splitlines()[0]})")
        self.bad.append((BadLine(row["file_id"], row["line_no"], row["byte_offset"], "too_large", error, raw),
                         self.files[row["file_id"]]))

    def _records_batch(self, lines_all: pa.Table) -> None:
        """Parse and normalize the batch's object lines into the temp table records_batch.

        Where the adapter's SQL parses every line into a row of its own, a line that starts
        with '{' needs no check of its own: if one is malformed the query fails (or a row is
        missing), and only then is every line validated and the query run again."""
        con = self.con
        query = f"create or replace temp table records_batch as {sql.read(self.extract.records)}"
        if self.extract.one_parsed_row_per_line:
            objects = self._objects_only(lines_all, check_braced=False)
            con.register("lines", self._with_context(objects))
            try:
                con.execute(query)
                if con.execute("select count(*) from records_batch").fetchall() == [(objects.num_rows,)]:
                    return
            except duckdb.InvalidInputException as exc:
                if "Malformed JSON" not in str(exc):
                    raise
            con.unregister("lines")
        else:
            objects = lines_all
        con.register("lines", self._with_context(self._objects_only(objects)))
        con.execute(query)

    def _objects_only(self, lines: pa.Table, check_braced: bool = True) -> pa.Table:
        """The lines that are JSON objects; the others are set aside for quarantine.

        A line that is valid JSON and starts with '{' is an object, which is nearly every
        line, so only the rest are looked at twice. With check_braced false, a line that
        starts with '{' is taken as an object unchecked (see _records_batch)."""
        con = self.con
        braced = "not json_valid(line) or " if check_braced else ""
        con.register("lines_checked", lines)
        try:
            suspects = con.execute(
                "select file_id, line_no, byte_offset, line, "
                f"{is_json_object('line')} as ok "
                f"from lines_checked where {braced}not starts_with(line, '{{')"
            ).fetchall()
            bad = [(fid, no, off, line) for fid, no, off, line, ok in suspects if not ok]
            if not bad:
                return lines
            for file_id, line_no, offset, line in bad:
                reason, err = json_error(line)
                self.bad.append(
                    (BadLine(file_id, line_no, offset, reason, err, line.encode("utf-8")), self.files[file_id])
                )
            con.register("bad_keys", pa.table({"file_id": [b[0] for b in bad], "line_no": [b[1] for b in bad]}))
            objects = con.sql(
                "select l.* from lines_checked as l anti join bad_keys using (file_id, line_no)").to_arrow_table()
            con.unregister("bad_keys")
            return objects
        finally:
            con.unregister("lines_checked")

    def _copy(self, table: str, select: str, out: Path, k: int) -> None:
        target = out / table
        copy_partitioned(self.con, select, target, f"r{self.run_id:06d}_b{k:05d}_{{i}}")
        for p, rel, parts, n in written_files(target, out):
            self.written.append(Written(str(rel), table, parts["source"], parts["month"], n, p.stat().st_size, p))

    def _files_table(self) -> pa.Table:
        ctxs = list(self.files.values())
        return pa.table(
            [
                [c.file_id for c in ctxs],
                [c.source for c in ctxs],
                [c.epoch for c in ctxs],
                [c.source_file for c in ctxs],
                [c.file_stem for c in ctxs],
                [c.session_hint for c in ctxs],
                [c.parent_session_hint for c in ctxs],
                [self.run_id] * len(ctxs),
            ],
            schema=BATCH_FILES_SCHEMA,
        )
