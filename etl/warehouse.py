"""Opening the published warehouse for reading, from notebooks, the CLI and tests."""
from __future__ import annotations

import os
from pathlib import Path

import duckdb

from convarch import sql
from convarch.etl.duck import connect as duck_connect
from convarch.etl.errors import ConvarchError
from convarch.etl.layout import Layout, default_db_path
from convarch.etl.manifest import moved_from, read_manifest


def layout_for(db: str | os.PathLike | None = None) -> Layout:
    return Layout(Path(db).expanduser().resolve() if db else default_db_path().resolve())


def connect(db: str | os.PathLike | None = None, *, locked_down: bool = False) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the warehouse with every public view.

    Safe to hold open while ingest runs: ingest never writes this file, it swaps in a new one,
    and this connection keeps seeing the state it opened until it is reopened.
    With `locked_down`, the connection can read the archive's Parquet and nothing else on
    disk, and cannot attach, install, load or copy.
    """
    layout = layout_for(db)
    if not layout.db.exists():
        raise ConvarchError(f"no warehouse at {layout.db}: run `convarch ingest --all` first")
    if old := moved_from(layout, read_manifest(layout)):
        raise ConvarchError(f"the warehouse at {layout.db} was moved or copied from {old}: "
                            "run `convarch ingest --all` once to update it")
    con = duck_connect(layout.db, read_only=True)
    sql.session_macros(con)
    if locked_down:
        con.execute("set allowed_directories = ?", [[str(layout.lake) + os.sep]])
        con.execute("set enable_external_access = false")
        con.execute("set lock_configuration = true")
    return con
