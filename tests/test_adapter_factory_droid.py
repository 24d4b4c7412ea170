"""Factory droid stores (session JSONL + .settings.json, and the stream-json drift) ingest
completely and incrementally, with droid's injected reminders kept apart from the request."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import PEER, REPO
from convarch.adapters import factory_droid
from convarch.adapters.base import RootError
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import ingest_samples, rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "factory_droid" / "contract"
SLUG = CONTRACT / "sessions" / "-home-demo-weather-app"
S1 = "8eb9a0b5-b451-542b-b5f3-5e9243cd66a7"
S2 = "4e4edcca-357a-58e7-b2fe-27f21daeac9a"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "droid"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(factory_droid, factory_droid.resolve_root(root))])


# Counts read off the files by hand. records = lines (all parse as JSON objects; a settings
# file is one record); messages = `message` lines, plus (stream-json) tool_call, tool_result,
# completion and error lines; tool_calls = distinct tool_use ids / toolCallId (else id) of
# tool_call lines; each file is one session named by its stem.
SAMPLES = {
    # 2 sessions: S1 (12 lines: session_start, 10 messages, todo_state; 3 calls) + settings;
    # S2 (8 lines: session_start, 6 messages, compaction_state (role system); 1 call) + settings
    "contract": (CONTRACT, dict(files=4, sessions=2, records=22, messages=17, tool_calls=4, quarantined=0)),
    # session_start + 7 messages, one Execute call with its result
    "session_store_large": (JAZZY / "session_store_large.jsonl",
                            dict(files=1, sessions=1, records=8, messages=7, tool_calls=1, quarantined=0)),
    # hand-made drift: numeric version, no parentId, a reminder glued to the request
    "session_store_schema_drift": (JAZZY / "session_store_schema_drift.jsonl",
                                   dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    "session_store_small": (JAZZY / "session_store_small.jsonl",
                            dict(files=1, sessions=1, records=4, messages=3, tool_calls=1, quarantined=0)),
    # stream-json: system + 2 messages + tool_call + tool_result + completion
    "stream_json_large": (JAZZY / "stream_json_large.jsonl",
                          dict(files=1, sessions=1, records=6, messages=5, tool_calls=1, quarantined=0)),
    # system, message, tool_call, tool_result, completion, error (epoch-ms timestamps)
    "stream_json_schema_drift": (JAZZY / "stream_json_schema_drift.jsonl",
                                 dict(files=1, sessions=1, records=6, messages=5, tool_calls=1, quarantined=0)),
    "stream_json_small": (JAZZY / "stream_json_small.jsonl",
                          dict(files=1, sessions=1, records=4, messages=4, tool_calls=1, quarantined=0)),
}


@pytest.fixture(scope="module")
def peer_db(tmp_path_factory):
    """Every sample ingested in one run; each sample's counts are taken over its own files."""
    present = {n: (factory_droid, r) for n, (r, _w) in SAMPLES.items() if r.exists()}
    db = tmp_path_factory.mktemp("droid-peers") / "w.duckdb"
    return (db, *ingest_samples(db, present))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_with_exact_counts(peer_db, name):
    root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    db, files, _summary, untouched, again = peer_db
    assert untouched, "a source store changed"
    got = sample_counts(db, files[name])
    assert got == want
    assert (again.files_changed, again.records_added) == (0, 0)


def test_samples_add_up(peer_db):
    db, _files, summary, _untouched, _again = peer_db
    present = [w for r, w in SAMPLES.values() if r.exists()]
    assert summary.files_scanned == sum(w["files"] for w in present)
    assert summary.records_added == sum(w["records"] for w in present)


def test_jazzyalex_drift_and_stream_json(peer_db):
    if not JAZZY.exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    # the reminder glued to the request is cut from the text; the request stays a prompt
    got = rows(db, "select text, harness_kind from messages where session_id = 'session_store_schema_drift' and role = 'user'")
    assert got == [("Do the thing", None)]
    assert scalar(db, "select agent_version from sessions where session_id = 'session_store_schema_drift'") == "2"
    # stream-json: call ids from toolCallId (else id), errors from isError or a non-zero exit code
    calls = rows(db, "select session_id, call_id, tool_name, is_error, output_text from tool_calls "
                     "where session_id like 'stream_json%' order by session_id")
    assert calls == [
        ("stream_json_large", "c1", "Shell", False, "line1\nline2\nline3\n"),
        ("stream_json_schema_drift", "call_1", "Execute", True, "ls: /non-existent-directory: No such file or directory"),
        ("stream_json_small", "c1", "Shell", False, "hi\n"),
    ]
    got = rows(db, "select model, cwd, started_at::varchar from sessions where session_id = 'stream_json_schema_drift'")
    assert got == [("droid-model", "/tmp/drift", "2026-01-07 19:04:00.31")]
    assert scalar(db, "select text from messages where session_id = 'stream_json_schema_drift' and role = 'system'") == \
        "Authentication failed. Set FACTORY_API_KEY."


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("droid-contract") / "w.duckdb"
    run(db, CONTRACT)
    return db


