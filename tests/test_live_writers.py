"""Ingest while agents write: whatever a run catches — half a transcript line, a history
truncated and half written out again, a commit in flight — it loads nothing half, quarantines
nothing, and once the writers stop, one more run leaves the warehouse reading exactly as a
fresh load of the final stores. The writers run in their own process (tests/agent_writers.py);
where they are when a run copies a store is up to the machine, so each run of this test
catches different moments, and every one of them must hold to this."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convarch.adapters import claude_code, cline, codex, copilot_cli, cursor, gemini_cli, goose, opencode
from convarch.etl import settled
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.look import Look
from convarch.cli.changes import StoreChanges
from conftest import REPO, contract_builder
from helpers import rows, scalar
from test_parallel_load import TABLES, snapshot_of
from test_whole_rewrites import TASK, goose_build, in_line_order

import agent_writers

opencode_build = contract_builder("opencode")

#: the half-written window: wide enough that a run held up between its copy and its check (a
#: loaded CI machine) still finds a torn copy recent
WINDOW = 2.0


def stores(tmp_path: Path) -> tuple[list, list[Path]]:
    """The six stores, each with something in it before the first run (so a fresh load
    plans the same files in the same order), and the roots to ingest."""
    claude_root = tmp_path / "claude"
    transcript = claude_root / "projects" / "-home-live-app" / f"{agent_writers.SESSION}.jsonl"
    transcript.parent.mkdir(parents=True)
    first = agent_writers.claude_record(10_000, None, random.Random(0))
    transcript.write_text(json.dumps(first) + "\n")
    cline_root = tmp_path / "cline"
    shutil.copytree(REPO / "fixtures" / "cline" / "contract", cline_root)
    history = cline_root / "tasks" / TASK / "api_conversation_history.json"
    goose_db = tmp_path / "goose" / "sessions" / "sessions.db"
    goose_build.write_db(goose_db, wal=True)
    opencode_db = tmp_path / "opencode" / "opencode.db"
    opencode_build.write_db(opencode_db, wal=True)
    cursor_home = tmp_path / "cursor"
    shutil.copytree(REPO / "fixtures" / "cursor" / "contract", cursor_home)
    cursor_db = cursor_home / ".config" / "Cursor" / "User" / "globalStorage" / "state.vscdb"
    gemini_home = tmp_path / "gemini"
    gemini_log = gemini_home / "tmp" / "live-app" / "chats" / "session-2026-12-01T11-00-7c1d2e3f.jsonl"
    gemini_log.parent.mkdir(parents=True)
    gemini_log.write_text(json.dumps({"sessionId": "7c1d2e3f-0a4b-4c5d-8e6f-9a0b1c2d3e4f", "projectHash": "live-app",
                                      "startTime": "2026-12-01T11:00:00.000Z", "kind": "main"}) + "\n")
    codex_home = tmp_path / "codex"
    rollout = codex_home / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T12-00-00-{CODEX_SESSION}.jsonl"
    rollout.parent.mkdir(parents=True)
    rollout.write_text(json.dumps({"timestamp": "2026-12-01T12:00:00.000Z", "type": "session_meta", "payload": {
        "id": CODEX_SESSION, "timestamp": "2026-12-01T12:00:00.000Z", "cwd": "/home/live/app",
        "originator": "codex_cli_rs", "cli_version": "0.128.0", "source": "cli", "model_provider": "openai"}}) + "\n")
    copilot_home = tmp_path / "copilot"
    copilot_session = copilot_home / "session-state" / agent_writers.COPILOT_SESSION
    copilot_session.mkdir(parents=True)
    (copilot_session / "events.jsonl").write_text(json.dumps({
        "type": "session.start", "data": {"sessionId": agent_writers.COPILOT_SESSION, "version": 1,
                                          "copilotVersion": "1.0.11", "selectedModel": "claude-sonnet-4.5",
                                          "context": {"cwd": "/home/live/app", "branch": "main"}},
        "id": "ev-start", "timestamp": "2026-12-01T13:00:00.000Z", "parentId": None}) + "\n")
    (copilot_session / "workspace.yaml").write_text(
        agent_writers.copilot_workspace("Started (end)", "2026-12-01T13:00:00.000Z"))
    roots = [(claude_code, claude_code.resolve_root(claude_root)), (cline, cline.resolve_root(cline_root)),
             (goose, goose.resolve_root(tmp_path / "goose")), (opencode, opencode.resolve_root(opencode_db.parent)),
             (cursor, cursor.resolve_root(cursor_home)), (gemini_cli, gemini_cli.resolve_root(gemini_home)),
             (codex, codex.resolve_root(codex_home)), (copilot_cli, copilot_cli.resolve_root(copilot_home))]
    return roots, [transcript, history, goose_db, opencode_db, cursor_db, gemini_log, rollout, copilot_session]


CODEX_SESSION = "3c9d7e21-5a4b-4f6c-9e8d-7b6a5c4d3e2f"
#: the Copilot session's summary as loaded: each one its writer wrote ends "(end)"
SUMMARY = "select text from stg_records where source = 'copilot_cli' and record_type = 'workspace'"


def agent_writers_summary(session: Path) -> str:
    return next(line[len("summary: "):] for line in (session / "workspace.yaml").read_text().splitlines()
                if line.startswith("summary: "))


#: a longer soak (about 40 runs while the writers work), with CONVARCH_SLOW=1
SLOW = [pytest.mark.slow, pytest.mark.skipif(os.environ.get("CONVARCH_SLOW") != "1", reason="a long soak: set CONVARCH_SLOW=1")]


class Notices:
    """Runs narrowed as `watch` narrows them (etl/look.py), by the file-system notices of the
    stores, but stricter: each run looks only at what was noticed since the run before, where
    watch keeps looking at every path noticed since its last full look."""

    def __init__(self, roots):
        self.changes = StoreChanges()
        if not self.changes.native:
            pytest.skip("no native file-system change notices on this platform")
        assert self.changes.watch(root for _, root in roots) == []
        self.unwatched = frozenset(str(root) for _, root in roots if not self.changes.watching(root))
        self.listings: dict = {}
        self.full = True

    def look(self) -> Look:
        noticed = self.changes.seen()
        look = Look(noticed.written, noticed.listed, self.unwatched, self.full or noticed.lost, self.listings)
        self.full = False
        return look


@pytest.mark.parametrize("seed, steps, narrowed", [(1, 160, False), (2, 160, False), (4, 160, True),
                                                    pytest.param(3, 2000, False, marks=SLOW),
                                                    pytest.param(5, 2000, True, marks=SLOW)])
def test_ingest_while_agents_write_loads_nothing_half(tmp_path, monkeypatch, seed, steps, narrowed):
    monkeypatch.setattr(settled, "WRITING_SECONDS", WINDOW)
    roots, paths = stores(tmp_path)
    transcript, history, goose_db, opencode_db, cursor_db, gemini_log, rollout, copilot_session = paths
    db = tmp_path / "w" / "convarch.duckdb"
    notices = Notices(roots) if narrowed else None
    time.sleep(0.2 if narrowed else 0)         # the observer settles before anything is written
    look = (lambda: notices.look()) if narrowed else (lambda: None)
    ingest(Layout(db), roots, look=look())
    writer = subprocess.Popen([sys.executable, str(Path(agent_writers.__file__)), *map(str, paths), str(steps), str(seed)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = deferred = 0
    try:
        while writer.poll() is None or runs == 0:
            s = ingest(Layout(db), roots, look=look())
            runs += 1
            deferred += sum("being written" in why for _, why in s.skipped)
            # a run mid-write sets aside nothing: a torn copy waits for the next run
            assert s.quarantined == 0, (runs, s.skipped)
            # (a transcript's incomplete last line is listed there as pending, and loads once whole)
            bad = "select * from quarantine where reason <> 'truncated_tail'"
            assert not rows(db, bad), rows(db, bad)
            # a document caught truncated or half written out is not loaded as it was then
            assert all(text.endswith("(end)") for (text,) in rows(db, SUMMARY)), rows(db, SUMMARY)
    finally:
        out, err = writer.communicate(timeout=60)
        if notices:
            time.sleep(WINDOW + 0.1)
            final = notices.look()
            notices.changes.stop()
    assert writer.returncode == 0 and out.strip() == str(steps), err
    if not notices:
        time.sleep(WINDOW + 0.1)
    s = ingest(Layout(db), roots, look=final if notices else None)
    if notices:               # the last run too looked only at what was noticed
        assert not final.full and s.files_scanned < sum(1 for a, r in roots for _ in a.discover(r))
    assert (s.quarantined, s.files_skipped) == (0, 0), s.skipped
    assert scalar(db, "select count(*) from quarantine") == 0
    fresh = tmp_path / "fresh" / "convarch.duckdb"
    ingest(Layout(fresh), roots)
    got, want = snapshot_of(db), snapshot_of(fresh)
    assert want["stg_records"] and not want["quarantine"]
    for view in TABLES:
        # lines kept where they were loaded keep their numbers: compare their order
        assert in_line_order(view, got[view]) == in_line_order(view, want[view]), (view, runs, deferred)
    # every message the writers wrote is there once
    n_cline = len(json.loads(history.read_bytes()))
    events = copilot_session / "events.jsonl"
    for path in (transcript, gemini_log, rollout, events):
        n = len(path.read_bytes().splitlines())
        assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(path)]) == n, path
    assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(history)]) == n_cline
    assert [text for (text,) in rows(db, SUMMARY)] == [agent_writers_summary(copilot_session)]
    print(f"{runs} runs while writing, {deferred} stores caught mid-write and read again later")
