"""Cline: the VS Code extension's task folders (API history, UI messages, task metadata, the
task history index) and the Cline SDK/CLI session store ingest completely; every drift and bad
input case is loaded or quarantined with a reason while the rest loads.

Ingesting is slow next to parsing (each run publishes the warehouse), so every store is
ingested in one module-wide run and counts are taken per file."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import PEER, REPO, contract_builder, tree_fingerprint
from convarch.adapters import _cline_tasks, _json_stream, cline
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, sample_alone, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "cline" / "contract"
VENDOR = PEER / "cline__cline" / "sdk" / "packages" / "core" / "fixtures"
PR = PEER / "portable-resume" / "cline"

build = contract_builder("cline")

EXT = "saoudrizwan.claude-dev"
TORN, DRIFT, BROKEN, LINKED = "1778000000001", "1778000000002", "1778000000003", "1778000000005"
SDK_TORN = "1778000000004_zz9yx"


def _dump(value) -> bytes:
    return json.dumps(value).encode()


def write_extra(base: Path) -> tuple[Path, Path]:
    """A VS Code extension storage and a Cline data folder holding every drift and bad-input
    case (see EXTRA_FILES for what each file is expected to give)."""
    ext = base / "Code" / "User" / "globalStorage" / EXT
    tasks = ext / "tasks"
    xml = build.xml_task()["api_conversation_history.json"]
    # torn API history: three complete messages, then a cut inside the fourth
    torn = json.dumps(xml[:4])
    cut = torn.index('{"role": "assistant"', torn.index("replace_in_file") - 200)
    (tasks / TORN).mkdir(parents=True)
    (tasks / TORN / "api_conversation_history.json").write_text(torn[:cut + 40])
    (tasks / TORN / "ui_messages.json").write_bytes(b"<<not json at all>>")
    # drift: the first builds' UI file name, newer `function_id` blocks, XML edge cases
    (tasks / DRIFT).mkdir(parents=True)
    (tasks / DRIFT / "claude_messages.json").write_bytes(_dump([
        {"ts": 1778000000001, "type": "say", "say": "task", "text": "Check both files"},
        {"ts": 1778000000500, "type": "say", "say": "api_req_started", "text": "{not json"}]))
    t = lambda s: {"type": "text", "text": s}  # noqa: E731
    (tasks / DRIFT / "api_conversation_history.json").write_bytes(_dump([
        {"role": "user", "content": [t("<task>\nCheck both files\n</task>")]},
        {"role": "assistant", "content": [t("<read_file>\n<path>a.ts</path>\n</read_file>\n"
                                            "<read_file>\n<path>b.ts</path>\n</read_file>")]},
        {"role": "user", "content": [t("[read_file for 'a.ts'] Result:"), t("export const a = 1"),
                                     t("[read_file for 'b.ts'] Result:"), t("The user denied this operation.")]},
        {"role": "assistant", "content": [{"type": "tool_use", "function_id": "fc_1", "dline_tid": "t1",
                                           "name": "execute_command", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "function_id": "fc_1", "dline_tid": "t1",
                                      "content": "a.ts b.ts"}]},
        {"role": "assistant", "content": [t("<list_files>\n<path>.</path>\n</list_files>")]},
        {"role": "user", "content": [t("[execute_command for 'ls'] Result:"), t("a.ts b.ts")]},
        42,
        {"role": "user", "content": [t("This session is being continued from a previous conversation that ran "
                                       "out of context. The conversation is summarized below:\nread a.ts")]},
        {"role": "user", "content": [t("<explicit_instructions type=\"new_task\">\nstart fresh\n</explicit_instructions>")]},
    ]))
    (tasks / DRIFT / "task_metadata.json").write_text('"oops"')
    (tasks / DRIFT / "context_history.json").write_text("[]")
    (tasks / DRIFT / "settings.json").write_text("{}")
    (tasks / BROKEN).mkdir(parents=True)
    (tasks / BROKEN / "api_conversation_history.json").write_bytes(b'[{"role":"user","content":"caf\xe9"}]')
    (tasks / BROKEN / "ui_messages.json").write_bytes(b"")
    # neither a checkpoint repository nor a symlinked task folder is entered; a symlinked
    # file is listed and skipped by ingest
    (ext / "checkpoints" / DRIFT).mkdir(parents=True)
    (ext / "checkpoints" / DRIFT / "api_conversation_history.json").write_text("[]")
    os.symlink(tasks / DRIFT, tasks / "1778000000009")
    (tasks / LINKED).mkdir()
    os.symlink(tasks / DRIFT / "claude_messages.json", tasks / LINKED / "ui_messages.json")
    # a Cline data folder: the manifest loads, the torn transcript does not; the index is not read
    data = base / "dot-cline" / "data"
    session = data / "sessions" / SDK_TORN
    session.mkdir(parents=True)
    (session / f"{SDK_TORN}.json").write_bytes(_dump({"version": 1, "session_id": SDK_TORN, "source": "cli",
                                                      "started_at": "2026-05-01T08:00:00.000Z", "cwd": "/home/demo/x"}))
    (session / f"{SDK_TORN}.messages.json").write_text('{"version": 1, "sessionId": "%s", "messages": [{"id": "m1", "ro' % SDK_TORN)
    (data / "db").mkdir()
    (data / "db" / "sessions.db").write_bytes(b"SQLite format 3\x00")
    return ext, data


# Counts read off the files by hand. records = one per element of an API-history, UI or
# task-history array, one per list entry of task_metadata.json, one per manifest, and for an
# SDK messages document 1 (the document without its messages) + one per message; messages =
# elements with a role; tool calls = tool_use blocks + XML tool calls (the tools Cline defines,
# written as <name>…</name> in assistant text); quarantined = files (or torn tails) that are
# not JSON objects/arrays.
SAMPLES = {
    # 2 tasks (14 XML-era messages with 6 XML calls; 10 native messages with 4 tool_use), their
    # UI messages (21 + 13), task metadata (2 + 3 entries), taskHistory.json (2 items), and
    # two CLI sessions (manifest + header + 4 messages with 1 call; manifest + header + 2)
    "contract": (CONTRACT, dict(files=11, sessions=4, records=75, messages=30, tool_calls=11, quarantined=0)),
    # vendor fixtures: manifest + header + 32 messages (11 tool_use blocks)
    "vendor-session": (VENDOR / "session", dict(files=2, sessions=1, records=34, messages=32, tool_calls=11, quarantined=0)),
    # after-compaction documents: header + 10 messages; header + 3 messages
    "vendor-basic-compaction": (VENDOR / "session" / "basic.compaction.json",
                                dict(files=1, sessions=1, records=11, messages=10, tool_calls=0, quarantined=0)),
    "vendor-agentic-compaction": (VENDOR / "session" / "agentic.compaction.json",
                                  dict(files=1, sessions=1, records=4, messages=3, tool_calls=0, quarantined=0)),
    # header + 4 messages (thinking + tool_use, tool_result, text)
    "vendor-success": (VENDOR / "messages" / "success.messages.json",
                       dict(files=1, sessions=1, records=5, messages=4, tool_calls=1, quarantined=0)),
    # portable-resume: manifest + header + 2 messages
    "pr-basic": (PR / "s-cl-01-user-basic", dict(files=2, sessions=1, records=4, messages=2, tool_calls=0, quarantined=0)),
    # two sessions: (manifest + header + 2) and (manifest + header + 1); db/sessions.db not read
    "pr-subagent": (PR / "s-cl-02-parent-subagent", dict(files=4, sessions=2, records=7, messages=3, tool_calls=0, quarantined=0)),
    # a messages document of version 99 with no messages and no manifest: its header only
    "pr-unsupported": (PR / "s-cl-03-unsupported-messages",
                       dict(files=1, sessions=1, records=1, messages=0, tool_calls=0, quarantined=0)),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Every sample, the contract store and the drift/bad-input stores in one run; then the
    drift task's API history grows by one message and is ingested again."""
    base = tmp_path_factory.mktemp("cline-stores")
    ext, data = write_extra(base)
    roots = {n: r for n, (r, _w) in SAMPLES.items() if r.exists()}
    roots.update(extra=ext, extra_data=data)
    before = {n: tree_fingerprint(r if r.is_dir() else r.parent) for n, r in roots.items() if not n.startswith("extra")}
    db = base / "w.duckdb"
    targets = [(cline, cline.resolve_root(r)) for r in roots.values()]
    first = ingest(Layout(db), targets)
    after = {n: tree_fingerprint(r if r.is_dir() else r.parent) for n, r in roots.items() if not n.startswith("extra")}
    files = {n: sorted(str(f.path) for f in cline.discover(cline.resolve_root(r))) for n, r in roots.items()}
    facts = {
        "untouched": before == after,
        "first": first,
        "drift_messages_before": scalar(db, "select count(*) from messages where session_id = ?", [DRIFT]),
    }
    api = ext / "tasks" / DRIFT / "api_conversation_history.json"
    grown = json.loads(api.read_text()) + [{"role": "assistant", "content": [{"type": "text", "text": "Done."}]}]
    api.write_text(json.dumps(grown))
    facts["second"] = ingest(Layout(db), targets)
    return db, files, facts, ext, data


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_with_exact_counts(store, name, tmp_path):
    root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    _db, _files, facts, _ext, _data = store
    assert facts["untouched"], "a source store changed"
    assert sample_counts(*sample_alone(tmp_path, cline, root)) == want