def test_contract_session_facts(contract_db):
    db = contract_db
    got = rows(db, "select session_id, title, cwd, model, agent_version, message_count, started_at::varchar from sessions order by started_at")
    assert got == [
        (S1, "Round temperatures in the forecast table", "/home/demo/weather-app", "claude-sonnet-4-5-20250929",
         "0.81.0", 10, "2026-03-12 09:00:05.005"),
        (S2, "Add a --units flag", "/home/demo/weather-app", "gpt-5-codex", "0.84.2", 7, "2026-03-14 16:20:00"),
    ]
    # session-level token totals come from the settings file
    assert rows(db, "select input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens from stg_records "
                    "where session_id = ? and kind = 'settings'", [S1]) == [(18234, 1620, 4096, 52310)]
    # the injected reminder block is not part of the request
    first = rows(db, "select text, harness_kind from messages where session_id = ? and kind = 'prompt' order by line_no", [S1])
    assert first == [("The forecast table prints 21.4999999 instead of 21.5. Please round to one decimal.", None),
                     ("Yes, show 0.0.", None)]
    # thinking, text and a call in one assistant message
    blocks = rows(db, "select block_type from stg_blocks where session_id = ? and line_no = 3 order by block_index", [S1])
    assert [b for (b,) in blocks] == ["thinking", "text", "tool_use"]
    calls = rows(db, "select tool_name, tool_kind, is_error, exit_code, path from tool_calls where session_id = ? order by line_no", [S1])
    assert calls == [("Read", "read", False, 0, "/home/demo/weather-app/src/format.py"),
                     ("Edit", "edit", False, 0, "/home/demo/weather-app/src/format.py"),
                     ("Execute", "shell", True, 1, None)]
    # the compaction summary is a system message and a compact boundary
    got = rows(db, "select role, is_compact_summary, left(text, 32) from stg_records where kind = 'compact_boundary'")
    assert got == [("system", True, "The user wants a --units flag. c")]
    # the message tree: the first message hangs below the session id
    assert scalar(db, "select parent_id from stg_records where session_id = ? and line_no = 2", [S2]) == S2


def droid_store(tmp_path: Path, lines: list, sid: str = "0f0f0f0f-0000-4000-8000-000000000001") -> Path:
    home = tmp_path / "store" / ".factory"
    slug = home / "sessions" / "-home-demo-app"
    slug.mkdir(parents=True)
    body = b"".join((ln if isinstance(ln, bytes) else json.dumps(ln).encode()) + b"\n" for ln in lines)
    (slug / f"{sid}.jsonl").write_bytes(body)
    return home


def m(mid: str, role: str, text: str, second: int) -> dict:
    return {"type": "message", "id": mid, "timestamp": f"2026-05-01T10:00:{second:02d}.000Z",
            "message": {"role": role, "content": [{"type": "text", "text": text}]}}


def test_appends_load_incrementally_and_a_torn_tail_waits(tmp_path):
    home = droid_store(tmp_path, [{"type": "session_start", "id": "s", "title": "t", "cwd": "/home/demo/app"},
                                  m("u1", "user", "hello", 1)])
    db = tmp_path / "w.duckdb"
    assert run(db, home).records_added == 2
    path = next(home.rglob("*.jsonl"))
    with open(path, "ab") as fh:
        fh.write(json.dumps(m("a1", "assistant", "hi", 2)).encode() + b"\n")
        fh.write(b'{"type": "message", "id": "u2", "timest')
    again = run(db, home)
    assert again.records_added == 1
    assert rows(db, "select reason from quarantine") == [("truncated_tail",)]
    with open(path, "ab") as fh:
        fh.write(b'amp": "2026-05-01T10:00:03.000Z", "message": {"role": "user", "content": "bye"}}\n')
    assert run(db, home).records_added == 1
    assert rows(db, "select line_no, kind, text from messages order by line_no") == [
        (2, "prompt", "hello"), (3, "response", "hi"), (4, "prompt", "bye")]
    assert scalar(db, "select count(*) from quarantine") == 0


