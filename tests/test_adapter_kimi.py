"""Kimi stores ingest completely: the legacy Kimi CLI (``~/.kimi``: wire logs, context files,
``kimi.json``) and its successor Kimi Code (``~/.kimi-code``: per-agent wire logs and
``state.json``)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest

from conftest import PEER, REPO
from convarch.adapters import kimi_cli, kimi_code
from convarch.adapters.base import RootError
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import ingest_samples, rows, sample_counts, scalar

CLI = REPO / "fixtures" / "kimi_cli" / "contract"
CODE = REPO / "fixtures" / "kimi_code" / "contract"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "kimi"
PR = PEER / "portable-resume" / "kimi"

S1 = "11033397-c203-596d-9e55-c594d839064b"       # Kimi CLI, wire log + subagent
SUB = f"{S1}/a7f3c2e1"
S2 = "62030e04-b280-51aa-b6e6-6c7e4299a44f"       # Kimi CLI, flat pre-2025-11 context file
S3 = "ab801658-51fa-560b-a668-74fe18922ff4"       # Kimi CLI, context file only (no wire log)
WA_HASH = hashlib.md5(b"/home/demo/weather-app").hexdigest()
KC = "cfa7d75b-daee-5a30-99e5-a6264f7c28e2"       # Kimi Code session

# Counts read off the files by hand (and checked with a few lines of independent Python).
# records = lines of each file read (a JSON document is one record; kimi.json yields one line
# per session of each work dir); messages: Kimi CLI wire TurnBegin/SteerInput, ContentPart,
# ToolCall, ToolResult; context lines of role user/assistant/tool/system; Kimi Code
# context.append_message, content.part, tool.call, tool.result loop events and
# context.apply_compaction; tool_calls = distinct call ids per session.
SAMPLES = {
    # kimi.json (3 sessions), S1 wire (32 lines: 13 messages, 3 calls) + state.json, the
    # subagent's wire (9 lines: 4 messages, 1 call) + meta.json, S2 flat context (11 lines: 7
    # messages, 1 call), S3 context (2) + metadata.json; S1's context.jsonl and the subagent's
    # are not read (their wire logs are)
    "kimi_cli-contract": (kimi_cli, CLI, dict(files=8, sessions=4, records=60, messages=26, tool_calls=5, quarantined=0)),
    # kimi.json (1 work dir, 1 session found by its md5 folder), context.jsonl (3 lines, one
    # wrapped in `message`), state.json
    "kimi_cli-portable-resume": (kimi_cli, PR / "s-kim-02" / "root",
                                 dict(files=3, sessions=1, records=5, messages=3, tool_calls=0, quarantined=0)),
    # main wire (44 lines: 16 messages, 4 calls), agent-0 wire (11 lines: 4 messages, 1 call),
    # state.json; session_index.jsonl is not read
    "kimi_code-contract": (kimi_code, CODE, dict(files=3, sessions=2, records=56, messages=20, tool_calls=5, quarantined=0)),
    # protocol 1.1 with epoch-second times: 9 wire lines (2 appended messages, 3 content parts)
    # + state.json
    "kimi_code-portable-resume": (kimi_code, PR / "s-kim-01" / "root",
                                  dict(files=2, sessions=1, records=10, messages=5, tool_calls=0, quarantined=0)),
    # loose files, each its own session: small.jsonl (36 lines, 3 messages), assistant_tools.jsonl
    # (200 lines, 80 messages, 19 calls, a compaction), subagent_agent-0.jsonl (28 lines, 9
    # messages, 2 calls), and two state files named by the session in their agents.main.homedir
    "kimi_code-jazzyalex": (kimi_code, JAZZY, dict(files=5, sessions=5, records=266, messages=92, tool_calls=21, quarantined=0)),
}


@pytest.fixture(scope="module")
def peer_db(tmp_path_factory):
    """Every sample of both adapters ingested in one run; counts are taken per sample."""
    present = {n: (a, r) for n, (a, r, _w) in SAMPLES.items() if r.exists()}
    db = tmp_path_factory.mktemp("kimi-peers") / "w.duckdb"
    return (db, *ingest_samples(db, present))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_with_exact_counts(peer_db, name):
    _adapter, root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    db, files, _summary, untouched, again = peer_db
    assert untouched, "a source store changed"
    got = sample_counts(db, files[name])
    assert got == want
    assert (again.files_changed, again.records_added) == (0, 0)


def test_samples_add_up(peer_db):
    db, _files, summary, _untouched, _again = peer_db
    present = [w for _a, r, w in SAMPLES.values() if r.exists()]
    assert summary.files_scanned == sum(w["files"] for w in present)
    assert summary.records_added == sum(w["records"] for w in present)
    assert summary.quarantined == 0


# --- Kimi CLI ---------------------------------------------------------------------------------

def test_kimi_cli_sessions(peer_db):
    db = peer_db[0]
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, message_count, started_at::varchar "
                   "from sessions where source = 'kimi_cli' and session_id like '%-%-%-%-%' and session_id not like '2222%' "
                   "order by session_id")
    assert got == [
        (S1, None, "Round forecast temperatures", "/home/demo/weather-app", None, 13, "2026-03-12 09:00:02.1"),
        (SUB, S1, "find str() calls", "/home/demo/weather-app", "kimi-k2-turbo-preview", 4, "2026-03-12 09:01:33.05"),
        (S2, None, "What does src/cache.py do?", "/home/demo/weather-app", None, 7, None),
        (S3, None, "Summarise the todo list", "/home/demo/notes", None, 2, None),
    ]
    assert scalar(db, "select bool_and(is_sidechain) from stg_records where session_id = ?", [SUB])


def test_kimi_cli_wire_log_is_the_transcript(peer_db):
    db = peer_db[0]
    # the context file beside a wire log is not read
    assert scalar(db, "select count(*) from stg_records where source_file like '%/' || ? || '/context.jsonl'", [S1]) == 0
    kinds = rows(db, "select kind, harness_kind, count(*) from messages where session_id = ? group by all order by kind, harness_kind nulls first", [S1])
    assert kinds == [("prompt", None, 2), ("prompt", "slash_command", 1), ("response", None, 3), ("thinking", None, 1),
                     ("tool_result", None, 3), ("tool_use", None, 3)]
    # one prompt with a text part and an image
    blocks = rows(db, "select block_type, media_type, data_chars > 0 from stg_blocks where session_id = ? and line_no = 24 "
                      "order by block_index", [S1])
    assert blocks == [("text", None, None), ("image", "image/png", True)]
    calls = rows(db, "select call_id, tool_name, is_error, input ->> 'command', left(output_text, 12) from tool_calls "
                     "where session_id = ? order by line_no", [S1])
    assert calls == [("ReadFile:0", "ReadFile", False, None, "def fmt(t):\n"),
                     ("Shell:1", "Shell", True, "pytest -q tests/test_format.py", "F\nE   Assert"),
                     ("Task:2", "Task", False, None, "src/format.p")]
    # StatusUpdate token usage, counted once per step; the subagent event is bookkeeping
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_creation_tokens) "
                    "from stg_records where session_id = ?", [S1]) == [(2662, 244, 32256, 512)]
    assert rows(db, "select kind, role from stg_records where session_id = ? and record_type in ('SubagentEvent', 'CompactionEnd') "
                    "order by line_no", [S1]) == [("compact_boundary", None), ("subagent_event", None)]


def test_kimi_cli_context_files(peer_db):
    db = peer_db[0]
    got = rows(db, "select line_no, record_type, role, kind, harness_kind, message_id from stg_records "
                   "where session_id = ? and record_type <> 'work_dir' order by line_no", [S2])
    assert got == [
        (1, "_system_prompt", None, "system_prompt", None, None),
        (2, "_checkpoint", None, "checkpoint", None, "0"),
        (3, "user", "user", "prompt", None, None),
        (4, "assistant", "assistant", "tool_use", None, None),
        (5, "tool", "user", "tool_result", None, None),
        (6, "assistant", "assistant", "response", None, None),
        (7, "_usage", None, "context_usage", None, None),
        (8, "_checkpoint", None, "checkpoint", None, "1"),
        (9, "user", "user", "prompt", "checkpoint", None),
        (10, "user", "user", "prompt", None, None),
        (11, "assistant", "assistant", "response", None, None),
    ]
    assert rows(db, "select block_type, text from stg_blocks where session_id = ? and line_no = 4 order by block_index", [S2]) == [
        ("thinking", "Read it."), ("text", "Reading it."), ("tool_use", None)]
    # a tool message that opens with <system>ERROR</system> is an error; arguments are parsed JSON
    assert rows(db, "select is_error, path from tool_calls where session_id = ?", [S2]) == [(True, "src/cache.py")]


def test_kimi_cli_portable_resume_drift(peer_db):
    if not (PR / "s-kim-02").exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    sid = "22222222-2222-4222-8222-222222222222"
    got = rows(db, "select role, text, \"timestamp\"::varchar from messages where session_id = ? order by line_no", [sid])
    assert got == [("system", "hidden legacy system", "2026-07-23 23:00:00"),
                   ("user", "Legacy Kimi prompt", "2026-07-23 23:01:00"),
                   ("assistant", "Legacy Kimi answer", "2026-07-23 23:02:00")]
    # kimi.json names the work dir; its md5 is the session's folder
    assert rows(db, "select title, cwd from sessions where session_id = ?", [sid]) == [
        ("Synthetic legacy Kimi session", "/workspace/project")]


def test_kimi_cli_discovery_rules(tmp_path):
    share = tmp_path / ".kimi"
    shutil.copytree(CLI, share)
    wd = share / "sessions" / WA_HASH
    found = sorted(str(f.path.relative_to(share)) for f in kimi_cli.discover(kimi_cli.resolve_root(share)))
    assert f"sessions/{WA_HASH}/{S1}/context.jsonl" not in found
    assert f"sessions/{WA_HASH}/{S1}/wire.jsonl" in found and f"sessions/{WA_HASH}/{S2}.jsonl" in found
    # an empty wire log (created but never written) leaves the context file as the transcript
    (wd / S1 / "wire.jsonl").write_bytes(b"")
    found = {f.path.name: f.session_hint for f in kimi_cli.discover(wd / S1) if f.path.parent == wd / S1}
    assert found == {"context.jsonl": S1, "state.json": S1}
    # a flat file that Kimi CLI has moved into its folder is read once, from the folder
    (wd / S2).mkdir()
    os.replace(wd / f"{S2}.jsonl", wd / S2 / "context.jsonl")
    hints = [f.session_hint for f in kimi_cli.discover(share) if S2 in str(f.path)]
    assert hints == [S2]
    # rotated context files are earlier windows: not read
    (wd / S2 / "context_1.jsonl").write_text('{"role": "user", "content": "old"}\n')
    assert [f.path.name for f in kimi_cli.discover(wd / S2)] == ["context.jsonl"]


def test_kimi_cli_moved_flat_file_keeps_its_rows(tmp_path):
    share = tmp_path / ".kimi"
    shutil.copytree(CLI, share)
    db = tmp_path / "w.duckdb"
    first = ingest(Layout(db), [(kimi_cli, share)])
    wd = share / "sessions" / WA_HASH
    (wd / S2).mkdir()
    os.replace(wd / f"{S2}.jsonl", wd / S2 / "context.jsonl")  # what Kimi CLI does on first use
    again = ingest(Layout(db), [(kimi_cli, share)])
    assert again.records_added == 0
    assert scalar(db, "select count(*) from messages where session_id = ?", [S2]) == 7
    assert scalar(db, "select count(distinct source_file) from stg_records where session_id = ? "
                      "and record_type <> 'work_dir'", [S2]) == 1
    assert first.records_added == 60


def test_kimi_cli_bad_inputs(tmp_path):
    share = tmp_path / ".kimi"
    sd = share / "sessions" / WA_HASH / "33333333-0000-4000-8000-000000000001"
    sd.mkdir(parents=True)
    (share / "kimi.json").write_text('{"work_dirs": [{"path": "/home/demo/weather-app", ')
    (sd / "state.json").write_text("[1, 2]")
    lines = [
        b'{"type": "metadata", "protocol_version": "1.3"}',
        b'{"timestamp": 1773306000.5, "message": {"type": "TurnBegin", "payload": {"user_input": "hi"}}}',
        b'{"timestamp": 1773306001.0, "message": {"type": "BrandNewEvent", "payload": {}}}',
        b'{"timestamp": 1773306001.5, "message": {"type": "ContentPart", "payload": {"type": "text", "text": "hel',
    ]
    (sd / "wire.jsonl").write_bytes(b"\n".join(lines[:3]) + b"\nnot json\n" + lines[3])
    db = tmp_path / "w.duckdb"
    summary = ingest(Layout(db), [(kimi_cli, share)])
    got = rows(db, "select reason from quarantine order by source_file, line_no")
    assert sorted(r for (r,) in got) == ["invalid_json", "not_object", "truncated_tail", "unreadable_container"]
    assert summary.records_added == 3
    assert rows(db, "select line_no, kind from stg_records order by line_no") == [(1, "metadata"), (2, "prompt"), (3, "unknown")]


# --- Kimi Code --------------------------------------------------------------------------------

def test_kimi_code_sessions(peer_db):
    db = peer_db[0]
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, message_count, started_at::varchar, ended_at::varchar "
                   "from sessions where source = 'kimi_code' and session_id like 'cfa7%' order by session_id")
    assert got == [
        (KC, None, "Convert wind speed to km/h", "/home/demo/weather-app", "moonshot-ai/kimi-k2.7-code", 16,
         "2026-03-12 09:00:00", "2026-03-12 09:02:21.03"),
        (f"{KC}/agent-0", KC, "Find other places that print wind speed.", "/home/demo/weather-app",
         "moonshot-ai/kimi-k2.7-code", 4, "2026-03-12 09:00:16.1", "2026-03-12 09:00:29.03"),
    ]


def test_kimi_code_records(peer_db):
    db = peer_db[0]
    prompts = rows(db, "select line_no, harness_kind, text from messages where session_id = ? and kind = 'prompt' order by line_no", [KC])
    assert [(n, h) for n, h, _t in prompts] == [(6, None), (20, "system_reminder"), (29, None), (37, None)]
    assert prompts[3][2] == "The gust test is outdated, update it."  # the steer, as it entered the context
    # turn.prompt / turn.steer repeat that input: bookkeeping, not messages
    assert rows(db, "select kind, role from stg_records where session_id = ? and record_type in ('turn.prompt', 'turn.steer') "
                    "order by line_no", [KC]) == [("turn_prompt", None), ("turn_prompt", None), ("turn_steer", None)]
    calls = rows(db, "select call_id, tool_name, tool_kind, is_error, exit_code from tool_calls where session_id = ? order by line_no", [KC])
    assert calls == [("Grep_0", "Grep", "search", False, 0), ("Edit_1", "Edit", "edit", False, 0),
                     ("Agent_2", "Agent", "agent", False, 0), ("Bash_3", "Bash", "shell", True, 1)]
    # tokens from usage.record only (step.end repeats them); the compaction call counts too
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens) from stg_records where session_id = ?", [KC]) == [
        (9120 + 310 + 1480 + 402 + 1200, 88 + 120 + 64 + 51 + 640, 9216 + 9472 + 10880 + 11008)]
    assert rows(db, "select role, is_compact_summary, left(text, 24) from stg_records where session_id = ? and kind = 'compact_boundary'", [KC]) == [
        ("system", True, "Wind speed now prints in")]
    assert scalar(db, "select record_type from stg_records where session_id = ? and kind = 'unknown'", [KC]) == "memory.snapshot"
    assert rows(db, "select block_type from stg_blocks where session_id = ? and line_no = 9", [KC]) == [("thinking",)]


def test_kimi_code_jazzyalex_samples(peer_db):
    if not JAZZY.exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    # a state.json outside the layout is named by the session in agents.main.homedir
    assert rows(db, "select session_id, title, cwd from sessions where session_id in "
                    "('9eb1bf57-c1af-48a5-b658-0e8d9fe794f5', '1bcbe023-4f7e-4971-9dc9-43b8756045b0') order by 1") == [
        ("1bcbe023-4f7e-4971-9dc9-43b8756045b0", "hi", "/private/tmp/as-agent-lab/kimi/project"),
        ("9eb1bf57-c1af-48a5-b658-0e8d9fe794f5", "hi", "/private/tmp/as-agent-lab/kimi/project")]
    got = rows(db, "select harness_kind, count(*) from messages where session_id = 'assistant_tools' and kind = 'prompt' "
                   "group by 1 order by 1 nulls first")
    assert got == [(None, 8), ("system_reminder", 5)]
    assert rows(db, "select is_error, exit_code from tool_calls where session_id = 'assistant_tools' and call_id = 'Bash_2'") == [(True, 1)]
    assert scalar(db, "select count(*) from messages where session_id = 'assistant_tools' and kind = 'compact_boundary'") == 1
    assert scalar(db, "select sum(output_tokens) from stg_records where session_id = 'subagent_agent-0'") == 75 + 136 + 119


def test_kimi_code_appends_load_incrementally(tmp_path):
    home = tmp_path / ".kimi-code"
    shutil.copytree(CODE, home)
    db = tmp_path / "w.duckdb"
    assert ingest(Layout(db), [(kimi_code, kimi_code.resolve_root(home))]).records_added == 56
    wire = next(home.rglob("agents/main/wire.jsonl"))
    with open(wire, "ab") as fh:
        fh.write(json.dumps({"type": "turn.prompt", "input": [{"type": "text", "text": "thanks"}], "origin": {"kind": "user"},
                             "time": 1773306300000}).encode() + b"\n")
        fh.write(b'{"type": "context.append_message", "message": {"role": "us')
    again = ingest(Layout(db), [(kimi_code, kimi_code.resolve_root(home))])
    assert again.records_added == 1 and again.files_changed == 1
    assert rows(db, "select reason from quarantine") == [("truncated_tail",)]


def test_default_roots_and_overrides(tmp_path, monkeypatch, isolated_home):
    assert kimi_cli.default_roots({}, isolated_home) == [isolated_home / ".kimi"]
    assert kimi_cli.default_roots({"KIMI_SHARE_DIR": str(tmp_path / "share")}, isolated_home) == [
        tmp_path / "share", isolated_home / ".kimi"]
    assert kimi_code.default_roots({}, isolated_home) == [isolated_home / ".kimi-code"]
    assert kimi_code.default_roots({"KIMI_CODE_HOME": str(tmp_path / "kc")}, isolated_home) == [
        tmp_path / "kc", isolated_home / ".kimi-code"]
    shutil.copytree(CLI, tmp_path / "share")
    shutil.copytree(CODE, tmp_path / "kc")
    monkeypatch.setenv("KIMI_SHARE_DIR", str(tmp_path / "share"))
    monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "kc"))
    from convarch.cli.targets import default_targets
    assert [t for _a, t in default_targets(kimi_cli)] == [tmp_path / "share"]
    assert [t for _a, t in default_targets(kimi_code)] == [tmp_path / "kc" / "sessions"]
    assert len(list(kimi_code.discover(tmp_path / "kc" / "sessions"))) == 3


def test_resolve_root_and_discover(tmp_path):
    home = tmp_path / ".kimi-code"
    shutil.copytree(CODE, home)
    sessions = home / "sessions"
    assert kimi_code.resolve_root(home) == sessions
    session_dir = next(sessions.glob("*/session_*"))
    got = sorted((str(f.path.relative_to(session_dir)), f.session_hint, f.parent_session_hint, f.container)
                 for f in kimi_code.discover(kimi_code.resolve_root(session_dir)))
    assert got == [("agents/agent-0/wire.jsonl", f"{KC}/agent-0", KC, "jsonl"),
                   ("agents/main/wire.jsonl", KC, None, "jsonl"),
                   ("state.json", KC, None, "json")]
    one = session_dir / "agents" / "main" / "wire.jsonl"
    assert [f.session_hint for f in kimi_code.discover(kimi_code.resolve_root(one))] == [KC]
    for bad in (home / "session_index.jsonl", tmp_path / "missing"):
        with pytest.raises(RootError):
            kimi_code.resolve_root(bad)
    share = tmp_path / ".kimi"
    shutil.copytree(CLI, share)
    assert kimi_cli.resolve_root(share) == share
    sub = share / "sessions" / WA_HASH / S1 / "subagents" / "a7f3c2e1" / "wire.jsonl"
    assert [(f.session_hint, f.parent_session_hint) for f in kimi_cli.discover(kimi_cli.resolve_root(sub))] == [(SUB, S1)]
    with pytest.raises(RootError):
        kimi_cli.resolve_root(share / "kimi.json")
    os.symlink(share / "sessions" / WA_HASH, share / "sessions" / "linked")
    assert not any("linked" in str(f.path) for f in kimi_cli.discover(share))
