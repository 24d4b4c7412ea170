"""Continue: sessions/<id>.json documents (current, 2024 and 2023 shapes) and the
sessions.json index ingest completely, and a damaged document is quarantined whole while the
rest loads. Continue has no public sample; the fixtures are built from its source (see
fixtures/continue_dev/build_contract.py)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from convarch.adapters import continue_dev
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import REPO, contract_builder, tree_fingerprint
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "continue_dev" / "contract"

build = contract_builder("continue_dev")
AGENT, CHAT, GONE = build.AGENT, build.CHAT, build.GONE


def run(db: Path, root: Path):
    return ingest(Layout(db), [(continue_dev, continue_dev.resolve_root(root))])


def test_contract_store_sessions_messages_and_tools(tmp_path):
    before = tree_fingerprint(CONTRACT)
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert tree_fingerprint(CONTRACT) == before
    # agent session: 1 head + 9 items; chat session: 1 + 2; index: 3 entries
    assert (s.files_scanned, s.records_added, s.quarantined) == (3, 16, 0)
    got = rows(db, "select session_id, title, cwd, model, message_count, started_at::varchar from sessions order by 6")
    assert got == [
        (GONE, "Old question", "/home/demo/weather-app", None, 0, "2026-05-03 10:00:00"),
        (CHAT, "Explain the cache", "/home/demo/weather-app", None, 2, "2026-05-04 10:00:00"),
        (AGENT, "Add a --units flag", "/home/demo/weather-app", "Claude Sonnet 4.5", 9, "2026-05-05 10:00:00"),
    ]
    assert rows(db, f"select kind, role, text from messages where session_id = '{AGENT}' order by line_no") == [
        ("prompt", "user", "Add a --units flag to the forecast CLI"),
        ("tool_use", "assistant", "Let me read the CLI."),
        ("tool_result", "user", None),
        ("tool_use", "assistant", "Now I'll run the tests."),
        ("prompt", "user", "That test is flaky, ignore it"),
        ("thinking", "assistant", None),
        ("response", "assistant", "Understood; the flag is added and documented."),
        ("prompt", "user", "Does the help output look right?"),
        ("response", "assistant", "Yes, --units is listed."),
    ]
    # only items whose reasoning has a start time carry a time; the rest keep their order
    assert rows(db, "select message_id, \"timestamp\"::varchar from messages where \"timestamp\" is not null "
                    "order by 1") == [("1", "2026-05-05 10:00:02"), ("3", "2026-05-05 10:00:04")]
    calls = rows(db, "select call_id, tool_name, input ->> 'filepath', input ->> 'command', output_text, is_error, "
                     "has_result from tool_calls order by call_id")
    assert calls == [
        ("toolu_01", "read_file", "src/cli.py", None, "import argparse", False, True),      # the tool message
        ("toolu_02", "run_terminal_command", None, "pytest -q", "1 failed", True, True),     # only its state
    ]
    assert scalar(db, "select count(*) from stg_blocks where block_type = 'tool_result'") == 2
    assert rows(db, "select block_type, text from stg_blocks where block_type in ('thinking', 'summary') "
                    "order by line_no, block_index") == [
        ("thinking", "Read the CLI first."), ("thinking", "Run the suite."),
        ("thinking", "The user wants to skip the flaky test."),
        ("summary", "The user added a --units flag to the forecast CLI; a flaky test is ignored.")]
    assert rows(db, "select media_type, data_chars from stg_blocks where block_type = 'image'") == [("image/png", 34)]
    # per-message usage is counted once: the session total is not added on top
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
                    "sum(cache_creation_tokens) from stg_records") == [(5900, 470, 1800, 1800)]
    assert rows(db, "select subtype from stg_records where record_type = 'session' order by 1") == [("agent",), (None,)]


def test_session_usage_counts_when_no_message_has_any(tmp_path):
    doc = json.loads(json.dumps(build.CHAT_SESSION))
    doc["usage"] = build.usage(800, 120, 300, 0)
    folder = build.write_store(tmp_path / ".continue", sessions=[doc], index=None)
    db = tmp_path / "w.duckdb"
    run(db, folder.parent)
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens) from stg_records") == [
        (800, 120, 300)]


def test_2023_timeline_sessions_load(tmp_path):
    doc = {"session_info": {"title": "Fix the import", "session_id": "legacy-1"},
           "sessionId": "legacy-1", "title": "Fix the import", "workspaceDirectory": "/home/demo/app",
           "history": {"current_index": 2, "timeline": [
               {"step": {"name": "UserInputStep", "user_input": "Why does the import fail?", "hide": True},
                "observation": None, "depth": 0, "deleted": False, "active": False},
               {"step": {"name": "SimpleChatStep", "description": "The module is named forecast, not weather.",
                         "hide": False}, "depth": 0, "deleted": False, "active": False},
               {"step": {"name": "ContextProviderStep", "description": "", "hide": True}, "depth": 1},
           ]}}
    folder = build.write_store(tmp_path / ".continue", sessions=[doc], index=None)
    db = tmp_path / "w.duckdb"
    s = run(db, folder)
    assert (s.records_added, s.quarantined) == (4, 0)
    assert rows(db, "select session_id, title, cwd from sessions") == [("legacy-1", "Fix the import", "/home/demo/app")]
    assert rows(db, "select role, kind, text from messages order by line_no") == [
        ("user", "prompt", "Why does the import fail?"),
        ("assistant", "response", "The module is named forecast, not weather.")]
    assert rows(db, "select kind from stg_records where record_type = 'timeline_node' and role is null") == [("step",)]


def test_damaged_documents_are_quarantined_whole(tmp_path):
    folder = build.write_store(tmp_path / ".continue")
    text = (folder / f"{AGENT}.json").read_text()
    (folder / f"{AGENT}.json").write_text(text[: len(text) // 2])        # Continue killed mid-write
    (folder / "notes.json").write_text("[1, 2, 3]")                      # JSON, but not a session
    db = tmp_path / "w.duckdb"
    s = run(db, folder)
    assert (s.files_scanned, s.records_added, s.quarantined) == (4, 3 + 3 + 1, 1)
    assert rows(db, "select reason from quarantine") == [("invalid_json",)]
    # the index still dates the damaged session; the other session loads whole
    assert rows(db, f"select message_count from sessions where session_id in ('{AGENT}', '{CHAT}') order by 1") == [
        (0,), (2,)]
    assert rows(db, "select record_type, kind from stg_records where kind = 'unknown'") == [("unknown", "unknown")]


def test_a_rewritten_session_that_gained_an_item_loads_it_and_the_session_line(tmp_path):
    # the items come first and the session line (which changes) last: the new item and the
    # session line load, the items before stay where they were loaded
    folder = build.write_store(tmp_path / ".continue")
    db = tmp_path / "w.duckdb"
    run(db, folder)
    doc = json.loads(json.dumps(build.CHAT_SESSION))
    doc["history"].append({"message": {"role": "user", "content": "And how long is the TTL?"}, "contextItems": []})
    (folder / f"{CHAT}.json").write_text(json.dumps(doc))
    s = run(db, folder)
    assert (s.files_changed, s.records_added) == (1, 2)
    assert scalar(db, f"select count(*) from messages where session_id = '{CHAT}'") == 3


def test_default_roots_and_override(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    assert continue_dev.default_roots({}, home) == [home / ".continue"]
    assert default_targets(continue_dev) == []
    shutil.copytree(CONTRACT, home / ".continue")
    assert [(a.NAME, r) for a, r in default_targets(continue_dev)] == [
        ("continue_dev", home / ".continue" / "sessions")]
    alt = tmp_path / "continue-global"
    shutil.copytree(CONTRACT, alt)
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(alt))
    assert [r for _, r in default_targets(continue_dev)] == [alt / "sessions", home / ".continue" / "sessions"]


def test_resolve_root_accepts_each_level(tmp_path):
    sessions = CONTRACT / "sessions"
    assert continue_dev.resolve_root(CONTRACT) == sessions
    assert continue_dev.resolve_root(sessions) == sessions
    one = sessions / f"{AGENT}.json"
    assert continue_dev.resolve_root(one) == one
    assert [sf.session_hint for sf in continue_dev.discover(one)] == [AGENT]
    (tmp_path / "empty" / "sessions").mkdir(parents=True)
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing"):
        with pytest.raises(RootError):
            continue_dev.resolve_root(bad)


def test_symlinked_session_is_skipped_with_a_reason(tmp_path):
    folder = tmp_path / ".continue" / "sessions"
    folder.mkdir(parents=True)
    os.symlink(CONTRACT / "sessions" / f"{CHAT}.json", folder / f"{CHAT}.json")
    s = run(tmp_path / "w.duckdb", tmp_path / ".continue")
    assert s.records_added == 0 and dict(s.skipped)[str(folder / f"{CHAT}.json")].startswith("not a regular file")
