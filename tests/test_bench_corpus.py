"""The benchmark's synthetic corpus is only worth measuring if convarch reads all of it the way
it reads a real store: both sources, every line loaded, nothing quarantined, tool calls matched
to their results and Codex token counts kept."""
from __future__ import annotations

import json
import sys

from conftest import REPO, tree_fingerprint
from convarch.adapters import claude_code, codex
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, scalar

sys.path.insert(0, str(REPO / "bench"))
from generate import CODEX_SHARE, generate  # noqa: E402


def test_generated_corpus_mixes_sources_and_loads_completely(tmp_path):
    corpus = tmp_path / "corpus"
    info = generate(corpus, 3)
    claude_files = sorted((corpus / "claude" / "projects").rglob("*.jsonl"))
    codex_files = sorted((corpus / "codex" / "sessions").rglob("rollout-*.jsonl"))
    assert claude_files and codex_files
    total = sum(f.stat().st_size for f in claude_files + codex_files)
    assert info["bytes"] == total and info["files"] == len(claude_files) + len(codex_files)
    # a rollout is written only while Codex is below its share, so the share is overshot by one
    # rollout at most (a small corpus can fall short of it: one Claude file may be most of it)
    codex_bytes = sum(f.stat().st_size for f in codex_files)
    assert info["codex_bytes"] == codex_bytes
    assert codex_bytes - max(f.stat().st_size for f in codex_files) < CODEX_SHARE * total
    lines = {f: sum(1 for ln in f.read_bytes().splitlines() if ln.strip()) for f in claude_files + codex_files}
    for f in codex_files:      # each rollout opens with its own thread's session_meta
        first = json.loads(f.read_bytes().splitlines()[0])
        assert first["type"] == "session_meta" and f.stem.endswith(first["payload"]["id"])

    before = tree_fingerprint(corpus)
    db = tmp_path / "w.duckdb"
    s = ingest(Layout(db), [(claude_code, claude_code.resolve_root(corpus / "claude")),
                            (codex, codex.resolve_root(corpus / "codex"))])
    assert tree_fingerprint(corpus) == before
    assert s.records_added == sum(lines.values())
    assert scalar(db, "select count(*) from quarantine") == 0
    per_source = dict(rows(db, "select source, count(*) from stg_records group by 1"))
    assert per_source == {"claude_code": sum(lines[f] for f in claude_files),
                          "codex": sum(lines[f] for f in codex_files)}
    assert scalar(db, "select count(*) from sessions where source = 'codex'") == len(codex_files)
    # every call the generator made got its output
    assert rows(db, "select source, count(*) filter (where output_text is null) from tool_calls group by 1 order by 1") == [
        ("claude_code", 0), ("codex", 0)]
    # Codex's token counts: one counted row per model request the generator wrote
    requests = sum(1 for f in codex_files for ln in f.read_bytes().splitlines()
                   if json.loads(ln)["payload"].get("type") == "token_count")
    assert scalar(db, "select count(*) from usage where source = 'codex'") == requests


def test_the_rewritten_stores_section_measures_what_it_says(tmp_path):
    from rewrites import rewrites
    from stores import cline_messages
    from run import INGEST

    msgs = cline_messages(1)
    calls = sum(1 for m in msgs for b in m["content"] if b.get("type") == "tool_use")
    res = rewrites(INGEST, tmp_path, 1)
    grown, same = res["cline_grown"], res["goose_same_lines"]
    # the grown history loads its two new messages alone; the edited one, every message again
    assert (grown["records"], grown["whole_records"], grown["messages"]) == (2, len(msgs) + 3, len(msgs) + 3)
    assert grown["tail_records"] == 2            # the rewritten last message and the new one
    assert calls > 50 and grown["lake_growth_mb"] < 0.1 * grown["first_lake_mb"]
    # the database written in a table convarch does not read loads nothing; the edit, everything
    assert (same["records"], same["lake_growth_mb"]) == (0, 0)
    assert same["whole_records"] > 1000
    # an answer, its usage row and the session's totals load those three, not every usage row
    assert same["turn_records"] == 3
    # the latest Cursor chat that gained a bubble loads it and the chat's row; the oldest chat
    # taken up again moves to the end, and only its own lines load again
    chat = res["cursor_latest_chat"]
    assert chat["records"] == 2 and chat["whole_records"] > 150
    assert chat["taken_up_records"] == 152
    assert chat["lake_growth_mb"] < 0.1 * chat["first_lake_mb"]
    # the OpenCode database's new message loads, with its session's row (which moved after it)
    turn = res["opencode_turn"]
    assert turn["records"] == 2 and turn["whole_records"] > turn["messages"] > 300
    assert turn["lake_growth_mb"] < 0.2 * turn["first_lake_mb"]
