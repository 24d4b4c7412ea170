"""The sessions table is combined from each run's per-file facts (session parts): it must say
exactly what one aggregate over every current record says, across sources, runs that append
to a file, rewrites and loading batches, and an archive loaded before parts existed gets them
once."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from convarch import adapters
from convarch.adapters import claude_code
from convarch.etl import extract as extract_mod
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.state import open_state
from conftest import write_jsonl
from helpers import assistant, rows, user
from test_adapter_contract import fixture_root
from test_reliability import corpus

#: What the metadata view said when it read every metadata record: part of the oracle.
DIRECT_METADATA = """
with metadata as (
    select source, session_id, record_type, file_id, line_no, json(metadata_raw) as j, text
    from stg_records
    where kind = 'metadata'
),
last_values as (
    select
        source, session_id,
        arg_max(j ->> 'customTitle', (file_id, line_no)) filter (record_type = 'custom-title') as custom_title,
        arg_max(j ->> 'aiTitle', (file_id, line_no)) filter (record_type = 'ai-title') as ai_title,
        arg_max(j ->> 'summary', (file_id, line_no)) filter (record_type = 'summary') as summary,
        arg_max(j ->> 'tag', (file_id, line_no)) filter (record_type = 'tag') as tag,
        arg_max(j ->> 'agentName', (file_id, line_no)) filter (record_type = 'agent-name') as agent_name,
        arg_max(j ->> 'mode', (file_id, line_no)) filter (record_type = 'mode') as mode,
        arg_max(j ->> 'prUrl', (file_id, line_no)) filter (record_type = 'pr-link') as pr_url,
        arg_max(j -> 'worktreeSession', (file_id, line_no)) filter (record_type = 'worktree-state') as worktree_state,
        arg_max(j ->> 'lastPrompt', (file_id, line_no)) filter (record_type = 'last-prompt') as last_prompt,
        arg_max(j ->> 'agentType', (file_id, line_no)) filter (record_type = 'agent-meta') as agent_type,
        arg_max(j ->> 'description', (file_id, line_no)) filter (record_type = 'agent-meta') as agent_description,
        -- a label OpenClaw keeps beside the transcript only where the transcript names none
        arg_max(nullif(trim(text), ''), (file_id, record_type not in ('session_window', 'session_node')
                                         or source <> 'openclaw', line_no))
            filter (source <> 'claude_code' and nullif(trim(text), '') is not null) as source_title
    from metadata
    group by source, session_id
)
select
    source, session_id, nullif(custom_title, '') as custom_title, nullif(ai_title, '') as ai_title,
    nullif(summary, '') as summary, nullif(tag, '') as tag, nullif(agent_name, '') as agent_name, mode, pr_url,
    worktree_state, last_prompt, agent_type, nullif(agent_description, '') as agent_description, source_title
from last_values
"""

#: What the sessions table held when it aggregated every record at publish: the oracle.
DIRECT = f"""
with facts as (
    select
        source, session_id,
        any_value(parent_session_id) filter (parent_session_id is not null) as parent_session_id,
        arg_max(cwd, (coalesce("timestamp", timestamp '1970-01-01'), line_no)) filter (cwd is not null) as cwd,
        arg_max(git_branch, (coalesce("timestamp", timestamp '1970-01-01'), line_no))
            filter (git_branch is not null and git_branch <> '') as git_branch,
        arg_max(model, (coalesce("timestamp", timestamp '1970-01-01'), line_no))
            filter (model is not null and model <> '<synthetic>') as model,
        arg_max(version, line_no) filter (version is not null) as agent_version,
        min("timestamp") as started_at,
        max("timestamp") as ended_at,
        arg_min(text, (coalesce("timestamp", timestamp '9999-12-31'), line_no))
            filter (kind = 'prompt' and harness_kind is null and text is not null) as first_prompt,
        count(*) as record_count,
        count(*) filter (role is not null) as message_count
    from stg_records
    group by source, session_id
)
select
    f.source, f.session_id,
    coalesce(m.custom_title, m.ai_title, m.summary, m.agent_description, m.source_title,
             left(regexp_replace(trim(f.first_prompt), '\\s+', ' ', 'g'), 100)) as title,
    f.cwd, f.git_branch, f.model, f.started_at, f.ended_at, f.message_count, f.parent_session_id,
    f.agent_version, f.record_count, m.tag, m.agent_name, m.agent_type
