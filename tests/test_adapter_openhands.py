"""OpenHands stores (V1 conversations of event files, V0 server sessions) ingest completely,
and bad event files are quarantined one by one while the rest loads."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import PEER, REPO, contract_builder, tree_fingerprint
from convarch.adapters import openhands
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "openhands" / "contract"
FRANKEN = PEER / "Dicklesworthstone__franken_agent_detection" / "fixtures" / "openhands"
PR = PEER / "portable-resume" / "openhands"

build = contract_builder("openhands")

CONV, SUB, V0 = build.CONV, build.SUB, build.V0_SID


def run(db: Path, root: Path):
    return ingest(Layout(db), [(openhands, openhands.resolve_root(root))])


# Counts read off the files: records = one per file (event files + base_state.json /
# metadata.json); messages = records whose event carries a role (every V1 event kind here
# but the unknown MysteryPublicEvent); tool_calls = distinct tool_call_id of ActionEvents.
SAMPLES = {
    # base_state + 11 events: 1 SystemPromptEvent, 2 user + 2 agent MessageEvents,
    # 3 ActionEvents (3 calls), 3 ObservationEvents
    "franken": (FRANKEN, dict(files=12, sessions=1, records=12, messages=11, tool_calls=3, quarantined=0)),
    # two MessageEvents (user, agent); no base_state.json
    "pr-basic": (PR / "s-oh-01-user-basic", dict(files=2, sessions=1, records=2, messages=2, tool_calls=0,
                                                 quarantined=0)),
    # one event of an unknown kind: archived as kind 'unknown', no message
    "pr-unknown": (PR / "s-oh-02-unsupported-kind", dict(files=1, sessions=1, records=1, messages=0, tool_calls=0,
                                                         quarantined=0)),
}


def build_scenarios(tmp: Path) -> dict[str, Path]:
    """Small stores for drift and bad input: file-name drift and ordering, damaged event files,
    a symlinked event, and a single event file given as the root."""
    drift = tmp / "drift"
    events = drift / "conversations" / "0123456789abcdef0123456789abcdef" / "events"
    events.mkdir(parents=True)
    for idx, body in [(99999, "second"), (100000, "third"), (7, "first")]:
        name = f"event-{idx:05d}.json" if idx == 7 else f"event-{idx:05d}-{build.eid(body)}.json"
        (events / name).write_text(json.dumps(build.user(body, idx % 60, body)))
    (events / "notes.txt").write_text("not an event")
    (events.parent / "observations").mkdir()
    (events.parent / "observations" / "1.json").write_text("{}")     # not an events/ folder: not read
    bad = build.write_store(tmp / "bad")
    bad_events = sorted((bad / "conversations" / CONV / "events").iterdir())
    bad_events[3].write_text(bad_events[3].read_text()[:120])           # the agent was killed mid-write
    bad_events[4].write_text("[1, 2, 3]")                               # JSON, but not an event object
    (bad / "sessions" / V0 / "events" / "7.json").write_bytes(b'{"id": 7, "content": "\xff\xfe"}')
    linked = tmp / "linked" / "conversations" / CONV / "events"
    linked.mkdir(parents=True)
    target = sorted((CONTRACT / "conversations" / CONV / "events").iterdir())[1]
    os.symlink(target, linked / target.name)
    single = sorted((CONTRACT / "conversations" / CONV / "events").iterdir())[1]
    return dict(drift=drift, bad=bad, linked=tmp / "linked", link=linked / target.name, single=single)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The peer samples and the drift/bad-input stores, ingested in one run (one warehouse
    publish keeps the suite fast); each test counts over its own files."""
    tmp = tmp_path_factory.mktemp("openhands-mixed")
    present = {n: r for n, (r, _w) in SAMPLES.items() if r.exists()}
    before = {n: tree_fingerprint(r) for n, r in present.items()}
    paths = build_scenarios(tmp)
    roots = list(present.values()) + [paths[k] for k in ("drift", "bad", "linked", "single")]
    db = tmp / "w.duckdb"
    summary = ingest(Layout(db), [(openhands, openhands.resolve_root(r)) for r in roots])
    files = {n: sorted(str(f.path) for f in openhands.discover(openhands.resolve_root(r))) for n, r in present.items()}
    after = {n: tree_fingerprint(r) for n, r in present.items()}
    return db, files, summary, before == after, paths