def test_contract_sessions(store):
    db = store[0]
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, agent_version, message_count "
                   "from sessions where list_contains(?, session_id) order by started_at",
               [[build.XML_TASK, build.NATIVE_TASK, build.CLI_SESSION, build.SUB_SESSION]])
    assert got == [
        (build.XML_TASK, None, "Add a --units flag (metric|imperial) to the weather CLI", "/home/demo/weather-app",
         "claude-3-7-sonnet-20250219", None, 14),
        (build.NATIVE_TASK, None, "Why does `npm run build` fail?", "/home/demo/weather-app", "claude-sonnet-4-5", "3.38.0", 10),
        (build.CLI_SESSION, None, "Summarize the README and check the tests", "/home/demo/weather-app",
         "anthropic/claude-sonnet-4.5", None, 4),
        (build.SUB_SESSION, build.CLI_SESSION, "List the test files under test/", "/home/demo/weather-app",
         "anthropic/claude-sonnet-4.5", None, 2),
    ]
    # an older build stores no ts in the API history: the UI messages still date the task
    assert rows(db, "select count(*), count(\"timestamp\") from messages where session_id = ?", [build.XML_TASK]) == [(14, 0)]
    assert rows(db, "select started_at, ended_at from sessions where session_id = ?", [build.XML_TASK]) == [
        (rows(db, "select timestamp '2026-05-12 10:00:00'")[0][0], rows(db, "select timestamp '2026-05-12 12:01:44'")[0][0])]
    assert scalar(db, "select count(*) from messages where session_id = ? and \"timestamp\" is null", [build.NATIVE_TASK]) == 0


