"""A run carries the published catalog forward, making again only what changed, and what it
publishes reads exactly like a catalog built whole; whenever the old catalog cannot be
trusted to bind as it did, the catalog is built whole instead."""
from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from convarch import sql
from convarch.etl import compact as publish_compact
from convarch.etl import publish
from convarch.etl.layout import Layout
from convarch.etl.state import open_state
from helpers import rows, run, scalar
from stories import Story
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
    real = publish._lake

    def wider(con, files):
        real(con, files)
        con.execute(f"create or replace view lake_quarantine as select *, 1 as added "
                    f"from read_parquet({publish.sql_list(files['quarantine'])}, hive_partitioning = true, "
                    "union_by_name = true)")

    monkeypatch.setattr(publish, "_lake", wider)
    append_turn(root, 2)
    run(db, root)
    assert builds == ["built", "built", "built"]
    assert scalar(db, "select count(*) from messages where text like '%one more thing%'") == 6
    assert "added" in [r[0] for r in rows(db, "describe lake_quarantine")]


@pytest.mark.parametrize("synced, recomputed", [(0, publish.SESSIONS_RECOMPUTED), (0, 0), (publish.ROWS_SYNCED, 0)],
                         ids=["rows", "sessions-whole", "all-whole"])
def test_a_catalog_carried_through_every_kind_of_change_reads_like_one_built_whole(tmp_path, monkeypatch, builds,
                                                                                  synced, recomputed):
    """Each run changes the state tables' rows and the sessions in another way; the carried
    catalog makes again only the rows that differ (or, past SESSIONS_RECOMPUTED files, the
    sessions table whole), and must end up as a catalog built whole from the same state."""
    monkeypatch.setattr(publish, "ROWS_SYNCED", synced)              # these stores are small:
    monkeypatch.setattr(publish, "SESSIONS_RECOMPUTED", recomputed)  # row by row when told
    remade = []
    real = publish._restore_sessions
    monkeypatch.setattr(publish, "_restore_sessions", lambda con, keys: remade.append(set(keys)) or real(con, keys))
    root = tmp_path / "home" / ".claude"
    stories = {name: Story(name, cwd=f"/home/demo/{name}") for name in "abcde"}
    for s in stories.values():
        s.user(f"task of {s.name}").assistant("on it").bash("make test", "ok")
    paths = {name: s.write(root) for name, s in stories.items() if name != "e"}
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, root)

    paths["a"].write_text(paths["a"].read_text() + json.dumps(stories["a"].user("and more").records[-1]) + "\n")
    run(db, root)                                            # appended
    stories["b"].title("Named by the user")
    paths["b"] = stories["b"].write(root)
    run(db, root)                                            # a title: the session's row changes
    other = Story("c-again", cwd="/home/demo/c").user("a different start")
    paths["c"].write_text("".join(json.dumps(r) + "\n" for r in other.records))
    run(db, root)                                            # rewritten (a Claude Code transcript
                                                             # keeps the session its name says)
    paths["d"].unlink()
    run(db, root)                                            # gone: kept in the archive
    moved = root / "projects" / "-home-demo-elsewhere" / paths["a"].name
    moved.parent.mkdir()
    paths["a"].rename(moved)
    run(db, root)                                            # moved
    os.utime(paths["b"], ns=(1, 1))                          # touched only: nothing to publish
    stories["e"].write(root)
    run(db, root)                                            # a new session, after the touch
    for k in range(publish_compact.SMALL_FILES + 1):       # enough small files to merge: the
        with open(moved, "a") as fh:                         # rewritten file's dead parts go
            fh.write(json.dumps(stories["a"].user(f"again {k}").records[-1]) + "\n")
        assert run(db, root).files_merged or k < publish_compact.SMALL_FILES - 1

    assert builds == ["built"] + ["carried"] * (6 + publish_compact.SMALL_FILES + 1)
    assert bool(remade) == bool(recomputed and not synced)
    if remade:
        sids = {s.sid for s in stories.values()}
        assert all(keys and {sid for _, sid in keys} <= sids for keys in remade), remade
    carried = contents(db)
    assert scalar(db, "select title from sessions where session_id = ?", [stories["b"].sid]) == "Named by the user"
    assert scalar(db, "select count(*) from sessions") == 5
    rebuild_whole(db, monkeypatch)
    assert contents(db) == carried


def test_a_file_that_becomes_another_session_in_a_run_that_merges_leaves_no_stale_session(tmp_path, monkeypatch,
                                                                                          builds):
    """A Gemini CLI session file names its session inside. Rewritten as another session in
    the run whose compaction drops the session facts it superseded, the old session stays in
    the archive (the store no longer holds it: etl/retained.py), its facts carried over to
    the file's new version, and the carried catalog holds what a whole build does."""
    from convarch.adapters import gemini_cli
    from convarch.etl.ingest import ingest
    from test_adapter_gemini_cli import HEADER, msg

    monkeypatch.setattr(publish, "ROWS_SYNCED", 0)                 # row by row, as a big archive
    chats = tmp_path / "home" / ".gemini" / "tmp" / "demo" / "chats"
    chats.mkdir(parents=True)
    sid = "aaaa1111-0000-4000-8000-{:012d}".format

    def lines(session: str, *texts: str) -> str:
        return "".join(json.dumps(r) + "\n" for r in [{**HEADER, "sessionId": session},
                                                      *(msg(f"u{n}", "user", t, n) for n, t in enumerate(texts))])

    rewritten = chats / "session-2026-05-01T10-00-aaaa1111.jsonl"
    appended = chats / "session-2026-05-01T11-00-bbbb2222.jsonl"
    rewritten.write_text(lines(sid(0), "the first task"))
    appended.write_text(lines(sid(999), "a long task"))
    db = tmp_path / "w" / "convarch.duckdb"

    def run_gemini():
        return ingest(Layout(db), [(gemini_cli, gemini_cli.resolve_root(tmp_path / "home" / ".gemini"))])

    run_gemini()
    merges = 0
    for k in range(1, publish_compact.SMALL_FILES + 1):   # every run makes it another session,
        appended.write_text(lines(sid(999), "a long task", *(f"step {n}" for n in range(k))))
        rewritten.write_text(lines(sid(k), f"task number {k}"))   # so one of them merges too
        merges += bool(run_gemini().files_merged)
    assert merges, "no run merged: the case was not tried"
    assert builds == ["built"] + ["carried"] * publish_compact.SMALL_FILES
    assert [r for r in rows(db, "select session_id, message_count from sessions order by 1")] == \
        [(sid(k), 1) for k in range(publish_compact.SMALL_FILES + 1)] + [(sid(999), publish_compact.SMALL_FILES + 1)]
    carried = contents(db)
    rebuild_whole(db, monkeypatch)
    assert contents(db) == carried
