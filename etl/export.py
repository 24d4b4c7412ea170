"""Export the public tables as plain Parquet that any engine reads: `convarch export DIR`.

Layout (Hive style, as Spark, Trino, DuckDB and pyarrow discover it)::

    DIR/README.md                       the schema, generated from the views' column docs
    DIR/_convarch_export.json           manifest: what each partition holds and its fingerprint
    DIR/<table>/source=<s>/month=<YYYY-MM>/<table>-<s>-<YYYY-MM>.parquet

Each file is zstd Parquet with portable types: ids stay VARCHAR, timestamps are UTC instants
in microseconds, JSON is a string, and nothing wider than 64-bit integers. `source` and `month`
live in the folder names only (percent-encoded, rows without a timestamp under
`month=__HIVE_DEFAULT_PARTITION__`, which readers turn into null).

Re-exporting is incremental and atomic. Each partition's rows are fingerprinted in DuckDB; a
partition whose fingerprint matches the manifest is left alone (not even its mtime changes).
A changed partition is written into a private temporary folder inside DIR and renamed over the
old file in one step, so a reader sees the old partition or the new one, never a mix or a
half-written file. Partitions that no longer have rows are removed after the new files are in
place, and the manifest is replaced last. Only files the manifest names are ever removed.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from convarch import __version__
from convarch.etl.duck import memory_cap_mb, run_with_memory, sql_ident, sql_literal
from convarch.etl.errors import ConvarchError, UsageError
from convarch.etl.warehouse import connect
from convarch.sql import docs
from convarch.etl.export_files import (  # noqa: F401  (LOCK, partition_value: part of this module's interface)
    FORMAT, LOCK, MANIFEST, MONTH, NULL_PARTITION, README, TMP_PREFIX, file_name, fsync_dir, inside, locked, make_dirs,
    make_durable, partition_key, partition_value, prepare_dir, write_if_changed,
)
from convarch.etl.export_files import remove_stale as _remove_stale
from convarch.etl.export_sort import write_sorted




@dataclass(frozen=True)
class ExportTable:
    name: str
    #: the timestamp that places a row in a month partition
    month_from: str
    #: the expression --since compares with
    since_on: str
    #: the order rows are written in, for files that compress well and read predictably
    order_by: str


#: What is exported, in order. Each is a public view with a `source` column.
TABLES: tuple[ExportTable, ...] = (
    ExportTable("sessions", "started_at", "coalesce(ended_at, started_at)", "started_at, session_id"),
    ExportTable("messages", '"timestamp"', '"timestamp"', 'session_id, file_id, line_no'),
    ExportTable("tool_calls", '"timestamp"', '"timestamp"', 'session_id, file_id, line_no, call_id'),
    ExportTable("chain_messages", '"timestamp"', '"timestamp"', "session_id, file_id, seq"),
)


@dataclass
class TableResult:
    rows: int = 0
    partitions: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)


@dataclass
class ExportResult:
    dir: Path
    since: str | None
    tables: dict[str, TableResult]

    def as_dict(self) -> dict:
        return {
            "dir": str(self.dir),
            "since": self.since,
            "tables": {
                name: {"rows": t.rows, "partitions": t.partitions, "written": t.written,
                       "unchanged": t.unchanged, "removed": t.removed}
                for name, t in self.tables.items()
            },
        }


#: The staging folders' partition column, and their codec: written once and read once, fast
#: to write matters more than small.
STAGE_KEY = "_stage_key"
STAGE_CODEC = "snappy"
#: Rows a staging partition buffers before writing them out (DuckDB's default, 512k rows, is
#: a whole table of tool calls).
STAGE_FLUSH_ROWS = 512
#: Bytes of a staging file's row group, and how many staging files are open at once: each
#: open file holds its row group in memory until it is full, so these two bound the staging
#: pass's memory however many months the archive spans.
STAGE_ROW_GROUP_BYTES = "8MB"
STAGE_OPEN_FILES = 16
#: DuckDB memory of an export; it spills past that into the run's temporary folder.
MEMORY_MB = 512


def _stage_key(month: str) -> str:
    """The staging folder of a row's partition, from its source and `month` (an expression)."""
    return f"hash(source, {month})::varchar"


