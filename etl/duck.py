"""Every DuckDB connection convarch opens goes through here, so none ever reaches for the
network to fetch an extension (json and parquet are built in)."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import duckdb

OFFLINE = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
T = TypeVar("T")


def connect(path: Path | str = ":memory:", *, read_only: bool = False, **config: Any) -> duckdb.DuckDBPyConnection:
    return duckdb.connect(str(path), read_only=read_only, config={**OFFLINE, **config})


def memory_cap_mb() -> int:
    """The most DuckDB memory one piece of work may grow to when it runs out (a transcript's
    chains, an export's partition): a quarter of the machine's memory, at least 1 GB."""
    try:
        return max(1024, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (4 << 20))
    except (ValueError, OSError, AttributeError):
        return 4096


def run_with_memory(con: duckdb.DuckDBPyConnection, mb: int, step: Callable[[], T], *, undo: Callable[[], None],
                    cap: Callable[[], int], too_little: Callable[[int, str], Exception]) -> tuple[T, int]:
    """`step` run under `mb` MB of DuckDB memory, and each time it runs out, after `undo` of
    what it made, again with twice as much, up to `cap()`; at the cap it raises
    `too_little(cap, the error's first line)`. Returns what `step` returned and the limit it
    ran under, which stays set (a transcript's chains, an export's steps)."""
    while True:
        con.execute(f"set memory_limit = '{int(mb)}MB'")
        try:
            return step(), mb
        except duckdb.OutOfMemoryException as exc:
            undo()
            most = cap()
            if mb >= most:
                raise too_little(most, str(exc).splitlines()[0]) from None
            mb = min(most, mb * 2)


def is_json_object(expr: str) -> str:
    """SQL that is true when the text `expr` is a JSON object as DuckDB reads it (which is more
    leniently than Python does): the loader's test of every line, and Gemini CLI's of the lines
    its replay could not read."""
    return f"case when json_valid({expr}) then json_type({expr}) = 'OBJECT' else false end"


def sql_ident(name: str) -> str:
    """A column name quoted for SQL, whatever characters it holds."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(s: str) -> str:
    """A string as a SQL literal, for the file lists and paths DuckDB cannot take as parameters."""
    return "'" + s.replace("'", "''") + "'"


def sql_list(paths) -> str:
    """Files as a SQL list literal, for read_parquet([...])."""
    return "[" + ", ".join(sql_literal(str(p)) for p in paths) + "]"


#: How the lake's hive folders (source=…/month=…) are read: as strings, whatever they look like.
HIVE = "hive_partitioning = true, hive_types = {'source': 'VARCHAR', 'month': 'VARCHAR'}"
