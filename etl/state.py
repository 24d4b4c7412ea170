"""Ingest's private state database: watermarks, the Parquet registry and run history.

Only one ingest may hold it. DuckDB refuses a second writer at once, so a second ingest waits
for the first, up to a limit, and then says so plainly.
"""
from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from convarch import sql
from convarch.etl.duck import connect
from convarch.etl.errors import Busy, ConvarchError
from convarch.etl.layout import make_private


def open_state(path: Path, *, wait_seconds: float = 30.0) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the state database and bring its schema up to date."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            con = connect(path)
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise ConvarchError(f"cannot open state database {path}: {exc}") from exc
            if time.monotonic() >= deadline:
                pid = re.search(r"PID (\d+)", str(exc))
                who = f" (pid {pid.group(1)})" if pid else ""
                raise Busy(f"another convarch ingest is running{who}; try again when it ends") from exc
            time.sleep(0.2)
    make_private(path)
    migrate(con)
    return con


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply pending migrations, each in its own transaction; refuse edited ones."""
    con.execute(
        "create table if not exists schema_version (version integer primary key, "
        "filename varchar, checksum varchar, applied_at timestamp)"
    )
    applied = {v: c for v, c in con.execute("select version, checksum from schema_version").fetchall()}
    done: list[int] = []
    for m in sql.migrations():
        if m.version in applied:
            if applied[m.version] != m.checksum:
                raise ConvarchError(
                    f"migration {m.filename} changed after it was applied; add a new migration instead"
                )
            continue
        con.execute("begin")
        try:
            con.execute(m.text)
            con.execute(
                "insert into schema_version values (?, ?, ?, ?)",
                [m.version, m.filename, m.checksum, datetime.now(UTC).replace(tzinfo=None)],
            )
            con.execute("commit")
        except Exception:
            con.execute("rollback")
            raise
        done.append(m.version)
    return done
