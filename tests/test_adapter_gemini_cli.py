"""Gemini CLI stores (JSONL op-logs and legacy whole-document sessions) ingest completely,
with rewritten messages, rewinds and checkpoints replayed as Gemini CLI replays them."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import PEER, REPO
from convarch.adapters import gemini_cli
from convarch.adapters.base import RootError
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import ingest_samples, rows, sample_alone, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "gemini_cli" / "contract"
CHATS = CONTRACT / "tmp" / "weather-app" / "chats"
MAIN = CHATS / "session-2026-03-10T09-15-5d1c2b3a.jsonl"
MAIN_ID = "5d1c2b3a-7f0e-4c55-9a41-2b8e6d0c1f37"
SUB_ID = "c0a8e4f1-3b6d-4e2a-8f17-6d9b0a5c2e48"
LEGACY_ID = "9e8f7a6b-2c1d-4e0f-8a9b-7c6d5e4f3a2b"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "gemini"
PR = PEER / "portable-resume" / "gemini"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(gemini_cli, gemini_cli.resolve_root(root))])


# Counts read off the files by hand. records = physical lines of a .jsonl (blank lines aside),
# or 1 header + one per messages[]/history[] entry of a .json; messages = message lines whose id
# is not written again later (the last version counts), of type user/gemini/model/info/error/
# warning; tool_calls = distinct toolCalls[].id; quarantined = lines that are not JSON objects.
SAMPLES = {
    # 3 files: the main op-log, 20 lines (1 header, 13 message lines of which 1 is superseded,
    # 5 $set, 1 rewind; 4 calls); the subagent, 4 lines (3 messages, 1 call); the legacy .json,
    # 1 header + 3 messages (1 call)
    "contract": (CONTRACT, dict(files=3, sessions=3, records=28, messages=18, tool_calls=6, quarantined=0)),
    # legacy .json: header + m1 user + m2 gemini
    "jazzyalex-small": (JAZZY / "small.json", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # header + 7 entries (user, gemini x2 with one call each, info, model, user, model)
    "jazzyalex-large": (JAZZY / "large.json", dict(files=1, sessions=1, records=8, messages=7, tool_calls=2, quarantined=0)),
    # hand-made drift: history[] of role/parts/ts entries (2) + header
    "jazzyalex-drift": (JAZZY / "schema_drift.json", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # op-log: header, user, $set, gemini (1 call), gemini
    "jazzyalex-jsonl": (JAZZY / "jsonl_v040.jsonl", dict(files=1, sessions=1, records=5, messages=3, tool_calls=1, quarantined=0)),
    # legacy .json: header + user + gemini with 3 tool calls
    "gnomon": (PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "gemini" / "session-gemini.json",
               dict(files=1, sessions=1, records=3, messages=2, tool_calls=3, quarantined=0)),
    "pr-basic": (PR / "s-gm-01-user-basic", dict(files=1, sessions=1, records=3, messages=2, tool_calls=0, quarantined=0)),
    # main + subagent under chats/<parent id>/
    "pr-subagent": (PR / "s-gm-02-main-and-subagent", dict(files=2, sessions=2, records=6, messages=4, tool_calls=0, quarantined=0)),
    # one line `{not-json`
    "pr-corrupt": (PR / "s-gm-03-corrupt", dict(files=1, sessions=0, records=0, messages=0, tool_calls=0, quarantined=1)),
}


@pytest.fixture(scope="module")
def peer_db(tmp_path_factory):
    """Every sample ingested in one run (one warehouse publish keeps the suite fast); each
    sample's counts are then taken over its own files."""
    present = {n: (gemini_cli, r) for n, (r, _w) in SAMPLES.items() if r.exists()}
    db = tmp_path_factory.mktemp("gemini-peers") / "w.duckdb"
    return (db, *ingest_samples(db, present))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_loads_with_exact_counts(peer_db, name, tmp_path):
    root, want = SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    _db, _files, _summary, untouched, again = peer_db
    assert untouched, "a source store changed"
    assert sample_counts(*sample_alone(tmp_path, gemini_cli, root)) == want
    assert (again.files_changed, again.records_added) == (0, 0)


