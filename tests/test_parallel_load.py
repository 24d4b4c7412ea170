"""Loading on several workers gives exactly what one worker gives, and the Arrow line cutter
agrees with the careful Python one byte for byte."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from convarch.adapters import claude_code
from convarch.etl import chains
from convarch.etl import extract as extract_mod
from convarch.etl import load
from convarch.etl import lines
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows
from test_reliability import corpus

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


def test_a_failing_worker_fails_the_run_and_commits_nothing(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=6, seed=5)
    db = tmp_path / "wh" / "convarch.duckdb"
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 16 << 10)
    calls = {"n": 0}
    real = load.BatchWriter.flush

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("disk full (simulated)")
        return real(self)

    monkeypatch.setattr(load.BatchWriter, "flush", flaky)
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
