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

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from convarch import __version__
from convarch.etl.errors import Busy, ConvarchError, UsageError
from convarch.etl.warehouse import connect
from convarch.sql import docs

FORMAT = 1
MANIFEST = "_convarch_export.json"
README = "README.md"
LOCK = ".convarch-export.lock"
TMP_PREFIX = ".convarch-export-tmp-"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
MONTH = "__export_month"


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


# --- names from data ---------------------------------------------------------------------

_SAFE = re.compile(r"[A-Za-z0-9_-]")
#: The only files an export ever removes: partition files of the shape it writes.
_OWN_FILE = re.compile(r"[a-z_]+/source=[A-Za-z0-9_%~-]+/month=[A-Za-z0-9_%~-]+/[A-Za-z0-9_-]+\.parquet")


def partition_value(value: str | None) -> str:
    """A partition value as a folder-name segment: every character outside [A-Za-z0-9_-] is
    percent-encoded as UTF-8 (Hive's escaping, which DuckDB, Spark, Trino and pyarrow undo), so
    a value can never hold a `/`, be `.` or `..`, or otherwise leave its folder. Null and the
    empty string become Hive's null partition; a very long value is cut and given a hash."""
    if value is None or value == "":
        return NULL_PARTITION
    pieces = [ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in value]
    out = "".join(pieces)
    if out == NULL_PARTITION:
        out = "%5F" + out[1:]
    if len(out) > 180:  # folder names stay well under the usual 255-byte limit
        kept, size = [], 0
        for piece in pieces:
            if size + len(piece) > 160:
                break
            kept.append(piece)
            size += len(piece)
        out = "".join(kept) + "~" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]
    return out


def file_name(table: str, source: str | None, month: str | None) -> str:
    """The Parquet file of one partition: readable, and made only of [A-Za-z0-9_-]."""
    def part(v: str | None) -> str:
        if v is None or v == "":
            return "null"
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", v)[:60]
        return safe if safe == v else f"{safe}_{hashlib.sha256(v.encode('utf-8')).hexdigest()[:8]}"
    return f"{table}-{part(source)}-{part(month)}.parquet"


def partition_key(source: str | None, month: str | None) -> str:
    return f"source={partition_value(source)}/month={partition_value(month)}"


