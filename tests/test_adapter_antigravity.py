"""Antigravity stores (step transcripts, the CLI's messages lane and history, per-conversation
SQLite databases) ingest completely; tool steps are paired with the calls that ran them."""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import PEER, REPO, contract_builder, tree_fingerprint
from convarch.adapters import antigravity
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, sample_alone, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "antigravity" / "contract"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "antigravity"
PR = PEER / "portable-resume" / "antigravity"

build = contract_builder("antigravity")

A, B = build.CONV_A, build.CONV_B


def run(db: Path, root: Path):
    return ingest(Layout(db), [(antigravity, antigravity.resolve_root(root))])


# Counts read off the files. records = non-blank physical lines of a transcript / history,
# one per messages/*.json, one per database row; messages = lines with a role: every step but
# CONVERSATION_HISTORY, every portable-resume line but `session`; tool_calls = the planner's
# tool_calls entries plus one per tool step left without a call to pair (see the docstring).
SAMPLES = {
    # 19 lines: 1 CONVERSATION_HISTORY (no role); calls: list_dir (paired with LIST_DIRECTORY),
    # write_file (paired with CODE_ACTION), and unpaired VIEW_FILE, RUN_COMMAND x2, SEARCH_WEB,
    # GREP_SEARCH x2
    "jazzy-small": (JAZZY / "cli_small.jsonl", dict(files=1, sessions=1, records=19, messages=18, tool_calls=8,
                                                   quarantined=0)),
    # USER_INPUT, PLANNER_RESPONSE (no calls, thinking only), BROWSER_NAVIGATE (unpaired)
    "jazzy-drift": (JAZZY / "cli_schema_drift.jsonl", dict(files=1, sessions=1, records=3, messages=3, tool_calls=1,
                                                           quarantined=0)),
    # portable-resume's own shape: session + user + assistant
    "pr-01": (PR / "s-ant-01" / "root", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    "pr-02": (PR / "s-ant-02" / "root", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # + a system and a thought line
    "pr-03": (PR / "s-ant-03" / "root", dict(files=1, sessions=1, records=5, messages=4, tool_calls=0, quarantined=0)),
    # + a tool line with a 9000-character output (call and result in one line)
    "pr-04": (PR / "s-ant-04" / "root", dict(files=1, sessions=1, records=4, messages=3, tool_calls=1, quarantined=0)),
    # a torn last line
    "pr-05": (PR / "s-ant-05" / "root", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=1)),
    "pr-06": (PR / "s-ant-06" / "root", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # empty transcript (0 records) + 2 messages + history.jsonl (3 prompt-history lines)
    "pr-07": (PR / "s-ant-07" / "root", dict(files=4, sessions=1, records=5, messages=2, tool_calls=0, quarantined=0)),
}


def build_damaged(tmp: Path) -> dict[str, Path]:
    """Bad lines and containers in one store, and a symlinked transcript in another."""
    home = build.write_store(tmp / "agy")
    logs = home / "brain" / A / ".system_generated" / "logs"
    lines = (logs / "transcript.jsonl").read_text().splitlines()
    lines[6] = lines[6][:40]                                           # a torn line mid-file
    lines.insert(2, "[1, 2]")                                          # JSON, not a step
    (logs / "transcript.jsonl").write_text("\n".join(lines) + "\n")
    (home / "conversations" / "broken.db").write_text("not a database\n" * 10)
    sqlite3.connect(home / "conversations" / "other.db").execute("create table t (x)").connection.close()
    linked = tmp / "linked" / "brain" / A / ".system_generated" / "logs"
    linked.mkdir(parents=True)
    os.symlink(CONTRACT / "brain" / A / ".system_generated" / "logs" / "transcript.jsonl", linked / "transcript.jsonl")
    return dict(home=home, linked=tmp / "linked", link=linked / "transcript.jsonl")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The peer samples and the bad-input stores, ingested in one run (one warehouse publish
    keeps the suite fast); each test counts over its own files."""
    tmp = tmp_path_factory.mktemp("antigravity-mixed")
    present = {n: r for n, (r, _w) in SAMPLES.items() if r.exists()}
    before = {n: tree_fingerprint(r if r.is_dir() else r.parent) for n, r in present.items()}
    paths = build_damaged(tmp)
    roots = list(present.values()) + [paths["home"], paths["linked"]]
    db = tmp / "w.duckdb"
    summary = ingest(Layout(db), [(antigravity, antigravity.resolve_root(r)) for r in roots])
    files = {n: sorted(str(f.path) for f in antigravity.discover(antigravity.resolve_root(r))) for n, r in present.items()}
    after = {n: tree_fingerprint(r if r.is_dir() else r.parent) for n, r in present.items()}
    return db, files, summary, before == after, paths


@pytest.fixture(scope="module")
def peer_db(mixed):
    return mixed[:4]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_with_exact_counts(peer_db, name, tmp_path):
    root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    _db, _files, _summary, untouched = peer_db
    assert untouched, "a source store changed"
    assert sample_counts(*sample_alone(tmp_path, antigravity, root)) == want


def test_jazzy_sample_pairs_calls_and_reads_the_model(peer_db):
    if not JAZZY.exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    assert rows(db, "select title, model from sessions where session_id = 'cli_small'") == [
        ("List the files.", "Gemini 3.5 Flash (Medium)")]
    got = rows(db, "select call_id, tool_name, input ->> 'DirectoryPath', left(output_text, 16) from tool_calls "
                   "where session_id = 'cli_small' and call_id like 'step-%-%' order by line_no")
    assert got == [("step-3-0", "list_dir", "/tmp/repo", '{"name":"a.txt"}'),
                   ("step-9-0", "write_file", None, "Created At: 2026")]
    assert scalar(db, "select kind from stg_records where session_id = 'cli_small' and record_type = 'CHECKPOINT'") == \
        "compact_boundary"


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("antigravity-contract") / "w.duckdb"
    return db, run(db, CONTRACT)


def test_contract_sessions(contract_db):
    db, s = contract_db
    # transcript A (12 lines), transcript B (0 bytes), 2 messages of B, A.db (1 meta + 3 steps),
    # history.jsonl (3 lines); transcript_full.jsonl and the markdown artifacts are not read
    assert (s.files_scanned, s.records_added, s.quarantined) == (6, 21, 0)
    assert rows(db, "select session_id, title, cwd, model, message_count, started_at::varchar from sessions "
                    "order by started_at") == [
        (A, "Why does the forecast command crash on an empty city?", build.WORKSPACE, "Gemini 3.1 Pro (High)", 11,
         "2026-07-02 08:00:00"),
        (B, None, "/home/demo/packager", None, 2, "2026-07-03 15:20:00"),
    ]


def test_contract_transcript_kinds_and_calls(contract_db):
    db, _s = contract_db
    kinds = rows(db, "select kind, role, harness_kind, is_compact_summary from stg_records "
                     "where session_id = ? and record_type not in ('trajectory_meta', 'steps', 'history') "
                     "order by line_no", [A])
    assert [k for k, *_ in kinds] == ["prompt", "conversation_history", "tool_use", "tool_result", "tool_result",
                                      "response", "system", "compact_boundary", "prompt", "tool_use", "tool_result",
                                      "response"]
    assert kinds[7] == ("compact_boundary", "system", None, True)
    # the prompt's text is the <USER_REQUEST> body, without the metadata the CLI appends
    assert scalar(db, "select text from messages where session_id = ? and message_id = '0'", [A]) == \
        "Why does the forecast command crash on an empty city?"
    calls = rows(db, "select call_id, tool_name, input ->> 'CommandLine', input ->> 'WaitMsBeforeAsync', is_error, "
                     "exit_code from tool_calls where session_id = ? order by line_no, call_id", [A])
    assert calls == [
        ("step-3-0", "view_file", None, None, False, 0),
        ("step-3-1", "run_command", "python -m weather forecast ''", "5000", True, 1),
        ("step-10-0", "replace_file_content", None, None, False, 0),
    ]
    assert scalar(db, "select count(*) from stg_blocks where session_id = ? and block_type = 'thinking'", [A]) == 2


def test_contract_messages_lane_history_and_database(contract_db):
    db, _s = contract_db
    assert rows(db, "select message_id, role, kind, is_meta, agent_id from stg_records where session_id = ? "
                    "and role is not null order by \"timestamp\"", [B]) == [
        ("msg-assistant-1", "assistant", "response", False, "agent-1"),
        ("msg-hidden-1", "system", "system", True, "system")]
    # history lines are bookkeeping: they give the cwd but never count as prompts
    assert rows(db, "select session_id, kind, role, subtype, cwd, \"timestamp\"::varchar from stg_records "
                    "where record_type = 'history' order by line_no") == [
        (A, "prompt_history", None, None, build.WORKSPACE, "2026-07-02 08:00:00"),
        (A, "prompt_history", None, None, build.WORKSPACE, "2026-07-02 08:00:40"),
        (B, "prompt_history", None, "slash_command", "/home/demo/packager", "2026-07-03 15:20:00")]
    # the database: readable columns decoded, the protobuf payload archived as base64
    got = rows(db, "select record_type, kind, role, subtype, message_id, raw::json ->> 'step_payload_bytes', "
                   "raw::json ->> 'step_payload_b64' from stg_records where source_file like '%.db' order by line_no")
    assert got == [("trajectory_meta", "metadata", None, "1", A, None, None),
                   ("steps", "unknown", None, "14", "0", "8", "CAASBHN0ZXA="),
                   ("steps", "unknown", None, "15", "1", "8", "CAESBHN0ZXA="),
                   ("steps", "unknown", None, "16", "2", "8", "CAISBHN0ZXA=")]


@pytest.fixture(scope="module")
def evolving(tmp_path_factory):
    """One store changed between two runs: A's transcript gets the tool steps its planner's
    calls were waiting for, and B's 0-byte placeholder transcript fills up."""
    tmp = tmp_path_factory.mktemp("antigravity-evolving")
    home = build.write_store(tmp / "agy")
    logs_a = home / "brain" / A / ".system_generated" / "logs"
    steps = build.transcript()
    build.write_jsonl(logs_a / "transcript.jsonl", steps[:3])        # the planner's calls, no results yet
    db = tmp / "w.duckdb"
    run(db, home)
    before = dict(
        results=scalar(db, "select count(*) from tool_calls where session_id = ? and has_result", [A]),
        b_messages=rows(db, "select message_id from messages where session_id = ? order by 1", [B]))
    build.write_jsonl(logs_a / "transcript.jsonl", steps)              # the tool steps arrive
    build.write_jsonl(home / "brain" / B / ".system_generated" / "logs" / "transcript.jsonl",
                      [build.step(0, 5, "USER_EXPLICIT", "USER_INPUT", content="<USER_REQUEST>\nShip it\n</USER_REQUEST>")])
    second = run(db, home)
    return db, before, second


def test_appended_steps_load_alone_and_pair_with_calls_loaded_in_an_earlier_run(evolving):
    db, before, second = evolving
    assert before["results"] == 0
    # A's 9 new steps and B's first step load; A's first 3 lines stay as they were loaded
    assert (second.files_changed, second.records_added) == (2, 10)
    assert scalar(db, "select count(*) from tool_calls where session_id = ? and has_result", [A]) == 3
    assert rows(db, "select file_epoch, count(*) from stg_records where session_id = ? and record_type <> 'history' "
                    "and source_file like '%transcript.jsonl' group by 1", [A]) == [(1, 12)]


def test_a_transcript_appended_a_line_at_a_time_reads_like_a_fresh_load(tmp_path, monkeypatch):
    """Every step appended in a run of its own, the planner's calls long before their steps,
    and the whole transcript loaded in batches of a few lines: the same rows as one read."""
    from convarch.etl import extract
    from test_parallel_load import TABLES, snapshot_of

    home = build.write_store(tmp_path / "agy")
    transcript = home / "brain" / A / ".system_generated" / "logs" / "transcript.jsonl"
    steps = build.transcript()
    db = tmp_path / "inc" / "w.duckdb"
    for n in range(1, len(steps) + 1):
        build.write_jsonl(transcript, steps[:n])
        s = run(db, home)
        assert s.records_added == (1 if n > 1 else s.records_added), n
    fresh = tmp_path / "fresh" / "w.duckdb"
    run(fresh, home)
    monkeypatch.setattr(extract, "FLUSH_BYTES", 600)
    batched = tmp_path / "batched" / "w.duckdb"
    run(batched, home)
    want = snapshot_of(fresh)
    for got in (snapshot_of(db), snapshot_of(batched)):
        for view in TABLES:
            assert got[view] == want[view], view
    assert scalar(db, "select count(*) from tool_calls where session_id = ? and has_result", [A]) == 3


def test_placeholder_then_real_transcript_supersedes_the_messages_lane(evolving):
    db, before, _second = evolving
    assert before["b_messages"] == [("msg-assistant-1",), ("msg-hidden-1",)]
    assert rows(db, "select text from messages where session_id = ?", [B]) == [("Ship it",)]


@pytest.fixture(scope="module")
def damaged(mixed):
    db, _files, summary, _untouched, paths = mixed
    return db, summary, paths


def test_bad_lines_and_containers_are_quarantined(damaged):
    db, _s, paths = damaged
    prefix = f"{paths['home']}/%"
    got = rows(db, "select reason, error from quarantine where source_file like ? order by source_file, line_no",
               [prefix])
    assert [r for r, _e in got] == ["not_object", "invalid_json", "unreadable_container", "unreadable_container"]
    assert "not an Antigravity conversation database" in got[3][1]
    # the rest of the transcript still loads and pairs
    assert scalar(db, "select count(*) from stg_records where session_id = ? and record_type = 'PLANNER_RESPONSE' "
                      "and source_file like ?", [A, prefix]) == 4
    assert scalar(db, "select count(*) from tool_calls join (select distinct file_id, source_file from stg_records) "
                      "using (file_id) where session_id = ? and has_result and source_file like ?", [A, prefix]) == 3


def test_symlinked_transcript_is_skipped_with_a_reason(damaged):
    _db, s, paths = damaged
    assert dict(s.skipped)[str(paths["link"])].startswith("not a regular file")


def test_default_roots_and_resolve(tmp_path, isolated_home):
    home = isolated_home
    assert antigravity.default_roots({}, home) == [home / ".gemini" / "antigravity-cli", home / ".gemini" / "antigravity"]
    shutil.copytree(CONTRACT, home / ".gemini" / "antigravity-cli")
    (home / ".gemini" / "antigravity" / "conversations").mkdir(parents=True)
    (home / ".gemini" / "antigravity" / "conversations" / f"{A}.pb").write_bytes(b"\x53\xd1\x42\xf7")
    assert [r for _a, r in default_targets(antigravity)] == [home / ".gemini" / "antigravity-cli",
                                                              home / ".gemini" / "antigravity"]
    assert list(antigravity.discover(home / ".gemini" / "antigravity")) == []   # the IDE's .pb is not read
    assert antigravity.resolve_root(home / ".gemini") == home / ".gemini" / "antigravity-cli"
    conv = CONTRACT / "brain" / A
    for root in (CONTRACT, CONTRACT / "brain", conv):
        assert antigravity.resolve_root(root) == root
    assert [sf.path.name for sf in antigravity.discover(conv)] == ["transcript.jsonl"]
    transcript = conv / ".system_generated" / "logs" / "transcript.jsonl"
    assert antigravity.resolve_root(transcript) == transcript
    assert next(iter(antigravity.discover(transcript))).session_hint == A
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.md").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.md", tmp_path / "missing"):
        with pytest.raises(RootError):
            antigravity.resolve_root(bad)