# --- the export --------------------------------------------------------------------------


def parse_since(value: str | None) -> datetime | None:
    """A date or date-time; one without a zone is UTC. Returned naive, in UTC."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since: expected a date like 2026-11-30 or 2026-11-30T14:00, not {value!r}") from None
    if when.tzinfo is not None:
        when = when.astimezone(UTC).replace(tzinfo=None)
    return when


def export(db: str | os.PathLike | None, dest: str | os.PathLike, *, since: str | None = None) -> ExportResult:
    """Export the warehouse at `db` (default: $CONVARCH_DB or the standard place) into `dest`."""
    since_at = parse_since(since)
    root = prepare_dir(Path(dest).expanduser().absolute())
    with locked(root):
        old = _read_manifest(root)
        for leftover in root.glob(f"{TMP_PREFIX}*"):
            shutil.rmtree(leftover, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
        os.chmod(tmp, 0o700)
        try:
            if not (root / MANIFEST).exists():   # claim the folder first, so a crashed first run can resume
                write_if_changed(root / MANIFEST, (json.dumps({"format": FORMAT, "tables": {}}) + "\n").encode(), tmp)
            con = connect(db)
            try:
                con.execute("set TimeZone = 'UTC'")
                con.execute("set temp_directory = ?", [str(tmp / "spill")])
                # lets a partition's file be cut in row groups by bytes (ORDER BY still holds)
                con.execute("set preserve_insertion_order = false")
                con.execute(f"set partitioned_write_flush_threshold = {STAGE_FLUSH_ROWS}")
                con.execute(f"set partitioned_write_max_open_files = {STAGE_OPEN_FILES}")
                result, manifest, types = _export_tables(con, root, tmp, old, since_at)
                views = docs.describe(con, tuple(t.name for t in TABLES))
            finally:
                con.close()
            removed = _remove_stale(root, old, manifest)
            for table, paths in removed.items():
                result.tables[table].removed.extend(paths)
            write_if_changed(root / README, render_readme(views, types, manifest).encode("utf-8"), tmp)
            write_if_changed(root / MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode(), tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    result.since = manifest["since"]
    return result


def _read_manifest(root: Path) -> dict:
    try:
        found = json.loads((root / MANIFEST).read_text("utf-8"))
    except FileNotFoundError:
        return {"tables": {}}
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConvarchError(f"{root / MANIFEST} is damaged ({exc}); export into a new folder") from exc
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        raise ConvarchError(f"{root / MANIFEST} was written by another convarch version; export into a new folder")
    return found


def _portable(name: str, typ: str) -> str:
    """A column as written to Parquet: types every engine reads the same way."""
    col = sql_ident(name)
    if typ == "TIMESTAMP":  # UTC wall time in the warehouse: written as an instant (isAdjustedToUTC)
        return f"{col}::timestamptz as {col}"
    if typ == "JSON" or typ == "UUID":
        return f"{col}::varchar as {col}"
    if typ in ("HUGEINT", "UHUGEINT"):
        return f"{col}::bigint as {col}"
    return col


class Memory:
    """Runs a step of the export with MEMORY_MB of DuckDB memory, and again with twice as much
    each time it runs out, up to a quarter of the machine's; the limit stays raised for the
    steps after it, which are likely to need it too."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con, self.mb = con, MEMORY_MB
        con.execute(f"set memory_limit = '{self.mb}MB'")

    def run(self, step, *, undo):
        out, self.mb = run_with_memory(
            self.con, self.mb, step, undo=undo, cap=lambda: max(MEMORY_MB, memory_cap_mb()),
            too_little=lambda cap, why: ConvarchError(f"export ran out of memory at {cap:,} MB: {why}"))
        return out