def test_contract_xml_tool_calls_are_linked_to_their_results(store):
    db = store[0]
    got = rows(db, "select call_id, tool_name, input ->> 'path', input ->> 'command', has_result, is_error, "
                   "left(output_text, 24) from tool_calls where session_id = ? order by line_no", [build.XML_TASK])
    assert got == [
        ("xml:1:0", "read_file", "src/cli.ts", None, True, False, "import { forecast } from"),
        ("xml:3:0", "replace_in_file", "src/cli.ts", None, True, False, "The content was successf"),
        ("xml:5:0", "execute_command", None, "npm test", True, True, "The tool execution faile"),
        ("xml:7:0", "attempt_completion", None, None, True, False, "The user has provided fe"),
        ("xml:11:0", "attempt_completion", None, None, False, False, None),
        ("xml:13:0", "attempt_completion", None, None, False, False, None),
    ]
    kinds = rows(db, "select kind, harness_kind from messages where session_id = ? and role = 'user' order by line_no",
                 [build.XML_TASK])
    assert kinds == [("prompt", None)] + [("tool_result", None)] * 4 + [("prompt", "harness_error"), ("prompt", "task_resumption")]
    assert scalar(db, "select text from messages where session_id = ? and line_no = 1", [build.XML_TASK]) == \
        "Add a --units flag (metric|imperial) to the weather CLI"