def test_samples_add_up(peer_db):
    db, _files, summary, _untouched, _again = peer_db
    present = [w for r, w in SAMPLES.values() if r.exists()]
    assert summary.files_scanned == sum(w["files"] for w in present)
    assert summary.records_added == sum(w["records"] for w in present)
    assert summary.quarantined == sum(w["quarantined"] for w in present)


def test_portable_resume_subagent_links_to_its_parent(tmp_path):
    if not (PR / "s-gm-02-main-and-subagent").exists():
        pytest.skip("sample not present")
    db, _files = sample_alone(tmp_path, gemini_cli, SAMPLES["pr-subagent"][0])
    got = rows(db, "select session_id, parent_session_id, is_sidechain from stg_records "
                   "where source_file like '%/s-gm-02-%' and line_no = 1 order by session_id")
    assert got == [
        ("a1b2c3d4-e5f6-7890-abcd-ef1234567890", None, False),
        ("bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb", "a1b2c3d4-e5f6-7890-abcd-ef1234567890", True),
    ]


def test_legacy_sample_tool_results_and_thoughts(peer_db):
    if not SAMPLES["gnomon"][0].exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    calls = rows(db, "select call_id, tool_name, is_error, has_result from tool_calls "
                     "where session_id = 'gemini-test-session-1' order by call_id")
    assert calls == [("run_shell_command-001", "run_shell_command", False, True),
                     ("run_shell_command-002", "run_shell_command", True, True),
                     ("write_file-001", "write_file", False, True)]
    blocks = rows(db, "select block_type from stg_blocks where message_id = 'msg-gemini-1' order by block_index")
    assert [b for (b,) in blocks] == ["thinking", "thinking", "text"] + ["tool_use", "tool_result"] * 3
    assert scalar(db, "select output_text from tool_calls where call_id = 'run_shell_command-002'") == \
        "ModuleNotFoundError: No module named 'pytest'"


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("gemini-contract") / "w.duckdb"
    run(db, CONTRACT)
    return db


def test_contract_store_replays_the_op_log(contract_db):
    db = contract_db
    got = rows(db, "select session_id, parent_session_id, title, cwd, model, message_count from sessions order by started_at")
    assert got == [
        (LEGACY_ID, None, "Add a --city flag to the weather CLI", None, "gemini-2.5-pro", 3),
        (MAIN_ID, None, "Fix temperature rounding in the forecast formatter", None, "gemini-2.5-pro", 12),
        (SUB_ID, MAIN_ID, "Find every file that imports formatTemp.", "/home/demo/weather-app", "gemini-2.5-flash", 3),
    ]
    # the read_file call was written twice (running, then with its result): one message
    g1 = "8a2d4f6b-1c3e-4a5b-9d7f-2e4c6a8b0d12"
    versions = rows(db, "select line_no, role, kind, input_tokens from stg_records where message_id = ? order by line_no", [g1])
    assert versions == [(5, None, "superseded", None), (6, "assistant", "tool_use", 8123)]
    assert scalar(db, "select count(*) from stg_blocks where message_id = ? and line_no = 5", [g1]) == 0
    # titles come from the sessions' summaries (metadata text); without one, the first prompt
    assert scalar(db, "select text from stg_records where kind = 'metadata' and text is not null and line_no > 1") == \
        "Fix temperature rounding in the forecast formatter"
    # the session-context injection is not the user's request
    assert rows(db, "select harness_kind from messages where session_id = ? and kind = 'prompt' order by line_no", [MAIN_ID]) == [
        ("environment_context",), (None,), (None,), (None,)]
    # a rejected shell call is an error; the failed test run is not
    assert rows(db, "select call_id, is_error from tool_calls where session_id = ? and tool_name = 'run_shell_command' order by call_id", [MAIN_ID]) == [
        ("run_shell_command-1773134118400-b2", False), ("run_shell_command-1773134124100-c3", True)]
    # the tool response recorded as a user message is a tool result, never a prompt
    assert scalar(db, "select kind from stg_records where message_id = 'e5c7a9b1-2d4f-4e6a-8c0b-3f5d7e9a1c23'") == "tool_result"


