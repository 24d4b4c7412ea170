"""Both products named Grok share ~/.grok: xAI Grok Build (sessions/ folders of ACP update
streams) and the community grok-cli (grok.db). Each adapter reads only its own files, every
sample ingests with exact counts, and bad input is quarantined while the rest loads."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import PEER, REPO, contract_builder, tree_fingerprint
from convarch.adapters import grok_build, grok_cli
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, sample_alone, sample_counts, scalar



bb = contract_builder("grok_build")
cb = contract_builder("grok_cli")
BUILD = REPO / "fixtures" / "grok_build" / "contract"
CLI = REPO / "fixtures" / "grok_cli" / "contract"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "grok"
PR = PEER / "portable-resume" / "grok"


@pytest.fixture(autouse=True)
def no_grok_env(monkeypatch):
    monkeypatch.delenv("GROK_HOME", raising=False)


# Grok Build samples, counts read off the files: records = non-blank lines of updates.jsonl /
# chat_history.jsonl + 1 per summary.json and checkpoint; messages = chat_history lines (all
# carry a role) or, in updates.jsonl, one per run of same-kind chunks; tool_calls = distinct
# tool call ids (chat_history ``tool_calls[].id`` and backend_tool_call ``kind.id``).
SAMPLES = {
    # grok/: summary + chat_history (11 lines: system, 3 user, 2 reasoning, 2 assistant with one
    # call each, 2 tool_result, 1 backend_tool_call); grok/subagent/: summary + 5 lines (1 call)
    "jazzy": (JAZZY, dict(files=4, sessions=2, records=18, messages=16, tool_calls=4, quarantined=0)),
    "pr-01": (PR / "s-gro-01" / "root", dict(files=2, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # no summary.json
    "pr-02": (PR / "s-gro-02" / "root", dict(files=1, sessions=1, records=2, messages=2, tool_calls=0, quarantined=0)),
    # + an unknown update kind between the prompt and the answer
    "pr-03": (PR / "s-gro-03" / "root", dict(files=2, sessions=1, records=4, messages=2, tool_calls=0, quarantined=0)),
    # a thought, a hidden (encrypted) user chunk, the prompt, the answer
    "pr-04": (PR / "s-gro-04" / "root", dict(files=2, sessions=1, records=5, messages=4, tool_calls=0, quarantined=0)),
    # a torn last line
    "pr-05": (PR / "s-gro-05" / "root", dict(files=2, sessions=1, records=3, messages=2, tool_calls=0, quarantined=1)),
    "pr-06": (PR / "s-gro-06" / "root", dict(files=2, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # 7 update lines (2 before and 2 after a compaction, 3 compaction lines) + 1 checkpoint file
    "pr-07": (PR / "s-gro-07" / "root", dict(files=3, sessions=1, records=9, messages=4, tool_calls=0, quarantined=0)),
    # 8 update lines (6 messages, 2 checkpoint markers) + 2 checkpoint files
    "pr-08": (PR / "s-gro-08" / "root", dict(files=4, sessions=1, records=11, messages=6, tool_calls=0, quarantined=0)),
}


def build_bad(tmp: Path) -> dict[str, Path]:
    """A Grok Build store with a torn update line, a summary.json that is not JSON and a
    checkpoint that is a JSON array; a grok-cli home with a malformed message row; a grok.db
    that is not SQLite; and one without grok-cli's tables."""
    home = bb.write_store(tmp / "build-bad")
    s1 = home / "sessions" / bb.GROUP / bb.S1
    lines = (s1 / "updates.jsonl").read_text().splitlines()
    lines[9] = lines[9][:50]
    (s1 / "updates.jsonl").write_text("\n".join(lines) + "\n")
    (home / "sessions" / bb.GROUP / bb.S2 / "summary.json").write_text("{'info': none")
    (s1 / "compaction_checkpoints" / f"{bb.CHECKPOINT}.json").write_text("[1, 2]")
    data = json.loads(json.dumps(cb.CONTRACT))
    sid, seq, role, _message, created = data["messages"][2]
    data["messages"][2] = (sid, seq, role, '{"role": "tool", "content": [', created)
    cb.write_db(tmp / "cli-bad" / "grok.db", data)
    (tmp / "cli-notdb").mkdir()
    (tmp / "cli-notdb" / "grok.db").write_text("this is not a database\n" * 20)
    (tmp / "cli-other").mkdir()
    sqlite3.connect(tmp / "cli-other" / "grok.db").execute("create table prompts (x)").connection.close()
    return dict(build=home, cli=tmp / "cli-bad", notdb=tmp / "cli-notdb", other=tmp / "cli-other")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Every Grok Build sample and every bad-input store, both adapters, in one run (one
    warehouse publish keeps the suite fast); each test counts over its own files."""
    tmp = tmp_path_factory.mktemp("grok-mixed")
    present = {n: r for n, (r, _w) in SAMPLES.items() if r.exists()}
    before = {n: tree_fingerprint(r) for n, r in present.items()}
    bad = build_bad(tmp)
    targets = [(grok_build, grok_build.resolve_root(r)) for r in [*present.values(), bad["build"]]]
    targets += [(grok_cli, grok_cli.resolve_root(bad[k])) for k in ("cli", "notdb", "other")]
    db = tmp / "w.duckdb"
    summary = ingest(Layout(db), targets)
    files = {n: sorted(str(f.path) for f in grok_build.discover(grok_build.resolve_root(r))) for n, r in present.items()}
    after = {n: tree_fingerprint(r) for n, r in present.items()}
    return db, files, summary, before == after, bad


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_build_sample_loads_with_exact_counts(mixed, name, tmp_path):
    root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    _db, _files, _summary, untouched, _bad = mixed
    assert untouched, "a source store changed"
    assert sample_counts(*sample_alone(tmp_path, grok_build, root)) == want


def test_jazzy_sample_chat_history_lane(mixed):
    if not JAZZY.exists():
        pytest.skip("sample not present")
    db = mixed[0]
    # the nested subagent folder is a child session of the folder holding it
    assert rows(db, "select session_id, parent_session_id, title, cwd, git_branch, model from sessions "
                    "where session_id in ('grok', 'subagent') order by 1") == [
        ("grok", None, "Read hello.py and summarize what it prints", "/tmp/as-agent-lab/grok/project", "main",
         "grok-4.5"),
        ("subagent", "grok", "Count the Python files under the project root", "/tmp/as-agent-lab/grok/project",
         "main", "grok-4.5")]
    assert rows(db, "select harness_kind, is_meta from messages where session_id = 'grok' and role = 'user' "
                    "and kind = 'prompt' order by line_no") == [
        ("environment_context", True), (None, False), (None, False)]
    assert rows(db, "select block_type, media_type from stg_blocks where session_id = 'grok' "
                    "and block_type in ('image', 'server_tool_use', 'thinking') order by line_no") == [
        ("thinking", None), ("server_tool_use", None), ("thinking", None), ("image", "image/png")]


def test_portable_resume_chunks_and_checkpoints(mixed):
    if not PR.exists():
        pytest.skip("samples not present")
    db, files = mixed[0], mixed[1]
    got = rows(db, "select kind, role, text, harness_kind from stg_records where list_contains(?, source_file) "
                   "and record_type <> 'summary' order by line_no", [files["pr-04"]])
    assert got == [("thinking", "assistant", None, None), ("prompt", "user", "encrypted hidden", "meta"),
                   ("prompt", "user", "Grok prompt", None), ("response", "assistant", "Grok answer", None)]
    got = rows(db, "select record_type, kind, \"timestamp\"::varchar from stg_records where list_contains(?, source_file) "
                   "and kind in ('compact_boundary', 'compaction_checkpoint') order by file_id, line_no", [files["pr-08"]])
    assert got == [("compaction_checkpoint", "compact_boundary", "1970-01-01 00:00:03"),
                   ("compaction_checkpoint", "compact_boundary", "1970-01-01 00:00:06"),
                   ("compaction_checkpoint", "compaction_checkpoint", "1970-01-01 00:00:03"),
                   ("compaction_checkpoint", "compaction_checkpoint", "1970-01-01 00:00:06")]


def test_bad_build_files_are_quarantined_alone(mixed):
    db, _files, _summary, _untouched, bad = mixed
    prefix = f"{bad['build']}/%"
    got = sorted(rows(db, "select reason, line_no, source_file like '%summary.json' from quarantine "
                          "where source_file like ?", [prefix]))
    assert got == [("invalid_json", 1, True), ("invalid_json", 10, False), ("not_object", 1, False)]
    # the stream still loads around the torn line: 24 lines, one of them torn
    assert scalar(db, "select count(*) from stg_records where source_file like ? and source_file like '%updates.jsonl'",
                  [prefix]) == 23


def test_bad_cli_databases_are_quarantined(mixed):
    db, _files, _summary, _untouched, bad = mixed
    got = rows(db, "select reason, raw_text from quarantine where source_file = ?", [str(bad["cli"] / "grok.db")])
    assert len(got) == 1 and got[0][0] == "malformed_row"
    assert f"messages row {cb.S1}#3: column message_json" in got[0][1]
    # 13 message rows but the bad one, + the compaction summary (a system message)
    assert scalar(db, "select count(*) from messages where source_file = ?", [str(bad["cli"] / "grok.db")]) == 13
    for key, text in (("notdb", "not a database"), ("other", "not a grok-cli database")):
        (reason, error), = rows(db, "select reason, error from quarantine where source_file = ?",
                                [str(bad[key] / "grok.db")])
        assert reason == "unreadable_container" and text in error


@pytest.fixture(scope="module")
def contracts(tmp_path_factory):
    db = tmp_path_factory.mktemp("grok-contracts") / "w.duckdb"
    s = ingest(Layout(db), [(grok_build, grok_build.resolve_root(BUILD)), (grok_cli, grok_cli.resolve_root(CLI))])
    return db, s


def test_build_contract_sessions(contracts):
    db, s = contracts
    # summary + 24 updates + 1 checkpoint; subagent summary + 5 chat lines; grok.db: 23 rows
    assert (s.files_scanned, s.records_added, s.quarantined) == (6, 55, 0)
    assert rows(db, "select session_id, parent_session_id, title, cwd, git_branch, model, message_count, "
                    "started_at::varchar from sessions where source = 'grok_build' order by started_at") == [
        (bb.S1, None, "Add a --units flag to the CLI", bb.CWD, "feature/units", "grok-4.5", 13, "2026-09-02 16:00:00"),
        (bb.S2, bb.S1, "Find the argument parser", bb.CWD, "feature/units", "grok-code-fast-1", 5,
         "2026-09-02 16:00:20")]


def test_build_contract_chunks_become_messages(contracts):
    db, _s = contracts
    got = rows(db, "select kind, text from messages where session_id = ? and kind in ('prompt', 'response') "
                   "order by line_no", [bb.S1])
    assert got == [("prompt", "Add a --units flag to the weather CLI."),
                   ("response", "I'll read the CLI first."),
                   ("response", "The test fails until the flag exists; adding it."),   # a retry line in between
                   ("response", "Done: `--units metric|imperial` is wired through."),
                   ("prompt", "Thanks!"),
                   ("prompt", "Also document it in the README."),                         # a new prompt index
                   ("response", "README updated.")]
    assert scalar(db, "select text from stg_blocks where session_id = ? and block_type = 'thinking'", [bb.S1]) == \
        "Look at cli.py first."
    kinds = dict(rows(db, "select kind, count(*) from stg_records where session_id = ? and record_type <> 'summary' "
                          "group by 1", [bb.S1]))
    assert kinds == {"prompt": 3, "chunk": 3, "thinking": 1, "response": 4, "tool_use": 3, "tool_progress": 1,
                     "tool_result": 2, "plan": 1, "hook_execution": 1, "retry_state": 1, "metadata": 1,
                     "compact_boundary": 1, "rewind": 1, "unknown": 1, "compaction_checkpoint": 1}
    # the stream without _meta is dated by the envelope's Unix seconds
    assert scalar(db, "select \"timestamp\"::varchar from messages where text = 'README updated.'") == \
        "2026-09-02 16:01:20"


def test_build_contract_tool_calls(contracts):
    db, _s = contracts
    got = rows(db, "select session_id, call_id, tool_name, is_error, exit_code, left(output_text, 20) "
                   "from tool_calls where source = 'grok_build' order by session_id, call_id")
    assert got == [
        (bb.S1, "call-edit-1", "edit", False, 0, "[diff: /home/demo/we"),   # call and result in one update
        (bb.S1, "call-read-1", "read", False, 0, "def main():\n    fore"),
        (bb.S1, "call-test-1", "execute", True, 1, "F.\n1 failed, 1 passe"),
        (bb.S2, "call-sub-1", "grep", False, 0, "weather/cli.py:3:imp")]


def test_cli_contract_sessions_and_messages(contracts):
    db, _s = contracts
    assert rows(db, "select session_id, title, cwd, model, message_count, started_at::varchar from sessions "
                    "where source = 'grok_cli' order by started_at") == [
        (cb.S1, "Add retries to the forecast client", f"{cb.CWD}/weather", "grok-code-fast-1", 10,
         "2026-08-11 16:00:00"),
        (cb.S2, "What does `retry` do with a 404?", cb.CWD, "grok-4-1-fast-reasoning", 4, "2026-08-11 16:04:00.88")]
    kinds = dict(rows(db, "select kind, count(*) from stg_records where source = 'grok_cli' group by 1"))
    assert kinds == {"metadata": 2, "prompt": 3, "tool_use": 3, "tool_result": 3, "response": 2, "thinking": 1,
                     "system": 1, "tool_status": 3, "token_count": 4, "compact_boundary": 1}
    assert rows(db, "select role, is_compact_summary, left(text, 7) from messages where kind = 'compact_boundary'") == [
        ("system", True, "## Goal")]
    assert rows(db, "select sum(input_tokens), sum(output_tokens) from stg_records where source = 'grok_cli' "
                    "and kind = 'token_count'") == [(6300, 322)]
    calls = rows(db, "select call_id, tool_name, input ->> 'command', is_error, left(output_text, 20) from tool_calls "
                     "where source = 'grok_cli' order by call_id")
    assert calls == [("call_bash_1", "bash", "pytest -q tests/test_client.py", True, "1 failed: test_retry"),
                     ("call_edit_1", "edit_file", None, False, "Edited client.py"),
                     ("call_read_1", "read_file", None, False, "def fetch(city):\n   ")]
    assert rows(db, "select block_type, media_type, data_chars from stg_blocks where source = 'grok_cli' "
                    "and block_type in ('image', 'thinking') order by block_type, line_no") == [
        ("image", "image/png", 34), ("thinking", None, None), ("thinking", None, None)]


@pytest.fixture(scope="module")
def evolving(tmp_path_factory):
    """Both stores change between two runs: Grok Build streams one more chunk of its last
    answer; grok-cli (a live WAL database, commits not checkpointed) adds a message."""
    tmp = tmp_path_factory.mktemp("grok-evolving")
    home = bb.write_store(tmp / "grok")
    con = cb.write_db(home / "grok.db", wal=True, keep_open=True)
    db = tmp / "w.duckdb"
    targets = [(grok_build, grok_build.resolve_root(home)), (grok_cli, grok_cli.resolve_root(home))]
    try:
        assert (home / "grok.db-wal").stat().st_size > 0
        before = tree_fingerprint(home)
        first = ingest(Layout(db), targets)
        untouched = tree_fingerprint(home) == before
        updates = home / "sessions" / bb.GROUP / bb.S1 / "updates.jsonl"
        with open(updates, "a") as fh:
            fh.write(json.dumps(bb.update(99, bb.chunk("agent_message_chunk", " Also the CLI help."), seconds=81,
                                          method="_x.ai/session/update", meta=False)) + "\n")
        # as grok-cli writes a message: stamped now (after every row), its session's update time moved
        con.execute("insert into messages values (?, 10, 'user', ?, ?)",
                    (cb.S1, json.dumps({"role": "user", "content": "And a jitter?"}), cb.at(400)))
        con.execute("update sessions set updated_at = ? where id = ?", (cb.at(400), cb.S1))
        con.commit()
        second = ingest(Layout(db), targets)
    finally:
        con.close()
    return db, first, second, untouched


def test_live_stores_load_from_their_first_changed_line(evolving):
    db, first, second, untouched = evolving
    assert untouched
    assert (first.files_scanned, first.quarantined) == (6, 0)
    # updates.jsonl from the last answer's first chunk (the run's text it carries grew) and the
    # new chunk; grok.db the new message and its session's row, which moved after it: the rows
    # are in time, each session's after its last message (adapters/db_order.py). With every
    # session after all the rows, as before, the 3 tool calls, 4 usage events, 1 compaction
    # and 2 sessions loaded again too; with the sessions first, all 24 lines
    assert (second.files_changed, second.records_added) == (2, 2 + 2)
    # the chunk continues the last answer: one message grows, none is added
    assert rows(db, "select text from messages where session_id = ? order by line_no desc limit 1", [bb.S1]) == [
        ("README updated. Also the CLI help.",)]
    assert scalar(db, "select count(*) from messages where session_id = ?", [bb.S1]) == 13
    assert scalar(db, "select text from messages where session_id = ? order by \"timestamp\" desc limit 1", [cb.S1]) == \
        "And a jitter?"


def test_each_product_reads_only_its_own_files(tmp_path):
    home = tmp_path / ".grok"
    shutil.copytree(BUILD, home)
    shutil.copy(CLI / "grok.db", home / "grok.db")
    (home / "user-settings.json").write_text("{}")
    (home / "delegations" / "p1").mkdir(parents=True)
    build_files = {sf.path.name for sf in grok_build.discover(grok_build.resolve_root(home))}
    assert build_files == {"summary.json", "updates.jsonl", "chat_history.jsonl", f"{bb.CHECKPOINT}.json"}
    assert [sf.path for sf in grok_cli.discover(grok_cli.resolve_root(home))] == [home / "grok.db"]
    only_cli = tmp_path / "cli-only"
    only_cli.mkdir()
    shutil.copy(CLI / "grok.db", only_cli / "grok.db")
    with pytest.raises(RootError):
        grok_build.resolve_root(only_cli)
    with pytest.raises(RootError):
        grok_cli.resolve_root(BUILD)


def test_default_roots_and_overrides(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    assert grok_build.default_roots({}, home) == [home / ".grok"]
    assert grok_cli.default_roots({}, home) == [home / ".grok"]
    shutil.copytree(BUILD, home / ".grok")
    shutil.copy(CLI / "grok.db", home / ".grok" / "grok.db")
    assert [r for _a, r in default_targets(grok_build)] == [home / ".grok" / "sessions"]
    assert [r for _a, r in default_targets(grok_cli)] == [home / ".grok"]
    alt = tmp_path / "grok-home"
    shutil.copytree(BUILD, alt)
    monkeypatch.setenv("GROK_HOME", str(alt))
    assert [r for _a, r in default_targets(grok_build)] == [alt / "sessions", home / ".grok" / "sessions"]
    assert [r for _a, r in default_targets(grok_cli)] == [home / ".grok"]     # grok-cli has no override


def test_resolve_root_accepts_each_level(tmp_path):
    sessions = BUILD / "sessions"
    group = sessions / bb.GROUP
    for root, want in ((BUILD, sessions), (sessions, sessions), (group, group), (group / bb.S1, group / bb.S1)):
        assert grok_build.resolve_root(root) == want
    updates = group / bb.S1 / "updates.jsonl"
    assert grok_build.resolve_root(updates) == updates
    assert [(sf.session_hint, sf.container) for sf in grok_build.discover(updates)] == [(bb.S1, "json")]
    assert grok_cli.resolve_root(CLI / "grok.db") == CLI / "grok.db"
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing"):
        for adapter in (grok_build, grok_cli):
            with pytest.raises(RootError):
                adapter.resolve_root(bad)