def test_contract_native_task_blocks_and_tokens(store):
    db = store[0]
    assert rows(db, "select call_id, tool_name, has_result, is_error from tool_calls where session_id = ? order by line_no",
                [build.NATIVE_TASK]) == [
        ("toolu_01NatBuild", "execute_command", True, False), ("toolu_01NatRead", "read_file", True, False),
        ("toolu_01NatEdit", "replace_in_file", True, False), ("toolu_01NatDone", "attempt_completion", True, False)]
    blocks = rows(db, "select block_type, media_type, data_chars from stg_blocks b join stg_records r using (file_id, line_no) "
                      "where r.session_id = ? and r.kind = 'tool_result' and r.text like '<feedback>%' order by block_index",
                  [build.NATIVE_TASK])
    assert blocks == [("tool_result", None, None), ("text", None, None), ("image", "image/png", 24), ("text", None, None)]
    assert scalar(db, "select block_type from stg_blocks b join stg_records r using (file_id, line_no) "
                      "where r.session_id = ? and r.line_no = 2 and block_index = 0", [build.NATIVE_TASK]) == "thinking"
    # tokens: the UI's api_req_started rows (one per request), never the API messages too
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_creation_tokens), sum(cache_read_tokens) "
                    "from stg_records where session_id = ?", [build.NATIVE_TASK]) == [(1580, 373, 8100, 34040)]
    assert scalar(db, "select count(*) from stg_records where session_id = ? and input_tokens is not null and role is not null",
                  [build.NATIVE_TASK]) == 0
    # the task's environment details feed the cwd but stay out of the text
    assert scalar(db, "select count(*) from messages where session_id = ? and text like '%environment_details%'",
                  [build.NATIVE_TASK]) == 0


def test_contract_cli_session_metrics_and_errors(store):
    db = store[0]
    # inputTokens includes the cached part: input = inputTokens - cacheReadTokens
    assert rows(db, "select message_id, input_tokens, output_tokens, cache_read_tokens, model from messages "
                    "where session_id = ? and role = 'assistant' order by line_no", [build.CLI_SESSION]) == [
        ("msg_cli_a1", 6200, 120, 0, "anthropic/claude-sonnet-4.5"), ("msg_cli_a2", 310, 80, 6190, "anthropic/claude-sonnet-4.5")]
    assert rows(db, "select call_id, is_error from tool_calls where session_id = ?", [build.CLI_SESSION]) == [("toolu_cli_1", True)]
    assert rows(db, "select block_type from stg_blocks b join stg_records r using (file_id, line_no) "
                    "where r.message_id = 'msg_cli_u1' order by block_index") == [("text",), ("file",)]


def test_vendor_compaction_and_fork(store):
    if not VENDOR.exists():
        pytest.skip("vendor fixtures not present")
    db, files = store[0], store[1]
    basic = files["vendor-basic-compaction"]
    assert rows(db, "select message_id, kind, harness_kind from messages where list_contains(?, source_file) "
                    "and is_compact_summary", [basic]) == [("msg_mr9sjimy_1", "prompt", "compact_summary")]
    agentic = files["vendor-agentic-compaction"]
    assert rows(db, "select message_id, \"timestamp\" is null from messages where list_contains(?, source_file) "
                    "and is_compact_summary", [agentic]) == [("PVzgWny1DDF8qitzpESnw", True)]
    # the fork's manifest: its own session id, title, model and cwd
    manifest = json.loads((VENDOR / "session" / "session.json").read_text())
    assert rows(db, "select session_id, text, model, cwd from stg_records where list_contains(?, source_file) "
                    "and kind = 'metadata'", [files["vendor-session"]]) == [
        (manifest["session_id"], manifest["metadata"]["title"], manifest["model"], manifest["cwd"])]
    messages = json.loads((VENDOR / "session" / "session.messages.json").read_text())["messages"]
    want = sum(m["metrics"]["outputTokens"] for m in messages if "metrics" in m)
    assert scalar(db, "select sum(output_tokens) from messages where list_contains(?, source_file)",
                  [files["vendor-session"]]) == want