def test_contract_byte_offsets_point_at_the_original_lines(contract_db):
    db = contract_db
    data = MAIN.read_bytes()
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    got = rows(db, "select line_no, byte_offset, raw from stg_records where session_id = ? order by line_no", [MAIN_ID])
    assert [(n, off) for n, off, _ in got] == [(i + 1, s) for i, s in enumerate(starts)]
    for _n, off, raw in got:
        end = data.index(b"\n", off)
        assert data[off:end].decode() == raw


def live_chain(db: Path, session_id: str) -> list[str]:
    """The chain a view would derive: the leaf is the last non-superseded message, rewind or
    checkpoint row; walk parent_id up."""
    recs = rows(db, "select line_no, kind, message_id, parent_id from stg_records where session_id = ? "
                    "and (role is not null or kind in ('rewind', 'checkpoint')) order by line_no", [session_id])
    parent = {mid: pid for _n, _k, mid, pid in recs if mid}
    _n, kind, mid, pid = recs[-1]
    leaf = mid if kind not in ("rewind", "checkpoint") else pid
    chain = []
    while leaf:
        chain.append(leaf)
        leaf = parent.get(leaf)
    return chain[::-1]


def on_live_path(db: Path, session_id: str) -> set[str]:
    return {m for (m,) in rows(db, "select message_id from messages join live_path([$s]) using (file_id, line_no) "
                                   "where on_path and message_id is not null", {"s": session_id})}


def test_rewind_leaves_the_rewound_messages_off_the_chain(contract_db):
    db = contract_db
    rewind = rows(db, "select line_no, message_id, parent_id, role from stg_records where kind = 'rewind'")
    assert rewind == [(14, None, "9c1e3a5b-7d9f-4b1c-8e3a-6f8b0c2e4a45", None)]
    chain = live_chain(db, MAIN_ID)
    rewound = {"2d4f6a8c-0e2a-4c6e-b4f8-7a9c1e3f5b56", "6f8b0d2e-4a6c-4e8a-c2e4-8b0d2f4a6c67"}
    assert not rewound & set(chain)
    assert len(chain) == 10 and chain[0] == "b7e1f0c2-5a3d-4c8e-9f21-0d6a4b8c3e10"
    assert chain[-1] == "5e7a9c1e-3f5b-4d7f-a9c1-2f4b6d8f0b01"
    # the rewound messages are still messages (they were shown), on a dead branch
    assert scalar(db, "select count(*) from messages where message_id in (select unnest(?))", [sorted(rewound)]) == 2
    # and the live_path macro the handoff and `show` read finds the same path
    assert on_live_path(db, MAIN_ID) == set(chain)


def gemini_store(tmp_path: Path, lines: list, name: str = "session-2026-05-01T10-00-aaaa1111.jsonl") -> Path:
    home = tmp_path / "store" / ".gemini"
    chats = home / "tmp" / "demo-project" / "chats"
    chats.mkdir(parents=True)
    body = b"".join((ln if isinstance(ln, bytes) else json.dumps(ln).encode()) + b"\n" for ln in lines)
    (chats / name).write_bytes(body)
    return home


HEADER = {"sessionId": "aaaa1111-0000-4000-8000-000000000001", "projectHash": "f" * 64,
          "startTime": "2026-05-01T10:00:00.000Z", "lastUpdated": "2026-05-01T10:00:00.000Z", "kind": "main"}


def msg(mid: str, typ: str, text: str, second: int, **extra) -> dict:
    return {"id": mid, "timestamp": f"2026-05-01T10:00:{second:02d}.000Z", "type": typ, "content": [{"text": text}], **extra}


