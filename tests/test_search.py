"""Search finds the right message, ranks it, filters it, and stays current as ingest runs;
show prints the conversation around a hit."""
from __future__ import annotations

import json

from click.testing import CliRunner

from convarch.cli import cli
from helpers import run
from stories import Story


def invoke(db, *args):
    r = CliRunner().invoke(cli, ["--db", str(db), *args])
    return r


def corpus(tmp_path):
    a = Story("pool", cwd="/home/demo/api")
    a.user("The ConnectionPool keeps timing out under load; raise max_size to 40.")
    a.assistant("I raised the connection pool max_size to 40 and added a health check.")
    a.bash("pytest -q tests/test_pool.py", "3 passed; pgbouncer_stats ok")
    b = Story("ui", cwd="/home/demo/web", start="2026-10-05T10:00:00")
    b.user("Make the navbar sticky. The pool of icons should wrap.")
    b.assistant("Navbar is sticky now.")
    root = tmp_path / "claude"
    a.write(root)
    b.write(root)
    db = tmp_path / "w.duckdb"
    run(db, root)
    return db, root, a, b


def hits(db, *args):
    r = invoke(db, "search", *args, "--json")
    assert r.exit_code in (0, 3), r.output
    return json.loads(r.output) if r.exit_code == 0 else []


def test_ranked_search_with_identifier_splitting(tmp_path):
    db, _root, a, b = corpus(tmp_path)
    got = hits(db, "connection pool")
    assert hits(db, "connection", "pool") == got              # words as separate arguments, as typed
    assert got[0]["session_id"] == a.sid and got[0]["matched_terms"] == 2
    assert {h["session_id"] for h in got} == {a.sid, b.sid}          # "pool" alone matches the UI session
    assert got[-1]["session_id"] == b.sid
    assert "«" in got[0]["snippet"]
    assert hits(db, "connectionpool")[0]["role"] == "user"          # the identifier, whole
    assert hits(db, "max_size") and hits(db, "size")


def test_phrases_and_filters(tmp_path):
    db, _root, a, b = corpus(tmp_path)
    assert [h["role"] for h in hits(db, '"connection pool max_size"')] == ["assistant"]
    assert [h["role"] for h in hits(db, "raised", '"connection pool max_size"')] == ["assistant"]
    assert hits(db, "pool", "--role", "user", "--cwd", "/home/demo/web")[0]["session_id"] == b.sid
    assert {h["session_id"] for h in hits(db, "pool", "--since", "2026-10-04")} == {b.sid}
    assert {h["session_id"] for h in hits(db, "pool", "--until", "2026-10-04")} == {a.sid}
    assert hits(db, "pool", "--source", "codex") == []
    assert hits(db, "pgbouncer_stats") == []
    tool_hits = hits(db, "pgbouncer_stats", "--include-tools")
    assert tool_hits and tool_hits[0]["field"] == "tool"
    r = invoke(db, "search", "zzzyzzy")
    assert r.exit_code == 3


def test_index_follows_appends_and_rewrites(tmp_path):
    db, root, a, _b = corpus(tmp_path)
    path = next(root.rglob(f"{a.sid}.jsonl"))
    a.assistant("Also tuned the kestrelqueue worker.")
    a.write(root)                       # same prefix plus one line: an append
    run(db, root)
    assert len(hits(db, "kestrelqueue")) == 1
    path.write_text(path.read_text().splitlines()[0] + "\n")   # rewritten shorter
    run(db, root)
    assert hits(db, "kestrelqueue") == []
    assert len(hits(db, "connectionpool")) == 1


def test_show_around_a_hit(tmp_path):
    db, _root, a, _b = corpus(tmp_path)
    h = hits(db, '"health check"')[0]
    r = invoke(db, "show", a.sid[:8], "--at", str(h["seq"]), "--context", "1")
    assert r.exit_code == 0
    assert "health check" in r.output and "◀" in r.output
    assert r.output.count("── #") == 3
    r = invoke(db, "show", a.sid, "--json")
    msgs = json.loads(r.output)["messages"]
    assert [m["seq"] for m in msgs] == list(range(1, len(msgs) + 1))
    assert any(c["command"] == "pytest -q tests/test_pool.py" for m in msgs for c in (m["calls"] or []))
    r = invoke(db, "show", a.sid, "--at", "1", "--context", "0", "--raw")
    assert '"parentUuid"' in r.output and 'The ConnectionPool keeps' in r.output
    r = invoke(db, "show", a.sid, "--at", "999")
    assert r.exit_code == 3


def test_a_filter_finds_its_hits_below_the_best_of_all_and_ties_at_the_limit_are_kept(tmp_path):
    """The words alone pick the best --limit documents before anything is looked up; a filter
    must instead see every match, and a document tied with the last of the best is kept."""
    a = Story("many", cwd="/home/demo/api")
    for i in range(6):
        a.assistant(f"orbitdrive orbitdrive orbitdrive tuned, round {i}.")
    b = Story("late", cwd="/home/demo/web", start="2026-10-05T10:00:00")
    b.user("a long note that mentions orbitdrive once among many other words " + "filler " * 40)
    root = tmp_path / "claude"
    a.write(root)
    b.write(root)
    db = tmp_path / "w.duckdb"
    run(db, root)
    best = hits(db, "orbitdrive", "--limit", "2")
    assert [h["session_id"] for h in best] == [a.sid, a.sid]          # the weak match ranks last
    assert [h["session_id"] for h in hits(db, "orbitdrive", "--limit", "2", "--role", "user")] == [b.sid]
    assert [h["session_id"] for h in hits(db, "orbitdrive", "--limit", "2", "--cwd", "/home/demo/web")] == [b.sid]
    assert [h["session_id"] for h in hits(db, "orbitdrive", "--limit", "2", "--since", "2026-10-04")] == [b.sid]
    # the six rounds score the same, so all six are the best two and the newest two win
    assert len({h["score"] for h in hits(db, "orbitdrive", "--limit", "6", "--role", "assistant")}) == 1
    assert ["round 5" in h["snippet"] for h in best] == [True, False]
    assert "round 4" in best[1]["snippet"]


def test_words_counted_a_piece_at_a_time_give_the_index_of_counting_them_at_once(tmp_path, monkeypatch):
    import pyarrow as pa

    from convarch.adapters import claude_code
    from convarch.etl import index
    from convarch.etl.ingest import ingest
    from convarch.etl.layout import Layout
    from test_parallel_load import snapshot_of
    from test_reliability import corpus

    docs = pa.table({"doc_id": [1, 2, 3, 4], "body": ["aaaa", None, "bb", "cccccc"]})
    assert [p["doc_id"].to_pylist() for p in index.pieces(docs, 5)] == [[1, 2], [3], [4]]
    assert [p["doc_id"].to_pylist() for p in index.pieces(docs, 1 << 20)] == [[1, 2, 3, 4]]
    assert [p.num_rows for p in index.pieces(docs.slice(0, 0), 5)] == [0]

    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=6, seed=9)
    got = {}
    for piece in (1, 1 << 30):          # every document alone, all at once
        monkeypatch.setattr(index, "PIECE_BYTES", piece)
        db = tmp_path / f"w{piece}" / "convarch.duckdb"
        ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))])
        got[piece] = snapshot_of(db)
    assert got[1]["search_postings"]
    assert got[1] == got[1 << 30]
