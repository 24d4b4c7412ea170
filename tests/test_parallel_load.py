"""Loading on several workers gives exactly what one worker gives, and the Arrow line cutter
agrees with the careful Python one byte for byte."""
from __future__ import annotations

import re
import subprocess
import threading
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convarch import adapters
from convarch.adapters import claude_code
from convarch.etl import chains
from convarch.etl import extract as extract_mod
from convarch.etl import load
from convarch.etl import shared_batches
from convarch.etl import lines
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows
from test_reliability import corpus
from conftest import REPO
from stories import Story

TABLES = {
    "stg_records": "file_id, line_no, byte_offset, session_id, record_type, kind, text, hash(raw)",
    "stg_blocks": "file_id, line_no, block_index, block_type, call_id, output_text",
    "search_postings": "term, file_id, line_no, field, tf",
    "search_docs": "file_id, line_no, field, length",
    "chain_messages": "session_id, seq, message_id",
    "resume_messages": "session_id, message_id",
    "branches": "session_id, leaf_id, is_default, length",
    "sessions": "session_id, title, message_count, record_count",
    "quarantine": "source_file, line_no, reason",
}


def snapshot_of(db: Path) -> dict[str, list[tuple]]:
    out = {}
    for view, cols in TABLES.items():
        got = rows(db, f"select {cols} from {view}")
        # file ids follow the plan order, the same in both runs
        out[view] = sorted(got, key=repr)
    return out


def test_four_workers_load_exactly_what_one_worker_loads(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=24, seed=4)
    bad = next((root / "projects").rglob("*.jsonl"))
    with open(bad, "ab") as fh:
        fh.write(b'{"type": "user", not json\n\xff\xfe not utf8\n')
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 64 << 10)   # many small units and batches
    results = {}
    for n in (1, 4):
        # four workers also compute the chains in many small groups of files
        monkeypatch.setattr(chains, "GROUP_RECORDS", 100_000 if n == 1 else 150)
        db = tmp_path / f"w{n}" / "convarch.duckdb"
        s = ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=n)
        assert s.files_changed == 24 and s.quarantined == 2
        results[n] = snapshot_of(db)
    assert results[1]["stg_records"], "the corpus loaded nothing"
    for view in TABLES:
        assert results[4][view] == results[1][view], view


def test_a_machine_of_many_cores_loads_on_at_most_max_workers_threads(tmp_path, monkeypatch):
    """Peak memory follows the batches held at once, one set per worker: the 1 GB bench
    corpus peaked at 1,289 MB on 8 workers and 835 MB on 4, so a run on a big machine starts
    no more than MAX_WORKERS unless told."""
    from convarch.etl import workers as workers_mod

    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=12, seed=7)
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 32 << 10)   # more units than workers
    monkeypatch.setattr(workers_mod, "cores", lambda: 16)
    assert workers_mod.default_workers() == workers_mod.MAX_WORKERS == 4
    monkeypatch.setattr(workers_mod, "cores", lambda: 3)
    assert workers_mod.default_workers() == 3
    monkeypatch.setattr(workers_mod, "cores", lambda: 16)
    threads: set[str] = set()
    real_con = workers_mod.Workers._con

    def counting_con(self, side):
        if side == "pool":                                   # not a stage of one item
            assert threading.current_thread().name.startswith("convarch-load")
            threads.add(threading.current_thread().name)
        return real_con(self, side)

    monkeypatch.setattr(workers_mod.Workers, "_con", counting_con)
    s = ingest(Layout(tmp_path / "w" / "convarch.duckdb"), [(claude_code, claude_code.resolve_root(root))])
    assert s.files_changed == 12
    assert 1 < len(threads) <= 4, threads
    # told more, it starts more
    threads.clear()
    ingest(Layout(tmp_path / "w6" / "convarch.duckdb"), [(claude_code, claude_code.resolve_root(root))], workers=6)
    assert len(threads) > 4, threads


def failing_flush(monkeypatch, at: int):
    """Make the `at`-th batch flushed in the run fail as a full disk would; returns the real flush."""
    calls = {"n": 0}
    real = load.BatchWriter.flush

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == at:
            raise RuntimeError("disk full (simulated)")
        return real(self)

    monkeypatch.setattr(load.BatchWriter, "flush", flaky)
    return real


def test_a_failing_worker_fails_the_run_and_commits_nothing(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=6, seed=5)
    db = tmp_path / "wh" / "convarch.duckdb"
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 16 << 10)
    real = failing_flush(monkeypatch, at=3)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=3)
    monkeypatch.setattr(load.BatchWriter, "flush", real)
    s = ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=3)
    assert s.files_changed == 6     # the failed run registered no file
    assert rows(db, "select count(*) from (select file_id, line_no from stg_records group by all having count(*) > 1)") == [(0,)]
    assert not list((db.parent / "convarch.d" / "tmp").glob("run-*"))


