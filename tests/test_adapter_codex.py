"""Codex CLI rollouts ingest completely, deduplicated as formats.md §3 says, without touching
the source; drift and damaged inputs are handled or quarantined with a reason."""
from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest
import zstandard

from conftest import PEER, REPO, jsonl_objects, tree_fingerprint, write_jsonl
from convarch.adapters import codex
from convarch.adapters.base import RootError
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "codex" / "contract"
MAIN = "6acc64f1-6124-5523-8941-fff2af9a9279"
CHILD = "0265ebd4-de00-5d06-b2b1-8d07c733319e"
ARCHIVED = "4e58af68-8eda-5305-8f3e-1d6fa8cbd030"
EARLY_RUST = "1424b2f6-cb93-585c-ae98-1395382010a7"
TYPESCRIPT = "a11eefcd-a1e3-5df7-b792-ff51cfe055c4"
MAIN_FILE = CONTRACT / "sessions/2026/05/04" / f"rollout-2026-05-04T11-15-00-{MAIN}.jsonl"

LOCALPUSH = PEER / "madshn__localpush" / "src-tauri" / "tests" / "fixtures" / "codex" / "2026-02-23"
JAZZY = PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures"
SINGLE_FILE_SAMPLES = [
    *(JAZZY / n for n in ("codex_050_legacy.jsonl", "codex_051_usage.jsonl", "codex_052_raw.jsonl",
                          "codex_053_rate_limit.jsonl")),
    *(JAZZY / "stage0" / "agents" / "codex" / n for n in ("small.jsonl", "large.jsonl", "schema_drift.jsonl")),
    PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "codex" / "session-codex.jsonl",
]
PORTABLE = PEER / "portable-resume" / "codex"

# what each response_item payload type is, read straight from formats.md §3
MESSAGE_ITEMS = {"reasoning", "function_call", "function_call_output", "custom_tool_call",
                 "custom_tool_call_output", "local_shell_call", "web_search_call",
                 "image_generation_call", "tool_search_call", "tool_search_output", "agent_message"}
CALL_ITEMS = {"function_call", "custom_tool_call", "tool_search_call"}
SELF_ANSWERING_CALLS = {"local_shell_call", "web_search_call", "image_generation_call"}
ENVELOPES = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}


def run(db: Path, *roots: Path):
    return ingest(Layout(db), [(codex, codex.resolve_root(r)) for r in roots])


def expected_counts(files: list[Path]) -> dict:
    """Counts read from the JSONL files without convarch: every line is a record; a message is
    a compacted line or a response_item whose payload is a message with a role or a model/tool
    item; a tool call is a distinct call id (web search, image generation and local shell
    calls without one are keyed by their line)."""
    records = messages = bad = 0
    calls: set[tuple[str, str]] = set()
    for f in files:
        lines = [ln for ln in f.read_bytes().split(b"\n")]
        objs = jsonl_objects(f)
        records += len(objs)
        bad += sum(1 for ln in lines if ln.strip()) - len(objs)
        for line_no, ln in enumerate(lines, start=1):
            try:
                o = json.loads(ln)
            except ValueError:
                continue
            if not isinstance(o, dict):
                continue
            if o.get("payload") is not None or o.get("type") in ENVELOPES:
                kind, p = o.get("type"), o.get("payload")
            elif "record_type" in o or "type" not in o:
                continue                           # early Rust header and state filler lines
            else:
                kind, p = "response_item", o
            if kind == "compacted":
                messages += 1
            if kind != "response_item" or not isinstance(p, dict):
                continue
            t = p.get("type")
            if (t == "message" and p.get("role") in ("user", "assistant", "developer", "system")) or t in MESSAGE_ITEMS:
                messages += 1
            cid = p.get("call_id") if t in CALL_ITEMS else None
            if t in SELF_ANSWERING_CALLS:
                cid = p.get("call_id") or p.get("id") or f"{t}@{line_no}"
            if cid:
                calls.add((str(f), cid))
    return {"records": records, "messages": messages, "tool_calls": len(calls), "bad": bad}


# --- peer samples -------------------------------------------------------------------------


