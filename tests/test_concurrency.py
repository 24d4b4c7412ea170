"""A reader holding the warehouse open never blocks ingest, and two ingests never overlap."""
from __future__ import annotations

import subprocess
import sys

import pytest

from convarch import connect
from convarch.etl.errors import Busy
from convarch.etl.layout import Layout
from convarch.etl.state import open_state
from conftest import write_jsonl
from helpers import assistant, reader_in_another_process, run, user


def _store(tmp_path, n):
    root = tmp_path / "claude"
    recs = [user("u0", None, "start", "2026-05-01T10:00:00.000Z")]
    for i in range(1, n):
        recs.append(assistant(f"a{i}", recs[-1] and f"{'u0' if i == 1 else f'a{i-1}'}", f"step {i}",
                              f"2026-05-01T10:00:{i % 60:02d}.000Z"))
    write_jsonl(root / "projects" / "-w" / "s1.jsonl", recs)
    return root


def test_open_reader_does_not_block_ingest_and_sees_a_whole_state(tmp_path):
    root = _store(tmp_path, 5)
    db = tmp_path / "w.duckdb"
    run(db, root)
    reader = connect(db)                       # a notebook holding the warehouse open
    assert reader.execute("select count(*) from stg_records").fetchone()[0] == 5
    with reader_in_another_process(db) as client:    # and a plain DuckDB client in another process
        assert client.count() == "5"
        write_jsonl(root / "projects" / "-w" / "s2.jsonl",
                    [user("x", None, "another", "2026-05-02T10:00:00.000Z", "s2")])
        summary = run(db, root)                 # ingest while both readers hold the warehouse
        assert summary.records_added == 1
        assert client.count() == "5"
    # the held connection still works and still sees the state it opened
    assert reader.execute("select count(*) from stg_records").fetchone()[0] == 5
    reader.close()
    assert connect(db).execute("select count(*) from stg_records").fetchone()[0] == 6


def test_second_ingest_waits_then_reports_busy(tmp_path):
    layout = Layout(tmp_path / "w.duckdb")
    layout.create()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from convarch.etl.state import open_state;"
         f"c = open_state(Path({str(layout.state_db)!r})); print('held', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(Busy, match="another convarch ingest is running"):
            open_state(layout.state_db, wait_seconds=0.5)
    finally:
        holder.kill()
        holder.wait()
    open_state(layout.state_db, wait_seconds=5).close()