LINE = st.one_of(
    st.just(b""), st.just(b"  \t"), st.just(b'{"a": 1}'), st.just(b'{"b": "\xc3\xa9\xe4\xb8\xad"}\r'),
    st.just(b"\r"), st.just(b"not json"), st.just(b'  {"c": 2}  '), st.just(b"\xef\xbb\xbf{}"),
    st.binary(max_size=12).filter(lambda b: b"\n" not in b),
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(LINE, max_size=12), newline_at_end=st.booleans(), offset=st.sampled_from([0, 9]),
       first=st.sampled_from([1, 40]))
def test_arrow_cut_matches_the_python_cut(parts, newline_at_end, offset, first):
    body = b"\n".join(parts) + (b"\n" if newline_at_end else b"")
    if not body:
        return
    fast = lines._split_fast(body, 7, first, offset)
    slow, slow_no, slow_off = lines._split(body, 7, first, offset)
    if fast is None:         # only a BOM at the file's start or bytes that are not UTF-8
        assert (offset == 0 and body.startswith(lines.BOM)) or slow.bad
        return
    batch, no, off = fast
    assert (no, off, batch.lines, batch.nbytes) == (slow_no, slow_off, slow.lines, slow.nbytes)
    assert batch.table.to_pylist() == slow.table.to_pylist()
    assert not slow.bad


@settings(max_examples=150, deadline=None)
@given(parts=st.lists(LINE | st.binary(min_size=20, max_size=60).map(lambda b: b.replace(b"\n", b"x")), max_size=14),
       newline_at_end=st.booleans(), chunk=st.sampled_from([1, 7, 16, 64]), small=st.sampled_from([0, 32]))
def test_cutting_a_snapshot_in_chunks_changes_nothing(tmp_path_factory, parts, newline_at_end, chunk, small):
    """Chunks end at a line's end whatever their size, lines longer than a chunk included: the
    same lines, numbers, offsets and bad lines as one cut of the whole file, whether a chunk is
    cut by Arrow or, being small, by Python."""
    body = b"\n".join(parts) + (b"\n" if newline_at_end else b"")
    path = tmp_path_factory.mktemp("cut") / "snap.jsonl"
    path.write_bytes(body)
    whole, _, _ = lines._split(body, 3, 5, 100)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lines, "READ_CHUNK", chunk)
        mp.setattr(lines, "SMALL_BODY", small)
        batches = list(lines.split_snapshot(path, 3, 100, 5))
    got = [r for b in batches for r in b.table.to_pylist()]
    assert got == whole.table.to_pylist()
    assert [(b.line_no, b.byte_offset, b.raw) for bt in batches for b in bt.bad] == \
        [(b.line_no, b.byte_offset, b.raw) for b in whole.bad]
    assert sum(b.nbytes for b in batches) == len(body)
    assert sum(b.lines for b in batches) == whole.lines
    if body and b"\n" in body[max(chunk - 1, 0):-1]:      # the line reaching the chunk's size ends early
        assert len(batches) > 1


def test_cutting_a_big_snapshot_keeps_memory_to_a_few_chunks(tmp_path):
    """The snapshot is mapped, not read; the pages already cut are handed back, so a file far
    bigger than a batch does not count against the process's memory as it is read."""
    big = tmp_path / "big.jsonl"
    line = b'{"type":"user","pad":"' + b"y" * 4000 + b'"}\n'
    with open(big, "wb") as fh:
        for _ in range(64):
            fh.write(line * 1024)                  # 256 MB
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from convarch.etl import lines\n"
        "lines.READ_CHUNK = 16 << 20\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "n = sum(b.table.num_rows for b in lines.split_snapshot(Path(sys.argv[1]), 1, 0, 1))\n"
        "print(n, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(big)], capture_output=True, text=True, check=True)
    rows, grown_mb = map(int, out.stdout.split())
    assert rows == 64 * 1024
    assert grown_mb < 128, f"peak memory grew by {grown_mb} MB reading a 256 MB snapshot"