def test_localpush_real_rollouts_match_the_upstream_stats(tmp_path):
    root = LOCALPUSH / "raw" / "sessions"
    files = sorted(root.glob("rollout-*.jsonl"))
    want = expected_counts(files)
    manifest = json.loads((LOCALPUSH / "manifest.json").read_text())
    upstream = json.loads((LOCALPUSH / "expected" / "codex-sessions.json").read_text())["sessions"]
    before = tree_fingerprint(root)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert tree_fingerprint(root) == before
    assert (s.files_scanned, s.sessions, s.quarantined) == (6, 6, 0)
    assert s.records_added == want["records"] == manifest["input_files"]["jsonl_line_count_total"] == 4760
    assert scalar(db, "select count(*) from messages") == want["messages"] == 2415
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"] == 745
    assert scalar(db, "select count(*) from tool_calls where has_result") == 743
    # token_count: 485 new counts; the 480 repeated ones the upstream "collapsed" carry no tokens
    counted = scalar(db, "select count(*) from stg_records where kind = 'token_count' and output_tokens is not null")
    repeated = scalar(db, "select count(*) from stg_records where kind = 'token_count' and output_tokens is null "
                          "and json_type(json(raw), '$.payload.info') = 'OBJECT'")
    assert (counted, repeated) == (485, manifest["verification"]["duplicate_events_collapsed"])
    got = {r[0]: r[1:] for r in rows(db, """
        select s.session_id, s.title, s.cwd, s.git_branch, s.model, s.started_at, s.ended_at,
               (select count(*) from stg_records r where r.session_id = s.session_id and r.kind = 'user_message'),
               (select sum(input_tokens) + sum(cache_read_tokens) from stg_records r where r.session_id = s.session_id),
               (select sum(cache_read_tokens) from stg_records r where r.session_id = s.session_id),
               (select sum(output_tokens) from stg_records r where r.session_id = s.session_id)
        from sessions s""")}
    assert len(upstream) == len(got) == 6
    for u in upstream:
        title, cwd, branch, model, start, end, prompts, tin, tcached, tout = got[u["id"]]
        assert (title, cwd, branch, model) == (u["title"], u["project_path"], u["git_branch"], "gpt-5.3-codex")
        assert start.isoformat(timespec="milliseconds") == u["start_time"][:23]
        assert end.isoformat(timespec="milliseconds") == u["end_time"][:23]
        assert prompts == u["message_count"]          # upstream counts event_msg.user_message
        assert (tin, tcached, tout) == (u["tokens"]["input"], u["tokens"]["cache_read"], u["tokens"]["output"])
    # each human prompt is counted once: the event_msg copies are bookkeeping (role null)
    assert scalar(db, "select count(*) from messages where kind = 'user_message' or kind = 'agent_message'") == 0
    compact = rows(db, "select role, is_compact_summary from messages where kind = 'compact_boundary'")
    assert compact == [("system", True)]
    again = run(db, root)
    assert (again.files_changed, again.records_added) == (0, 0)


def test_single_file_samples_load_completely(tmp_path):
    files = [f for f in SINGLE_FILE_SAMPLES if f.exists()]
    if not files:
        pytest.skip("samples not present")
    want = expected_counts(files)
    db = tmp_path / "w.duckdb"
    s = run(db, *files)
    assert s.files_scanned == len(files) == 8
    assert s.records_added == want["records"] == 172
    assert scalar(db, "select count(*) from sessions") == len(files)
    assert scalar(db, "select count(*) from messages") == want["messages"] == 49
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"] == 7
    assert scalar(db, "select count(*) from quarantine") == want["bad"] == 0
    # a file not named rollout-…-<uuid> keeps its stem as the session id
    assert sorted(r[0] for r in rows(db, "select session_id from sessions"))[-1] == "small"
    # the 2026 shape collection: envelope types beyond formats.md stay as bookkeeping rows
    kinds = dict(rows(db, "select kind, count(*) from stg_records where session_id = 'small' group by 1"))
    assert kinds["compact_boundary"] == 6 and kinds["world_state"] == 5 and kinds["item_completed"] == 13
    assert kinds["user_message"] == 3 and kinds["metadata"] == 8       # 7 session_meta + 1 thread rename
    assert scalar(db, "select count(*) from messages where harness_kind = 'inter_agent'") == 2


