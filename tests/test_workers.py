"""The caller's thread and one of the pool's share a DuckDB, each by its own connection: the
caller works only while the pool is idle, and each DuckDB opened cost a pick-up 15-20 ms."""
from __future__ import annotations

import threading

import pytest

from convarch.etl import workers as workers_mod
from convarch.etl.workers import Workers


@pytest.fixture
def opened(monkeypatch) -> list[dict]:
    """The settings of each DuckDB the workers open."""
    made: list[dict] = []
    real = workers_mod.connect
    monkeypatch.setattr(workers_mod, "connect", lambda *a, **k: made.append(k) or real(*a, **k))
    return made


def test_the_callers_thread_shares_a_duckdb_with_one_pool_thread(tmp_path, opened):
    pool = Workers(2, tmp_path / "spill")
    try:
        def where(con, item):
            # a table in the DuckDB's own catalog, seen by every connection to it
            con.execute(f"create table seen_{item} as select {item} as item")
            return threading.current_thread().name, sorted(
                r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall())

        (caller, tables), = pool.map_unordered(where, [0])          # one item: the caller's thread
        assert not caller.startswith(workers_mod.POOL_PREFIX) and tables == ["seen_0"]
        started = threading.Barrier(2)

        def both(con, item):
            started.wait(timeout=30)                                 # two threads at once
            return where(con, item)

        got = dict(pool.map_unordered(both, [1, 2]))
        assert all(name.startswith(workers_mod.POOL_PREFIX) for name in got) and len(got) == 2
        # one pool thread is in the caller's DuckDB and sees its table; the other has its own
        assert sorted(got.values()) == [["seen_0", "seen_1"], ["seen_2"]] or \
            sorted(got.values()) == [["seen_0", "seen_2"], ["seen_1"]]
        assert len(opened) == 2
        (_, tables), = pool.map_unordered(where, [3])               # the caller's again
        assert "seen_0" in tables and "seen_3" in tables
    finally:
        pool.close()
    assert len(opened) == 2


def test_a_pool_that_ran_first_lends_the_caller_its_duckdb(tmp_path, opened):
    pool = Workers(2, tmp_path / "spill")
    try:
        names = list(pool.map_unordered(lambda con, item: con.execute("select 1").fetchone()[0] + item, [1, 2]))
        assert sorted(names) == [2, 3]
        before = len(opened)
        assert list(pool.map_unordered(lambda con, item: con.execute("select 41").fetchone()[0] + item, [1])) == [42]
        assert len(opened) == before                                  # the caller took a cursor
    finally:
        pool.close()
