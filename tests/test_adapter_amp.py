"""Amp thread documents ingest as one line per message, with tool results, tokens counted once
and each rewrite of a thread replacing the one before.

Evidence level "own fixture only": Amp is closed source and has no public sample, so the
fixture under fixtures/amp/contract was written from third-party readers (see
adapters/amp.py); these tests pin the reading of that fixture, not of a real Amp thread."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import REPO, tree_fingerprint
from convarch.adapters import amp
from convarch.adapters.base import RootError
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "amp" / "contract"
T1 = "T-2f8c1a4e-6b3d-4e7a-9c15-7d2e8f0a1b36"
T2 = "T-9a41c7d2-3e5f-4b68-8d07-1c6e2a9f5b84"


def run(db: Path, root: Path):
    return ingest(Layout(db), [(amp, amp.resolve_root(root))])


@pytest.fixture(scope="module")
def contract_db(tmp_path_factory):
    before = tree_fingerprint(CONTRACT)
    db = tmp_path_factory.mktemp("amp-contract") / "w.duckdb"
    summary = run(db, CONTRACT)
    again = run(db, CONTRACT)
    assert tree_fingerprint(CONTRACT) == before
    return db, summary, again


def test_contract_counts(contract_db):
    # Read off the two documents: T1 = thread line + 12 messages + 2 ledger events (15 lines),
    # T2 = thread line + 4 messages + 1 ledger event (6); messages = messages[] entries (user,
    # assistant, info); tool calls = tool_use ids (all 4 in T1).
    db, summary, again = contract_db
    assert (summary.files_scanned, summary.records_added, summary.quarantined) == (2, 21, 0)
    assert (again.files_changed, again.records_added) == (0, 0)
    assert scalar(db, "select count(*) from messages") == 16
    assert scalar(db, "select count(*) from tool_calls") == 4
    assert rows(db, "select session_id, count(*) from stg_records group by 1 order by 1") == [(T1, 15), (T2, 6)]


def test_contract_session_facts(contract_db):
    db = contract_db[0]
    got = rows(db, "select session_id, title, cwd, git_branch, model, agent_version, message_count, "
                   "started_at::varchar, ended_at::varchar from sessions order by started_at")
    assert got == [
        (T2, "Explain the cache layer", "/home/demo/weather-app", None, "claude-sonnet-4-20250514",
         "0.0.1772000000-gabcdef", 4, "2026-02-26 10:00:00", "2026-02-26 10:00:09"),
        (T1, "Fix wind speed units in the forecast", "/home/demo/weather-app", "fix-wind-units",
         "claude-sonnet-4-5-20250929", "0.0.1773300000-g1a2b3c", 12, "2026-03-12 09:00:00", "2026-03-12 09:01:35"),
    ]
    kinds = rows(db, "select kind, count(*) from messages where session_id = ? group by 1 order by 1", [T1])
    assert kinds == [("prompt", 2), ("response", 2), ("tool_result", 4), ("tool_use", 4)]
    # a cancelled reply with neither sentAt nor usage takes the time of the message before it
    assert scalar(db, "select \"timestamp\"::varchar from messages where session_id = ? and message_id = '11'", [T1]) == \
        "2026-03-12 09:01:35"
    # the info summary is a compact boundary with the summary as text
    got = rows(db, "select role, kind, text from messages where session_id = ? and message_id = '2'", [T2])
    assert got == [("system", "compact_boundary",
                     "The user asked how the forecast cache expires entries; answered: a ten-minute TTL checked in get().")]
    assert rows(db, "select block_type from stg_blocks where session_id = ? and message_id = '1' order by block_index", [T1]) == [
        ("thinking",), ("text",), ("tool_use",)]


def test_contract_tokens_are_counted_once(contract_db):
    db = contract_db[0]
    # T1: message usage 12+9+7+6+8 input; the title-generation event points at a user message
    # (no usage of its own) and counts; the inference event for message 1 does not
    got = rows(db, "select session_id, sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), "
                   "sum(cache_creation_tokens) from stg_records group by 1 order by 1")
    assert got == [(T1, 42 + 310, 335 + 14, 21060, 5120), (T2, 4200, 61, None, None)]


def test_contract_tool_results(contract_db):
    db = contract_db[0]
    got = rows(db, "select call_id, tool_name, tool_kind, is_error, output_text, command, path, exit_code "
                   "from tool_calls order by line_no")
    assert got == [
        ("toolu_01AmpGrep", "Grep", "search", False, '["src/format.py:14:    return f\\"{wind_speed} km/h\\""]',
         None, "src", 0),
        ("toolu_02AmpEdit", "edit_file", "edit", False,
         '{"diff":"@@ -14 +14 @@\\n-    return f\\"{wind_speed} km/h\\"\\n+    return f\\"{wind_speed * 3.6:.0f} km/h\\"",'
         '"lineRange":[14,14]}', None, "/home/demo/weather-app/src/format.py", 0),
        ("toolu_03AmpBash", "Bash", "shell", True, "Do not push yet.", "git push --force", None, 1),
        ("toolu_04AmpBash", "Bash", "shell", False, "12 passed in 0.41s\n", "pytest -q", None, 0),
    ]


def amp_store(tmp_path: Path, docs: dict[str, object]) -> Path:
    data = tmp_path / "store" / "amp"
    threads = data / "threads"
    threads.mkdir(parents=True)
    for name, doc in docs.items():
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        (threads / name).write_bytes(body)
    return data


def thread(tid: str, texts: list[tuple[str, str]]) -> dict:
    return {"v": 1, "id": tid, "created": 1777629600000, "title": "demo",
            "messages": [{"role": r, "messageId": i, "content": [{"type": "text", "text": t}],
                          "meta": {"sentAt": 1777629600000 + 1000 * (i + 1)}} for i, (r, t) in enumerate(texts)]}


def test_a_rewritten_thread_replaces_its_earlier_version(tmp_path):
    tid = "T-00000000-0000-4000-8000-000000000001"
    data = amp_store(tmp_path, {f"{tid}.json": thread(tid, [("user", "one"), ("assistant", "two")])})
    db = tmp_path / "w.duckdb"
    assert run(db, data).records_added == 3
    path = data / "threads" / f"{tid}.json"
    # the thread only grew: its first lines are the ones loaded before, so only the new load
    path.write_text(json.dumps(thread(tid, [("user", "one"), ("assistant", "two"), ("user", "three"), ("assistant", "four")])))
    assert run(db, data).records_added == 2
    assert scalar(db, "select count(*) from stg_records") == 5
    assert rows(db, "select text, parent_id from messages order by line_no") == [
        ("one", None), ("two", "0"), ("three", "1"), ("four", "2")]
    assert scalar(db, "select max(file_epoch) from stg_records") == 1
    # an earlier message edited and the last one gone: the thread line before it stays where
    # it was loaded, the messages from the edited one on load as a new version
    path.write_text(json.dumps(thread(tid, [("user", "one!"), ("assistant", "two"), ("user", "three")])))
    assert run(db, data).records_added == 3
    assert rows(db, "select text, parent_id from messages order by line_no") == [
        ("one!", None), ("two", "0"), ("three", "1")]
    assert rows(db, "select file_epoch, count(*) from stg_records group by 1 order by 1") == [(1, 1), (2, 3)]


def test_bad_documents_are_quarantined_and_the_rest_loads(tmp_path):
    good = "T-00000000-0000-4000-8000-000000000002"
    data = amp_store(tmp_path, {
        f"{good}.json": {"created": 1777629600000, "messages": [
            {"role": "user", "content": "a bare string as content"},
            {"role": "user", "content": ["a bare string block", {"type": "text", "text": "and a text block"}]},
            "not an object",
            {"role": "critic", "messageId": 7, "content": [{"type": "mystery"}]},
        ]},
        "T-00000000-0000-4000-8000-000000000003.json": b'{"id": "T-3", "messages": [{"role": "us',
        "T-00000000-0000-4000-8000-000000000004.json": b"[1, 2, 3]",
        f"{good}.json.amptmp": b"{half written",
    })
    (data / "threads" / "nested").mkdir()
    (data / "threads" / "nested" / "T-x.json").write_text("{}")
    db = tmp_path / "w.duckdb"
    summary = run(db, data)
    assert summary.files_scanned == 3
    got = rows(db, "select reason, error from quarantine order by source_file")
    assert [r for r, _e in got] == ["unreadable_container", "unreadable_container"]
    assert "JSONDecodeError" in got[0][1] and "not an Amp thread object" in got[1][1]
    # a document without id is named by its file; entries of unknown shape are kept
    assert rows(db, "select session_id, line_no, record_type, role, kind, text from stg_records order by line_no") == [
        (good, 1, "thread", None, "metadata", None),
        (good, 2, "user", "user", "prompt", "a bare string as content"),
        (good, 3, "user", "user", "prompt", "a bare string block\nand a text block"),
        (good, 4, "message", None, "unknown", None),
        (good, 5, "critic", None, "unknown", None),
    ]


def test_default_roots_follow_xdg_data_home(tmp_path, monkeypatch, isolated_home):
    assert amp.ENV_VARS == ()
    assert amp.default_roots({}, isolated_home) == [isolated_home / ".local" / "share" / "amp"]
    xdg = tmp_path / "xdg"
    assert amp.default_roots({"XDG_DATA_HOME": str(xdg)}, isolated_home) == [
        xdg / "amp", isolated_home / ".local" / "share" / "amp"]
    shutil.copytree(CONTRACT, xdg / "amp")
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    from convarch.cli.targets import default_targets
    targets = default_targets(amp)
    assert [t for _a, t in targets] == [xdg / "amp" / "threads"]
    assert len(list(amp.discover(targets[0][1]))) == 2


def test_resolve_root_and_discover(tmp_path):
    data = tmp_path / "amp"
    shutil.copytree(CONTRACT, data)
    threads = data / "threads"
    assert amp.resolve_root(data) == threads
    assert amp.resolve_root(threads) == threads
    one = threads / f"{T1}.json"
    assert [(f.path, f.session_hint, f.container) for f in amp.discover(amp.resolve_root(one))] == [(one, T1, "json")]
    with pytest.raises(RootError):
        amp.resolve_root(tmp_path / "missing")
    (tmp_path / "history.jsonl").write_text("{}\n")
    with pytest.raises(RootError):
        amp.resolve_root(tmp_path / "history.jsonl")
    os.symlink(one, threads / "T-linked.json")
    found = [f.path.name for f in amp.discover(threads)]
    assert found == ["T-2f8c1a4e-6b3d-4e7a-9c15-7d2e8f0a1b36.json", "T-9a41c7d2-3e5f-4b68-8d07-1c6e2a9f5b84.json",
                     "T-linked.json"]
    # a symlinked thread is listed but never read through the link
    summary = run(tmp_path / "w.duckdb", data)
    assert summary.files_skipped == 1 and summary.skipped[0][0].endswith("T-linked.json")