@pytest.fixture(scope="module")
def peer_db(mixed):
    return mixed[:4]


@pytest.fixture(scope="module")
def scenarios(mixed):
    db, _files, summary, _untouched, paths = mixed
    return db, summary, paths


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_with_exact_counts(peer_db, name):
    root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    db, files, _summary, untouched = peer_db
    assert untouched, "a source store changed"
    got = sample_counts(db, files[name])
    assert got == want


def test_franken_sample_session_and_tools(peer_db):
    if not FRANKEN.exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    assert rows(db, "select title, cwd, model, started_at::varchar, ended_at::varchar from sessions "
                    "where session_id = 'a1b2c3d4e5f64718a9b0c1d2e3f40516'") == [
        ("Take a look at the uuid_service project and tell me how it is structured.",
         "/mnt/2TBSSD/Projects/uuid_service", "openai/gpt-5.1",
         "2026-05-20 19:00:55.619644", "2026-05-20 19:02:55.110267")]
    assert rows(db, "select call_id, tool_name, is_error, exit_code, command from tool_calls "
                    "where session_id = 'a1b2c3d4e5f64718a9b0c1d2e3f40516' order by call_id") == [
        ("call_terminal_build_0003", "terminal", True, 1, "docker build -t uuid-service:latest ."),
        ("call_terminal_ls_0002", "terminal", False, 0, "cd /mnt/2TBSSD/Projects/uuid_service && ls"),
        ("call_view_readme_0001", "file_editor", False, 0, None)]
    # the tool input is the parsed tool_call.arguments, not its JSON text
    assert scalar(db, "select input ->> 'path' from tool_calls where call_id = 'call_view_readme_0001'") == \
        "/mnt/2TBSSD/Projects/uuid_service/README.md"


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("openhands-contract") / "w.duckdb"
    s = run(db, CONTRACT)
    return db, s


def test_contract_sessions(contract_db):
    db, s = contract_db
    # V1: base_state + 18 events; subagent: base_state + 5 events; V0: metadata + 16 events
    assert (s.files_scanned, s.records_added, s.quarantined) == (42, 42, 0)
    assert rows(db, "select session_id, parent_session_id, title, cwd, model, git_branch, agent_version, "
                    "message_count, started_at::varchar from sessions order by started_at") == [
        (V0, None, "Fix failing make test", "/workspace", "claude-3-7-sonnet-20250219", "main", "0.39.0", 12,
         "2025-06-03 13:59:58"),
        (CONV, None, "Add a --units flag to the weather CLI and make the tests pass.", build.CWD,
         "anthropic/claude-sonnet-4-5-20250929", None, None, 17, "2026-04-14 09:00:00"),
        (SUB, CONV, None, build.CWD, "anthropic/claude-haiku-4-5-20251001", None, None, 5, "2026-04-14 09:00:21.166299"),
    ]
    assert scalar(db, "select bool_and(is_sidechain) from stg_records where session_id = ?", [SUB])


