"""Qwen Code stores ingest completely and incrementally, with the uuid tree, fragments of one
message, tool calls and harness input kept apart from what the person typed."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import PEER, REPO
from convarch.adapters import qwen_code
from convarch.adapters.base import RootError
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import ingest_samples, rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "qwen_code" / "contract"
CHATS = CONTRACT / "projects" / "-home-demo-weather-app" / "chats"
SID = "0196a3c1-4e2b-7d10-9f3a-5b6c7d8e9f01"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "qwen"
PR = PEER / "portable-resume" / "qwen" / "s-qwe-01" / "root"


def uid(k: int) -> str:
    return f"0196a3c1-4e2b-7d10-a000-{k:012d}"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(qwen_code, qwen_code.resolve_root(root))])


# Counts read off the files by hand. records = lines that parse as JSON objects; messages =
# records of type user, assistant or tool_result, plus system records that are a compression
# checkpoint, a slash command, or carry a message without a subtype (each physical line counts,
# fragments of one uuid included); tool_calls = distinct functionCall ids per session;
# quarantined = lines that are not JSON objects.
SAMPLES = {
    # 19 lines: 13 user/assistant/tool_result lines (uuid 3 written as two fragments), 2 slash
    # commands and 1 compression are messages (16); telemetry, title and rewind are
    # bookkeeping; chats/archive/ is not read
    "contract": (CONTRACT, dict(files=1, sessions=1, records=19, messages=16, tool_calls=2, quarantined=0)),
    # 6 files: ...01 (6 lines: 5 messages + ui_telemetry), ...02 (1), ...04 (9 lines: 5
    # messages, 2 custom titles, a rewind, an artifact snapshot), ...03 (1), ...05 (two objects
    # glued on one line: quarantined, so no session), system_telemetry (8 lines: assistant,
    # tool_result, 2 slash commands, 4 telemetry); one call id per session that has calls
    "jazzyalex": (JAZZY, dict(files=6, sessions=5, records=25, messages=16, tool_calls=3, quarantined=1)),
    # qwen-one.jsonl (5 lines, all messages; its one functionCall has no id); the archive and
    # the runtime sidecar are not read
    "portable-resume": (PR, dict(files=1, sessions=1, records=5, messages=5, tool_calls=0, quarantined=0)),
}


@pytest.fixture(scope="module")
def peer_db(tmp_path_factory):
    """Every sample ingested in one run; each sample's counts are taken over its own files."""
    present = {n: (qwen_code, r) for n, (r, _w) in SAMPLES.items() if r.exists()}
    db = tmp_path_factory.mktemp("qwen-peers") / "w.duckdb"
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


def test_samples_add_up(peer_db):
    _db, _files, summary, _untouched, _again = peer_db
    present = [w for r, w in SAMPLES.values() if r.exists()]
    assert summary.files_scanned == sum(w["files"] for w in present)
    assert summary.records_added == sum(w["records"] for w in present)
    assert summary.quarantined == sum(w["quarantined"] for w in present)


def test_jazzyalex_glued_objects_and_foreign_session_id(peer_db):
    if not JAZZY.exists():
        pytest.skip("sample not present")
    db = peer_db[0]
    bad = rows(db, "select line_no, reason from quarantine where source_file like '%000000000005.jsonl'")
    assert bad == [(1, "invalid_json")]
    # the record says session ...99; the file is session ...02
    assert scalar(db, "select session_id from stg_records where source_file like '%000000000002.jsonl'") == \
        "019f0000-0000-7000-8000-000000000002"
    # the hook-context part and the notification are not the user's words
    first = rows(db, "select text, harness_kind, is_meta from stg_records where source_file like '%000000000001.jsonl' "
                     "and role = 'user' and kind = 'prompt' order by line_no")
    assert first == [("Inspect the synthetic fixture.", None, False),
                     ("Synthetic background notification.", "notification", False)]


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("qwen-contract") / "w.duckdb"
    run(db, CONTRACT)
    return db


def test_contract_session_facts(contract_db):
    db = contract_db
    got = rows(db, "select session_id, title, cwd, git_branch, model, agent_version, message_count, record_count from sessions")
    assert got == [(SID, "Add --json output to forecast", "/home/demo/weather-app", "feature/json-flag",
                    "qwen3-coder-plus", "0.21.13", 16, 19)]
    # uuid 3 is one message written as two fragments: the reasoning, then the answer and call
    assert rows(db, "select line_no, kind, text, input_tokens from stg_records where message_id = ? order by line_no", [uid(3)]) == [
        (3, "thinking", None, None), (4, "tool_use", "Let me look at the command first.", 11240)]
    assert rows(db, "select call_id, tool_name, is_error, has_result from tool_calls order by call_id") == [
        ("call_3b8d0e15", "run_shell_command", True, True), ("call_7f2a91c4", "read_file", False, True)]


