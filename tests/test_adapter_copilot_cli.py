"""GitHub Copilot CLI stores ingest completely: the folder layout (events.jsonl +
workspace.yaml), the flat <id>.jsonl layout and legacy history-session-state documents, with
calls linked to results, subagent traffic marked, and bad input quarantined."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import PEER, REPO
from convarch.adapters import copilot_cli
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import ingest_samples, rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "copilot_cli" / "contract"
A = "5e1c0a2b-7d3f-4a9e-8b6c-0f1e2d3c4b5a"      # session-state/<id>/events.jsonl + workspace.yaml
B = "5e1c0a2b-7d3f-4a9e-8b6c-0f1e2d3c4b5b"      # session-state/<id>.jsonl (flat)
C = "5e1c0a2b-7d3f-4a9e-8b6c-0f1e2d3c4b5c"      # history-session-state/<id>.json (legacy)
PR = PEER / "portable-resume" / "github-copilot"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "copilot"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(copilot_cli, copilot_cli.resolve_root(root))])


# Counts read off the files by hand. records = lines that parse as JSON objects; messages =
# user.message, assistant.message, assistant.reasoning, tool.execution_complete and
# system.message events; tool_calls = distinct call ids per session named by a toolRequest or,
# when no request names it, by a tool.execution_start (a result without either is not a call);
# quarantined = lines that are not JSON objects.
SAMPLES = {
    # session.start, user, turn_start, assistant (no toolRequests), execution_start (tc1),
    # execution_complete, turn_end, shutdown
    "pr-01-user-basic": (PR / "s-gcp-01-user-basic", dict(files=1, sessions=1, records=8, messages=3, tool_calls=1, quarantined=0)),
    "pr-02-other-cwd": (PR / "s-gcp-02-other-cwd", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # one line, not JSON: no session, one quarantined line
    "pr-03-corrupt": (PR / "s-gcp-03-corrupt", dict(files=1, sessions=0, records=0, messages=0, tool_calls=0, quarantined=1)),
    # flat files: large (18 lines: 9 messages; call_1 requested, call_2 only started),
    # schema_drift (13 lines: 4 messages; call_1 requested after its start, call_2 only has a
    # result), small (32 lines: 13 messages; call-1 and the trimmed '[trimmed for fixture]' id)
    "jazzyalex-flat": (JAZZY, dict(files=3, sessions=3, records=63, messages=26, tool_calls=5, quarantined=0)),
    # subdir_v1/<id>/events.jsonl: 8 lines, 4 messages, call_1
    "jazzyalex-subdir": (JAZZY / "subdir_v1", dict(files=1, sessions=1, records=8, messages=4, tool_calls=1, quarantined=0)),
}


@pytest.fixture(scope="module")
def peer_db(tmp_path_factory):
    present = {n: (copilot_cli, r) for n, (r, _w) in SAMPLES.items() if r.exists()}
    db = tmp_path_factory.mktemp("copilot-peers") / "w.duckdb"
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
    assert (again.files_changed, again.records_added, again.quarantined) == (0, 0, 0)


def test_sample_details(peer_db):
    db = peer_db[0]
    if (PR / "s-gcp-01-user-basic").exists():
        # the call was never requested by an assistant message: its start event stands for it
        assert rows(db, "select call_id, tool_name, input ->> 'command', output_text, has_result from tool_calls "
                        "where session_id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee'") == [
            ("tc1", "bash", "secret cmd", "secret out", True)]
        assert rows(db, "select cwd, git_branch from sessions where session_id = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee'") == [
            ("/tmp/project", "main")]
    if JAZZY.exists():
        # session.shutdown: uncached input and cache totals summed over modelMetrics, or tokenDetails
        assert rows(db, "select session_id, input_tokens, cache_read_tokens, output_tokens from stg_records "
                        "where record_type = 'session.shutdown' and session_id in ('small', 'schema_drift') order by 1") == [
            ("schema_drift", 200, 800, None), ("small", 100, 5, None)]
        # only one tool_use block per call, although start and request both name it
        assert scalar(db, "select count(*) from stg_blocks where session_id = 'schema_drift' and call_id = 'call_1' "
                          "and block_type = 'tool_use'") == 1
        # subagent traffic is marked by the spawning call
        assert scalar(db, "select count(*) from stg_records where session_id = 'small' and is_sidechain") == 3


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("copilot-contract") / "w.duckdb"
    s = run(db, CONTRACT)
    # A: 25 events + its workspace.yaml line; B: 6 events; C: header + 6 timeline entries
    assert (s.files_scanned, s.records_added, s.quarantined) == (4, 39, 0)
    return db


def test_contract_sessions(contract_db):
    got = rows(contract_db, "select session_id, title, cwd, git_branch, model, agent_version, message_count, "
                            "started_at::varchar, ended_at::varchar from sessions order by 1")
    assert got == [
        (A, "Add a --units flag to the forecast CLI", "/home/demo/weather-app", "feature/units", "gpt-5", "1.0.11", 13,
         "2026-05-07 09:00:00", "2026-05-07 09:01:00"),
        (B, "How many TODO items are in notes.md?", "/home/demo/notes", "main", "claude-sonnet-4", "0.0.380", 4,
         "2025-12-02 14:00:00", "2025-12-02 14:00:10"),
        (C, "List the Python files", None, None, None, None, 5, "2025-08-20 16:00:00", "2025-08-20 16:00:07"),
    ]


def test_contract_tools_tokens_and_subagent(contract_db):
    db = contract_db
    assert rows(db, "select session_id, call_id, tool_name, output_text, is_error, has_result from tool_calls "
                    "order by session_id, call_id") == [
        (A, "call_bash_1", "bash", "1 failed, 4 passed\n<exited with exit code 1>", True, True),
        (A, "call_grep_1", "grep", "src/cli.py:12: main(city)", False, True),
        (A, "call_task_1", "task", "main() is called once, from src/cli.py:12.", False, True),
        (A, "call_view_1", "view", "def main(city): ...", False, True),
        (B, "toolu_flat_1", "bash", "3\n", False, True),
        (C, "call_legacy_1", "bash", "app.py\nutil.py", False, True),
        (C, "call_legacy_2", "str_replace_editor", "File not found", True, True),
    ]
    # B's arguments were JSON text: parsed
    assert scalar(db, "select input ->> 'command' from tool_calls where call_id = 'toolu_flat_1'") == "grep -c TODO notes.md"
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_creation_tokens) "
                    "from stg_records where session_id = ?", [A]) == [(5300, 140, 7000, 400)]
    assert rows(db, "select line_no, agent_id from stg_records where is_sidechain order by 1") == [
        (16, "call_task_1"), (17, "call_task_1"), (18, "call_task_1")]
    assert rows(db, "select kind, is_compact_summary, role from stg_records where record_type = 'session.compaction_complete'") == [
        ("compact_boundary", True, "system")]
    assert rows(db, "select block_type, text from stg_blocks where session_id = ? and block_type in ('thinking', 'attachment') "
                    "order by line_no", [A]) == [
        ("attachment", "/home/demo/weather-app/src/cli.py"), ("thinking", "The flag belongs in the argument parser.")]
    kinds = dict(rows(db, "select kind, count(*) from stg_records where session_id = ? group by 1", [C]))
    assert kinds == {"metadata": 1, "prompt": 1, "tool_use": 1, "tool_result": 2, "response": 1, "info": 1}


def copilot_home(tmp_path: Path) -> Path:
    home = tmp_path / ".copilot"
    shutil.copytree(CONTRACT, home)
    return home


def test_flat_file_beside_its_folder_and_the_index_db_are_not_read(tmp_path):
    home = copilot_home(tmp_path)
    state = home / "session-state"
    shutil.copy(state / f"{B}.jsonl", state / f"{A}.jsonl")          # an old flat copy of A
    sqlite3.connect(home / "session-store.db").execute("create table sessions (id)").connection.close()
    (home / "command-history-state.json").write_text('{"commandHistory": []}')
    (state / A / "checkpoints").mkdir()
    (state / A / "checkpoints" / "index.jsonl").write_text('{"x": 1}\n')
    found = sorted(str(f.path.relative_to(home)) for f in copilot_cli.discover(copilot_cli.resolve_root(home)))
    assert found == [f"history-session-state/{C}.json", f"session-state/{A}/events.jsonl",
                     f"session-state/{A}/workspace.yaml", f"session-state/{B}.jsonl"]


def test_legacy_documents(tmp_path):
    legacy = tmp_path / ".copilot" / "history-session-state"
    legacy.mkdir(parents=True)
    # a document with chat messages only (no timeline)
    (legacy / "session_x1.json").write_text(json.dumps({"sessionId": "x1", "startTime": "2025-07-01T10:00:00Z",
        "chatMessages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
            {"role": "assistant", "content": "one file"}]}))
    (legacy / "not-a-session.json").write_text(json.dumps({"hello": "world"}))
    (legacy / "broken.json").write_text('{"sessionId": "x2", "timeline": [')
    (legacy / "odd-entry.json").write_text(json.dumps({"sessionId": "x3", "timeline": [
        {"type": "user", "text": "hi", "timestamp": "2025-07-02T10:00:00Z"}, "not an object"]}))
    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / ".copilot")
    assert (s.files_scanned, s.records_added) == (4, 7)
    got = rows(db, "select session_id, line_no, record_type, subtype, role, kind, text from stg_records order by 1, 2")
    assert got == [
        ("x1", 1, "session", None, None, "metadata", None),
        ("x1", 2, "chat_message", "user", "user", "prompt", "hello"),
        ("x1", 3, "chat_message", "assistant", "assistant", "tool_use", None),
        ("x1", 4, "chat_message", "tool", "user", "tool_result", None),
        ("x1", 5, "chat_message", "assistant", "assistant", "response", "one file"),
        ("x3", 1, "session", None, None, "metadata", None),
        ("x3", 2, "user", None, "user", "prompt", "hi"),
    ]
    assert rows(db, "select call_id, input ->> 'command', output_text from tool_calls") == [("c1", "ls", "a.txt")]
    bad = rows(db, "select source_file, reason from quarantine order by 1")
    assert [(Path(p).name, r) for p, r in bad] == [
        ("broken.json", "unreadable_container"), ("not-a-session.json", "unreadable_container"),
        ("odd-entry.json", "not_object")]


def test_workspace_yaml_forms():
    parsed = copilot_cli.parse_flat_yaml(
        "id: abc\n"
        "cwd: '/home/demo/it''s here'\n"
        "summary: |-\n  First line\n  second line\n"
        "branch: \"feat/x\"  \n"
        "summary_count: 3\n"
        "created_at: 2026-01-02T03:04:05.000Z\n"
        "nested:\n  a: 1\n  b: 2\n"
        "flag: true\n"
        "empty:\n"
        "# a comment\n"
        "folded: >\n  one\n  two\n")
    assert parsed == {"id": "abc", "cwd": "/home/demo/it's here", "summary": "First line\nsecond line",
                      "branch": "feat/x", "summary_count": 3, "created_at": "2026-01-02T03:04:05.000Z",
                      "nested": "  a: 1\n  b: 2", "flag": True, "empty": None, "folded": "one two\n"}


def test_appends_load_incrementally_and_workspace_rewrites_replace(tmp_path):
    home = copilot_home(tmp_path)
    events = home / "session-state" / A / "events.jsonl"
    db = tmp_path / "w.duckdb"
    run(db, home)
    with open(events, "ab") as fh:
        fh.write(json.dumps({"type": "user.message", "data": {"content": "One more thing."}, "id": "ev-026",
                             "timestamp": "2026-05-07T09:02:00.000Z", "parentId": "ev-025"}).encode() + b"\n")
        fh.write(b'{"type": "assistant.message", "data": {"content": "Su')
    (home / "session-state" / A / "workspace.yaml").write_text(
        f"id: {A}\ncwd: /home/demo/weather-app\nsummary: Units flag and README\ncreated_at: 2026-05-07T09:00:00.000Z\n")
    s = run(db, home)
    assert (s.files_changed, s.records_added) == (2, 2)
    assert rows(db, "select reason from quarantine") == [("truncated_tail",)]
    assert scalar(db, "select title from sessions where session_id = ?", [A]) == "Units flag and README"
    assert scalar(db, "select count(*) from stg_records where record_type = 'workspace'") == 1


def test_a_call_requested_in_one_run_and_started_in_the_next_is_one_call(tmp_path):
    """Copilot writes a tool call's request (assistant.message toolRequests) and then its
    tool.execution_start; a start no request names is a call of its own. A run that ends
    between the two must not make the start a second call: the request is carried to the
    next run's lines as a whole load of the file would see it."""
    home = copilot_home(tmp_path)
    events = home / "session-state" / A / "events.jsonl"
    db = tmp_path / "w.duckdb"
    run(db, home)

    def append(*events_):
        with open(events, "ab") as fh:
            for e in events_:
                fh.write(json.dumps({**e, "timestamp": "2026-05-07T09:03:00.000Z"}).encode() + b"\n")

    append({"type": "assistant.message", "id": "ev-101", "parentId": "ev-025", "data": {
        "messageId": "m-101", "content": "Running the tests.", "toolRequests": [
            {"toolCallId": "call_late", "name": "bash", "arguments": {"command": "pytest -q"}}]}})
    run(db, home)
    append({"type": "tool.execution_start", "id": "ev-102", "parentId": "ev-101",
            "data": {"toolCallId": "call_late", "toolName": "bash", "arguments": {"command": "pytest -q"}}},
           {"type": "tool.execution_complete", "id": "ev-103", "parentId": "ev-102",
            "data": {"toolCallId": "call_late", "success": True, "result": {"content": "3 passed"}}})
    assert run(db, home).records_added == 2
    blocks = "select line_no, block_index, block_type, call_id from stg_blocks where call_id = 'call_late' order by 1, 2"
    calls = "select call_id, tool_name, output_text from tool_calls where call_id = 'call_late'"
    fresh = tmp_path / "fresh.duckdb"
    run(fresh, home)
    assert rows(fresh, calls) == [("call_late", "bash", "3 passed")]
    assert rows(db, blocks) == rows(fresh, blocks)
    assert rows(db, calls) == rows(fresh, calls)
    # an answered request is carried no further: the next lines load as before
    append({"type": "user.message", "id": "ev-104", "parentId": "ev-103", "data": {"content": "thanks"}})
    assert run(db, home).records_added == 1
    assert rows(db, blocks) == rows(fresh, blocks)


