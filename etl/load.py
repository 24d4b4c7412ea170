"""Turn batches of lines into Parquet: parse and normalize them with the adapter's SQL, write
records, blocks and quarantine partitioned by source and month.

Files are written under the run's staging folder and only later moved into the lake and
registered in one state transaction, so a crash leaves nothing a reader can see.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from convarch import sql
from convarch.adapters.base import MALFORMED_ROW, Extract
from convarch.etl.duck import connect
from convarch.etl.lines import BadLine

QUARANTINE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("file_id", pa.int64()),
        ("file_epoch", pa.int32()),
        ("source_file", pa.string()),
        ("line_no", pa.int64()),
        ("byte_offset", pa.int64()),
        ("reason", pa.string()),
        ("error", pa.string()),
        ("raw_text", pa.string()),
        ("raw_bytes", pa.binary()),
        ("ingest_run_id", pa.int64()),
        ("quarantined_at", pa.timestamp("us")),
        ("month", pa.string()),
    ]
)

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
class Written:
    """One Parquet file produced by a run, relative to the lake."""

    path: str
    table_name: str
    source: str
    month: str
    row_count: int
    bytes: int
    staged: Path


@dataclass(frozen=True, slots=True)
class FileContext:
    file_id: int
    source: str
    epoch: int
    source_file: str
    file_stem: str
    session_hint: str | None
    parent_session_hint: str | None


class BatchWriter:
    """Collects line batches across files and flushes them through DuckDB into Parquet."""

    def __init__(self, run_id: int, staging: Path, extract: Extract):
        self.run_id = run_id
        self.staging = staging
        self.extract = extract
        staging.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.con = connect(":memory:", threads=2, preserve_insertion_order=False, memory_limit="600MB",
                           temp_directory=str(staging / "spill"))
        self.con.execute(sql.read("search/macros"))
        self.tables: list[pa.Table] = []
        self.files: dict[int, FileContext] = {}
        self.bad: list[tuple[BadLine, FileContext]] = []
        self.pending_bytes = 0
        self.flushes = 0
        self.written: list[Written] = []
        self.records_by_file: dict[int, int] = {}
        self.quarantined_by_file: dict[int, int] = {}
        self.sessions: set[tuple[str, str]] = set()
        self.index_seconds = 0.0

    def add(self, ctx: FileContext, table: pa.Table, bad: list[BadLine], nbytes: int) -> None:
        self.files[ctx.file_id] = ctx
        if table.num_rows:
            self.tables.append(table)
        self.bad.extend((b, ctx) for b in bad)
        self.pending_bytes += nbytes

    def flush(self) -> None:
        if not self.tables and not self.bad:
            return
        k = self.flushes
        self.flushes += 1
        out = self.staging / f"b{k:05d}"
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        con = self.con
        if self.tables:
            lines_all = pa.concat_tables(self.tables)
            con.register("lines_all", lines_all)
            con.register("batch_files", self._files_table())
            con.execute(
                "create or replace temp table lines_checked as select *, "
                "case when json_valid(line) then json_type(line) = 'OBJECT' else false end as is_object "
                "from lines_all"
            )
            con.execute("create or replace temp table lines as select * exclude (is_object) from lines_checked where is_object")
            invalid = con.execute(
                "select file_id, line_no, byte_offset, line from lines_checked where not is_object"
            ).fetchall()
            for file_id, line_no, offset, line in invalid:
                reason, err = _json_error(line)
                self.bad.append(
                    (BadLine(file_id, line_no, offset, reason, err, line.encode("utf-8")), self.files[file_id])
                )
            con.execute(f"create or replace temp table records_batch as {sql.read(self.extract.records)}")
            con.execute(f"create or replace temp table blocks_batch as {sql.read(self.extract.blocks)}")
            for fid, n in con.execute("select file_id, count(*) from records_batch group by 1").fetchall():
                self.records_by_file[fid] = self.records_by_file.get(fid, 0) + n
            self.sessions.update(
                (s, sid) for s, sid in con.execute("select distinct source, session_id from records_batch").fetchall()
            )
            self._copy("records", "select * exclude (content) from records_batch", out, k)
            self._copy("blocks", "select * from blocks_batch", out, k)
            t_index = time.perf_counter()
            con.execute(f"create or replace temp table search_docs_batch as {sql.read('search/docs')}")
            con.execute(f"create or replace temp table search_words_batch as {sql.read('search/words')}")
            self._copy("search_docs", sql.read("search/doc_lengths"), out, k)
            self._copy("postings", sql.read("search/postings"), out, k)
            self.index_seconds += time.perf_counter() - t_index
            con.unregister("lines_all")
            con.execute("drop table lines; drop table lines_checked; drop table records_batch; "
                        "drop table blocks_batch; drop table search_docs_batch; drop table search_words_batch")
        if self.bad:
            con.register("quarantine_batch", self._quarantine_table())
            for fid, n in con.execute("select file_id, count(*) from quarantine_batch group by 1").fetchall():
                self.quarantined_by_file[fid] = self.quarantined_by_file.get(fid, 0) + n
            self._copy("quarantine", "select * from quarantine_batch", out, k)
            con.unregister("quarantine_batch")
        self.tables.clear()
        self.bad.clear()
        self.files = {}
        self.pending_bytes = 0

    def _copy(self, table: str, select: str, out: Path, k: int) -> None:
        target = out / table
        self.con.execute(f"create or replace temp table copy_batch as {select}")
        rows = self.con.execute("select source, month, count(*) from copy_batch group by all").fetchall()
        if not rows:
            self.con.execute("drop table copy_batch")
            return
        self.con.execute(
            f"copy copy_batch to '{_sql_str(target)}' (format parquet, compression zstd, "
            f"partition_by (source, month), filename_pattern 'r{self.run_id:06d}_b{k:05d}_{{i}}')"
        )
        self.con.execute("drop table copy_batch")
        counts = {(s, m): n for s, m, n in rows}
        for dirpath, _dirs, names in os.walk(target):
            for name in names:
                p = Path(dirpath) / name
                rel = p.relative_to(out)
                parts = dict(seg.split("=", 1) for seg in rel.parts if "=" in seg)
                os.chmod(p, 0o600)
                n = counts.get((parts["source"], parts["month"]), 0)
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

    def _quarantine_table(self) -> pa.Table:
        now = datetime.now(UTC).replace(tzinfo=None)
        month = now.strftime("%Y-%m")
        rows = [
            {
                "source": c.source,
                "file_id": b.file_id,
                "file_epoch": c.epoch,
                "source_file": c.source_file,
                "line_no": b.line_no,
                "byte_offset": b.byte_offset,
                "reason": b.reason,
                "error": b.error,
                "raw_text": b.raw.decode("utf-8", errors="replace"),
                "raw_bytes": b.raw,
                "ingest_run_id": self.run_id,
                "quarantined_at": now,
                "month": month,
            }
            for b, c in self.bad
        ]
        return pa.Table.from_pylist(rows, schema=QUARANTINE_SCHEMA)

    def close(self) -> None:
        self.con.close()


def _json_error(line: str) -> tuple[str, str]:
    """Name why a line is not a JSON object; the standard parser gives a precise position."""
    if line.startswith("unreadable ") and " container: " in line:
        return "unreadable_container", line
    if line.startswith(MALFORMED_ROW):
        return "malformed_row", line[len(MALFORMED_ROW):].split(" :: ", 1)[0]
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        return "invalid_json", f"not valid JSON: {exc}"
    return "not_object", f"valid JSON but a {type(value).__name__}, not an object"


def _sql_str(p: Path) -> str:
    return str(p).replace("'", "''")
