"""A run carries the published catalog forward, making again only what changed, and what it
publishes reads exactly like a catalog built whole; whenever the old catalog cannot be
trusted to bind as it did, the catalog is built whole instead."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from convarch import sql
from convarch.etl import publish
from convarch.etl.layout import Layout
from convarch.etl.state import open_state
from helpers import rows, run, scalar
from test_reliability import corpus


def append_turn(root: Path, k: int) -> None:
    for i, path in enumerate(sorted(root.rglob("*.jsonl"))[:3]):
        with open(path, "a") as fh:
            fh.write(json.dumps({"type": "user", "uuid": f"more-{k}-{i}", "parentUuid": None,
                                 "sessionId": path.stem, "timestamp": f"2026-11-0{k}T10:00:00Z",
                                 "message": {"role": "user", "content": f"one more thing {k}"}}) + "\n")


def contents(db: Path) -> dict:
    """Everything a reader of the catalog can see: every public relation's rows, each
    relation's columns with their types and comments, and each relation's comment."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [*sql.PUBLIC_VIEWS, *publish.STATE_TABLES]
        out = {name: sorted(map(repr, con.execute(f"select * from {name}").fetchall())) for name in names}
        out["columns"] = con.execute(
            "select table_name, column_name, data_type, comment from duckdb_columns() "
            "where schema_name = 'main' order by all").fetchall()
        out["comments"] = con.execute(
            "select view_name, comment from duckdb_views() where schema_name = 'main' and not internal "
            "union all select table_name, comment from duckdb_tables() where schema_name = 'main' order by all").fetchall()
        return out
    finally:
        con.close()


@pytest.fixture
def builds(monkeypatch):
    """How each publish made its catalog: "carried" or "built"."""
    made: list[str] = []
    real = publish.carry_forward

    def spy(*args):
        ok = real(*args)
        made.append("carried" if ok else "built")
        return ok

    monkeypatch.setattr(publish, "carry_forward", spy)
    return made


def rebuild_whole(db: Path, monkeypatch) -> None:
    """Publish the same state again with the catalog built whole."""
    layout = Layout(db)
    state = open_state(layout.state_db)
    try:
        run_id = state.execute("select max(run_id) from ingest_runs").fetchone()[0]
        with monkeypatch.context() as m:
            m.setattr(publish, "carry_forward", lambda *a: False)
            publish.publish(layout, state, run_id)
    finally:
        state.close()


def test_a_carried_catalog_reads_exactly_like_one_built_whole(tmp_path, monkeypatch, builds):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=6, seed=3)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, root)
    sizes = [db.stat().st_size]
    for k in range(1, 6):
        append_turn(root, k)
        assert run(db, root).records_added == 3
        sizes.append(db.stat().st_size)
    assert builds == ["built"] + ["carried"] * 5
    carried = contents(db)
    assert any("one more thing 5" in r for r in carried["messages"]), "the last run's rows are not in the views"
    assert carried["sessions"] and carried["chain_messages"]
    rebuild_whole(db, monkeypatch)
    assert contents(db) == carried
    # the dropped and remade tables' space is used again, run after run
    assert max(sizes) <= 3 * sizes[0], sizes


def test_what_a_reader_writes_into_the_catalog_goes_at_the_next_run(tmp_path, builds):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=3, seed=4)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, root)
    con = duckdb.connect(str(db))          # a user's own view, and a changed one of ours
    con.execute("create view mine as select 1 as x")
    con.execute("create or replace view messages as select 1 as x")
    con.close()
    append_turn(root, 1)
    run(db, root)
    assert builds == ["built", "carried"]
    assert scalar(db, "select count(*) from duckdb_views() where view_name = 'mine'") == 0
    assert scalar(db, "select count(*) from messages where text like '%one more thing 1%'") == 3


def test_a_private_copy_changed_or_lost_since_the_last_run_builds_the_catalog_whole(tmp_path, builds):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=3, seed=5)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, root)
    base = Layout(db).catalog_base
    con = duckdb.connect(str(base))
    con.execute("create or replace view messages as select 1 as x")
    con.close()
    append_turn(root, 1)
    run(db, root)
    base.unlink()
    append_turn(root, 2)
    run(db, root)
    append_turn(root, 3)
    run(db, root)
    assert builds == ["built", "built", "built", "carried"]
    assert not list(base.parent.glob("catalog-base.duckdb.tmp-*"))
    assert scalar(db, "select count(*) from messages where text like '%one more thing%'") == 9


def test_another_engine_or_changed_lake_columns_build_the_catalog_whole(tmp_path, monkeypatch, builds):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=3, seed=6)
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, root)
    layout = Layout(db)
    manifest = json.loads(layout.manifest.read_text())
    layout.manifest.write_text(json.dumps({**manifest, "engine": "0.0.1"}))
    append_turn(root, 1)
    run(db, root)
    assert builds == ["built", "built"]

    # an upgrade whose files union to other column types: the views bound over the old ones
    # would fail at query time, so none is carried forward
    real = publish._state_and_lake

    def wider(con, files, rows):
        real(con, files, rows)
        con.execute(f"create or replace view lake_quarantine as select *, 1 as added "
                    f"from read_parquet({publish.sql_list(files['quarantine'])}, hive_partitioning = true, "
                    "union_by_name = true)")

    monkeypatch.setattr(publish, "_state_and_lake", wider)
    append_turn(root, 2)
    run(db, root)
    assert builds == ["built", "built", "built"]
    assert scalar(db, "select count(*) from messages where text like '%one more thing%'") == 6
    assert "added" in [r[0] for r in rows(db, "describe lake_quarantine")]