def _export_tables(con, root: Path, tmp: Path, old: dict, since_at: datetime | None):
    memory = Memory(con)
    old_tables = old.get("tables", {})
    result = ExportResult(root, None, {})
    manifest: dict = {
        "format": FORMAT,
        "convarch": __version__,
        "duckdb": duckdb.__version__,
        "since": since_at.isoformat(sep=" ") if since_at else None,
        "tables": {},
    }
    types: dict[str, dict[str, str]] = {}
    for spec in TABLES:
        res = result.tables[spec.name] = TableResult()
        columns = con.execute(
            "select column_name, data_type from duckdb_columns() "
            "where table_name = ? and schema_name = 'main' order by column_index",
            [spec.name],
        ).fetchall()
        if not columns:
            raise ConvarchError(f"the warehouse has no view {spec.name}: run `convarch ingest` with this version first")
        if "month" in {c for c, _ in columns}:
            raise ConvarchError(f"view {spec.name} has a column named month, which the partitioning uses")
        select = ", ".join(_portable(c, t) for c, t in columns)
        month_of = f"strftime({spec.month_from}, '%Y-%m')"
        staged = tmp / f"stage-{spec.name}"
        # one pass over the view, its rows written as they come into a folder per partition
        # (named by a hash of its source and month, so no value reaches a path); each
        # partition is then fingerprinted and sorted on its own, in slices (etl/export_sort.py)
        memory.run(lambda: con.execute(
            f"copy (select {select}, {month_of} as {MONTH}, {_stage_key(month_of)} as {STAGE_KEY} "
            f"from {spec.name} where $since::timestamp is null or {spec.since_on} >= $since::timestamp) "
            f"to {sql_literal(str(staged))} (format parquet, compression {STAGE_CODEC}, "
            f"partition_by ({STAGE_KEY}), row_group_size_bytes '{STAGE_ROW_GROUP_BYTES}')",
            {"since": since_at},
        ), undo=lambda: shutil.rmtree(staged, ignore_errors=True))
        staged_rows = (f"read_parquet({sql_literal(str(staged / '*' / '*.parquet'))}, hive_partitioning = false)"
                       if any(staged.glob("*/*.parquet")) else f"(select {select}, {month_of} as {MONTH} from {spec.name} limit 0)")
        out_cols = [(r[0], r[1]) for r in con.execute(f"describe select * from {staged_rows}").fetchall() if r[0] != MONTH]
        types[spec.name] = dict(out_cols)
        signature = hashlib.sha256(json.dumps([FORMAT, duckdb.__version__, out_cols]).encode()).hexdigest()
        old_parts = old_tables.get(spec.name, {}).get("partitions", {})
        parts: dict[str, dict] = {}
        fingerprints = memory.run(lambda: con.execute(
            f"select source, {MONTH}, count(*), sum(hash(t)::hugeint)::varchar, bit_xor(hash(t)), "
            f"{_stage_key(MONTH)} from {staged_rows} as t group by all order by all"
        ).fetchall(), undo=lambda: None)
        for source, month, rows, hash_sum, hash_xor, stage_key in fingerprints:
            key = partition_key(source, month)
            rel = f"{spec.name}/{key}/{file_name(spec.name, source, month)}"
            final = root / rel
            if key in parts or not inside(root, final):
                raise ConvarchError(f"partition {key!r} of {spec.name} collides or would leave {root}")
            fingerprint = hashlib.sha256(f"{signature}|{rows}|{hash_sum}|{hash_xor}".encode()).hexdigest()[:32]
            prev = old_parts.get(key)
            res.rows += rows
            res.partitions += 1
            if prev and prev.get("fingerprint") == fingerprint and prev.get("file") == rel and _intact(final, prev):
                parts[key] = prev
                res.unchanged += 1
                continue
            staged_file = tmp / f"part-{len(res.written)}-{spec.name}.parquet"
            part_files = sql_literal(str(staged / f"{STAGE_KEY}={stage_key}" / "*.parquet"))
            memory.run(lambda: write_sorted(
                con, part_files, f"s.source is not distinct from $source and s.{MONTH} is not distinct from $month",
                {"source": source, "month": month}, [(c, t) for c, t in out_cols if c != "source"],
                spec.order_by, staged_file, tmp / "slices"), undo=lambda: staged_file.unlink(missing_ok=True))
            make_durable(staged_file)
            make_dirs(root, final.parent)
            if not inside(root, final.parent):
                raise ConvarchError(f"partition folder {final.parent} is outside {root}")
            os.replace(staged_file, final)
            fsync_dir(final.parent)
            parts[key] = {"file": rel, "rows": rows, "bytes": final.stat().st_size, "fingerprint": fingerprint,
                          "source": source, "month": month}
            res.written.append(rel)
        shutil.rmtree(staged, ignore_errors=True)
        manifest["tables"][spec.name] = {"columns": [[c, t] for c, t in out_cols], "partitions": parts}
    fsync_dir(root)
    return result, manifest, types


