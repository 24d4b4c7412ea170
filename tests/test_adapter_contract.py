"""Every registered adapter keeps the same contract: it has a fixture, its extraction SQL
yields exactly the warehouse's columns, it fills sessions and messages, leaves its source
untouched, and survives a truncated or corrupted copy of its store."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from convarch import adapters, sql
from convarch.etl.duck import connect
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.publish import seed_schemas
from conftest import REPO, tree_fingerprint
from helpers import scalar

NAMES = sorted(adapters.ADAPTERS)


def fixture_root(name: str) -> Path:
    for case in ("contract", "demo"):
        p = REPO / "fixtures" / name / case
        if p.exists():
            return p
    pytest.fail(f"adapter {name} has no fixtures/{name}/contract store")


def extract_schema(extract_sql: str, blocks_sql: str):
    con = connect()
    con.execute(
        "create temp table lines (file_id bigint, line_no bigint, byte_offset bigint, line varchar);"
        "create temp table batch_files (file_id bigint, source varchar, file_epoch integer, "
        "source_file varchar, file_stem varchar, session_hint varchar, parent_session_hint varchar, run_id bigint)"
    )
    con.execute(f"create temp table records_batch as {sql.read(extract_sql)}")
    con.execute(f"create temp table blocks_batch as {sql.read(blocks_sql)}")
    # `content` only passes an adapter's parsed message content to its own blocks query;
    # what must agree is the record as stored
    rec = [(r[0], r[1]) for r in con.execute(f"describe {sql.read('extract/stored_records')}").fetchall()]
    blk = con.execute("describe blocks_batch").fetchall()
    return rec, [(r[0], r[1]) for r in blk]


@pytest.mark.parametrize("name", NAMES)
def test_extraction_sql_matches_the_warehouse_schema(name):
    adapter = adapters.ADAPTERS[name]
    canonical = adapters.ADAPTERS["claude_code"].EXTRACT
    assert extract_schema(adapter.EXTRACT.records, adapter.EXTRACT.blocks) == extract_schema(
        canonical.records, canonical.blocks)


@pytest.mark.parametrize("name", NAMES)
def test_adapter_module_declares_the_interface(name):
    adapter = adapters.ADAPTERS[name]
    for attr in ("NAME", "TITLE", "ENV_VARS", "EXTRACT", "default_roots", "resolve_root", "discover"):
        assert hasattr(adapter, attr), f"{name} lacks {attr}"
    assert adapter.NAME == name
    assert adapter.__doc__ and len(adapter.__doc__) > 80, "say in the docstring what evidence it follows"


@pytest.mark.parametrize("name", NAMES)
def test_fixture_ingests_and_leaves_the_source_untouched(tmp_path, name):
    adapter = adapters.ADAPTERS[name]
    root = fixture_root(name)
    before = tree_fingerprint(root)
    db = tmp_path / "w.duckdb"
    summary = ingest(Layout(db), [(adapter, adapter.resolve_root(root))])
    assert tree_fingerprint(root) == before
    assert summary.records_added > 0
    assert scalar(db, "select count(*) from sessions where source = ?", [name]) > 0
    assert scalar(db, "select count(*) from messages where source = ?", [name]) > 0
    assert scalar(db, "select count(*) from messages where source = ? and \"timestamp\" is not null", [name]) > 0
    again = ingest(Layout(db), [(adapter, adapter.resolve_root(root))])
    assert again.records_added == 0


@pytest.mark.parametrize("damage", ["truncate", "flip"])
@pytest.mark.parametrize("name", NAMES)
def test_damaged_copy_never_crashes(tmp_path, name, damage):
    adapter = adapters.ADAPTERS[name]
    copy = tmp_path / "store"
    shutil.copytree(fixture_root(name), copy)
    for dirpath, _dirs, files in os.walk(copy):
        for f in files:
            p = Path(dirpath) / f
            data = p.read_bytes()
            if not data:
                continue
            if damage == "truncate":
                p.write_bytes(data[: len(data) * 2 // 3])
            else:
                b = bytearray(data)
                for i in range(len(b) // 3, len(b), max(1, len(b) // 7)):
                    b[i] ^= 0x5A
                p.write_bytes(bytes(b))
    db = tmp_path / "w.duckdb"
    summary = ingest(Layout(db), [(adapter, adapter.resolve_root(copy))])
    loaded = scalar(db, "select count(*) from stg_records")
    bad = scalar(db, "select count(*) from quarantine")
    assert loaded + bad > 0
    assert summary.records_added == loaded


def test_registry_documents_every_adapter():
    readme = (REPO / "README.md").read_text()
    assert len(adapters.ADAPTERS) >= 24
    for name in adapters.ADAPTERS:
        assert name in adapters.EVIDENCE, f"{name}: add its evidence level to adapters.EVIDENCE"
        assert f"`{name}`" in readme, f"{name}: add it to the README's source table"
        assert (REPO / "fixtures" / name).is_dir(), f"{name}: no fixtures/{name}"


@pytest.mark.parametrize("name", NAMES)
def test_handoff_renders_for_every_source(tmp_path, name):
    """Handoffs use only the normalized views, so one works for a session of every source."""
    from convarch import connect
    from convarch.handoff import build

    adapter = adapters.ADAPTERS[name]
    db = tmp_path / "w.duckdb"
    ingest(Layout(db), [(adapter, adapter.resolve_root(fixture_root(name)))])
    con = connect(db)
    try:
        sid = con.execute("select session_id from sessions where source = ? order by message_count desc, session_id "
                          "limit 1", [name]).fetchone()[0]
        doc = build(con, sid)
    finally:
        con.close()
    assert doc.startswith("# Handoff") and len(doc) <= 16_000
    assert f"> Session: {sid[:40]}" in doc
