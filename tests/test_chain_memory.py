"""A transcript longer than a worker's memory holds: its chains get the memory they need, a
try that runs out is made again with twice as much, and past the most a group may take the
run fails with one clear error and commits nothing."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from convarch.adapters import claude_code
from convarch.etl import chains
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, scalar

RECORDS = 20_000


def long_transcript(root: Path) -> Path:
    folder = root / "projects" / "-home-demo-long"
    folder.mkdir(parents=True)
    path = folder / "long-session.jsonl"
    prev = None
    with open(path, "w") as fh:
        for i in range(RECORDS):
            role = "user" if i % 2 == 0 else "assistant"
            message = {"role": role, "content": f"turn {i}"} if role == "user" else {
                "id": f"msg_{i}", "role": "assistant", "model": "m", "content": [{"type": "text", "text": f"turn {i}"}]}
            fh.write(json.dumps({"type": role, "uuid": f"u{i}", "parentUuid": prev, "sessionId": "long-session",
                                 "timestamp": f"2026-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                                 "message": message}) + "\n")
            prev = f"u{i}"
    return path


def run(db: Path, root: Path):
    return ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=1)


def chain_of(db: Path) -> list[tuple]:
    return rows(db, "select seq, message_id, text from chain_messages order by seq")


def test_a_chain_out_of_memory_tries_again_with_more(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    long_transcript(root)
    plain = tmp_path / "plain" / "w.duckdb"
    run(plain, root)
    tries: list[str] = []
    real = chains._compute_group

    def counted(con, *args):
        tries.append(con.execute("select current_setting('memory_limit')").fetchall()[0][0])
        return real(con, *args)

    monkeypatch.setattr(chains, "first_try_mb", lambda worker_mb, records: 4)    # far too little
    monkeypatch.setattr(chains, "_compute_group", counted)
    db = tmp_path / "w" / "w.duckdb"
    s = run(db, root)
    assert len(tries) > 1, f"4 MB was enough: the test proves nothing ({tries})"
    assert s.records_added == RECORDS
    assert chain_of(db) == chain_of(plain)
    assert len(chain_of(db)) == RECORDS


def test_a_chain_past_the_memory_cap_fails_the_run_with_one_clear_error(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    long_transcript(root)
    monkeypatch.setattr(chains, "first_try_mb", lambda worker_mb, records: 4)
    monkeypatch.setattr(chains, "memory_cap_mb", lambda: 8)
    db = tmp_path / "w" / "w.duckdb"
    with pytest.raises(chains.ChainMemoryError, match=rf"1 file\(s\), {RECORDS:,} records, need more than 8 MB"):
        run(db, root)
    # nothing committed: the next run, given the memory, loads everything once
    monkeypatch.undo()
    s = run(db, root)
    assert s.records_added == RECORDS
    assert scalar(db, "select count(*) from chain_messages") == RECORDS


def test_a_long_chain_is_written_a_row_group_at_a_time_with_every_row(tmp_path, monkeypatch):
    """A transcript's chain rows stream out of DuckDB in row groups of WRITE_GROUP_BYTES, so
    writing them never holds the whole chain outside DuckDB's memory limit; the archive reads
    the same as when each view was written whole."""
    root = tmp_path / "home" / ".claude"
    long_transcript(root)
    whole = tmp_path / "whole" / "w.duckdb"
    monkeypatch.setattr(chains, "WRITE_GROUP_BYTES", 1 << 40)
    run(whole, root)
    monkeypatch.setattr(chains, "WRITE_GROUP_BYTES", 64 << 10)
    db = tmp_path / "w" / "w.duckdb"
    run(db, root)

    def groups(db: Path, view: str) -> int:
        files = [p for p in (Layout(db).lake / view).rglob("*.parquet") if not p.name.startswith("seed-")]
        return sum(pq.ParquetFile(p).metadata.num_row_groups for p in files)

    assert groups(whole, "chain_messages") == 1
    assert groups(db, "chain_messages") > 1
    assert chain_of(db) == chain_of(whole)
    assert len(chain_of(db)) == RECORDS
    for view in ("resume_messages", "branches", "session_state"):
        q = f"select * exclude (file_id) from {view} order by all"
        assert rows(db, q) == rows(whole, q), view