def test_checkpoint_replaces_the_message_list(tmp_path):
    home = gemini_store(tmp_path, [
        HEADER,
        msg("u1", "user", "first question", 1),
        msg("g1", "gemini", "first answer", 2, model="gemini-2.5-pro"),
        msg("u2", "user", "second question", 3),
        msg("g2", "gemini", "second answer", 4, model="gemini-2.5-pro"),
        {"$set": {"messages": [msg("s1", "user", "<state_snapshot>summary</state_snapshot>", 5),
                               msg("u2", "user", "second question", 3),
                               msg("g2", "gemini", "second answer", 4)],
                  "lastUpdated": "2026-05-01T10:00:05.000Z"}},
        msg("u3", "user", "third question", 6),
    ])
    db = tmp_path / "w.duckdb"
    run(db, home)
    cp = rows(db, "select kind, role, message_id, parent_id from stg_records where record_type = '$set'")
    assert cp == [("checkpoint", None, None, "g2")]
    assert scalar(db, "select parent_id from stg_records where message_id = 'u3'") == "g2"
    assert scalar(db, "select count(*) from messages") == 5
    assert live_chain(db, HEADER["sessionId"]) == ["u1", "g1", "u2", "g2", "u3"]


def test_growing_file_is_replayed_and_rewrites_supersede_across_runs(tmp_path):
    call = {"id": "c1", "name": "read_file", "args": {"absolute_path": "/home/demo/a.txt"}, "status": "executing",
            "timestamp": "2026-05-01T10:00:02.500Z"}
    first = [HEADER, msg("u1", "user", "read a.txt", 1), msg("g1", "gemini", "", 2, toolCalls=[call])]
    home = gemini_store(tmp_path, first)
    db = tmp_path / "w.duckdb"
    run(db, home)
    assert scalar(db, "select count(*) from tool_calls where has_result") == 0
    done = dict(call, status="success", result=[{"functionResponse": {"id": "c1", "name": "read_file",
                                                                        "response": {"output": "hello"}}}])
    path = next((home / "tmp").rglob("*.jsonl"))
    with open(path, "ab") as fh:
        for r in (msg("g1", "gemini", "", 2, toolCalls=[done], tokens={"input": 10, "output": 2, "cached": 0, "total": 12}),
                  {"$set": {"lastUpdated": "2026-05-01T10:00:03.000Z"}},
                  msg("g2", "gemini", "a.txt says hello", 4)):
            fh.write(json.dumps(r).encode() + b"\n")
    again = run(db, home)
    # the replay finds g1's first line superseded: that line and the new ones load, the
    # header and u1 stay as they were loaded
    assert again.records_added == 4
    assert scalar(db, "select count(*) from stg_records") == 6
    assert rows(db, "select line_no, file_epoch from stg_records order by line_no") == [
        (1, 1), (2, 1), (3, 2), (4, 2), (5, 2), (6, 2)]
    assert rows(db, "select line_no, kind from stg_records where message_id = 'g1' order by line_no") == [
        (3, "superseded"), (4, "tool_use")]
    assert scalar(db, "select count(*) from messages") == 3
    assert rows(db, "select output_text, has_result from tool_calls") == [("hello", True)]