def test_a_workspace_caught_truncated_or_cut_waits_for_the_next_run(tmp_path, monkeypatch):
    """Copilot writes workspace.yaml out again whole: caught truncated or cut mid-line, it had
    loaded as a session with no title, or half of one, until the next run."""
    from convarch.etl import settled

    monkeypatch.setattr(settled, "WRITING_SECONDS", 5.0)
    home = copilot_home(tmp_path)
    workspace = home / "session-state" / A / "workspace.yaml"
    db = tmp_path / "w.duckdb"
    os.utime(workspace, (0, 0))              # written long ago: read as it is
    run(db, home)
    title = scalar(db, "select title from sessions where session_id = ?", [A])
    whole = workspace.read_bytes().replace(b"summary: ", b"summary: Renamed ")
    for torn in (b"", whole[: whole.index(b"summary: ") + 12]):
        workspace.write_bytes(torn)
        s = run(db, home)
        assert (s.records_added, s.quarantined, s.files_skipped) == (0, 0, 1), s
        assert "being written" in s.skipped[0][1]
        assert scalar(db, "select title from sessions where session_id = ?", [A]) == title
    workspace.write_bytes(whole)
    s = run(db, home)
    assert (s.files_changed, s.files_skipped) == (1, 0)
    assert scalar(db, "select title from sessions where session_id = ?", [A]) == "Renamed " + title


