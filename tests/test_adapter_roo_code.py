"""Roo Code: task folders in both API-history formats (legacy Anthropic array, versioned
RooMessage with AI SDK parts), XML-era tool calls, non-destructive condense, the subtask tree
from history_item.json; bad input is quarantined with a reason while the rest loads.

No public sample exists; the contract store is written from Roo Code's source
(fixtures/roo_code/build_contract.py). One module-wide ingest keeps the suite fast."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import REPO, contract_builder, tree_fingerprint
from convarch.adapters import roo_code
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "roo_code" / "contract"
EXT = "rooveterinaryinc.roo-cline"

build = contract_builder("roo_code")
ROOT, CHILD, XML = build.ROOT, build.CHILD, build.XML
TORN_V2, BAD_ITEM = "0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b", "1f0e9d8c-7b6a-4f5e-9d3c-2b1a0f9e8d7c"


def write_custom(base: Path) -> Path:
    """A ``tasks`` folder moved by Roo's custom storage path setting, with bad input."""
    tasks = base / "roo-storage" / "tasks"
    v2 = json.dumps(build.child_task()["api_conversation_history.json"])
    (tasks / TORN_V2).mkdir(parents=True)
    (tasks / TORN_V2 / "api_conversation_history.json").write_text(v2[: len(v2) // 2])
    (tasks / TORN_V2 / "ui_messages.json").write_text(json.dumps(build.child_task()["ui_messages.json"][:2]))
    (tasks / BAD_ITEM).mkdir(parents=True)
    (tasks / BAD_ITEM / "history_item.json").write_text('{"id": "%s", "task": "trunc' % BAD_ITEM)
    (tasks / BAD_ITEM / "api_conversation_history.json").write_text(json.dumps(
        [{"role": "user", "content": [{"type": "text", "text": "<task>\nhello\n</task>"}], "ts": 1778900000000},
         {"role": "assistant", "content": "Hi.", "ts": 1778900001000}]))
    (tasks / "_index.json").write_text('{"version": 1, "entries": [')
    return tasks


# Counts read off the files by hand: records = one per element of an API-history array (or of
# a v2 document's messages), of a UI array, per files_in_context entry, per history_item.json;
# messages = API elements with a role plus standalone reasoning items; tool calls = tool_use /
# tool-call blocks and XML calls.
SAMPLES = {
    # ROOT: 9 API (1 reasoning item, 3 calls) + 10 UI + 1 history + 1 file entry;
    # CHILD: 10 v2 messages (3 calls) + 9 UI + 1 history; XML: 8 API (3 XML calls) + 9 UI
    "contract": dict(files=9, sessions=3, records=58, messages=27, tool_calls=9, quarantined=0),
    # a torn v2 document (an object: quarantined whole) and its 2 UI messages; a torn
    # history_item.json (quarantined) beside a 2-message history
    "custom": dict(files=4, sessions=2, records=4, messages=2, tool_calls=0, quarantined=2),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    base = tmp_path_factory.mktemp("roo-stores")
    roots = {"contract": CONTRACT, "custom": write_custom(base)}
    before = tree_fingerprint(CONTRACT)
    db = base / "w.duckdb"
    ingest(Layout(db), [(roo_code, roo_code.resolve_root(r)) for r in roots.values()])
    files = {n: sorted(str(f.path) for f in roo_code.discover(roo_code.resolve_root(r))) for n, r in roots.items()}
    return db, files, tree_fingerprint(CONTRACT) == before


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_store_loads_with_exact_counts(store, name):
    db, files, untouched = store
    assert untouched
    mine = files[name]
    got = sample_counts(db, mine)
    assert got == SAMPLES[name]


def test_sessions_titles_and_subtask_tree(store):
    db = store[0]
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, message_count from sessions "
                   "where list_contains(?, session_id) order by started_at", [[ROOT, CHILD, XML]])
    assert got == [
        (XML, None, "Rename getTemp to getTemperature everywhere", "/home/demo/weather-app", "claude-sonnet-4-5", 8),
        (ROOT, None, "Retry with backoff", "/home/demo/weather-app", "claude-sonnet-4-5", 9),
        (CHILD, ROOT, "Retry cap unit test", "/home/demo/weather-app", "claude-sonnet-4-5", 10),
    ]
    # _index.json is a cache of the history items, never read
    assert not any(p.endswith("_index.json") for p in store[1]["contract"])
    assert scalar(db, "select count(*) from messages where list_contains(?, session_id) and \"timestamp\" is null",
                  [[ROOT, CHILD, XML]]) == 0


def test_condense_reasoning_and_tokens(store):
    db = store[0]
    got = rows(db, "select kind, is_compact_summary, left(text, 30) from messages where session_id = ? "
                   "and role = 'assistant' order by line_no", [ROOT])
    assert got == [("tool_use", False, "I'll read the client first."), ("thinking", False, None),
                   ("tool_use", False, "Adding a retry loop with expon"), ("response", True, "Summary of the conversation so"),
                   ("tool_use", False, None)]
    # messages a condense replaced keep their rows; the marker stays in raw
    assert scalar(db, "select count(*) from stg_records where session_id = ? and json_extract_string(raw, "
                      "'$.item.condenseParent') = 'c1'", [ROOT]) == 5
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_creation_tokens), sum(cache_read_tokens) "
                    "from stg_records where session_id = ?", [ROOT]) == [(2822, 340, 11780, 9400)]
    assert rows(db, "select text from messages where session_id = ? and kind = 'prompt' order by line_no", [ROOT]) == [
        ("Add retry with backoff to fetchForecast()",), ("Also cap the delay at 5 seconds",)]