def test_portable_resume_cases(tmp_path):
    cases = sorted(p for p in PORTABLE.glob("s-cod-*") if p.is_dir())
    if not cases:
        pytest.skip("portable-resume samples not present")
    roots = [c / "root" for c in cases]
    jsonl = sorted(f for r in roots for f in r.rglob("rollout-*.jsonl"))
    fake_zst = sorted(f for r in roots for f in r.rglob("rollout-*.jsonl.zst"))
    want = expected_counts(jsonl)
    db = tmp_path / "w.duckdb"
    s = run(db, *roots)                          # s-cod-10 holds only a state DB: no rollouts
    assert (len(cases), len(jsonl), len(fake_zst)) == (12, 9, 2)
    assert s.files_scanned == 11 and s.records_added == want["records"] == 29
    assert scalar(db, "select count(*) from sessions") == 9
    assert scalar(db, "select count(*) from messages") == want["messages"] == 19
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"] == 0
    # the two ".zst" files are plain text: each is one unreadable container, nothing crashes
    bad = rows(db, "select source_file, reason, error from quarantine order by 1")
    assert [b[0] for b in bad] == [str(f) for f in fake_zst]
    assert all(b[1] == "unreadable_container" and "ZstdError" in b[2] for b in bad)
    archived = next(c for c in cases if c.name == "s-cod-03-archived-exact-id")
    assert scalar(db, "select count(*) from stg_records where source_file like ?",
                  [f"{archived}/root/archived_sessions/%"]) == 3
    # s-cod-09: a reasoning summary that is a plain string still reads as thinking
    assert scalar(db, "select text from messages where kind = 'thinking'") == "omitted"


# --- the contract store ---------------------------------------------------------------------