def test_contract_harness_input_is_tagged(contract_db):
    got = rows(contract_db, "select line_no, subtype, text, harness_kind, is_meta from stg_records "
                            "where role = 'user' and kind = 'prompt' order by line_no")
    assert got == [
        (1, None, "Add a --json flag to the forecast command.", None, False),
        (10, "slash_command", "/compress", "slash_command", False),
        (12, "slash_command", "/compress", "command_output", False),
        (13, None, "Also document the flag in README.md.", None, False),
        (16, None, "Document it in docs/cli.md instead.", None, False),
        (18, "notification", "Background task finished: npm run lint (0 problems)", "notification", True),
    ]
    kinds = rows(contract_db, "select line_no, role, kind from stg_records where record_type = 'system' order by line_no")
    assert kinds == [(2, None, "ui_telemetry"), (9, None, "metadata"), (10, "user", "prompt"),
                     (11, "system", "compact_boundary"), (12, "user", "prompt"), (15, None, "rewind")]
    assert scalar(contract_db, "select text from stg_records where subtype = 'custom_title'") == "Add --json output to forecast"


def test_contract_rewind_branch_is_off_the_live_chain(contract_db):
    recs = rows(contract_db, "select line_no, message_id, parent_id from stg_records order by line_no")
    parent = {}
    for _n, mid, pid in recs:
        parent.setdefault(mid, pid)  # the first fragment's parent, as Qwen Code walks it
    leaf, chain = recs[-1][1], []
    while leaf:
        chain.append(leaf)
        leaf = parent.get(leaf)
    assert uid(12) not in chain and uid(13) not in chain
    assert chain[::-1] == [uid(k) for k in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 14, 15, 16, 17, 18)]
    # the live_path macro the handoff and `show` read finds the same path
    sid = scalar(contract_db, "select session_id from stg_records where message_id = ?", [uid(1)])
    live = rows(contract_db, "select message_id, bool_and(on_path) from stg_records join live_path([$s]) "
                             "using (file_id, line_no) where message_id is not null group by 1", {"s": sid})
    assert {m for m, on in live if on} == set(chain)
    assert scalar(contract_db, "select parent_id from stg_records where subtype = 'rewind'") == uid(11)


def qwen_store(tmp_path: Path, records: list, sid: str = "0196b000-0000-7000-8000-000000000001") -> Path:
    home = tmp_path / "store" / ".qwen"
    chats = home / "projects" / "-home-demo-app" / "chats"
    chats.mkdir(parents=True)
    body = b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)
    (chats / f"{sid}.jsonl").write_bytes(body)
    return home


def rec(k: int, parent: int | None, typ: str, **extra) -> dict:
    return {"uuid": f"u{k}", "parentUuid": f"u{parent}" if parent else None, "sessionId": "ignored-id",
            "timestamp": f"2026-05-02T09:00:{k:02d}.000Z", "type": typ, "cwd": "/home/demo/app", "version": "0.22.0",
            **extra}


def text(role: str, t: str) -> dict:
    return {"role": role, "parts": [{"text": t}]}


def test_appends_load_incrementally_and_a_torn_tail_waits(tmp_path):
    home = qwen_store(tmp_path, [
        rec(1, None, "system", subtype="parent_session",
            systemPayload={"parentSessionId": "0196aaaa-0000-7000-8000-000000000009"}),
        rec(2, 1, "user", message=text("user", "start")),
    ])
    path = next((home / "projects").rglob("*.jsonl"))
    db = tmp_path / "w.duckdb"
    assert run(db, home).records_added == 2
    assert scalar(db, "select parent_session_id from sessions") == "0196aaaa-0000-7000-8000-000000000009"
    # the agent is mid-write: the last line has no newline yet
    with open(path, "ab") as fh:
        fh.write(json.dumps(rec(3, 2, "assistant", model="qwen3-coder-plus", message=text("model", "ok"))).encode() + b"\n")
        fh.write(b'{"uuid": "u4", "parentUuid": "u3", "type": "user", "mess')
    second = run(db, home)
    assert (second.records_added, second.files_changed) == (1, 1)
    assert rows(db, "select reason from quarantine") == [("truncated_tail",)]
    with open(path, "ab") as fh:
        fh.write(b'age": {"role": "user", "parts": [{"text": "more"}]}, "timestamp": "2026-05-02T09:00:04Z"}\n')
    third = run(db, home)
    assert third.records_added == 1
    assert scalar(db, "select count(*) from quarantine") == 0
    assert rows(db, "select line_no, message_id, parent_id, kind from stg_records order by line_no") == [
        (1, "u1", None, "metadata"), (2, "u2", "u1", "prompt"), (3, "u3", "u2", "response"), (4, "u4", "u3", "prompt")]