def test_v2_parts_become_linked_blocks(store):
    db = store[0]
    assert rows(db, "select call_id, tool_name, has_result, is_error, output_text from tool_calls "
                    "where session_id = ? order by line_no", [CHILD]) == [
        ("toolu_01RooWrite", "write_to_file", True, False, '{"path":"test/client.test.ts","operation":"created"}'),
        ("toolu_01RooRun", "execute_command", True, True, "Command exited with code 1\n1 failed: caps the delay (timeout)"),
        ("toolu_01RooFin", "attempt_completion", True, False, "The user accepted the result.")]
    assert rows(db, "select role, kind, harness_kind from messages where session_id = ? and role = 'user' order by line_no",
                [CHILD]) == [("user", "prompt", None), ("user", "tool_result", None), ("user", "tool_result", None),
                             ("user", "prompt", "environment_context"), ("user", "prompt", None), ("user", "tool_result", None)]
    assert rows(db, "select b.block_type, left(b.text, 20) from stg_blocks b join stg_records r using (file_id, line_no) "
                    "where r.session_id = ? and r.line_no = 2 order by block_index", [CHILD]) == [
        ("thinking", "A fake-timer test co"), ("tool_use", None)]
    assert scalar(db, "select text from messages where session_id = ? and line_no = 7", [CHILD]).startswith("The test timed out")


def test_xml_era_task(store):
    db = store[0]
    assert rows(db, "select call_id, tool_name, input ->> 'path', has_result from tool_calls where session_id = ? "
                    "order by line_no", [XML]) == [
        ("xml:1:0", "search_files", "src", True), ("xml:3:0", "apply_diff", "src/forecast.ts", True),
        ("xml:5:0", "attempt_completion", None, True)]


def test_bad_input_is_quarantined_and_the_rest_loads(store):
    db, files, _ = store
    got = rows(db, "select regexp_extract(source_file, '[^/]+/[^/]+$'), reason from quarantine "
                   "where list_contains(?, source_file) order by 1", [files["custom"]])
    assert got == [(f"{TORN_V2}/api_conversation_history.json", "invalid_json"), (f"{BAD_ITEM}/history_item.json", "invalid_json")]
    assert rows(db, "select session_id, title from sessions where session_id = ?", [BAD_ITEM]) == [(BAD_ITEM, "hello")]


# --- roots and discovery ---------------------------------------------------------------------------

def test_default_locations(isolated_home, monkeypatch, tmp_path):
    home = isolated_home
    assert default_targets(roo_code) == []
    places = [home / ".config" / "Code" / "User" / "globalStorage" / EXT,
              home / "Library" / "Application Support" / "Code - Insiders" / "User" / "globalStorage" / EXT,
              home / ".vscode-server" / "data" / "User" / "globalStorage" / EXT]
    for n, place in enumerate(places):
        (place / "tasks" / f"t{n}").mkdir(parents=True)
        (place / "tasks" / f"t{n}" / "ui_messages.json").write_text("[]")
    assert [s for _a, s in default_targets(roo_code)] == places
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert tmp_path / "xdg" / "VSCodium" / "User" / "globalStorage" / EXT in roo_code.default_roots(os.environ, home)


def test_resolve_root(tmp_path):
    (tmp_path / "VSCodium" / "User" / "globalStorage" / EXT / "tasks" / "t1").mkdir(parents=True)
    task = tmp_path / "VSCodium" / "User" / "globalStorage" / EXT / "tasks" / "t1"
    (task / "history_item.json").write_text("{}")
    assert roo_code.resolve_root(tmp_path / "VSCodium") == task.parent.parent
    assert roo_code.resolve_root(task) == task
    assert roo_code.resolve_root(task / "history_item.json") == task / "history_item.json"
    assert [(f.path.name, f.session_hint) for f in roo_code.discover(task.parent.parent)] == [("history_item.json", "t1")]
    with pytest.raises(RootError):
        roo_code.resolve_root(tmp_path / "nowhere")
    with pytest.raises(RootError):
        roo_code.resolve_root(tmp_path)
