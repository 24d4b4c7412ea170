"""The state schema is applied once, in order, and an edited migration is refused."""
from __future__ import annotations

import pytest

from convarch import sql
from convarch.etl import state as state_mod
from convarch.etl.duck import connect
from convarch.etl.errors import ConvarchError


def test_fresh_database_gets_every_table_once(tmp_path):
    con = connect(tmp_path / "s.duckdb")
    applied = state_mod.migrate(con)
    assert applied == [m.version for m in sql.migrations()]
    tables = {t for (t,) in con.execute("select table_name from duckdb_tables()").fetchall()}
    assert {"schema_version", "ingest_runs", "source_files", "data_files"} <= tables
    cols = {c for (c,) in con.execute(
        "select column_name from duckdb_columns() where table_name = 'source_files'").fetchall()}
    assert {"path", "inode", "size", "mtime_ns", "offset", "head_hash", "epoch", "tail_bytes"} <= cols
    assert state_mod.migrate(con) == []


def test_edited_migration_is_detected(tmp_path, monkeypatch):
    con = connect(tmp_path / "s.duckdb")
    state_mod.migrate(con)
    original = sql.migrations()
    edited = [sql.Migration(m.version, m.filename, m.text + "\n-- edited") for m in original]
    monkeypatch.setattr(sql, "migrations", lambda: edited)
    with pytest.raises(ConvarchError, match="changed after it was applied"):
        state_mod.migrate(con)


def test_connections_never_autoload_extensions():
    con = connect()
    settings = dict(con.execute(
        "select name, value from duckdb_settings() where name in "
        "('autoinstall_known_extensions', 'autoload_known_extensions')").fetchall())
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