def test_contract_store_sessions_messages_and_tools(tmp_path):
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert s.files_scanned == 5 and s.quarantined == 0     # session_index/history are not read
    got = {r[0]: r[1:] for r in rows(db, "select session_id, parent_session_id, title, cwd, git_branch, model, "
                                         "agent_version, message_count from sessions")}
    assert got[MAIN] == (None, "Forecast cache", "/home/demo/weather-app",   # the thread_name_updated rename
                         "feature/forecast-cache", "gpt-5.3-codex", "0.128.0", 21)
    assert got[CHILD][:2] == (MAIN, "Find every caller of fetch_forecast")
    assert got[CHILD][4] == "gpt-5.3-codex-mini"
    assert got[ARCHIVED][1:4] == ("Summarize TODO.md", "/home/demo/notes", None)     # read from .jsonl.zst
    assert got[EARLY_RUST][1:4] == ("What does make test run?", None, "main")         # no envelope
    assert got[TYPESCRIPT][1] == "Rename utils.py to helpers.py"                      # whole-file .json
    harness = rows(db, "select line_no, harness_kind from messages where session_id = ? and role = 'user' "
                       "and kind = 'prompt' order by line_no", [MAIN])
    assert harness == [(3, "instructions"), (4, "environment_context"), (6, None), (31, "interrupt"),
                       (33, None), (48, "command_output")]
    assert rows(db, "select harness_kind from messages where session_id = ? and kind = 'prompt' "
                    "order by line_no", [EARLY_RUST]) == [("instructions",), ("environment_context",), (None,)]
    # the double-written text: one message per prompt, reply and reasoning summary
    assert dict(rows(db, "select kind, count(*) from stg_records where session_id = ? and role is null "
                         "and kind in ('user_message', 'agent_message', 'agent_reasoning') group by 1", [MAIN])) \
        == {"user_message": 2, "agent_message": 2, "agent_reasoning": 1}
    image = rows(db, "select media_type, data_chars > 0 from stg_blocks where session_id = ? and block_type = 'image'", [MAIN])
    assert image == [("image/png", True)]
    calls = rows(db, "select call_id, tool_name, is_error, exit_code, tool_kind, command, has_result "
                     "from tool_calls where session_id = ? order by line_no", [MAIN])
    assert calls == [
        ("call_read01", "exec_command", False, 0, "shell", "sed -n 1,40p weather/client.py", True),
        ("call_patch01", "apply_patch", False, 0, "edit", None, True),
        ("call_test01", "exec_command", True, 1, "shell", "make test", True),
        ("web_search_call@38", "web_search", False, 0, "web", None, True),
        ("call_shell01", "local_shell", False, 0, "shell", "make test", True),
    ]
    assert rows(db, "select output_text from tool_calls where call_id = 'call_test01'")[0][0].startswith("FAILED")
    assert scalar(db, "select count(*) from tool_calls where has_result") == 8
    compact = rows(db, "select role, is_compact_summary, text like 'The user asked%' from messages "
                       "where kind = 'compact_boundary'")
    assert compact == [("system", True, True)]
    rename = rows(db, "select kind, text from stg_records where subtype = 'thread_name_updated'")
    assert rename == [("metadata", "Forecast cache")]
    tokens = rows(db, "select line_no, input_tokens, cache_read_tokens, output_tokens, model from stg_records "
                      "where session_id = ? and kind = 'token_count' order by line_no", [MAIN])
    # line 9: info null; 18, 24, 29, 43: the previous count repeated at the next request
    assert tokens == [
        (9, None, None, None, "gpt-5.3-codex"),
        (15, 9120 - 3456, 3456, 310, "gpt-5.3-codex"),
        (18, None, None, None, "gpt-5.3-codex"),
        (21, 9800 - 9088, 9088, 95, "gpt-5.3-codex"),
        (24, None, None, None, "gpt-5.3-codex"),
        (26, 10450 - 9728, 9728, 220, "gpt-5.3-codex"),
        (29, None, None, None, "gpt-5.3-codex"),
        (40, 4200, 0, 150, "gpt-5.3-codex"),
        (43, None, None, None, "gpt-5.3-codex"),
    ]
    final = json.loads(MAIN_FILE.read_text().splitlines()[42])["payload"]["info"]["total_token_usage"]
    assert rows(db, "select sum(input_tokens) + sum(cache_read_tokens), sum(cache_read_tokens), sum(output_tokens) "
                    "from stg_records where session_id = ?", [MAIN]) == [
        (final["input_tokens"], final["cached_input_tokens"], final["output_tokens"])]


def test_appended_rollouts_read_only_new_lines_and_keep_token_totals(tmp_path):
    """A rollout read in two runs, cut after a new count (16), after a repeated one (18) and
    mid-turn (30): the repeated count that can open the second part is not new usage."""
    lines = MAIN_FILE.read_bytes().splitlines(keepends=True)
    splits = (16, 18, 30)
    files = []
    for split in splits:
        # each in its own folder: the same file in the same place of two stores is one
        # file's copies, and counts once
        f = tmp_path / f"home{split}" / "sessions" / "2026" / "05" / f"{split:02d}" / MAIN_FILE.name
        f.parent.mkdir(parents=True)
        f.write_bytes(b"".join(lines[:split]))
        files.append(f)
    homes = [f.parents[4] for f in files]
    db = tmp_path / "w.duckdb"
    assert run(db, *homes).records_added == sum(splits)
    for f, split in zip(files, splits):
        with open(f, "ab") as fh:
            fh.write(b"".join(lines[split:]))
    s = run(db, *homes)
    assert (s.files_changed, s.records_added) == (3, sum(len(lines) - k for k in splits))
    assert scalar(db, "select max(file_epoch) from stg_records") == 1
    got = rows(db, "select source_file, count(*) filter (where role is not null), sum(input_tokens), "
                   "sum(cache_read_tokens), sum(output_tokens), count(input_tokens) "
                   "from stg_records group by 1 order by 1")
    assert got == [(str(f), 21, 11298, 22272, 775, 4) for f in sorted(files)]


USAGE_BY_FILE = ("select f.source_file, u.line_no, u.model, u.input_tokens, u.output_tokens from usage as u "
                 "join (select distinct file_id, source_file from stg_records) as f using (file_id) order by 1, 2")