def test_bad_lines_are_quarantined_and_the_rest_loads(tmp_path):
    home = gemini_store(tmp_path, [
        HEADER,
        msg("u1", "user", "hello", 1),
        b'{"id": "broken", "type": "gemini", "content": [{"te',
        b'["an", "array"]',
        b'{"id": "latin1", "type": "user", "content": "caf\xe9"}',
        b"",
        msg("g1", "gemini", "hi there", 2),
        {"what": "a record of a kind nobody knows"},
        # JSON extensions DuckDB reads (as it does for every source): NaN, a trailing comma
        b'{"id": "g2", "type": "gemini", "content": "tokens unknown", "tokens": {"input": NaN},}',
    ])
    path = next((home / "tmp").rglob("*.jsonl"))
    path.write_bytes(path.read_bytes() + b'{"id": "g3", "type": "gem')  # truncated last line
    db = tmp_path / "w.duckdb"
    summary = run(db, home)
    reasons = rows(db, "select line_no, reason from quarantine order by line_no")
    assert reasons == [(3, "invalid_json"), (4, "not_object"), (5, "invalid_utf8"), (10, "invalid_json")]
    assert summary.records_added == 5
    assert rows(db, "select line_no, kind, session_id from stg_records order by line_no") == [
        (1, "metadata", HEADER["sessionId"]), (2, "prompt", HEADER["sessionId"]),
        (7, "response", HEADER["sessionId"]), (8, "unknown", HEADER["sessionId"]),
        (9, "response", HEADER["sessionId"])]
    assert scalar(db, "select parent_id from stg_records where message_id = 'g1'") == "u1"
    # the agent finishes the last line: the file is replayed and the line loads
    path.write_bytes(path.read_bytes() + b'ini", "content": "done"}\n')
    run(db, home)
    assert rows(db, "select line_no from quarantine order by line_no") == [(3,), (4,), (5,)]
    assert scalar(db, "select parent_id from stg_records where message_id = 'g3'") == "g1"


def test_unreadable_legacy_document_is_quarantined_once(tmp_path):
    home = gemini_store(tmp_path, [], name="session-2026-05-01T10-00-bbbb2222.json")
    path = next((home / "tmp").rglob("*.json"))
    path.write_text('{\n  "sessionId": "bbbb2222",\n  "messages": [\n    {"id": "m1", "type": "us')
    db = tmp_path / "w.duckdb"
    run(db, home)
    got = rows(db, "select reason, error from quarantine")
    assert len(got) == 1 and got[0][0] == "unreadable_container" and "JSONDecodeError" in got[0][1]
    assert scalar(db, "select count(*) from stg_records") == 0


