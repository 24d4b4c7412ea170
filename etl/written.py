"""The Parquet files a run writes before they are moved into the lake and registered.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from convarch.etl.duck import sql_literal


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


def copy_partitioned(con: duckdb.DuckDBPyConnection, select: str, target: Path, pattern: str) -> None:
    """Write a query as zstd Parquet partitioned by source and month, straight from the query."""
    con.execute(
        f"copy ({select}) to {sql_literal(str(target))} (format parquet, compression zstd, "
        f"partition_by (source, month), filename_pattern '{pattern}')"
    )


def written_files(target: Path, base: Path) -> Iterator[tuple[Path, Path, dict[str, str], int]]:
    """Each Parquet file under `target`: its path, its path relative to `base`, its partition
    values and its row count (from the file's own footer)."""
    if not target.is_dir():
        return
    for dirpath, _dirs, names in os.walk(target):
        for name in sorted(names):
            p = Path(dirpath) / name
            rel = p.relative_to(base)
            parts = dict(seg.split("=", 1) for seg in rel.parts if "=" in seg)
            os.chmod(p, 0o600)
            yield p, rel, parts, pq.ParquetFile(p).metadata.num_rows