def _carried(db: Path) -> list[tuple]:
    """Per file, each record's carried-forward values: the model and the counted tokens."""
    return rows(db, "select source_file, line_no, model, input_tokens, output_tokens, cache_read_tokens "
                    "from stg_records order by source_file, line_no")


@pytest.mark.parametrize("name", ["rollout-2026-05-04T11-15-00-6acc64f1-6124-5523-8941-fff2af9a9279.jsonl",
                                  "rollout-2026-05-04T11-16-04-0265ebd4-de00-5d06-b2b1-8d07c733319e.jsonl"])
def test_a_rollout_appended_at_any_line_loads_as_if_read_whole(tmp_path, name):
    """Each record's model comes from the latest turn_context before it, and a token count
    counts only after a model output or a changed total: values carried over earlier lines.
    Appended lines (a live session read by `watch`) are loaded with those earlier lines as
    context from the lake: every cut gives the records and usage of one whole read. Without
    it, a cut after line 5 of the second rollout lost a 3,000-token count and models."""
    src = next(CONTRACT.rglob(name))
    lines = src.read_bytes().splitlines(keepends=True)
    cuts = range(1, len(lines))
    files = {}
    for k in [len(lines), *cuts]:
        f = tmp_path / f"home{k:03d}" / "sessions" / "2026" / "05" / f"{k:03d}" / name   # not copies
        f.parent.mkdir(parents=True)
        f.write_bytes(b"".join(lines[:k]))
        files[k] = f
    homes = [f.parents[4] for f in files.values()]
    db = tmp_path / "w.duckdb"
    run(db, *homes)
    for k in cuts:
        with open(files[k], "ab") as fh:
            fh.write(b"".join(lines[k:]))
    assert run(db, *homes).records_added == sum(len(lines) - k for k in cuts)
    by_file: dict[str, list] = {}
    for path, *values in _carried(db):
        by_file.setdefault(path, []).append(values)
    whole = by_file[str(files[len(lines)])]
    assert any(v[1] is not None for v in whole) and any(v[2] for v in whole)
    assert {k: by_file[str(files[k])] for k in cuts} == {k: whole for k in cuts}
    usage = rows(db, USAGE_BY_FILE)
    per_file: dict[str, list] = {}
    for path, *values in usage:
        per_file.setdefault(path, []).append(values)
    assert {k: per_file.get(str(files[k])) for k in cuts} == {k: per_file[str(files[len(lines)])] for k in cuts}


def test_a_rollout_bigger_than_a_batch_loads_as_if_in_one(tmp_path, monkeypatch):
    """The same carried values across the batches of one run: with batches of a few lines,
    the contract rollouts load exactly as in one batch each."""
    from convarch.etl import extract

    whole_db, cut_db = tmp_path / "whole.duckdb", tmp_path / "cut.duckdb"
    run(whole_db, CONTRACT)
    monkeypatch.setattr(extract, "FLUSH_BYTES", 1)
    run(cut_db, CONTRACT)
    assert scalar(cut_db, "select count(distinct ingest_run_id) from stg_records") == 1
    assert _carried(cut_db) == _carried(whole_db)
    assert rows(cut_db, USAGE_BY_FILE) == rows(whole_db, USAGE_BY_FILE)


# --- drift and damage -----------------------------------------------------------------------


def _env(ts: str, typ: str, payload: dict) -> dict:
    return {"timestamp": ts, "type": typ, "payload": payload}


def _session(sid: str, text: str) -> list[dict]:
    return [
        _env("2026-05-05T08:00:00.000Z", "session_meta", {"id": sid, "timestamp": "2026-05-05T08:00:00.000Z",
                                                          "cwd": "/home/demo/app", "cli_version": "0.128.0"}),
        _env("2026-05-05T08:00:01.000Z", "response_item",
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        _env("2026-05-05T08:00:02.000Z", "response_item",
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}),
    ]