def test_migrated_legacy_file_is_read_once(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(CONTRACT, store)
    db = tmp_path / "w.duckdb"
    run(db, store)  # the legacy .json is loaded
    chats = store / "tmp" / "weather-app" / "chats"
    legacy = chats / "session-2026-02-20T14-02-9e8f7a6b.json"
    doc = json.loads(legacy.read_text())
    with open(legacy.with_suffix(".jsonl"), "w") as fh:  # what resume writes; the .json stays
        header = {k: doc[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated", "summary")}
        for r in [header, *doc["messages"], {"$set": {"sessionId": doc["sessionId"]}},
                  {"id": "resumed-1", "timestamp": "2026-05-01T08:00:00.000Z", "type": "user", "content": "and --country?"}]:
            fh.write(json.dumps(r) + "\n")
    found = sorted(p.path.name for p in gemini_cli.discover(gemini_cli.resolve_root(store)))
    assert "session-2026-02-20T14-02-9e8f7a6b.json" not in found
    assert "session-2026-02-20T14-02-9e8f7a6b.jsonl" in found
    run(db, store)
    # the .json is gone from the scan and its session lives on in the .jsonl: counted once
    assert scalar(db, "select message_count from sessions where session_id = ?", [LEGACY_ID]) == 4
    assert scalar(db, "select count(distinct source_file) from stg_records where session_id = ?", [LEGACY_ID]) == 1


def test_default_roots_and_home_override(tmp_path, monkeypatch, isolated_home):
    assert gemini_cli.default_roots({}, isolated_home) == [isolated_home / ".gemini"]
    other = tmp_path / "alt-home"
    assert gemini_cli.default_roots({"GEMINI_CLI_HOME": str(other)}, isolated_home) == [
        other / ".gemini", isolated_home / ".gemini"]
    shutil.copytree(CONTRACT, other / ".gemini")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(other))
    from convarch.cli.targets import default_targets
    targets = default_targets(gemini_cli)
    assert [t for _a, t in targets] == [other / ".gemini" / "tmp"]
    assert len(list(gemini_cli.discover(targets[0][1]))) == 3


def test_resolve_root_accepts_every_level(tmp_path):
    home = tmp_path / "h"
    shutil.copytree(CONTRACT, home / ".gemini")
    tmp = home / ".gemini" / "tmp"
    assert gemini_cli.resolve_root(home) == tmp
    assert gemini_cli.resolve_root(home / ".gemini") == tmp
    assert gemini_cli.resolve_root(tmp) == tmp
    project = tmp / "weather-app"
    assert gemini_cli.resolve_root(project) == project
    assert len(list(gemini_cli.discover(project))) == 3
    assert len(list(gemini_cli.discover(project / "chats"))) == 3
    one = project / "chats" / MAIN.name
    assert [f.path for f in gemini_cli.discover(gemini_cli.resolve_root(one))] == [one]
    with pytest.raises(RootError):
        gemini_cli.resolve_root(tmp_path / "missing")
    with pytest.raises(RootError):
        gemini_cli.resolve_root(project / ".project_root")


def test_discover_skips_side_files_and_symlinked_folders(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(CONTRACT, store)
    project = store / "tmp" / "weather-app"
    (project / "checkpoint-before-refactor.json").write_text("[]")
    (project / "chats" / "notes.json").write_text("{}")
    elsewhere = tmp_path / "elsewhere" / "chats"
    shutil.copytree(CHATS, elsewhere)
    os.symlink(tmp_path / "elsewhere", store / "tmp" / "linked-project")
    found = sorted(str(f.path.relative_to(store)) for f in gemini_cli.discover(gemini_cli.resolve_root(store)))
    assert found == [
        "tmp/weather-app/chats/5d1c2b3a-7f0e-4c55-9a41-2b8e6d0c1f37/c0a8e4f1-3b6d-4e2a-8f17-6d9b0a5c2e48.jsonl",
        "tmp/weather-app/chats/session-2026-02-20T14-02-9e8f7a6b.json",
        "tmp/weather-app/chats/session-2026-03-10T09-15-5d1c2b3a.jsonl",
    ]


def test_a_long_oplog_is_replayed_in_memory_near_its_size(tmp_path):
    """An op-log is replayed before any line is written, so every line is read twice; holding
    each line's bytes, text and parsed value for the second pass took over four times the
    file. Only each line's span and op are held now. tracemalloc counts the Python objects,
    the file's own bytes included; the lines written are the physical lines, in order."""
    import tracemalloc

    path = tmp_path / "tmp" / "p" / "chats" / "session-2026-03-10T09-15-long.jsonl"
    path.parent.mkdir(parents=True)
    head = {"sessionId": "long", "projectHash": "f" * 64, "startTime": "2026-03-10T09:15:00Z", "kind": "main"}
    lines = [json.dumps(head)]
    for i in range(600):
        lines.append(json.dumps({"id": f"m{i}", "timestamp": "2026-03-10T09:16:00Z",
                                 "type": "user" if i % 2 else "gemini",
                                 "content": [{"text": f"step {i} ünïcode {'x y z ' * 5000}"}]}))
    lines.insert(300, "{torn")
    path.write_text("\n".join(lines) + "\n")
    size = path.stat().st_size
    file = gemini_cli._classify(path, path.parents[3], single=True)
    tracemalloc.start()
    try:
        out = list(gemini_cli.to_lines(path, file))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the lines written (held here by the test) are about the file's size again
    written = sum(len(line) for line in out)
    assert peak - written < 1.5 * size, (peak, written, size)
    assert len(out) == len(lines)
    assert out[300] == b"{torn"
    assert [json.loads(line)["cv"]["offset"] for line in out[299:302:2]] == [
        sum(len(x) + 1 for x in lines[:299]), sum(len(x) + 1 for x in lines[:301])]