def _inside(root: Path, path: Path) -> bool:
    root_real = os.path.realpath(root)
    return os.path.commonpath([root_real, os.path.realpath(path)]) == root_real


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
    root = _prepare_dir(Path(dest).expanduser().absolute())
    with _locked(root):
        old = _read_manifest(root)
        for leftover in root.glob(f"{TMP_PREFIX}*"):
            shutil.rmtree(leftover, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=root))
        os.chmod(tmp, 0o700)
        try:
            if not (root / MANIFEST).exists():   # claim the folder first, so a crashed first run can resume
                _write_if_changed(root / MANIFEST, (json.dumps({"format": FORMAT, "tables": {}}) + "\n").encode(), tmp)
            con = connect(db)
            try:
                con.execute("set TimeZone = 'UTC'")
                con.execute("set temp_directory = ?", [str(tmp / "spill")])
                result, manifest, types = _export_tables(con, root, tmp, old, since_at)
                views = docs.describe(con, tuple(t.name for t in TABLES))
            finally:
                con.close()
            removed = _remove_stale(root, old, manifest)
            for table, paths in removed.items():
                result.tables[table].removed.extend(paths)
            _write_if_changed(root / README, render_readme(views, types, manifest).encode("utf-8"), tmp)
            _write_if_changed(root / MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode(), tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    result.since = manifest["since"]
    return result


def _prepare_dir(root: Path) -> Path:
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    if root.exists():
        if not (root / MANIFEST).exists() and any(p.name != LOCK for p in root.iterdir()):
            raise UsageError(f"{root} is not empty and holds no convarch export; give a new or empty folder")
    else:
        root.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    return root


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise Busy(f"another convarch export is writing {root}; try again when it ends") from exc
            raise
        yield
    finally:
        os.close(fd)


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
    col = '"' + name.replace('"', '""') + '"'
    if typ == "TIMESTAMP":  # UTC wall time in the warehouse: written as an instant (isAdjustedToUTC)
        return f"{col}::timestamptz as {col}"
    if typ == "JSON" or typ == "UUID":
        return f"{col}::varchar as {col}"
    if typ in ("HUGEINT", "UHUGEINT"):
        return f"{col}::bigint as {col}"
    return col


def _export_tables(con, root: Path, tmp: Path, old: dict, since_at: datetime | None):
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
        staged = f"export_{spec.name}"
        con.execute(
            f"create or replace temp table {staged} as "
            f"select {select}, strftime({spec.month_from}, '%Y-%m') as {MONTH} "
            f"from {spec.name} where $since::timestamp is null or {spec.since_on} >= $since::timestamp "
            f"order by source, {MONTH}, {spec.order_by}",
            {"since": since_at},
        )
        out_cols = [(r[0], r[1]) for r in con.execute(f"describe {staged}").fetchall() if r[0] != MONTH]
        types[spec.name] = dict(out_cols)
        file_cols = [c for c, _ in out_cols if c != "source"]
        signature = hashlib.sha256(json.dumps([FORMAT, duckdb.__version__, out_cols]).encode()).hexdigest()
        old_parts = old_tables.get(spec.name, {}).get("partitions", {})
        parts: dict[str, dict] = {}
        fingerprints = con.execute(
            f"select source, {MONTH}, count(*), sum(hash(t)::hugeint)::varchar, bit_xor(hash(t)) "
            f"from {staged} as t group by all order by all"
        ).fetchall()
        for source, month, rows, hash_sum, hash_xor in fingerprints:
            key = partition_key(source, month)
            rel = f"{spec.name}/{key}/{file_name(spec.name, source, month)}"
            final = root / rel
            if key in parts or not _inside(root, final):
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
            con.execute(
                f"copy (select {', '.join(_quote_ident(c) for c in file_cols)} from {staged} "
                f"where source is not distinct from $source and {MONTH} is not distinct from $month) "
                f"to {_quote_literal(str(staged_file))} (format parquet, compression zstd)",
                {"source": source, "month": month},
            )
            _make_durable(staged_file)
            _make_dirs(root, final.parent)
            if not _inside(root, final.parent):
                raise ConvarchError(f"partition folder {final.parent} is outside {root}")
            os.replace(staged_file, final)
            _fsync_dir(final.parent)
            parts[key] = {"file": rel, "rows": rows, "bytes": final.stat().st_size, "fingerprint": fingerprint,
                          "source": source, "month": month}
            res.written.append(rel)
        con.execute(f"drop table {staged}")
        manifest["tables"][spec.name] = {"columns": [[c, t] for c, t in out_cols], "partitions": parts}
    _fsync_dir(root)
    return result, manifest, types


def _intact(path: Path, entry: dict) -> bool:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    return path.is_file() and not path.is_symlink() and st.st_size == entry.get("bytes")


def _make_dirs(root: Path, folder: Path) -> None:
    """Create folder and its parents below root, each 0700; refuse a symlink on the way."""
    rel = folder.relative_to(root)
    here = root
    for part in rel.parts:
        if part in ("", ".", ".."):
            raise ConvarchError(f"refusing path segment {part!r} under {root}")
        here = here / part
        if here.is_symlink():
            raise ConvarchError(f"{here} is a symlink; refusing to write through it")
        if not here.exists():
            here.mkdir(mode=0o700)
            os.chmod(here, 0o700)


def _make_durable(path: Path) -> None:
    os.chmod(path, 0o600)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale(root: Path, old: dict, new: dict) -> dict[str, list[str]]:
    """Remove the files of partitions the new export no longer has (or names differently),
    then the folders that leaves empty. Only files the old manifest names are touched."""
    keep = {p["file"] for t in new["tables"].values() for p in t["partitions"].values()}
    removed: dict[str, list[str]] = {}
    for table, entry in old.get("tables", {}).items():
        for part in entry.get("partitions", {}).values():
            rel = part.get("file")
            if not isinstance(rel, str) or rel in keep:
                continue
            path = root / rel
            if not _OWN_FILE.fullmatch(rel) or ".." in Path(rel).parts or not _inside(root, path.parent):
                continue
            if path.is_file() and not path.is_symlink():
                path.unlink()
            removed.setdefault(table, []).append(rel)
            folder = path.parent
            while folder != root and _inside(root, folder):
                try:
                    folder.rmdir()
                except OSError:
                    break
                folder = folder.parent
    return removed


def _write_if_changed(path: Path, body: bytes, tmp: Path) -> bool:
    try:
        if path.read_bytes() == body:
            return False
    except FileNotFoundError:
        pass
    staged = tmp / f"{path.name}.new"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(staged, 0o600)
    os.replace(staged, path)
    return True


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


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
