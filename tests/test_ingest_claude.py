"""Claude Code stores ingest completely, exactly once, and without touching the source."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from convarch.adapters import claude_code
from conftest import DEMO, PEER, jsonl_objects, tree_fingerprint, write_jsonl
from helpers import assistant, hand_inodes, rows, run, scalar, tool_result, uid, user

CLAUDE_SAMPLES = {
    "daaain": PEER / "daaain__claude-code-log" / "test" / "test_data",
    "jazzyalex": PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "claude",
    "gnomon": PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "claude",
    "gnomon-window": PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "window-test" / "claude",
    **{
        f"portable-resume-{case.name}": case / "root"
        for case in sorted((PEER / "portable-resume" / "claude").glob("s-cla-*"))
    },
}


def expected_counts(root: Path) -> dict:
    """Counts read independently of convarch, straight from the JSONL."""
    files = sorted(root.rglob("*.jsonl")) if root.is_dir() else [root]
    metas = [m for m in root.rglob("agent-*.meta.json") if m.parent.name == "subagents"] if root.is_dir() else []
    records, messages, bad = len(metas), 0, 0
    calls: set[tuple[str, str]] = set()
    for f in files:
        objs = jsonl_objects(f)
        records += len(objs)
        lines = [ln for ln in f.read_bytes().split(b"\n") if ln.strip()]
        bad += len(lines) - len(objs)
        for o in objs:
            if o.get("type") in ("user", "assistant", "system"):
                messages += 1
            content = (o.get("message") or {}).get("content") if isinstance(o.get("message"), dict) else None
            if o.get("type") == "assistant" and isinstance(content, list):
                for b in content:
                    if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") and b.get("id"):
                        calls.add((str(f), b["id"]))
    return {"files": len(files) + len(metas), "sessions": len(files), "records": records, "messages": messages, "tool_calls": len(calls), "bad": bad}


@pytest.mark.parametrize("name", sorted(CLAUDE_SAMPLES))
def test_peer_sample_loads_completely(tmp_path, name):
    root = CLAUDE_SAMPLES[name]
    if not root.exists():
        pytest.skip(f"{root} not present")
    want = expected_counts(root)
    before = tree_fingerprint(root)
    db = tmp_path / "w.duckdb"
    summary = run(db, root)
    assert tree_fingerprint(root) == before, "the source store changed"
    assert summary.files_scanned == want["files"]
    assert summary.records_added == want["records"]
    assert scalar(db, "select count(*) from stg_records") == want["records"]
    assert scalar(db, "select count(*) from messages") == want["messages"]
    assert scalar(db, "select count(*) from tool_calls") == want["tool_calls"]
    assert scalar(db, "select count(*) from sessions") == want["sessions"]
    bad_lines = scalar(db, "select count(*) from quarantine where reason <> 'truncated_tail'")
    tails = scalar(db, "select count(*) from quarantine where reason = 'truncated_tail'")
    assert bad_lines + tails == want["bad"]
    # a second run finds nothing new
    again = run(db, root)
    assert (again.files_changed, again.records_added, again.quarantined) == (0, 0, 0)
    assert scalar(db, "select count(*) from stg_records") == want["records"]


def test_demo_store_sessions_and_subagent(tmp_path):
    db = tmp_path / "w.duckdb"
    run(db, DEMO)
    got = rows(db, "select session_id, parent_session_id, title, cwd, git_branch, model, message_count "
                   "from sessions order by session_id")
    main_id = uid_main = next(p.stem for p in (DEMO / "projects").glob("*/*.jsonl"))
    assert [r[0] for r in got] == [main_id, f"{uid_main}/agent-a1b2c3d4e5f6a7b8c"]
    main, sub = got
    assert main[1] is None and sub[1] == main_id
    assert main[2] == "Cache the weather forecast"          # custom-title wins over the first prompt
    assert main[3] == "/home/demo/weather-app" and main[4] == "feature/cache"
    assert main[5] == "claude-sonnet-4-5" and sub[5] == "claude-haiku-4-5"
    assert sub[2] == "Find cache helpers"                  # the subagent's .meta.json description
    calls = rows(db, "select tool_name, is_error, output_text is not null from tool_calls "
                     "where session_id = ? order by line_no", [main_id])
    assert calls == [("Read", False, True), ("Edit", False, True), ("Bash", True, True), ("Task", False, True)]
    kinds = rows(db, "select kind, count(*) from messages where session_id = ? group by 1 order by 1", [main_id])
    assert dict(kinds) == {"prompt": 2, "response": 2, "thinking": 1, "tool_result": 4, "tool_use": 4}
    ts_type = scalar(db, "select data_type from duckdb_columns() where table_name = 'messages' and column_name = 'timestamp'")
    assert ts_type == "TIMESTAMP"


def story(sid="s1"):
    return [
        user("u1", None, "Add retries to the client", "2026-05-01T10:00:00.000Z", sid),
        assistant("a1", "u1", "Looking", "2026-05-01T10:00:01.000Z", sid, tool=("toolu_1", "Bash", {"command": "ls"})),
        tool_result("r1", "a1", "toolu_1", "client.py", "2026-05-01T10:00:02.000Z", sid),
        assistant("a2", "r1", "Done.", "2026-05-01T10:00:03.000Z", sid),
    ]


def make_store(tmp_path: Path, records, name="s1", **kw) -> tuple[Path, Path]:
    root = tmp_path / "claude"
    f = root / "projects" / "-work-app" / f"{name}.jsonl"
    write_jsonl(f, records, **kw)
    return root, f


def test_append_adds_exactly_the_new_lines(tmp_path):
    root, f = make_store(tmp_path, story())
    db = tmp_path / "w.duckdb"
    assert run(db, root).records_added == 4
    with open(f, "a") as fh:
        fh.write(json.dumps(user("u2", "a2", "Also log them", "2026-05-01T10:01:00.000Z")) + "\n")
        fh.write(json.dumps(assistant("a3", "u2", "Logged.", "2026-05-01T10:01:01.000Z")) + "\n")
    s = run(db, root)
    assert (s.files_changed, s.records_added) == (1, 2)
    got = rows(db, "select line_no, message_id from stg_records order by line_no")
    assert [r[0] for r in got] == [1, 2, 3, 4, 5, 6]
    assert got[4][1] == uid("u2") and len({r[1] for r in got}) == 6
    offsets = rows(db, "select byte_offset, raw from stg_records order by line_no")
    data = f.read_bytes()
    for off, raw in offsets:
        assert data[off:off + len(raw.encode())].decode() == raw


def test_rewritten_file_replaces_its_rows(tmp_path):
    root, f = make_store(tmp_path, story())
    db = tmp_path / "w.duckdb"
    run(db, root)
    write_jsonl(f, story()[:2])                      # shorter, different content: a rewrite
    s = run(db, root)
    assert s.files_changed == 1
    assert scalar(db, "select count(*) from stg_records") == 2
    assert scalar(db, "select count(*) from messages") == 2
    assert scalar(db, "select max(file_epoch) from lake_records") == 2


def test_watermarks_of_appended_rewritten_touched_and_gone_files_in_one_run(tmp_path):
    """The state rows of several files changed in different ways by one run are written
    together; each file's row must still get its own values."""
    root = tmp_path / "claude"
    files = {n: make_store(tmp_path, story(n), name=n)[1] for n in ("grow", "redo", "touch", "drop", "same")}
    db = tmp_path / "w.duckdb"
    assert run(db, root).records_added == 20
    with open(files["grow"], "a") as fh:
        fh.write(json.dumps(user("u9", "a2", "One more", "2026-05-01T10:02:00.000Z", "grow")) + "\n")
    write_jsonl(files["redo"], story("redo")[:2])            # shorter, different: a rewrite
    st = files["touch"].stat()
    os.utime(files["touch"], ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    files["drop"].unlink()
    s = run(db, root)
    assert s.records_added == 3
    got = {Path(p).stem: r for p, *r in rows(
        db, 'select path, records, epoch, "offset", size, lines_read, gone, mtime_ns from source_files')}
    assert {k: v[:6] for k, v in got.items()} == {
        "grow": [5, 1, files["grow"].stat().st_size, files["grow"].stat().st_size, 5, False],
        "redo": [2, 2, files["redo"].stat().st_size, files["redo"].stat().st_size, 2, False],
        "touch": [4, 1, st.st_size, st.st_size, 4, False],
        "drop": [4, 1, got["drop"][2], got["drop"][3], 4, True],
        "same": [4, 1, files["same"].stat().st_size, files["same"].stat().st_size, 4, False],
    }
    assert got["touch"][6] == st.st_mtime_ns + 5_000_000_000
    # a deleted transcript's rows stay in the archive
    assert (run(db, root).files_changed, scalar(db, "select count(*) from stg_records")) == (0, 19)


def test_bad_lines_are_quarantined_and_the_rest_loads(tmp_path):
    recs = story()
    lines = [json.dumps(r) for r in recs]
    root = tmp_path / "claude"
    f = root / "projects" / "-work-app" / "s1.jsonl"
    f.parent.mkdir(parents=True)
    body = (lines[0] + "\n" + "this is not json\n" + lines[1] + "\n").encode()
    body += b'{"type": "user", "message": {"content": "caf\xe9"}}\n'        # latin-1, not UTF-8
    body += (lines[2] + "\n" + "[1, 2, 3]\n" + lines[3] + "\n").encode()
    body += lines[3][: len(lines[3]) // 2].encode()                          # cut mid-write
    f.write_bytes(body)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert s.records_added == 4
    got = rows(db, "select line_no, reason from quarantine order by line_no")
    assert got == [(2, "invalid_json"), (4, "invalid_utf8"), (6, "not_object"), (8, "truncated_tail")]
    raw = rows(db, "select raw_bytes from lake_quarantine where reason = 'invalid_utf8'")[0][0]
    assert b"caf\xe9" in raw
    # the agent finishes the line: it loads, and the pending tail leaves quarantine
    with open(f, "ab") as fh:
        fh.write(lines[3][len(lines[3]) // 2:].encode() + b"\n")
    s = run(db, root)
    assert s.records_added == 1
    assert rows(db, "select reason from quarantine where reason = 'truncated_tail'") == []
    assert scalar(db, "select count(*) from stg_records") == 5


def test_malformed_lines_that_open_like_objects_are_quarantined(tmp_path):
    """Lines starting with '{' skip the up-front check (the parse itself fails on them), so a
    broken one must still be found, quarantined, and cost no other line of its batch."""
    recs = story()
    lines = [json.dumps(r) for r in recs]
    broken = [lines[1][: len(lines[1]) // 2], lines[2] + ' {"type": "user"}', '{"type": "user", "x": tru}']
    root = tmp_path / "claude"
    f = root / "projects" / "-work-app" / "s1.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("\n".join([lines[0], broken[0], lines[1], broken[1], lines[2], broken[2], lines[3]]) + "\n")
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert s.records_added == 4
    assert rows(db, "select line_no, reason from quarantine order by line_no") == [
        (2, "invalid_json"), (4, "invalid_json"), (6, "invalid_json")]
    assert rows(db, "select line_no from stg_records order by line_no") == [(1,), (3,), (5,), (7,)]


def test_a_query_that_skips_a_line_sends_the_batch_to_the_checked_path(tmp_path, monkeypatch):
    """The unchecked path trusts the records SQL to fail on a malformed line; one that
    skipped it instead would lose the line silently, so a missing row reruns the batch with
    every line checked."""
    from convarch import sql
    from convarch.etl import load

    real = sql.read

    def skipping(name):
        text = real(name)
        if name == claude_code.EXTRACT.records:
            # the same query, over only the lines it can parse: a broken one would vanish
            text = text.replace("from lines as l", "from (select * from lines where json_valid(line)) as l")
            assert "json_valid(line)) as l" in text
        return text

    monkeypatch.setattr(load.sql, "read", skipping)
    recs = story()
    lines = [json.dumps(r) for r in recs]
    root = tmp_path / "claude"
    f = root / "projects" / "-work-app" / "s1.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("\n".join([lines[0], lines[1][:-3], lines[1], lines[2], lines[3]]) + "\n")
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert s.records_added == 4
    assert rows(db, "select line_no, reason from quarantine order by line_no") == [(2, "invalid_json")]


def test_last_line_without_newline_but_complete_is_read(tmp_path):
    root, f = make_store(tmp_path, story(), trailing_newline=False)
    db = tmp_path / "w.duckdb"
    assert run(db, root).records_added == 4
    with open(f, "a") as fh:
        fh.write("\n" + json.dumps(user("u2", "a2", "more", "2026-05-01T10:01:00.000Z")) + "\n")
    s = run(db, root)
    assert (s.records_added, scalar(db, "select max(file_epoch) from stg_records")) == (1, 1)


def test_source_tree_untouched_and_snapshots_cleaned(tmp_path):
    shutil.copytree(DEMO, tmp_path / "store")
    root = tmp_path / "store"
    before = tree_fingerprint(root)
    db = tmp_path / "w.duckdb"
    run(db, root)
    run(db, root)
    assert tree_fingerprint(root) == before
    assert list((tmp_path / "w.d" / "tmp").iterdir()) == []


def test_symlinks_and_special_files_are_skipped_with_a_reason(tmp_path):
    root, f = make_store(tmp_path, story())
    outside = tmp_path / "secret.jsonl"
    write_jsonl(outside, story("x"))
    (f.parent / "link.jsonl").symlink_to(outside)
    os.mkfifo(f.parent / "pipe.jsonl")
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    reasons = dict(s.skipped)
    assert str(f.parent / "link.jsonl") in reasons and str(f.parent / "pipe.jsonl") in reasons
    assert scalar(db, "select count(distinct source_file) from stg_records") == 1


def test_warehouse_files_are_private(tmp_path):
    root, _ = make_store(tmp_path, story())
    db = tmp_path / "w" / "convarch.duckdb"
    run(db, root)
    assert oct(os.stat(db).st_mode & 0o777) == "0o600"
    data = tmp_path / "w" / "convarch.d"
    for dirpath, dirs, names in os.walk(data):
        assert os.stat(dirpath).st_mode & 0o077 == 0, dirpath
        for n in names:
            assert os.stat(Path(dirpath) / n).st_mode & 0o077 == 0, n


def test_moved_file_keeps_its_rows_and_copied_session_is_not_doubled(tmp_path):
    root, f = make_store(tmp_path, story())
    db = tmp_path / "w.duckdb"
    run(db, root)
    moved = f.parent.parent / "-work-archive" / f.name
    moved.parent.mkdir()
    f.rename(moved)                                   # same inode: a move
    s = run(db, root)
    assert s.records_added == 0
    assert scalar(db, "select count(*) from stg_records") == 4
    assert rows(db, "select distinct file_id from stg_records") == [(1,)]
    assert rows(db, "select path from source_files") == [(str(moved),)]
    # a copy under a new inode replacing the original (as a compressed archive would)
    copy = moved.parent / "copy" / f.name
    copy.parent.mkdir()
    copy.write_bytes(moved.read_bytes())
    moved.unlink()
    run(db, root)
    assert scalar(db, "select count(*) from stg_records") == 4
    assert scalar(db, "select count(*) from messages") == 4
    # the store prunes the session entirely: the archive keeps it
    copy.unlink()
    run(db, root)
    assert scalar(db, "select count(*) from sessions") == 1


def test_a_store_copied_to_another_disk_and_named_anew_counts_each_session_once(tmp_path):
    """A store moved to another disk (copied, then the old folder deleted) and named by its
    new root, as CLAUDE_CONFIG_DIR would name it: its files are new (new inodes), and the old
    ones, under no root looked at any more, were never found gone, so both counted. A file
    of a source looked at whole whose path no longer exists is gone, wherever it was."""
    old_root, f = make_store(tmp_path, story())
    write_jsonl(f.parent / "s2.jsonl", story("s2"))
    db = tmp_path / "w.duckdb"
    run(db, old_root)
    new_root = tmp_path / "other-disk" / "claude"
    shutil.copytree(old_root, new_root)             # new inodes, times kept
    shutil.rmtree(old_root)
    with open(new_root / "projects" / "-work-app" / "s1.jsonl", "a") as fh:
        fh.write(json.dumps(user("u9", "a2", "and then", "2026-05-02T09:00:00.000Z")) + "\n")
    s = run(db, new_root)
    assert s.records_added == 9
    assert rows(db, "select gone, count(*) from source_files group by 1 order by 1") == [(False, 2), (True, 2)]
    fresh = tmp_path / "fresh.duckdb"
    run(fresh, new_root)
    for q in ("select session_id, message_count, record_count from sessions order by 1",
              "select count(*) from messages", "select count(*) from tool_calls", "select count(*) from stg_records"):
        assert rows(db, q) == rows(fresh, q), q
    assert rows(db, "select session_id, message_count from sessions order by 1") == [("s1", 5), ("s2", 4)]


def test_a_new_transcript_given_a_deleted_ones_inode_is_a_new_file(tmp_path, monkeypatch):
    """File systems hand a deleted file's inode to the next file made. A new transcript under
    another name with the inode of one the store deleted is not that one moved: both sessions
    stay. The same inode with the same first bytes is still a move, appended on the way."""
    root, old = make_store(tmp_path, story("s1"))
    db = tmp_path / "w.duckdb"
    run(db, root)
    new = old.parent / "s2.jsonl"
    given = {new: os.stat(old).st_ino}                # the inode the file system gives it
    old.unlink()
    write_jsonl(new, story("s2"))
    hand_inodes(monkeypatch, given)
    s = run(db, root)
    assert s.records_added == 4
    assert rows(db, "select session_id from sessions order by 1") == [("s1",), ("s2",)]
    assert rows(db, "select file_id, gone from source_files order by 1") == [(1, True), (2, False)]
    assert scalar(db, "select count(*) from messages") == 8

    # the same inode beginning with the same bytes: s2 moved and appended to on the way
    moved = new.parent.parent / "-work-archive" / new.name
    moved.parent.mkdir()
    new.rename(moved)
    given[moved] = given.pop(new)
    with open(moved, "a") as fh:
        fh.write(json.dumps(user("u9", "a2", "and then", "2026-05-02T09:00:00.000Z", "s2")) + "\n")
    s = run(db, root)
    assert s.records_added == 1
    assert rows(db, "select file_id, path from source_files where not gone") == [(2, str(moved))]



def test_a_new_subagent_meta_given_a_deleted_ones_inode_and_first_bytes_is_a_new_file(tmp_path, monkeypatch):
    """A document is written out whole: beginning with the bytes of a deleted one (two
    subagents given the same long task) and holding its inode, it is still another file."""
    from convarch.etl import snapshot

    shutil.copytree(DEMO, tmp_path / "claude")
    root = tmp_path / "claude"
    folder = next(root.glob("projects/*/*/subagents"))
    old_meta = next(folder.glob("agent-*.meta.json"))
    task = "Search every module for cache helpers and list them with their callers. " * 80
    old_meta.write_text(json.dumps({"agentType": "general-purpose", "description": task + "First pass."}))
    db = tmp_path / "w.duckdb"
    run(db, root)
    inode = os.stat(old_meta).st_ino
    old_log = old_meta.with_name(old_meta.name.replace(".meta.json", ".jsonl"))
    new_log = folder / "agent-b0b0b0b0b0b0b0b0b.jsonl"
    new_log.write_text(old_log.read_text().replace("a1b2c3d4e5f6a7b8c", "b0b0b0b0b0b0b0b0b"))
    old_log.unlink()
    old_meta.unlink()
    new_meta = new_log.with_name(new_log.stem + ".meta.json")
    new_meta.write_text(json.dumps({"agentType": "general-purpose", "description": task + "Second pass, wider."}))
    head = json.dumps({"agentType": "general-purpose", "description": task}).encode()[:snapshot.HEAD_LEN]
    assert new_meta.read_bytes()[:snapshot.HEAD_LEN] == head and len(head) == snapshot.HEAD_LEN
    hand_inodes(monkeypatch, {new_meta: inode})
    run(db, root)
    assert rows(db, "select path, gone from source_files where path like '%.meta.json' order by file_id") == [
        (str(old_meta), True), (str(new_meta), False)]
    subs = rows(db, "select split_part(session_id, '/', 2), title from sessions "
                    "where parent_session_id is not null order by 1")
    assert subs == [("agent-a1b2c3d4e5f6a7b8c", task + "First pass."),
                    ("agent-b0b0b0b0b0b0b0b0b", task + "Second pass, wider.")]


def test_copies_in_resumed_sessions_count_once(tmp_path):
    root = tmp_path / "claude"
    base = story("s1")
    # Claude Code streams one record per content block: a second block of a1's API message
    block2 = dict(assistant("a1b", "a1", "more", "2026-05-01T10:00:01.500Z", "s1"))
    block2["message"] = dict(block2["message"], id="msg_a1")
    block2["requestId"] = "req_a1"
    write_jsonl(root / "projects" / "-work-app" / "s1.jsonl", base + [block2])
    # an old-style resume: a new session file that starts with copies of s1's records
    resumed = [dict(r, sessionId="s2") for r in base] + [
        user("u9", "a2", "continue", "2026-05-02T09:00:00.000Z", "s2"),
        assistant("a9", "u9", "done", "2026-05-02T09:00:01.000Z", "s2")]
    write_jsonl(root / "projects" / "-work-app" / "s2.jsonl", resumed)
    db = tmp_path / "w.duckdb"
    run(db, root)
    assert scalar(db, "select count(*) from messages") == 5 + 6
    got = dict(rows(db, "select message_id, copy_count from unique_messages"))
    assert len(got) == 7 and got[uid("u1")] == 2 and got[uid("u9")] == 1
    assert rows(db, "select session_id from unique_messages where message_id = ?", [uid("a2")]) == [("s1",)]
    # a1 is one API call written as two records and copied into s2: its tokens count once
    assert rows(db, "select count(*), sum(output_tokens) from usage where api_message_id = 'msg_a1'") == [(1, 5)]
    assert scalar(db, "select count(*) from usage") == 3          # msg_a1, msg_a2, msg_a9
    assert [r[0] for r in rows(db, "select message_id from chain_messages where session_id = 's2' order by seq")] == [
        uid(n) for n in ("u1", "a1", "r1", "a2", "u9", "a9")]


def test_a_tool_result_is_told_apart_from_a_string_that_reads_as_one(tmp_path):
    """A tool result's content is a string or a list of blocks. The records query reads it
    as text, so a string that is itself the JSON of a list (a command printing JSON) must not
    be taken for a list, wherever its block stands in the message."""
    listed = [{"type": "text", "text": "first part"}, {"type": "image", "source": {"media_type": "image/png", "data": "AAAA"}},
              {"type": "text", "text": "second part"}]
    printed = json.dumps(listed, separators=(",", ":"))
    outputs = {
        "c1": printed,                                        # a string that reads as a list
        "c2": listed,                                         # a list
        "c3": "[Request interrupted by user for tool use]",   # starts like a list, is not JSON
        "c4": 'tab\there, "quoted", caf\u00e9 \\ done\nnext line',
        "c5": "[1, 2, 3]",                                    # a JSON list that is a string
        "c6": [],
    }
    calls = [{"type": "tool_use", "id": c, "name": "Bash", "input": {"command": f"run {c}"}} for c in outputs]
    ask = user("u1", None, "go", "2026-05-01T10:00:00Z")
    call = assistant("a1", "u1", "", "2026-05-01T10:00:01Z")
    call["message"]["content"] = calls
    first = tool_result("r1", "a1", "c1", "", "2026-05-01T10:00:02Z")
    # the results, parallel: two lines, the string that reads as a list second in its line
    first["message"]["content"] = [{"type": "tool_result", "tool_use_id": c, "content": outputs[c]} for c in ("c2", "c1")]
    rest = tool_result("r2", "r1", "c3", "", "2026-05-01T10:00:03Z")
    rest["message"]["content"] = [{"type": "tool_result", "tool_use_id": c, "content": outputs[c]}
                                  for c in ("c3", "c4", "c5", "c6")]
    write_jsonl(tmp_path / "projects" / "p" / "s1.jsonl", [ask, call, first, rest])
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "projects")
    got = dict(rows(db, "select call_id, output_text from tool_calls"))
    assert got == {"c1": printed, "c2": "first part\nsecond part", "c3": outputs["c3"], "c4": outputs["c4"],
                   "c5": "[1, 2, 3]", "c6": ""}


def test_a_call_answered_twice_shows_its_last_result(tmp_path):
    """A result written again (a retried call, or two result blocks for one id in one line)
    leaves one tool_calls row, with the text written last."""
    ask = user("u1", None, "go", "2026-05-01T10:00:00Z")
    call = assistant("a1", "u1", "", "2026-05-01T10:00:01Z")
    call["message"]["content"] = [{"type": "tool_use", "id": c, "name": "Bash", "input": {"command": c}}
                                  for c in ("c1", "c2", "c3")]
    stale = tool_result("r1", "a1", "c1", "first try", "2026-05-01T10:00:02Z")
    both = tool_result("r2", "r1", "c2", "", "2026-05-01T10:00:03Z")
    both["message"]["content"] = [{"type": "tool_result", "tool_use_id": "c2", "content": text}
                                  for text in ("earlier block", "later block")]
    again = tool_result("r3", "r2", "c1", "second try", "2026-05-01T10:00:04Z", error=True)
    write_jsonl(tmp_path / "projects" / "p" / "s1.jsonl", [ask, call, stale, both, again])
    db = tmp_path / "w.duckdb"
    run(db, tmp_path / "projects")
    got = rows(db, "select call_id, output_text, is_error, has_result from tool_calls order by call_id")
    assert got == [("c1", "second try", True, True), ("c2", "later block", False, True), ("c3", None, False, False)]
    assert scalar(db, "select count(*) from tool_calls") == 3


def test_a_transcript_deleted_beside_a_shorter_copy_in_a_backup_keeps_what_only_it_had(tmp_path):
    """A backup of the store, read beside it to bring back what the store has since deleted:
    once the store deleted its transcript, the backup's older, shorter copy of that session
    stood in for it, and the message only the store had left every view. A deleted file
    gives way only to a file of its session holding at least as many records."""
    root, f = make_store(tmp_path, story())
    backup = tmp_path / "backup" / "claude"
    shutil.copytree(root, backup)
    with open(f, "a") as fh:                                                   # the store went on
        fh.write(json.dumps(user("u9", "a2", "and then", "2026-05-02T09:00:00.000Z")) + "\n")
    db = tmp_path / "w.duckdb"
    kept = tree_fingerprint(backup)
    run(db, root)
    run(db, backup)
    f.unlink()                                  # the store's cleanup
    left = tree_fingerprint(root)
    run(db, root)
    run(db, backup)
    assert (tree_fingerprint(root), tree_fingerprint(backup)) == (left, kept)
    assert rows(db, "select session_id, count(distinct message_id) from messages group by 1") == [("s1", 5)]
    assert rows(db, "select text from messages where message_id = ?", [uid("u9")]) == [("and then",)]
    assert scalar(db, "select count(*) from chain_messages where message_id = ?", [uid("u9")]) == 1


def test_a_subagent_transcript_deleted_beside_its_kept_meta_file_stays(tmp_path):
    """A subagent's .meta.json names the same session as its transcript; with the transcript
    deleted and the .meta.json left, the transcript gave way to it and the subagent's
    messages left the archive. A file beside it with fewer records holds something else."""
    root = tmp_path / "claude"
    shutil.copytree(DEMO, root)
    db = tmp_path / "w.duckdb"
    run(db, root)
    q = "select session_id, message_count, record_count from sessions where parent_session_id is not null"
    sub = rows(db, q)
    assert sub and sub[0][1] > 0
    next(root.rglob("agent-*.jsonl")).unlink()
    run(db, root)
    assert rows(db, q) == sub


def test_a_backup_read_beside_its_store_counts_each_session_once(tmp_path):
    """The same transcript in two stores (a backup read beside the store it came from, to
    bring back what the store deletes) counted twice: 9 messages for a session of 5. Copies
    of one file (the same session, folder, name and first 4 KB) count once, the one holding
    most records, deleted or not: the store's longer transcript, and still after the store
    deletes it."""
    def long_story(sid):
        first, *rest = story(sid)
        first["message"]["content"] = "Add retries to the client. " + "Context line. " * 400   # past 4 KB
        return [first, *rest]

    root, f = make_store(tmp_path, long_story("s1"))
    write_jsonl(f.parent / "s2.jsonl", long_story("s2"))
    backup = tmp_path / "backup" / "claude"
    shutil.copytree(root, backup)
    write_jsonl(backup / "projects" / "-work-app" / "s3.jsonl", long_story("s3"))   # gone from the store
    with open(f, "a") as fh:                                                         # the store went on
        fh.write(json.dumps(user("u9", "a2", "and then", "2026-05-02T09:00:00.000Z")) + "\n")
    db = tmp_path / "w.duckdb"
    run(db, root)
    run(db, backup)
    want = [("s1", 5), ("s2", 4), ("s3", 4)]
    counts = ("select count(*) from stg_records", "select count(*) from messages",
              "select count(*) from chain_messages", "select count(*) from tool_calls")
    assert rows(db, "select session_id, message_count from sessions order by 1") == want
    assert [scalar(db, q) for q in counts] == [13, 13, 13, 3]
    f.unlink()                                  # the store's cleanup
    (f.parent / "s2.jsonl").unlink()
    run(db, root)
    run(db, backup)
    assert rows(db, "select session_id, message_count from sessions order by 1") == want
    assert [scalar(db, q) for q in counts] == [13, 13, 13, 3]
    assert rows(db, "select text from chain_messages where message_id = ?", [uid("u9")]) == [("and then",)]


def test_a_short_transcript_backed_up_early_counts_once_beside_the_store_it_grew_in(tmp_path):
    """A backup taken while a transcript was short (under 4 KB) holds fewer bytes than the
    store's copy, which went on, so their first 4 KB differ; they are still copies of one file
    (the same session, folder and name) and count once: the store's, longer one. Of copies
    holding as many records, the one written last counts."""
    root, f = make_store(tmp_path, story("s1")[:2])
    assert f.stat().st_size < 4096
    backup = tmp_path / "backup" / "claude"
    shutil.copytree(root, backup)
    with open(f, "a") as fh:                                     # the store went on
        for rec in story("s1")[2:]:
            fh.write(json.dumps(rec) + "\n")
    write_jsonl(f.parent / "s2.jsonl", story("s2"))
    shutil.copy2(f.parent / "s2.jsonl", backup / "projects" / "-work-app" / "s2.jsonl")
    later = (f.parent / "s2.jsonl").stat().st_mtime + 60
    os.utime(f.parent / "s2.jsonl", (later, later))             # the store wrote it again since
    db = tmp_path / "w.duckdb"
    run(db, backup)
    run(db, root)
    assert rows(db, "select session_id, message_count from sessions order by 1") == [("s1", 4), ("s2", 4)]
    assert [scalar(db, q) for q in ("select count(*) from stg_records", "select count(*) from chain_messages",
                                    "select count(*) from tool_calls")] == [8, 8, 2]
    # the store's copy of s2, written last, is the one that counts
    assert rows(db, "select distinct source_file from stg_records where session_id = 's2'") == [
        (str(f.parent / "s2.jsonl"),)]
