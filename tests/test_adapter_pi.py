"""pi session trees ingest completely and incrementally: every entry kept with its id/parentId,
compaction and branch summaries marked, tool calls linked, v1/v2/v3 files all read, and bad
lines quarantined while the rest loads."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import PEER, REPO
from convarch import connect
from convarch.adapters import pi
from convarch.adapters.base import RootError
from convarch.cli import cli
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.handoff import Options, build
from helpers import ingest_samples, rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "pi" / "contract"
WEATHER = CONTRACT / "sessions" / "--home-demo-weather-app--"
A = "0196a5b0-1c2d-7e3f-8a4b-5c6d7e8f9a01"
B = "0196a5b0-1c2d-7e3f-8a4b-5c6d7e8f9a02"
C = "0196a5b0-1c2d-7e3f-8a4b-5c6d7e8f9a03"
PR = PEER / "portable-resume" / "pi"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "pi"
GNOMON = PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "pi"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(pi, pi.resolve_root(root))])


# Counts read off the files by hand. records = lines that parse as JSON objects; messages =
# `message` entries of any role, `custom_message` entries, and the `compaction` and
# `branch_summary` entries (role 'system'); tool_calls = toolCall parts (an id-less one gets
# one made from its entry); quarantined = lines that are not JSON objects.
SAMPLES = {
    # header + user + assistant
    "pr-01-basic-v3": (PR / "s-pi-01-basic-v3" / "agent", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # header + 7 messages, a branch_summary and a compaction (the abandoned branch is kept)
    "pr-02-branch-compaction": (PR / "s-pi-02-branch-compaction" / "agent", dict(files=1, sessions=1, records=10, messages=9, tool_calls=0, quarantined=0)),
    # header + user, assistant(toolCall), toolResult, bashExecution, custom_message, assistant
    "pr-03-tool-and-custom": (PR / "s-pi-03-tool-and-custom" / "agent", dict(files=1, sessions=1, records=7, messages=6, tool_calls=1, quarantined=0)),
    # line 3 is not JSON: quarantined, the rest loads
    "pr-04-corrupt-interior": (PR / "s-pi-04-corrupt-interior" / "agent", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=1)),
    # a v2 header (same entry shape)
    "pr-05-v2-compat": (PR / "s-pi-05-v2-compat" / "agent", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # header, model_change, thinking_level_change, then user/assistant/compaction twice
    "jazzyalex": (JAZZY, dict(files=1, sessions=1, records=9, messages=6, tool_calls=0, quarantined=0)),
    # a v1-style file: no ids; 2 user, 2 assistant (3 + 1 toolCall parts, none with an id), 2 toolResult
    "gnomon": (GNOMON, dict(files=1, sessions=1, records=7, messages=6, tool_calls=4, quarantined=0)),
}


@pytest.fixture(scope="module")
def peer_db(tmp_path_factory):
    present = {n: (pi, r) for n, (r, _w) in SAMPLES.items() if r.exists()}
    db = tmp_path_factory.mktemp("pi-peers") / "w.duckdb"
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


def test_samples_add_up_and_keep_their_shapes(peer_db):
    db, _files, summary, _untouched, _again = peer_db
    present = [w for r, w in SAMPLES.values() if r.exists()]
    assert summary.records_added == sum(w["records"] for w in present)
    assert summary.quarantined == sum(w["quarantined"] for w in present)
    if not (PR / "s-pi-03-tool-and-custom").exists():
        return
    got = rows(db, "select subtype, role, kind, harness_kind from stg_records "
                   "where session_id = 'cccccccc-cccc-cccc-cccc-cccccccccccc' order by line_no")
    assert got == [("v3", None, "metadata", None), ("user", "user", "prompt", None),
                   ("assistant", "assistant", "tool_use", None), ("toolResult", "user", "tool_result", None),
                   ("bashExecution", "user", "prompt", "shell_escape"),
                   ("synthetic-extension", "user", "prompt", "custom_message"),
                   ("assistant", "assistant", "response", None)]
    # the compaction entry keeps the summary and where the kept history starts
    assert rows(db, "select kind, is_compact_summary, logical_parent_id, text from stg_records "
                    "where record_type = 'compaction' and session_id like 'bbbb%'") == [
        ("compact_boundary", True, "a2000002",
         "User opened with a request; assistant replied; follow-up discussed compaction.")]


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("pi-contract") / "w.duckdb"
    s = run(db, CONTRACT)
    assert (s.files_scanned, s.records_added, s.quarantined) == (3, 30, 0)
    return db


def test_contract_sessions(contract_db):
    got = rows(contract_db, "select session_id, parent_session_id, title, cwd, model, agent_version, message_count, "
                            "started_at::varchar from sessions order by 1")
    assert got == [
        (A, None, "Add a --units flag", "/home/demo/weather-app", "claude-sonnet-4-5", "3", 16, "2026-05-06 09:00:00"),
        # a fork: the header names the file it was forked from
        (B, A, "Try the same change with a config file instead.", "/home/demo/weather-app", "gpt-5", "3", 2,
         "2026-05-06 10:00:00"),
        # v1: the model is only in the header; entries have no ids
        (C, None, "Summarize notes/todo.md", "/home/demo/notes", "claude-sonnet-4-5", "1", 2, "2025-11-02 08:00:00"),
    ]
    assert rows(contract_db, "select count(*), count(message_id) from stg_records where session_id = ?", [C]) == [(4, 0)]


def test_contract_kinds_tools_and_tokens(contract_db):
    db = contract_db
    kinds = dict(rows(db, "select kind, count(*) from stg_records where session_id = ? group by 1", [A]))
    assert kinds == {"metadata": 3, "thinking_level_change": 1, "prompt": 6, "tool_use": 2, "tool_result": 2,
                     "response": 4, "system": 1, "compact_boundary": 1, "label": 1, "custom": 1}
    assert rows(db, "select line_no, harness_kind, text from stg_records where harness_kind is not null order by 1") == [
        (10, "shell_escape", "git status --short"), (20, "custom_message", "Remember to update the README.")]
    assert rows(db, "select call_id, tool_name, input ->> 'command', output_text, is_error, has_result "
                    "from tool_calls order by call_id") == [
        ("toolu_01", "read", None, "def main(city): ...", False, True),
        ("toolu_02", "bash", "pytest -q", "1 failed, 4 passed", True, True),
    ]
    assert rows(db, "select sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_creation_tokens) "
                    "from stg_records where session_id = ?", [A]) == [(8300, 285, 24800, 500)]
    assert rows(db, "select block_type, text, output_text, media_type, data_chars from stg_blocks "
                    "where block_type in ('image', 'thinking', 'shell_command') order by line_no") == [
        ("image", None, None, "image/png", 24),
        ("thinking", "Look at the CLI entry point first.", None, None, None),
        ("shell_command", "git status --short", " M src/cli.py\n", None, None),
    ]
    assert scalar(db, "select \"timestamp\"::varchar from stg_records where message_id = 'a0000004'") == "2026-05-06 09:00:05"


def test_contract_abandoned_branch_is_off_the_live_path(contract_db):
    recs = rows(contract_db, "select message_id, parent_id, record_type from stg_records "
                             "where session_id = ? and record_type <> 'session' order by line_no", [A])
    parent = {m: p for m, p, _t in recs}
    leaf, path = recs[-1][0], []
    while leaf:
        path.append(leaf)
        leaf = parent.get(leaf)
    assert "a0000010" not in path and "a0000011" not in path        # the branch the person left
    assert "a0000012" in path                                       # its summary stands for it
    # the live_path macro the handoff and `show` read finds the same path
    live = rows(contract_db, "select message_id, on_path from stg_records join live_path([$s]) "
                             "using (file_id, line_no) where message_id is not null", {"s": A})
    assert {m for m, on in live if on} == set(path) and len(live) == len(recs)
    assert scalar(contract_db, "select logical_parent_id from stg_records where record_type = 'branch_summary'") == "a0000011"


def pi_store(tmp_path: Path, records: list, name: str = "2026-06-01T08-00-00-000Z_0196b000-0000-7000-8000-000000000001") -> Path:
    agent = tmp_path / "store" / ".pi" / "agent"
    folder = agent / "sessions" / "--home-demo-app--"
    folder.mkdir(parents=True)
    body = b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)
    (folder / f"{name}.jsonl").write_bytes(body)
    return agent


def entry(n: int, parent: int | None, typ: str, **kw) -> dict:
    return {"type": typ, "id": f"e{n:07d}", "parentId": f"e{parent:07d}" if parent else None,
            "timestamp": f"2026-06-01T08:00:{n:02d}.000Z", **kw}


HEADER = {"type": "session", "version": 3, "id": "0196b000-0000-7000-8000-000000000001",
          "timestamp": "2026-06-01T08:00:00.000Z", "cwd": "/home/demo/app"}


def test_appends_load_incrementally_and_a_torn_tail_waits(tmp_path):
    agent = pi_store(tmp_path, [HEADER, entry(1, None, "message", message={"role": "user", "content": "start"})])
    path = next((agent / "sessions").rglob("*.jsonl"))
    db = tmp_path / "w.duckdb"
    assert run(db, agent).records_added == 2
    with open(path, "ab") as fh:                 # pi is mid-write
        fh.write(json.dumps(entry(2, 1, "message", message={"role": "assistant", "content": [
            {"type": "text", "text": "ok"}], "model": "m", "usage": {"input": 5, "output": 1}})).encode() + b"\n")
        fh.write(b'{"type": "message", "id": "e0000003", "parentId": "e0000002", "mess')
    second = run(db, agent)
    assert (second.records_added, second.files_changed) == (1, 1)
    assert rows(db, "select reason from quarantine") == [("truncated_tail",)]
    with open(path, "ab") as fh:
        fh.write(b'age": {"role": "user", "content": "more"}, "timestamp": "2026-06-01T08:00:03.000Z"}\n')
    assert run(db, agent).records_added == 1
    assert scalar(db, "select count(*) from quarantine") == 0
    assert rows(db, "select line_no, message_id, parent_id, kind from stg_records order by line_no") == [
        (1, None, None, "metadata"), (2, "e0000001", None, "prompt"), (3, "e0000002", "e0000001", "response"),
        (4, "e0000003", "e0000002", "prompt")]


def test_migration_rewrite_replaces_the_old_epoch(tmp_path):
    """pi rewrites a v1 file whole when it loads it (adding ids); the new version replaces the old."""
    v1 = [{"type": "session", "id": HEADER["id"], "timestamp": HEADER["timestamp"], "cwd": "/home/demo/app"},
          {"type": "message", "timestamp": "2026-06-01T08:00:01.000Z", "message": {"role": "user", "content": "hi"}},
          {"type": "message", "timestamp": "2026-06-01T08:00:02.000Z", "message": {
              "role": "hookMessage", "customType": "ext", "content": "injected", "display": True}}]
    agent = pi_store(tmp_path, v1)
    path = next((agent / "sessions").rglob("*.jsonl"))
    db = tmp_path / "w.duckdb"
    run(db, agent)
    assert rows(db, "select line_no, harness_kind from stg_records where role = 'user' order by 1") == [
        (2, None), (3, "custom_message")]
    migrated = [dict(HEADER), entry(1, None, "message", message={"role": "user", "content": "hi"}),
                entry(2, 1, "message", message={"role": "custom", "customType": "ext", "content": "injected",
                                                "display": True})]
    path.write_text("".join(json.dumps(r) + "\n" for r in migrated))
    s = run(db, agent)
    assert (s.files_changed, s.records_added) == (1, 3)
    assert rows(db, "select file_epoch, message_id, subtype from stg_records order by line_no") == [
        (2, None, "v3"), (2, "e0000001", "user"), (2, "e0000002", "custom")]


def test_drift_and_bad_lines(tmp_path):
    agent = pi_store(tmp_path, [
        HEADER,
        entry(1, None, "message", message={"role": "user", "content": [{"type": "text", "text": "a"},
                                                                        {"type": "text", "text": "b"}]}),
        b"[1, 2, 3]",
        b'{"type": "message", "id": "broken", ',
        entry(4, 1, "brand_new_entry", payload={"x": 1}),
        entry(5, 4, "message", message={"role": "assistant", "content": [
            {"type": "thinking", "thinking": "only thinking"}], "model": "m"}),
        entry(6, 5, "message", message={"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False,
                                        "content": [{"type": "image", "data": "AAAA", "mimeType": "image/jpeg"}]}),
        entry(7, 6, "message", message={"role": "assistant", "content": "a bare string reply",
                                        "timestamp": 1780300807000}),
        entry(8, 7, "message", message={"role": "futureRole", "content": "?"}),
    ])
    db = tmp_path / "w.duckdb"
    run(db, agent)
    assert rows(db, "select line_no, reason from quarantine order by 1") == [(3, "not_object"), (4, "invalid_json")]
    assert rows(db, "select line_no, role, kind, text from stg_records where line_no > 1 order by 1") == [
        (2, "user", "prompt", "a\nb"),
        (5, None, "unknown", None),
        (6, "assistant", "thinking", None),
        (7, "user", "tool_result", None),
        (8, "assistant", "response", "a bare string reply"),
        (9, None, "unknown", None),
    ]
    assert rows(db, "select block_type, call_id, media_type, data_chars from stg_blocks where line_no = 7 "
                    "order by block_index") == [("tool_result", "c1", None, None), ("image", None, "image/jpeg", 4)]


def test_default_roots_and_overrides(tmp_path, monkeypatch, isolated_home):
    home = isolated_home
    assert pi.default_roots({}, home) == [home / ".pi" / "agent"]
    assert pi.default_roots({"PI_CODING_AGENT_DIR": "~/custom-pi"}, home) == [home / "custom-pi", home / ".pi" / "agent"]
    assert pi.default_roots({"PI_CODING_AGENT_DIR": "~"}, home)[0] == home
    assert default_targets(pi) == []                                # nothing there yet
    shutil.copytree(CONTRACT, home / ".pi" / "agent")
    assert [r for _a, r in default_targets(pi)] == [home / ".pi" / "agent" / "sessions"]
    shutil.copytree(CONTRACT, tmp_path / "alt")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "alt"))
    assert [r for _a, r in default_targets(pi)] == [tmp_path / "alt" / "sessions", home / ".pi" / "agent" / "sessions"]


def test_resolve_root_and_discover(tmp_path):
    store = tmp_path / "agent"
    shutil.copytree(CONTRACT, store)
    sessions = store / "sessions"
    assert pi.resolve_root(store) == sessions
    assert pi.resolve_root(sessions) == sessions
    folder = sessions / "--home-demo-weather-app--"
    assert pi.resolve_root(folder) == folder
    one = folder / f"2026-05-06T09-00-00-000Z_{A}.jsonl"
    assert pi.resolve_root(one) == one
    assert [(f.path.name, f.session_hint) for f in pi.discover(one)] == [(one.name, A)]
    assert [f.session_hint for f in pi.discover(sessions)] == [C, A, B]
    (folder / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    for bad in (tmp_path / "missing", folder / "notes.txt", tmp_path / "empty"):
        with pytest.raises(RootError):
            pi.resolve_root(bad)
    # a file not named <time>_<uuid> is its own session
    odd = folder / "scratch.jsonl"
    odd.write_text(json.dumps(HEADER) + "\n")
    assert [f.session_hint for f in pi.discover(odd)] == ["scratch"]


def test_symlinked_session_is_skipped_with_a_reason(tmp_path):
    folder = tmp_path / "agent" / "sessions" / "--x--"
    folder.mkdir(parents=True)
    target = WEATHER / f"2026-05-06T09-00-00-000Z_{A}.jsonl"
    os.symlink(target, folder / target.name)
    s = run(tmp_path / "w.duckdb", tmp_path / "agent")
    assert s.records_added == 0 and dict(s.skipped)[str(folder / target.name)].startswith("not a regular file")


def test_a_branch_left_in_the_tree_is_not_handed_on_nor_shown(tmp_path):
    """pi keeps every branch in the file and replays the parentId walk from the last entry. The
    handoff and `show` follow that path: a failing command on a branch the person left (pi's
    /tree) is not handed on as an unresolved error, and its messages are not shown."""
    def call(n, parent, cid, command):
        return entry(n, parent, "message", message={"role": "assistant", "model": "m", "content": [
            {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": command}}]})

    def result(n, parent, cid, text, error=False):
        return entry(n, parent, "message", message={"role": "toolResult", "toolCallId": cid, "toolName": "bash",
                                                    "content": [{"type": "text", "text": text}], "isError": error})

    agent = pi_store(tmp_path, [
        HEADER,
        entry(1, None, "message", message={"role": "user", "content": "tidy the build"}),
        entry(2, 1, "message", message={"role": "user", "content": "delete the cache folder by force"}),
        call(3, 2, "c1", "rm -rf /var/cache/app"),
        result(4, 3, "c1", "rm: permission denied", error=True),
        entry(5, 1, "branch_summary", fromId="e0000004", summary="Tried deleting the cache; it failed."),
        entry(6, 5, "message", message={"role": "user", "content": "just clean the build folder"}),
        call(7, 6, "c2", "make clean"),
        result(8, 7, "c2", "cleaned"),
        entry(9, 8, "message", message={"role": "assistant", "model": "m",
                                        "content": [{"type": "text", "text": "Build folder cleaned."}]}),
    ])
    db = tmp_path / "w.duckdb"
    run(db, agent)
    con = connect(db)
    try:
        md = build(con, HEADER["id"], fmt="markdown", options=Options())
    finally:
        con.close()
    assert "rm -rf" not in md and "permission denied" not in md and "by force" not in md
    assert "make clean (1 run, last exit 0" in md
    assert "Latest request (#3):\n> just clean the build folder" in md
    assert "W_OTHER_BRANCH_CALLS: 1 tool call(s)" in md
    shown = CliRunner().invoke(cli, ["--db", str(db), "show", HEADER["id"], "--json"])
    assert shown.exit_code == 0, shown.output
    texts = [m["text"] for m in json.loads(shown.output)["messages"]]
    assert "delete the cache folder by force" not in texts and "just clean the build folder" in texts
    assert texts[0] == "tidy the build"


def test_a_path_that_breaks_off_or_loops_leaves_every_entry_counted(tmp_path):
    """A walk that reaches an id no entry has (a result hung from its call's id, as one
    hand-made sample does) cannot tell where the conversation runs, so no entry is set aside;
    parent links that loop end the walk instead of running it forever."""
    broken = pi_store(tmp_path / "broken", [
        HEADER,
        entry(1, None, "message", message={"role": "user", "content": "list files"}),
        entry(2, 1, "message", message={"role": "assistant", "model": "m", "content": [
            {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {"command": "ls"}}]}),
        {**entry(3, None, "message", message={"role": "toolResult", "toolCallId": "call-1", "toolName": "bash",
                                              "content": [{"type": "text", "text": "a.txt"}]}), "parentId": "call-1"},
    ])
    db = tmp_path / "broken.duckdb"
    run(db, broken)
    assert rows(db, "select count(*) from live_path([$s])", {"s": HEADER["id"]}) == [(0,)]
    looped = pi_store(tmp_path / "looped", [
        HEADER,
        entry(1, 2, "message", message={"role": "user", "content": "one"}),
        entry(2, 1, "message", message={"role": "user", "content": "two"}),
        entry(3, 2, "message", message={"role": "user", "content": "three"}),
        entry(4, 1, "message", message={"role": "user", "content": "a branch left"}),
        entry(5, 3, "message", message={"role": "user", "content": "four"}),
    ])
    db = tmp_path / "looped.duckdb"
    run(db, looped)
    assert rows(db, "select message_id, on_path from stg_records join live_path([$s]) using (file_id, line_no) "
                    "where message_id is not null order by line_no", {"s": HEADER["id"]}) == [
        ("e0000001", True), ("e0000002", True), ("e0000003", True), ("e0000004", False), ("e0000005", True)]