def test_portable_resume_sessions_have_the_manifest_times(tmp_path):
    if not PR.exists():
        pytest.skip("portable-resume not present")
    db, files = sample_alone(tmp_path, cline, SAMPLES["pr-subagent"][0])
    got = rows(db, "select session_id, min(\"timestamp\"), count(*) filter (role is not null) from stg_records "
                   "where list_contains(?, source_file) group by 1 order by 1", [files])
    ts = rows(db, "select timestamp '2024-01-01 12:00:00'")[0][0]
    assert got == [("cl000101-0101-4101-8101-010101010101", ts, 2), ("cl000102-0202-4202-8202-020202020202", ts, 1)]


# --- drift and bad input -----------------------------------------------------------------------

EXTRA_FILES = {
    # path under tasks/ -> (records, quarantine reasons)
    f"{TORN}/api_conversation_history.json": (3, ["malformed_row"]),
    f"{TORN}/ui_messages.json": (0, ["invalid_json"]),
    f"{DRIFT}/claude_messages.json": (2, []),
    f"{DRIFT}/api_conversation_history.json": (11, []),      # 10, then 11 after the rewrite
    f"{DRIFT}/task_metadata.json": (0, ["not_object"]),
    f"{BROKEN}/api_conversation_history.json": (0, ["invalid_utf8"]),
    f"{BROKEN}/ui_messages.json": (0, []),
    f"{LINKED}/ui_messages.json": (0, []),
}


def test_extra_store_lists_only_what_it_reads(store):
    _db, files, _facts, ext, data = store
    assert [str(Path(p).relative_to(ext / "tasks")) for p in files["extra"]] == sorted(EXTRA_FILES)
    assert [Path(p).name for p in files["extra_data"]] == [f"{SDK_TORN}.json", f"{SDK_TORN}.messages.json"]


def test_bad_input_is_quarantined_and_the_rest_loads(store):
    db, files, facts, ext, data = store
    for rel, (records, reasons) in EXTRA_FILES.items():
        path = str(ext / "tasks" / rel)
        assert scalar(db, "select count(*) from stg_records where source_file = ?", [path]) == records, rel
        got = [r for (r,) in rows(db, "select reason from quarantine where source_file = ? order by line_no", [path])]
        assert got == reasons, (rel, got)
    assert str(ext / "tasks" / LINKED / "ui_messages.json") in [p for p, _ in facts["first"].skipped]
    # the torn history's complete messages load and keep their XML link
    assert rows(db, "select call_id, has_result from tool_calls where session_id = ?", [TORN]) == [("xml:1:0", True)]
    assert "after element 3" in scalar(db, "select error from quarantine where reason = 'malformed_row' and source_file like ?",
                                       [f"%{TORN}%"])
    # the SDK manifest loads, its torn transcript is quarantined whole
    sdk = [str(p) for p in files["extra_data"]]
    assert rows(db, "select record_type, cwd from stg_records where list_contains(?, source_file)", [sdk]) == [
        ("session_manifest", "/home/demo/x")]
    assert rows(db, "select reason from quarantine where list_contains(?, source_file)", [sdk]) == [("invalid_json",)]


