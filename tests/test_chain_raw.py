"""The chain rebuild reads the few verbatim lines it needs from chain_raw, not every record's
raw JSON: which lines keep that copy, and a lake written before the column existed, whose raw
lines stand in for it, rebuilding the very same chains."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from convarch.adapters import claude_code
from convarch.etl import compact
from convarch.etl.duck import connect
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from test_chains import SLUG, build_store, entry, open_warehouse, state, user, write_session

# the last entry is a user line carrying a toolUseResult whose content is no tool result:
# Claude Code counts it as a tool turn (Boolean(toolUseResult)), so the session stopped mid-turn
TEXT_WITH_RESULT = [
    user("t1", None, 1, "run it"),
    entry("user", "t2", "t1", 2, toolUseResult={"stdout": "done"},
          message={"role": "user", "content": [{"type": "text", "text": "output attached"}]}),
]


def _store(root):
    build_store(root)
    write_session(root / "projects" / SLUG / "text-with-result.jsonl", TEXT_WITH_RESULT)
    return root


def _ingest(db, root):
    return ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))])


def _kept(db) -> tuple[set[tuple[str, str]], int]:
    """(record type, message id or a summary's leaf) of every line that kept a chain_raw copy,
    and how many lines there are in all."""
    lake = db.parent / f"{db.stem}.d" / "lake" / "records" / "source=claude_code"
    con = connect()
    rows = con.execute(
        f"select record_type, coalesce(message_id, json_extract_string(raw, '$.leafUuid')), chain_raw is not null "
        f"from read_parquet('{lake}/**/*.parquet')").fetchall()
    return {(t, m) for t, m, k in rows if k}, len(rows)


def test_only_lines_the_rebuild_reads_keep_a_copy(tmp_path):
    db = tmp_path / "w.duckdb"
    _ingest(db, _store(tmp_path / "store"))
    kept, lines = _kept(db)
    assert kept == {
        *(("system", b) for b in ("b5", "b9", "c7", "pb7", "st3", "st7")),   # compact boundaries
        ("system", "d7"),                                                    # a snip
        ("assistant", "j9"), ("assistant", "n4"),                            # API errors
        *(("summary", leaf) for leaf in ("e4", "e6", "h3")),                 # summaries
        ("user", "t2"),                                      # a toolUseResult behind a text block
    }
    # every other line has none, tool results included: their first block says what they are
    assert lines > 10 * len(kept)
    wh = open_warehouse(db)
    try:
        assert state(wh, "text-with-result") == "interrupted_turn"
    finally:
        wh.con.close()


def _strip_chain_raw(db) -> int:
    """Rewrite the lake's records files as an earlier version wrote them, without chain_raw."""
    lake = db.parent / f"{db.stem}.d" / "lake" / "records" / "source=claude_code"
    n = 0
    for path in lake.rglob("*.parquet"):
        table = pq.read_table(path, partitioning=None)
        pq.write_table(table.drop_columns(["chain_raw"]), path, compression="zstd")
        n += 1
    return n


def _grow(root, k: int) -> None:
    """Every transcript grows by a line: each file's chains are rebuilt from the rows loaded
    before (in the old lake, files without chain_raw) and the new line."""
    for path in (root / "projects").rglob("*.jsonl"):
        text = path.read_text()
        if not text.endswith("\n"):
            continue                   # a live session's partial last line: left as it is
        last = json.loads(text.splitlines()[-1])
        extra = user(f"grown-{k}-{path.stem}", last.get("uuid"), 99 + k, "and one more thing")
        extra["sessionId"] = last.get("sessionId", path.stem)
        with open(path, "a") as fh:
            fh.write(json.dumps(extra) + "\n")


@pytest.mark.parametrize("merging", [False, True], ids=["as written", "small files merged"])
def test_a_lake_from_before_chain_raw_rebuilds_the_same_chains(tmp_path, monkeypatch, merging):
    root = _store(tmp_path / "store")
    new, old = tmp_path / "new" / "w.duckdb", tmp_path / "old" / "w.duckdb"
    _ingest(new, root)
    _ingest(old, root)
    assert _strip_chain_raw(old) > 0
    if merging:
        # the old files merged with the new ones the next runs write (etl/compact.py)
        monkeypatch.setattr(compact, "SMALL_FILES", 2)
    else:       # every file stays as written, the chain files that later runs replace too
        monkeypatch.setattr(compact, "DEAD_SHARE", 2.0)
    for k in (1, 2):
        _grow(root, k)
        assert _ingest(new, root).chain_seconds > 0
        merged = _ingest(old, root).files_merged
        assert merged > 0 if merging else merged == 0
    a, b = open_warehouse(new), open_warehouse(old)
    try:
        for view in ("chain_messages", "resume_messages", "branches", "session_state", "chain_issues"):
            rows_a = {s: [{k: v for k, v in r.items() if k != "chain_run_id"} for r in rows]
                      for s, rows in a.views[view].items()}
            rows_b = {s: [{k: v for k, v in r.items() if k != "chain_run_id"} for r in rows]
                      for s, rows in b.views[view].items()}
            assert rows_a == rows_b, view
        # and the old lake's chains hold what only the verbatim lines say: the preserved
        # segment spliced back, the snipped messages gone
        resumed = {s: [r["message_id"] for r in b.views["resume_messages"][s]] for s in ("preserved", "snip")}
        assert resumed["preserved"] == ["c7", "c8", "c5", "c6", "c9", "c10", "grown-1-preserved", "grown-2-preserved"]
        assert resumed["snip"] == ["d1", "d2", "d5", "d6", "d7", "d8", "grown-1-snip", "grown-2-snip"]
    finally:
        a.con.close()
        b.con.close()
