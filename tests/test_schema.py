"""`convarch schema` and the column docs it reads from the views' own SQL comments."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from conftest import DEMO, REPO
from convarch import adapters, connect, sql
from convarch.adapters import claude_code
from convarch.cli import cli
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.sql import docs


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("wh") / "w.duckdb"
    codex = adapters.get("codex")
    ingest(Layout(db), [(claude_code, claude_code.resolve_root(DEMO)),
                        (codex, codex.resolve_root(REPO / "fixtures" / "codex" / "contract"))])
    return db


def catalog_columns(db: Path) -> dict[str, list[tuple[str, str]]]:
    con = connect(db)
    try:
        return {v: [(r[0], r[1]) for r in con.execute(f"describe {v}").fetchall()] for v in sql.PUBLIC_VIEWS}
    finally:
        con.close()


def test_every_public_column_has_a_description(warehouse):
    con = connect(warehouse)
    try:
        described = docs.describe(con)
    finally:
        con.close()
    assert [v.name for v in described] == list(sql.PUBLIC_VIEWS)
    columns = catalog_columns(warehouse)
    for view in described:
        assert view.grain.startswith("one row per"), view.name
        assert [(c.name, c.type) for c in view.columns] == columns[view.name]
        undocumented = [c.name for c in view.columns if not c.description.strip()]
        assert not undocumented, f"{view.name}: add a trailing -- comment for {undocumented}"


def test_column_comments_name_real_columns(warehouse):
    """A comment on a line that is not a column of the view (a typo, a dropped column) fails."""
    columns = catalog_columns(warehouse)
    for view in sql.PUBLIC_VIEWS:
        _grain, described = docs.view_docs(view)
        assert described, view
        stale = set(described) - {name for name, _ in columns[view]}
        assert not stale, f"{view}: comments for columns it does not have: {sorted(stale)}"


def test_parsing_of_grains_and_trailing_comments():
    text = "\n".join([
        "-- grain: one row per thing, described over",
        "-- two lines",
        "--",
        "-- not part of the grain",
        "with final as (",
        "    select",
        "        a.id,  -- the id",
        "        '--' as dashes,  -- a string that holds --",
        "        coalesce(x, 'y -- z') as \"timestamp\",  -- when",
        "        -- a standalone comment is not a column doc",
        "        case when 1 = 1 then 2 end",
        "            as wrapped  -- alias on its own line",
        "    from a",
        ")",
        "select * from final",
    ])
    assert docs.grain(text) == "one row per thing, described over two lines"
    assert docs.column_comments(text) == {
        "id": "the id", "dashes": "a string that holds --", "timestamp": "when", "wrapped": "alias on its own line",
    }
    assert docs.split_comment("select '--' as x") == ("select '--' as x", None)


def test_comments_can_be_stored_in_the_catalog(warehouse, tmp_path):
    """What publish would run: COMMENT ON COLUMN for every documented column of each view."""
    copy = tmp_path / "catalog.duckdb"
    shutil.copy(warehouse, copy)
    con = duckdb.connect(str(copy))
    try:
        for view in sql.PUBLIC_VIEWS:
            docs.apply_comments(con, view)
        stored = dict(((t, c), comment) for t, c, comment in con.execute(
            "select table_name, column_name, comment from duckdb_columns() where schema_name = 'main'"
        ).fetchall())
    finally:
        con.close()
    for view in sql.PUBLIC_VIEWS:
        for name, desc in docs.view_docs(view)[1].items():
            assert stored[(view, name)] == desc


def invoke(db: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), "schema", *args])


def test_schema_command_text_and_json(warehouse):
    r = invoke(warehouse)
    assert r.exit_code == 0, r.output
    for view in sql.PUBLIC_VIEWS:
        assert any(line.startswith(f"{view} — one row per") for line in r.output.splitlines()), view
    assert "  session_id" in r.output and "TIMESTAMP" in r.output

    r = invoke(warehouse, "--json")
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert [v["view"] for v in got] == list(sql.PUBLIC_VIEWS)
    assert all(c["description"] and c["type"] for v in got for c in v["columns"])
    tools = {c["name"]: c for c in next(v for v in got if v["view"] == "tool_calls")["columns"]}
    assert tools["input"]["type"] == "JSON" and "JSON" in tools["input"]["description"]

    r = invoke(warehouse, "messages", "--json")
    assert [v["view"] for v in json.loads(r.output)] == ["messages"]
    r = invoke(warehouse, "stg_records")
    assert r.exit_code == 2 and "no public view" in r.output


def test_schema_without_a_warehouse_says_what_to_do(tmp_path):
    r = invoke(tmp_path / "none.duckdb")
    assert r.exit_code == 1 and "convarch ingest" in r.output