from facts as f
left join ({DIRECT_METADATA}) as m using (source, session_id)
order by all
"""
STORED = """
select source, session_id, title, cwd, git_branch, model, started_at, ended_at, message_count,
       parent_session_id, agent_version, record_count, tag, agent_name, agent_type
from sessions
order by all
"""


def same_as_direct(db: Path) -> list[tuple]:
    stored = rows(db, STORED)
    assert stored == rows(db, DIRECT)
    assert rows(db, "select * from int_session_metadata order by all") == \
        rows(db, f"select * from ({DIRECT_METADATA}) order by all")
    return stored


def ingest_in_runs(tmp_path: Path, recs: list[dict], per_run: int) -> Path:
    """Write a Claude Code transcript `per_run` records at a time, ingesting after each."""
    path = tmp_path / "home" / ".claude" / "projects" / "-a" / "s1.jsonl"
    db = tmp_path / "w" / "w.duckdb"
    for i in range(0, len(recs), per_run):
        write_jsonl(path, recs[: i + per_run])
        ingest(Layout(db), [(claude_code, claude_code.resolve_root(path.parents[2]))], workers=1)
    runs = -(-len(recs) // per_run)
    assert rows(db, "select count(*) from lake_session_parts where source <> '_schema'") == [(runs,)]
    return db


def test_every_source_gets_the_sessions_one_aggregate_gives(tmp_path):
    db = tmp_path / "w" / "w.duckdb"
    for name in sorted(adapters.ADAPTERS):
        adapter = adapters.ADAPTERS[name]
        ingest(Layout(db), [(adapter, adapter.resolve_root(fixture_root(name)))], workers=2)
    stored = same_as_direct(db)
    assert len({s for s, *_ in stored}) >= len(adapters.ADAPTERS) - 2      # (two keep no sessions in fixtures)
    assert any(r[2] for r in stored) and any(r[3] for r in stored)


def test_appends_and_rewrites_combine_to_the_same_sessions(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=10, seed=5)
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 8 << 10)    # many loading batches
    db = tmp_path / "w" / "w.duckdb"
    target = [(claude_code, claude_code.resolve_root(root))]
    ingest(Layout(db), target, workers=2)
    before = same_as_direct(db)

    files = sorted((root / "projects").rglob("*.jsonl"))
    for f in files[:3]:                                                # appends: a second part each
        with open(f, "ab") as fh:
            fh.write(f.read_bytes().splitlines(keepends=True)[-1])
    shutil.copy(files[5], files[4])                                    # a rewrite: a new epoch
    ingest(Layout(db), target, workers=2)
    after = same_as_direct(db)
    assert after != before
    assert rows(db, "select count(*) from (select file_id from lake_session_parts where source <> '_schema' "
                    "group by file_id, file_epoch having count(*) > 1)") == [(3,)]


def test_an_archive_loaded_before_parts_existed_gets_them_from_its_records(tmp_path):
    root = tmp_path / "home" / ".claude"
    corpus(root / "projects", files=6, seed=9)
    db = tmp_path / "w" / "w.duckdb"
    layout = Layout(db)
    target = [(claude_code, claude_code.resolve_root(root))]
    ingest(layout, target, workers=2)
    expected = same_as_direct(db)
    assert expected
    # what an older version left: records, no parts
    state = open_state(layout.state_db)
    for (path,) in state.execute("select path from data_files where table_name = 'session_parts'").fetchall():
        (layout.lake / path).unlink()
    state.execute("delete from data_files where table_name = 'session_parts'")
    state.close()

    s = ingest(layout, target, workers=2)                   # nothing changed in the store
    assert s.files_changed == 0
    assert same_as_direct(db) == expected
    again = ingest(layout, target, workers=2)               # done once, not every run
    assert again.files_changed == 0
    assert rows(db, "select count(*) from lake_session_parts where source <> '_schema'") == \
        rows(db, "select count(distinct (file_id, session_id)) from stg_records")


@pytest.mark.parametrize("per_run", [1, 2, 6], ids=["a record a run", "two a run", "one run"])
def test_latest_and_first_values_are_chosen_as_over_all_records(tmp_path, per_run):
    """Values change along the session and line order disagrees with time: the latest cwd,
    branch, model and version and the first prompt must be the ones one pass over all records
    picks, not the greatest, least or last written of some run."""
    recs = [
        user("p0", None, "  written   later,  yet the earliest  ", "2026-01-01T10:00:05Z"),   # first by time: line 3
        user("p1", "p0", "the prompt written first", "2026-01-01T10:00:09Z"),
        user("p2", "p1", "a" * 400, "2026-01-01T10:00:07Z"),
    ]
    recs = [recs[1], recs[2], recs[0]]
    for i, (cwd, branch, model, version, ts) in enumerate([
        ("/a/first", "alpha", "claude-a", "1.0.0", "2026-01-01T10:01:00Z"),
        ("/c/middle", "gamma", "claude-c", "3.0.0", "2026-01-01T10:05:00Z"),    # latest by time
        ("/b/last-line", "beta", "claude-b", "2.0.0", "2026-01-01T10:02:00Z"),  # last line, not latest
    ]):
        a = assistant(f"a{i}", "p0", "reply " + "y" * 300, ts)
        a["cwd"], a["gitBranch"], a["version"], a["message"]["model"] = cwd, branch, version, model
        recs.append(a)
    db = ingest_in_runs(tmp_path, recs, per_run)
    [row] = same_as_direct(db)
    source, sid, title, cwd, branch, model, started, ended, messages, parent, version, records, *_ = row
    assert (cwd, branch, model) == ("/c/middle", "gamma", "claude-c")
    assert version == "2.0.0"                          # the version is the last line's that names one
    assert title == "written later, yet the earliest"
    assert (messages, records) == (6, 6)


@pytest.mark.parametrize("per_run", [3, 100], ids=["three a run", "one run"])
def test_every_kind_of_metadata_is_the_last_one_written(tmp_path, per_run):
    """Each metadata kind keeps the last value written, whichever run loaded it and however
    many of its kind a run holds; an empty string written last clears it; a record that
    lacks its field sets nothing."""
    meta = [
        {"type": "custom-title", "customTitle": "first name"},
        {"type": "tag", "tag": "old-tag"},
        {"type": "ai-title", "aiTitle": "what the agent called it"},
        {"type": "summary", "summary": "a summary", "leafUuid": "x"},
        {"type": "custom-title", "customTitle": "second name"},
        {"type": "agent-name", "agentName": "builder"},
        {"type": "mode", "mode": "plan"},
        {"type": "pr-link", "prUrl": "https://example.invalid/pr/1"},
        {"type": "worktree-state", "worktreeSession": {"path": "/tmp/wt", "branch": "feature"}},
        {"type": "last-prompt", "lastPrompt": "go on"},
        {"type": "tag", "tag": "new-tag"},
        {"type": "ai-title"},                                   # sets nothing
        {"type": "summary", "summary": "", "leafUuid": "y"},    # clears
    ]
    recs = [user("p0", None, "hello", "2026-01-01T10:00:00Z")]
    for i, m in enumerate(meta):
        recs.append({**m, "sessionId": "s1"})
        recs.append(assistant(f"a{i}", "p0", "z" * 200, f"2026-01-01T10:0{i % 10}:30Z"))
    db = ingest_in_runs(tmp_path, recs, per_run)
    same_as_direct(db)
    got = rows(db, "select custom_title, ai_title, summary, tag, agent_name, mode, pr_url, "
                   "worktree_state ->> 'branch', last_prompt from int_session_metadata")
    assert got == [("second name", "what the agent called it", None, "new-tag", "builder", "plan",
                    "https://example.invalid/pr/1", "feature", "go on")]
    assert rows(db, "select title, tag, agent_name from sessions") == [("second name", "new-tag", "builder")]