def test_one_big_file_is_loaded_on_every_worker(tmp_path, monkeypatch):
    """A single big file used to be loaded batch after batch by one worker; its full batches
    now go to whichever worker is free (etl/shared_batches.py), and the archive is the same,
    counts and quarantine included."""
    root = tmp_path / "home" / ".claude"
    s = Story("one-big-session", cwd="/home/demo/big")
    s.user("a long task")
    for j in range(600):
        if j % 3 == 0:
            s.bash(f"pytest -q t{j}.py", "ok " * (j % 97 + 1), exit_code=j % 2)
        else:
            s.assistant(f"step {j} " * (j % 23 + 1))
    path = s.write(root / "projects")
    with open(path, "ab") as fh:
        fh.write(b'{"type": "user", not json\n\xff\xfe not utf8\n')
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 32 << 10)    # dozens of batches of one file
    results, workers_seen = {}, {}
    for n in (1, 2, 4):
        db = tmp_path / f"w{n}" / "convarch.duckdb"
        got = ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=n)
        assert (got.files_changed, got.quarantined) == (1, 2)
        assert rows(db, "select sum(records) from source_files") == rows(db, "select count(*) from stg_records")
        results[n] = snapshot_of(db)
        lake = db.parent / "convarch.d" / "lake" / "records" / "source=claude_code"
        workers_seen[n] = {re.search(r"_w(\d\d)_", f.name).group(1) for f in lake.rglob("*.parquet")}
    assert len(results[1]["stg_records"]) > 500
    for view in TABLES:
        assert results[2][view] == results[1][view], view
        assert results[4][view] == results[1][view], view
    assert workers_seen[1] == {"00"}
    assert len(workers_seen[2]) == 2 and len(workers_seen[4]) >= 2


def batch_bytes_seen(monkeypatch) -> list[int]:
    """The bytes of lines of every batch a writer loads, as it loads it."""
    seen: list[int] = []
    real_flush = load.BatchWriter.flush

    def flush(self):
        if self.tables:
            seen.append(self.pending_bytes)
        return real_flush(self)

    monkeypatch.setattr(load.BatchWriter, "flush", flush)
    return seen


@pytest.mark.parametrize("store", ["claude_code", "cursor"])
def test_a_file_bigger_than_a_batch_is_cut_to_the_batch_size(store, tmp_path, monkeypatch):
    """A big file (a long transcript, a Cursor store read whole) is cut to fill the batch, not
    by a fixed 32 MB read: its batches were each twice a batch, and memory follows the batch."""
    if store == "claude_code":
        adapter, root = claude_code, tmp_path / "home" / ".claude"
        s = Story("one-long-session", cwd="/home/demo/long")
        s.user("a long task")
        for j in range(400):
            s.assistant(f"step {j} " * (j % 23 + 1))
        s.write(root / "projects")
    else:
        adapter, root = adapters.get("cursor"), REPO / "fixtures" / "cursor" / "contract"
    flush = 8 << 10
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", flush)
    seen = batch_bytes_seen(monkeypatch)
    got = ingest(Layout(tmp_path / "w" / "convarch.duckdb"), [(adapter, adapter.resolve_root(root))], workers=1)
    assert got.records_added > 0 and len(seen) > 4
    longest = rows(tmp_path / "w" / "convarch.duckdb", "select max(strlen(raw)) + 1 from stg_records")[0][0]
    assert max(seen) < flush + longest, seen       # full, and not past the line that filled it
    if store == "claude_code":                      # one file: not cut short either
        assert all(n >= flush for n in seen[:-1]), seen


def test_a_shared_batch_that_fails_fails_the_run_and_nothing_waits_forever(tmp_path, monkeypatch):
    """A batch handed to another worker fails there: its unit raises the error, the workers
    still waiting for batches are told to stop, and the run commits nothing."""
    root = tmp_path / "home" / ".claude"
    s = Story("one-big-session", cwd="/home/demo/big")
    for j in range(300):
        s.assistant(f"step {j} " * (j % 23 + 1))
    s.write(root / "projects")
    corpus(root / "projects", files=4, seed=6)
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 16 << 10)
    real = failing_flush(monkeypatch, at=5)
    handed = {"n": 0}
    real_hand_over = shared_batches.SharedBatches.hand_over

    def counted(self, *args):
        handed["n"] += 1
        return real_hand_over(self, *args)

    monkeypatch.setattr(shared_batches.SharedBatches, "hand_over", counted)
    db = tmp_path / "wh" / "convarch.duckdb"
    outcome = {}

    def run():
        try:
            ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=2)
        except RuntimeError as exc:
            outcome["error"] = str(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(120)
    assert not t.is_alive(), "the run hung"
    assert "disk full" in outcome.get("error", "")
    assert handed["n"] >= 2          # batches were shared
    monkeypatch.setattr(load.BatchWriter, "flush", real)
    s2 = ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=2)
    assert s2.files_changed == 5     # the failed run registered no file