def test_drift_cases(store):
    db = store[0]
    assert rows(db, "select kind, subtype, text, input_tokens from stg_records where session_id = ? "
                    "and record_type = 'say' order by line_no", [DRIFT]) == [
        ("metadata", "task", "Check both files", None), ("api_request", "api_req_started", None, None)]
    assert rows(db, "select call_id, tool_name, has_result, is_error, output_text from tool_calls "
                    "where session_id = ? order by line_no, call_id", [DRIFT]) == [
        ("xml:1:0", "read_file", True, False, "export const a = 1"),
        ("xml:1:1", "read_file", True, True, "The user denied this operation."),
        ("fc_1", "execute_command", True, False, "a.ts b.ts"),
        ("xml:5:0", "list_files", False, False, None)]
    got = rows(db, "select line_no, role, kind, harness_kind, is_compact_summary from stg_records "
                   "where session_id = ? and record_type = 'api_message' and line_no >= 7 order by line_no", [DRIFT])
    assert got == [(7, "user", "tool_result", None, False), (8, None, "unknown", None, False),
                   (9, "user", "prompt", "compact_summary", False), (10, "user", "prompt", "slash_command", False),
                   (11, "assistant", "response", None, False)]


def test_a_rewritten_file_that_only_grew_loads_its_new_message(store):
    # the history is rewritten whole with one message more: its first ten lines are the ones
    # loaded before, so only the eleventh loads (tests/test_whole_rewrites.py for the rest)
    db, _files, facts, _ext, _data = store
    assert facts["second"].files_changed == 1
    assert facts["second"].records_added == 1
    assert scalar(db, "select count(*) from messages where session_id = ?", [DRIFT]) == facts["drift_messages_before"] + 1


# --- roots and discovery ---------------------------------------------------------------------------

def test_default_locations_and_overrides(isolated_home, monkeypatch, tmp_path):
    home = isolated_home
    task = {"api_conversation_history.json": [{"role": "user", "content": "hi", "ts": 1}]}
    where = {
        home / ".config" / "Code" / "User" / "globalStorage" / EXT: "1",
        home / "Library" / "Application Support" / "Cursor" / "User" / "globalStorage" / EXT: "2",
        home / ".vscode-server" / "data" / "User" / "globalStorage" / EXT: "3",
        home / ".config" / "VSCodium" / "User" / "globalStorage" / EXT: "4",
    }
    for folder, task_id in where.items():
        build.write_task(folder / "tasks" / task_id, task)
    (home / ".cline" / "data" / "sessions" / "s1").mkdir(parents=True)
    (home / ".cline" / "data" / "sessions" / "s1" / "s1.messages.json").write_text('{"messages": []}')
    (home / ".config" / "Code - Insiders" / "User" / "globalStorage" / EXT / "settings").mkdir(parents=True)  # no tasks
    stores = [s for _a, s in default_targets(cline)]
    assert stores == [home / ".cline" / "data"] + [r for r in cline.default_roots(os.environ, home) if r in where]
    assert sum(1 for s in stores for _f in cline.discover(s)) == 5
    # CLINE_DATA_DIR, then $CLINE_DIR/data, come first
    build.write_task(tmp_path / "alt" / "data" / "tasks" / "5", task)
    build.write_task(tmp_path / "d2" / "tasks" / "6", task)
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "alt"))
    monkeypatch.setenv("CLINE_DATA_DIR", str(tmp_path / "d2"))
    assert [s for _a, s in default_targets(cline)][:2] == [tmp_path / "d2", tmp_path / "alt" / "data"]
    # Electron follows XDG_CONFIG_HOME
    build.write_task(tmp_path / "xdg" / "Windsurf" / "User" / "globalStorage" / EXT / "tasks" / "7", task)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert tmp_path / "xdg" / "Windsurf" / "User" / "globalStorage" / EXT in [s for _a, s in default_targets(cline)]