def test_drift_and_bad_lines(tmp_path):
    home = qwen_store(tmp_path, [
        rec(1, None, "user", message={"role": "user", "parts": ["a bare string part", {"text": "and a text part"}]}),
        b'{"uuid": "u2", "type": "assistant", "message": {"role": "model", "parts": [{"te',
        rec(3, 1, "assistant", model="qwen3-coder-plus"),  # no message at all
        rec(4, 3, "system", subtype="brand_new_subtype", systemPayload={"x": 1}),
        rec(5, 4, "reaction", emoji="+1"),
        b'[1, 2, 3]',
        rec(7, 5, "tool_result", message={"role": "user", "parts": [
            {"functionResponse": {"name": "glob", "response": {"output": "a.ts"}}}]},
            toolCallResult={"callId": "call_9", "status": "success"}),
        rec(8, 7, "assistant", message={"role": "model", "parts": [
            {"text": "images attached", "thought": False},
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]}),
    ])
    db = tmp_path / "w.duckdb"
    run(db, home)
    assert rows(db, "select line_no, reason from quarantine order by line_no") == [(2, "invalid_json"), (6, "not_object")]
    assert rows(db, "select line_no, record_type, role, kind, text from stg_records order by line_no") == [
        (1, "user", "user", "prompt", "a bare string part\nand a text part"),
        (3, "assistant", "assistant", "response", None),
        (4, "system", None, "brand_new_subtype", None),
        (5, "reaction", None, "unknown", None),
        (7, "tool_result", "user", "tool_result", None),
        (8, "assistant", "assistant", "response", "images attached"),
    ]
    # a functionResponse without an id is joined through toolCallResult.callId
    assert rows(db, "select block_type, call_id, output_text from stg_blocks where line_no = 7") == [
        ("tool_result", "call_9", "a.ts")]
    assert rows(db, "select block_type, media_type, data_chars from stg_blocks where line_no = 8 order by block_index") == [
        ("text", None, None), ("image", "image/png", 12)]


def test_default_roots_and_overrides(tmp_path, monkeypatch, isolated_home):
    assert qwen_code.default_roots({}, isolated_home) == [isolated_home / ".qwen"]
    env = {"QWEN_RUNTIME_DIR": str(tmp_path / "rt"), "QWEN_HOME": str(tmp_path / "qh")}
    assert qwen_code.default_roots(env, isolated_home) == [tmp_path / "rt", tmp_path / "qh", isolated_home / ".qwen"]
    shutil.copytree(CONTRACT, tmp_path / "rt")
    shutil.copytree(CONTRACT, isolated_home / ".qwen")
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    from convarch.cli.targets import default_targets
    targets = [t for _a, t in default_targets(qwen_code)]
    assert targets == [tmp_path / "rt" / "projects", isolated_home / ".qwen" / "projects"]


def test_resolve_root_and_discover(tmp_path):
    store = tmp_path / ".qwen"
    shutil.copytree(CONTRACT, store)
    chats = store / "projects" / "-home-demo-weather-app" / "chats"
    (chats / f"{SID}.runtime.json").write_text("{}")          # runtime sidecar
    (chats / "subdir").mkdir()
    (chats / "subdir" / "other.jsonl").write_text("{}\n")     # not a chats folder
    (store / "projects" / "-home-demo-weather-app" / "notes.jsonl").write_text("{}\n")
    os.symlink(chats, store / "projects" / "linked" , target_is_directory=True)
    assert qwen_code.resolve_root(store) == store / "projects"
    found = [str(f.path.relative_to(store)) for f in qwen_code.discover(qwen_code.resolve_root(store))]
    assert found == [f"projects/-home-demo-weather-app/chats/{SID}.jsonl"]
    assert [f.session_hint for f in qwen_code.discover(chats)] == [SID]
    one = chats / f"{SID}.jsonl"
    assert [f.path for f in qwen_code.discover(qwen_code.resolve_root(one))] == [one]
    with pytest.raises(RootError):
        qwen_code.resolve_root(tmp_path / "missing")
    with pytest.raises(RootError):
        qwen_code.resolve_root(chats / f"{SID}.runtime.json")