def test_default_roots_and_overrides(tmp_path, monkeypatch, isolated_home):
    home = isolated_home
    env = {"XDG_CONFIG_HOME": str(home / ".config")}
    assert copilot_cli.default_roots(env, home) == [home / ".copilot", home / ".config" / ".copilot"]
    assert copilot_cli.default_roots({"COPILOT_HOME": str(tmp_path / "ch")}, home)[0] == tmp_path / "ch"
    assert default_targets(copilot_cli) == []
    shutil.copytree(CONTRACT, home / ".copilot")
    assert [r for _a, r in default_targets(copilot_cli)] == [home / ".copilot"]
    shutil.copytree(CONTRACT, tmp_path / "ch")
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "ch"))
    assert [r for _a, r in default_targets(copilot_cli)] == [tmp_path / "ch", home / ".copilot"]


def test_resolve_root_each_level(tmp_path):
    home = copilot_home(tmp_path)
    state = home / "session-state"
    assert copilot_cli.resolve_root(home) == home
    assert copilot_cli.resolve_root(state) == state
    assert copilot_cli.resolve_root(home / "history-session-state") == home / "history-session-state"
    assert copilot_cli.resolve_root(state / A) == state / A
    assert [f.path.name for f in copilot_cli.discover(state / A)] == ["events.jsonl", "workspace.yaml"]
    one = state / A / "events.jsonl"
    assert [(f.path, f.session_hint) for f in copilot_cli.discover(copilot_cli.resolve_root(one))] == [(one, A)]
    flat = state / f"{B}.jsonl"
    assert [f.session_hint for f in copilot_cli.discover(copilot_cli.resolve_root(flat))] == [B]
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing"):
        with pytest.raises(RootError):
            copilot_cli.resolve_root(bad)


def test_symlinked_events_are_skipped_with_a_reason(tmp_path):
    folder = tmp_path / ".copilot" / "session-state" / A
    folder.mkdir(parents=True)
    os.symlink(CONTRACT / "session-state" / A / "events.jsonl", folder / "events.jsonl")
    s = run(tmp_path / "w.duckdb", tmp_path / ".copilot")
    assert s.records_added == 0 and dict(s.skipped)[str(folder / "events.jsonl")].startswith("not a regular file")