def test_contract_v1_kinds_and_harness_input(contract_db):
    db, _s = contract_db
    kinds = dict(rows(db, "select kind, count(*) from stg_records where session_id = ? group by 1", [CONV]))
    assert kinds == {"metadata": 1, "system": 1, "prompt": 3, "response": 1, "tool_use": 5, "tool_result": 6,
                     "compact_boundary": 1, "state_update": 1}
    assert rows(db, "select harness_kind, left(text, 30) from messages where session_id in (?, ?) "
                    "and harness_kind is not null order by harness_kind", [CONV, SUB]) == [
        ("inter_agent", "Find every caller of main() in"),
        ("system_reminder", "Your last response did not inc")]
    # the condensation carries its summary; the finish action carries the final reply
    assert rows(db, "select kind, role, is_compact_summary from stg_records where record_type = 'Condensation'") == [
        ("compact_boundary", "system", True)]
    assert scalar(db, "select text from stg_records where subtype = 'FinishAction'") == \
        "Added --units (metric|imperial) to the CLI."
    # extended_content (agent context) is not part of the user's text; the image is a block
    assert scalar(db, "select text from messages where text like 'Here is how%'") == \
        "Here is how the help output should look."
    assert rows(db, "select block_type, media_type, data_chars from stg_blocks where block_type in ('image', 'thinking')"
                    " order by 1") == [("image", "image/png", 39), ("thinking", None, None)]
    # token totals from ConversationStats: prompt tokens net of cache reads and writes
    assert rows(db, "select input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens from stg_records "
                    "where record_type = 'base_state' and session_id = ?", [CONV]) == [(2300, 790, 3000, 800)]


def test_contract_tool_calls(contract_db):
    db, _s = contract_db
    got = rows(db, "select session_id, call_id, tool_name, is_error, exit_code, has_result from tool_calls "
                   "order by session_id, call_id")
    assert got == [
        (V0, "oh-event-12", "run", False, 0, True),                 # a command the user ran (no tool call id)
        (V0, "toolu_v01", "execute_bash", True, 1, True),       # exit 2 is in extras, not the text
        (V0, "toolu_v02", "str_replace_editor", False, 0, True),
        (V0, "toolu_v03", "finish", False, None, False),
        (CONV, "toolu_01", "terminal", True, 1, True),             # exit code 1, though is_error is false
        (CONV, "toolu_02", "file_editor", False, 0, True),
        (CONV, "toolu_03", "task", False, 0, True),
        (CONV, "toolu_04", "terminal", True, 1, True),             # rejected by the user
        (CONV, "toolu_06", "finish", False, 0, True),
        (SUB, "toolu_s1", "terminal", False, 0, True),
    ]
    # an AgentErrorEvent answers a call the model made to a tool that does not exist
    assert rows(db, "select output_text, is_error from stg_blocks where call_id = 'toolu_05'") == [
        ("Tool 'browser' not found. Available: terminal, file_editor, task", True)]


def test_contract_v0_session(contract_db):
    db, _s = contract_db
    got = rows(db, "select record_type, subtype, kind, role, harness_kind from stg_records where session_id = ? "
                   "order by \"timestamp\", line_no, file_id", [V0])
    assert got == [
        ("conversation_metadata", None, "metadata", None, None),
        ("system", "action", "system", "system", None),
        ("message", "action", "prompt", "user", None),
        ("recall", "action", "recall", None, None),
        ("recall", "observation", "recall", None, None),
        ("run", "action", "tool_use", "assistant", None),
        ("run", "observation", "tool_result", "user", None),
        ("edit", "action", "tool_use", "assistant", None),
        ("edit", "observation", "tool_result", "user", None),
        ("condensation", "action", "compact_boundary", "system", None),
        ("message", "action", "response", "assistant", None),
        ("change_agent_state", "action", "agent_state", None, None),
        ("agent_state_changed", "observation", "agent_state", None, None),
        ("run", "action", "prompt", "user", "shell_escape"),
        ("run", "observation", "tool_result", "user", None),
        ("finish", "action", "tool_use", "assistant", None),
        ("error", "observation", "system", "system", None),
    ]
    assert rows(db, "select input_tokens, output_tokens, \"timestamp\"::varchar from stg_records "
                    "where record_type = 'conversation_metadata'") == [(8200, 240, "2025-06-03 13:59:58")]
    # an observation's parent is the action that caused it
    assert scalar(db, "select parent_id from stg_records where session_id = ? and message_id = '5'", [V0]) == "4"