def _jsonl_bytes(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_bad_inputs_are_quarantined_with_a_reason_and_the_rest_loads(tmp_path):
    day = tmp_path / "codex" / "sessions" / "2026" / "05" / "05"
    day.mkdir(parents=True)
    ids = {k: f"019e4{n:03d}-0000-7000-8000-00000000000{n}" for n, k in enumerate("abcdefghi")}

    def name(k: str, ext: str) -> Path:
        return day / f"rollout-2026-05-05T10-00-0{ids[k][7]}-{ids[k]}{ext}"

    good = _jsonl_bytes(_session(ids["a"], "Fix the flaky test"))
    a = name("a", ".jsonl")        # bad lines in the middle and a line cut mid-write
    a.write_bytes(good + b"this is not json\n[1, 2]\n" + good.splitlines()[1][:40])
    corrupt = bytearray(zstandard.ZstdCompressor().compress(_jsonl_bytes(_session(ids["b"], "x" * 400) * 4)))
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 8):
        corrupt[i] ^= 0x5A
    name("b", ".jsonl.zst").write_bytes(bytes(corrupt))                    # corrupt zstd frame
    c_lines = _session(ids["c"], "Rename the module")
    frames = [zstandard.ZstdCompressor().compress(_jsonl_bytes(part)) for part in (c_lines[:2], c_lines[2:])]
    name("c", ".jsonl.zst").write_bytes(frames[0] + frames[1][:-6])      # second frame cut short
    name("d", ".jsonl.zst").write_bytes(good)                              # plain text named .zst
    name("e", ".json").write_text('{"session": {"id": "x", "timestamp": ')  # legacy document cut
    name("f", ".json").write_text("[1, 2, 3]\n")                          # JSON, not a rollout
    name("g", ".jsonl").write_bytes(_jsonl_bytes(_session(ids["g"], "Plain wins")))
    name("g", ".jsonl.zst").write_bytes(b"the .jsonl twin is read instead")
    (day / "notes.jsonl").write_bytes(good)                                # not a rollout name
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(_jsonl_bytes(_session(ids["h"], "secret")))
    name("h", ".jsonl").symlink_to(outside)                                # never followed
    legacy = {"session": {"id": ids["i"], "timestamp": "2025-04-20T10:00:00Z", "instructions": ""}, "items": []}
    name("i", ".json").write_text(json.dumps(legacy))                      # a TS session with no items

    db = tmp_path / "w.duckdb"
    s = run(db, tmp_path / "codex")
    assert s.files_scanned == 9                    # a b c d e f g(.jsonl) h(link) i
    assert dict(s.skipped) == {str(name("h", ".jsonl")): "not a regular file (symlink, FIFO or device): not read"}
    bad = {(Path(r[0]).name.split("-00000000000")[1], r[1]): r[2]
           for r in rows(db, "select source_file, reason, error from quarantine")}
    assert set(bad) == {("0.jsonl", "invalid_json"), ("0.jsonl", "not_object"), ("0.jsonl", "truncated_tail"),
                        ("1.jsonl.zst", "unreadable_container"), ("2.jsonl.zst", "unreadable_container"),
                        ("3.jsonl.zst", "unreadable_container"), ("4.json", "unreadable_container"),
                        ("5.json", "unreadable_container")}
    assert "Data corruption" in bad[("1.jsonl.zst", "unreadable_container")]
    assert "truncated zstd stream" in bad[("2.jsonl.zst", "unreadable_container")]
    assert "Unknown frame descriptor" in bad[("3.jsonl.zst", "unreadable_container")]
    assert "not a Codex rollout document" in bad[("5.json", "unreadable_container")]
    # what could be read loaded: a's three records; c's first frame; g from the .jsonl
    per_session = dict(rows(db, "select session_id, count(*) from stg_records group by 1"))
    assert per_session == {ids["a"]: 3, ids["c"]: 2, ids["g"]: 3, ids["i"]: 1}
    assert scalar(db, "select title from sessions where session_id = ?", [ids["g"]]) == "Plain wins"
    assert rows(db, "select message_count, started_at from sessions where session_id = ?", [ids["i"]]) == [
        (0, datetime(2025, 4, 20, 10, 0))]