def test_bad_lines_and_unknown_records(tmp_path):
    home = droid_store(tmp_path, [
        {"type": "session_start", "id": "s", "title": "t"},
        b'{"type": "message", "id": "broken"',
        b"[1, 2]",
        b'{"type": "message", "id": "x", "text": "\xff\xfe"}',
        {"type": "a_new_record_type", "id": "n1", "timestamp": "2026-05-01T10:00:04.000Z"},
        {"type": "message", "id": "nomsg", "timestamp": "2026-05-01T10:00:05.000Z"},
        m("u1", "user", "<system-reminder>only a reminder</system-reminder>", 6),
        m("u2", "user", "real request", 7),
    ])
    slug = next(home.rglob("-home-demo-app"))
    (slug / "0f0f0f0f-0000-4000-8000-000000000001.settings.json").write_text('{"model": "gpt-5", "tokenUsage": {')
    db = tmp_path / "w.duckdb"
    summary = run(db, home)
    assert rows(db, "select line_no, reason from quarantine order by source_file, line_no") == [
        (2, "invalid_json"), (3, "not_object"), (4, "invalid_utf8"), (1, "invalid_json")]
    assert summary.records_added == 5
    assert rows(db, "select line_no, record_type, role, kind, harness_kind from stg_records order by line_no") == [
        (1, "session_start", None, "metadata", None),
        (5, "a_new_record_type", None, "unknown", None),
        (6, "message", None, "unknown", None),
        (7, "message", "user", "prompt", "system_reminder"),
        (8, "message", "user", "prompt", None)]
    assert scalar(db, "select title from sessions") == "t"


def test_default_roots(isolated_home):
    assert factory_droid.default_roots({}, isolated_home) == [isolated_home / ".factory"]
    assert factory_droid.ENV_VARS == ()


def test_resolve_root_and_discover(tmp_path):
    home = tmp_path / "h" / ".factory"
    shutil.copytree(CONTRACT, home)
    assert factory_droid.resolve_root(tmp_path / "h") == home
    assert factory_droid.resolve_root(home) == home
    assert len(list(factory_droid.discover(home))) == 4
    slug = home / "sessions" / "-home-demo-weather-app"
    assert factory_droid.resolve_root(slug) == slug
    assert len(list(factory_droid.discover(slug))) == 4
    one = slug / f"{S1}.jsonl"
    assert [(f.path, f.session_hint, f.container) for f in factory_droid.discover(factory_droid.resolve_root(one))] == [
        (one, S1, "jsonl")]
    settings = slug / f"{S1}.settings.json"
    assert [(f.session_hint, f.container) for f in factory_droid.discover(factory_droid.resolve_root(settings))] == [
        (S1, "json")]
    with pytest.raises(RootError):
        factory_droid.resolve_root(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(RootError):
        factory_droid.resolve_root(tmp_path / "notes.txt")
    # an older flat file, a copy of S1 under projects/ (read once), another session only under
    # projects/, and a symlinked folder (not followed)
    (home / "sessions" / "11111111-2222-4333-8444-555555555555.jsonl").write_text(json.dumps(m("u", "user", "hi", 1)) + "\n")
    proj = home / "projects" / "-home-demo-weather-app"
    proj.mkdir(parents=True)
    shutil.copy(one, proj / one.name)
    (proj / "99999999-2222-4333-8444-555555555555.jsonl").write_text(json.dumps(m("u", "user", "hi", 1)) + "\n")
    os.symlink(slug, home / "sessions" / "linked")
    found = sorted(str(f.path.relative_to(home)) for f in factory_droid.discover(home))
    assert found == [
        "projects/-home-demo-weather-app/99999999-2222-4333-8444-555555555555.jsonl",
        f"sessions/-home-demo-weather-app/{S2}.jsonl",
        f"sessions/-home-demo-weather-app/{S2}.settings.json",
        f"sessions/-home-demo-weather-app/{S1}.jsonl",
        f"sessions/-home-demo-weather-app/{S1}.settings.json",
        "sessions/11111111-2222-4333-8444-555555555555.jsonl",
    ]