def _intact(path: Path, entry: dict) -> bool:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    return path.is_file() and not path.is_symlink() and st.st_size == entry.get("bytes")


# --- README ------------------------------------------------------------------------------


def render_readme(views: list[docs.View], types: dict[str, dict[str, str]], manifest: dict) -> str:
    """The export's README: how to read it, and every table's columns (deterministic)."""
    since = manifest.get("since")
    tables = [t.name for t in TABLES]
    lines = [
        "# convarch export",
        "",
        "Conversations that convarch archived from coding agents' session stores, as plain "
        "Parquet. Written by `convarch export`"
        + (f" with `--since {since}` (only rows at or after that time, UTC)" if since else "")
        + "; re-running it rewrites only the partitions whose rows changed.",
        "",
        "## Layout",
        "",
        "```",
        "<table>/source=<source>/month=<YYYY-MM>/<table>-<source>-<YYYY-MM>.parquet",
        "```",
        "",
        "- Tables: " + ", ".join(f"`{t}`" for t in tables) + ".",
        "- Hive-style partitions: `source` (the agent) and `month` (UTC month of the row's time; "
        "sessions use `started_at`). Both are folder names only, percent-encoded; rows without a "
        f"time are under `month={NULL_PARTITION}` (null).",
        "- Parquet, zstd. Ids are strings; timestamps are UTC instants in microseconds "
        "(`TIMESTAMP` with `isAdjustedToUTC=true`); JSON values are strings; integers are at most 64-bit.",
        f"- `{MANIFEST}` lists every file with its row count; files and folders are private to "
        "their owner (0600/0700).",
        "",
        "## Reading it",
        "",
        "```sql",
        "-- DuckDB",
        "select source, month, count(*) from read_parquet('messages/**/*.parquet', hive_partitioning = true)",
        "group by all order by all;",
        "```",
        "",
        "```python",
        "# pyarrow / pandas",
        "import pyarrow.dataset as ds",
        "messages = ds.dataset('messages', format='parquet', partitioning='hive').to_table()",
        "```",
        "",
        "```python",
        "# Spark",
        "spark.read.parquet('messages')  # source and month come back as partition columns",
        "```",
        "",
        "Trino / Hive: declare an external table over each folder with "
        "`partitioned_by = ARRAY['source', 'month']`, then sync its partitions.",
        "",
        "Join keys: `sessions` to the others on `(source, session_id)`; `tool_calls.message_id` and "
        "`chain_messages.message_id` to `messages.message_id` within a session.",
        "",
        "## Tables",
        "",
    ]
    documented = []
    for v in views:
        shown = types.get(v.name, {})
        cols = [docs.Column(c.name, shown.get(c.name, c.type), c.description) for c in v.columns if c.name != "source"]
        source_doc = next((c.description for c in v.columns if c.name == "source"), "")
        month_of = "started_at" if v.name == "sessions" else "timestamp"
        cols.append(docs.Column("source", "VARCHAR (partition)", source_doc))
        cols.append(docs.Column("month", "VARCHAR (partition)", f"UTC month (YYYY-MM) of {month_of}; null when it has none"))
        documented.append(docs.View(v.name, v.grain, tuple(cols)))
    lines.append(docs.schema_markdown(documented, heading="###"))
    return "\n".join(lines).rstrip() + "\n"