def test_malformed_lines_that_open_like_objects_are_quarantined(tmp_path):
    """Codex lines starting with '{' are parsed without a check first (the records SQL fails
    on a broken one); each broken line must still be quarantined and cost no other line."""
    sid = "019e4000-0000-7000-8000-000000000077"
    lines = [json.dumps(r) for r in _session(sid, "Tidy the parser")]
    broken = [lines[1][: len(lines[1]) // 2], lines[2] + ' {"type": "event_msg"}', '{"type": "event_msg", "x": tru}']
    day = tmp_path / "codex" / "sessions" / "2026" / "05" / "05"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-05T10-00-00-{sid}.jsonl").write_text(
        "\n".join([lines[0], broken[0], lines[1], broken[1], lines[2], broken[2]]) + "\n")
    db = tmp_path / "w.duckdb"
    assert run(db, tmp_path / "codex").records_added == 3
    assert rows(db, "select line_no, reason from quarantine order by line_no") == [
        (2, "invalid_json"), (4, "invalid_json"), (6, "invalid_json")]
    assert rows(db, "select line_no from stg_records order by line_no") == [(1,), (3,), (5,)]
    assert scalar(db, "select title from sessions") == "Tidy the parser"


def test_legacy_json_rollout_becomes_envelope_lines(tmp_path):
    sid = "019e4aaa-0000-7000-8000-00000000abcd"
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
             {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}]
    doc = {"session": {"id": sid, "timestamp": "2025-04-20T10:00:00Z", "instructions": ""}, "items": items}
    f = tmp_path / "codex" / "sessions" / f"rollout-2025-04-20-{sid}.json"
    f.parent.mkdir(parents=True)
    f.write_text(json.dumps(doc))
    sf = next(codex.discover(tmp_path / "codex"))
    assert (sf.container, sf.session_hint) == ("json", sid)
    assert [json.loads(b) for b in codex.to_lines(f, sf)] == [
        {"timestamp": "2025-04-20T10:00:00Z", "type": "session_meta", "payload": doc["session"]},
        {"type": "response_item", "payload": items[0]},
        {"type": "response_item", "payload": items[1]},
    ]


# --- discovery ------------------------------------------------------------------------------


def test_default_roots_and_env_override(tmp_path, monkeypatch, isolated_home):
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert codex.default_roots(os.environ, isolated_home) == [isolated_home / ".codex"]
    custom = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(custom))
    assert codex.default_roots(os.environ, isolated_home) == [custom, isolated_home / ".codex"]
    from convarch.cli.targets import default_targets
    assert default_targets(codex) == []                       # neither exists yet
    write_jsonl(custom / "sessions" / "2026" / "05" / "05" / f"rollout-2026-05-05T10-00-00-{MAIN}.jsonl",
                _session(MAIN, "hi"))
    (isolated_home / ".codex" / "archived_sessions").mkdir(parents=True)
    assert [r for _, r in default_targets(codex)] == [custom, isolated_home / ".codex"]


def test_resolve_root_and_discover(tmp_path):
    assert codex.resolve_root(CONTRACT) == CONTRACT
    sessions = CONTRACT / "sessions"
    assert codex.resolve_root(sessions) == sessions
    assert codex.resolve_root(MAIN_FILE) == MAIN_FILE
    found = {sf.path.name: (sf.session_hint, sf.container) for sf in codex.discover(CONTRACT)}
    assert len(found) == 5
    assert found[MAIN_FILE.name] == (MAIN, "jsonl")
    assert found[f"rollout-2026-04-28T18-02-10-{ARCHIVED}.jsonl.zst"] == (ARCHIVED, "jsonl.zst")
    assert found[f"rollout-2025-04-22T20-30-00-{TYPESCRIPT}.json"] == (TYPESCRIPT, "json")
    assert [sf.session_hint for sf in codex.discover(sessions / "2026")] == [MAIN, CHILD]
    assert [sf.session_hint for sf in codex.discover(MAIN_FILE)] == [MAIN]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RootError):
        codex.resolve_root(empty)
    with pytest.raises(RootError):
        codex.resolve_root(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(RootError):
        codex.resolve_root(tmp_path / "notes.txt")