def test_resolve_root_accepts_every_level(tmp_path):
    ext = tmp_path / "Code" / "User" / "globalStorage" / EXT
    build.write_task(ext / "tasks" / "9", {"ui_messages.json": []})
    (tmp_path / "dot-cline" / "data" / "sessions" / "a").mkdir(parents=True)
    (tmp_path / "dot-cline" / "data" / "sessions" / "a" / "a.messages.json").write_text("{}")
    assert cline.resolve_root(tmp_path / "Code") == ext
    assert cline.resolve_root(tmp_path / "Code" / "User") == ext
    assert cline.resolve_root(tmp_path / "Code" / "User" / "globalStorage") == ext
    assert cline.resolve_root(ext) == ext
    assert cline.resolve_root(ext / "tasks") == ext / "tasks"
    assert cline.resolve_root(ext / "tasks" / "9") == ext / "tasks" / "9"
    assert cline.resolve_root(ext / "tasks" / "9" / "ui_messages.json") == ext / "tasks" / "9" / "ui_messages.json"
    assert cline.resolve_root(tmp_path / "dot-cline") == tmp_path / "dot-cline" / "data"
    assert [f.session_hint for f in cline.discover(cline.resolve_root(ext / "tasks" / "9"))] == ["9"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "missing", tmp_path / "notes.txt"):
        with pytest.raises(RootError):
            cline.resolve_root(bad)


def test_xml_calls_are_parsed_from_known_tools_only():
    calls = _cline_tasks._xml_calls(
        "<thinking>\n<read_file> is what I need</thinking>\n<write_to_file>\n<path>a.md</path>\n<content>\n"
        "# <b>Title</b>\n</content>\n<line_count>1</line_count>\n</write_to_file>\n<made_up_tool><x>1</x></made_up_tool>", 4)
    assert calls == [{"type": "tool_use", "id": "xml:4:0", "name": "write_to_file", "xml": True,
                      "input": {"path": "a.md", "content": "# <b>Title</b>", "line_count": "1"}}]


# --- big documents, streamed ---------------------------------------------------------------

_ARRAYS = {
    "api history": _dump(build.xml_task()["api_conversation_history.json"]),
    "ui messages": _dump([{"ts": 1, "type": "say", "say": "task", "text": "go"}, {"ts": 2, "type": "ask", "text": "ok?"}]),
    "empty": b"  [ ]\n",
    "torn": _dump(build.xml_task()["api_conversation_history.json"])[:-300],
    "trailing garbage": _dump([{"role": "user", "content": "a"}]) + b" junk",
    # numbers Python reads and the streaming parser does not: the rest of the array still loads
    "big integer": b'[{"role": "user", "content": "a", "n": 123456789012345678901234567890}, {"role": "assistant", "content": "b"}]',
    "NaN": b'[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b", "x": NaN}, {"role": "user", "content": "c"}]',
    "not UTF-8": b'[{"role": "user", "content": "a"}, {"role": "user", "content": "caf\xe9"}]',
    "not UTF-8, torn": b'[{"role": "user", "content": "caf\xe9"}, {"role": "us',
    "not an array": b'[1, 2] [3]',
}


_ROO_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}]},
    {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "read_file",
                                       "input": {"path": "a.py"}}]},
    {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "read_file",
                                  "output": {"type": "text", "value": "print(1)"}}]},
]
_OBJECTS = {
    "Roo history": _dump({"version": 2, "messages": _ROO_MESSAGES}),
    "members after the messages": b'{"messages": ' + _dump(_ROO_MESSAGES)
    + b', "version": 2, "extra": {"a": [1, {"b": null}], "c": 1.5}}',
    "SDK session": _dump({"version": 1, "sessionId": "s1", "agent": {"name": "cline"}, "updated_at": "2026-05-01",
                          "system_prompt": "be brief", "messages": _ROO_MESSAGES}),
    "no messages": _dump({"version": 1, "messages": []}),
    # parsed whole, as before (the streaming parser would read them otherwise or not at all)
    "messages twice": b'{"version": 1, "messages": [], "version": 3, "messages": [{"role": "user", "content": "x"}]}',
    "messages null": b'{"version": 2, "messages": null}',
    "a member named like the items": b'{"messages.item": 5, "version": 2, "messages": [{"role": "user", "content": "x"}]}',
    "manifest": _dump({"session_id": "s1", "started_at": 1}),
    "big integer": b'{"version": 2, "n": 123456789012345678901234567890, "messages": [{"role": "user", "content": "x"}]}',
    "NaN": b'{"version": 2, "messages": [{"role": "user", "content": "x", "v": NaN}]}',
    "torn": _dump({"version": 2, "messages": _ROO_MESSAGES})[:-20],
    "trailing bytes": _dump({"version": 2, "messages": _ROO_MESSAGES}) + b" x",
    "not UTF-8": b'{"version": 2, "messages": [{"role": "user", "content": "caf\xe9"}]}',
}
_STREAMED_OBJECTS = {"Roo history", "members after the messages", "SDK session", "no messages"}