def test_file_layout_drift_and_order(scenarios):
    """Early SDK names without the event id, indexes past 99999, and stray files."""
    db, _s, paths = scenarios
    names = [sf.path.name for sf in openhands.discover(openhands.resolve_root(paths["drift"]))]
    assert [n.split("-")[1].split(".")[0] for n in names] == ["00007", "99999", "100000"]
    assert rows(db, "select text from stg_records where source_file like ? order by file_id",
                [f"{paths['drift']}/%"]) == [("first",), ("second",), ("third",)]


def test_bad_event_files_are_quarantined_alone(scenarios):
    db, _s, paths = scenarios
    prefix = f"{paths['bad']}/%"
    assert scalar(db, "select count(*) from stg_records where source_file like ?", [prefix]) == 39
    assert sorted(r for (r,) in rows(db, "select reason from quarantine where source_file like ?", [prefix])) == [
        "invalid_json", "invalid_utf8", "not_object"]
    assert scalar(db, "select count(*) from messages where session_id = ? and source_file like ?", [CONV, prefix]) == 15


def test_symlinked_event_is_skipped_and_a_single_file_root_loads(scenarios):
    db, s, paths = scenarios
    assert dict(s.skipped)[str(paths["link"])].startswith("not a regular file")
    assert rows(db, "select session_id, kind from stg_records where source_file = ?", [str(paths["single"])]) == [
        (CONV, "prompt")]


def test_deleted_event_stays_and_rewritten_state_replaces(tmp_path):
    home = build.write_store(tmp_path / "home")
    db = tmp_path / "w.duckdb"
    run(db, home)
    conv = home / "conversations" / CONV
    # a rolled-back turn: the agent deletes the last event file; the archive keeps it
    last = sorted((conv / "events").iterdir())[-1]
    last.unlink()
    # base_state.json is rewritten in place when the conversation goes on
    state = json.loads((conv / "base_state.json").read_text())
    state["agent"]["llm"]["model"] = "openai/gpt-5.1"
    (conv / "base_state.json").write_text(json.dumps(state))
    s = run(db, home)
    assert (s.files_changed, s.records_added) == (1, 1)      # the deletion is no change of data
    assert scalar(db, "select count(*) from stg_records where session_id = ?", [CONV]) == 19
    assert scalar(db, "select model from sessions where session_id = ?", [CONV]) == "openai/gpt-5.1"


def test_default_roots_and_overrides(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    assert openhands.default_roots({}, home) == [home / ".openhands"]
    shutil.copytree(CONTRACT, home / ".openhands")
    assert [r for _a, r in default_targets(openhands)] == [home / ".openhands"]
    conversations = tmp_path / "conv-override"
    shutil.copytree(CONTRACT / "conversations", conversations)
    persist = tmp_path / "persist"
    shutil.copytree(CONTRACT, persist)
    store = tmp_path / "v0-store"
    shutil.copytree(CONTRACT / "sessions", store / "sessions")
    monkeypatch.setenv("OPENHANDS_CONVERSATIONS_DIR", str(conversations))
    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(persist))
    monkeypatch.setenv("FILE_STORE_PATH", str(store))
    assert [r for _a, r in default_targets(openhands)] == [conversations, persist, store, home / ".openhands"]
    kinds = {sf.path.parent.parent.name for sf in openhands.discover(conversations) if sf.path.parent.name == "events"}
    assert kinds == {CONV, SUB}


def test_resolve_root_accepts_each_level(tmp_path):
    conv = CONTRACT / "conversations" / CONV
    for root in (CONTRACT, CONTRACT / "conversations", CONTRACT / "sessions", conv, conv / "subagents"):
        assert openhands.resolve_root(root) == root
    event = sorted((conv / "events").iterdir())[1]
    assert openhands.resolve_root(event) == event
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.json").write_text("{}")
    for bad in (tmp_path / "empty", tmp_path / "notes.json", tmp_path / "missing"):
        with pytest.raises(RootError):
            openhands.resolve_root(bad)