def _both_ways(tmp_path, monkeypatch, name: str, data: bytes, streamer: str) -> tuple[list, list, int]:
    """The lines of one document parsed whole and with streaming on (STREAM_BYTES 0), and how
    many times the streaming reader `streamer` (of adapters/_json_stream.py) was called."""
    path = tmp_path / name
    path.write_bytes(data)
    file = _cline_tasks.single(path, "cline")
    whole = list(_cline_tasks.json_lines(path, file))
    monkeypatch.setattr(_cline_tasks, "STREAM_BYTES", 0)
    calls = []
    real = getattr(_json_stream, streamer)
    monkeypatch.setattr(_json_stream, streamer, lambda *a: calls.append(a) or real(*a))
    return whole, list(_cline_tasks.json_lines(path, file)), len(calls)


@pytest.mark.parametrize("case", sorted(_OBJECTS))
@pytest.mark.parametrize("name", ["api_conversation_history.json", "1778000000004_zz9yx.messages.json"])
def test_a_streamed_object_gives_the_lines_of_a_whole_parse(tmp_path, monkeypatch, case, name):
    whole, streamed, calls = _both_ways(tmp_path, monkeypatch, name, _OBJECTS[case], "member_items")
    assert streamed == whole
    assert whole or name.startswith("api_") and case == "no messages"
    assert calls == (case in _STREAMED_OBJECTS)


@pytest.mark.parametrize("case", sorted(_ARRAYS))
@pytest.mark.parametrize("name", ["api_conversation_history.json", "ui_messages.json"])
def test_a_streamed_array_gives_the_lines_of_a_whole_parse(tmp_path, monkeypatch, case, name):
    whole, streamed, calls = _both_ways(tmp_path, monkeypatch, name, _ARRAYS[case], "array_items")
    assert streamed == whole
    assert whole or case == "empty"
    # a file that is not UTF-8 is quarantined whole, as before, and never streamed
    assert calls == (0 if case.startswith("not UTF-8") else 1)


@pytest.mark.parametrize("shape", ["array", "Roo object"])
def test_a_big_api_history_is_read_in_memory_of_an_element_not_the_document(tmp_path, monkeypatch, shape):
    """A 37 MB history: parsed whole it takes more than its size; streamed, a few of its
    messages. tracemalloc counts the Python objects either way."""
    import tracemalloc

    msgs = [{"role": "user", "content": [{"type": "text", "text": "<task>\nread them all\n</task>"}]}]
    for i in range(400):
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {"path": f"m{i}.py"}}]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"line {i} ünïcode " * 3500}]})
    path = tmp_path / "api_conversation_history.json"
    path.write_bytes(_dump(msgs if shape == "array" else {"version": 2, "messages": msgs}))
    size = path.stat().st_size
    del msgs
    file = _cline_tasks.single(path, "cline")

    def peak() -> tuple[int, int]:
        tracemalloc.start()
        try:
            n = sum(1 for _ in _cline_tasks.json_lines(path, file))
            return n, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    monkeypatch.setattr(_cline_tasks, "STREAM_BYTES", 1 << 40)
    n_whole, whole = peak()
    monkeypatch.setattr(_cline_tasks, "STREAM_BYTES", 16 << 20)
    assert size > _cline_tasks.STREAM_BYTES
    n_streamed, streamed = peak()
    assert n_whole == n_streamed == 801
    assert whole > size                      # the whole parse holds the document and more
    assert streamed < size / 8, (streamed, whole, size)
