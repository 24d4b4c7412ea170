"""Ingest while agents write: whatever a run catches — half a transcript line, a history
truncated and half written out again, a commit in flight — it loads nothing half, quarantines
nothing, and once the writers stop, one more run leaves the warehouse reading exactly as a
fresh load of the final stores. The writers run in their own process (tests/agent_writers.py);
where they are when a run copies a store is up to the machine, so each run of this test
catches different moments, and every one of them must hold to this."""
from __future__ import annotations

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convarch.adapters import claude_code, cline, cursor, gemini_cli, goose, opencode
from convarch.etl import settled
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.look import Look
from convarch.cli.changes import StoreChanges
from conftest import REPO
from helpers import rows, scalar
from test_parallel_load import TABLES, snapshot_of
from test_whole_rewrites import TASK, goose_build, in_line_order

import agent_writers

_spec = importlib.util.spec_from_file_location("opencode_build", REPO / "fixtures" / "opencode" / "build_contract.py")
opencode_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(opencode_build)

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
    roots = [(claude_code, claude_code.resolve_root(claude_root)), (cline, cline.resolve_root(cline_root)),
             (goose, goose.resolve_root(tmp_path / "goose")), (opencode, opencode.resolve_root(opencode_db.parent)),
             (cursor, cursor.resolve_root(cursor_home)), (gemini_cli, gemini_cli.resolve_root(gemini_home))]
    return roots, [transcript, history, goose_db, opencode_db, cursor_db, gemini_log]


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
    roots, (transcript, history, goose_db, opencode_db, cursor_db, gemini_log) = stores(tmp_path)
    db = tmp_path / "w" / "convarch.duckdb"
    notices = Notices(roots) if narrowed else None
    time.sleep(0.2 if narrowed else 0)         # the observer settles before anything is written
    look = (lambda: notices.look()) if narrowed else (lambda: None)
    ingest(Layout(db), roots, look=look())
    writer = subprocess.Popen([sys.executable, str(Path(agent_writers.__file__)), str(transcript), str(history),
                               str(goose_db), str(opencode_db), str(cursor_db), str(gemini_log), str(steps), str(seed)],
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
    n_claude = len(transcript.read_bytes().splitlines())
    n_cline = len(json.loads(history.read_bytes()))
    n_gemini = len(gemini_log.read_bytes().splitlines())       # a record a line of the op-log
    for path, n in ((transcript, n_claude), (history, n_cline), (gemini_log, n_gemini)):
        assert scalar(db, "select count(*) from stg_records where source_file = ?", [str(path)]) == n
    print(f"{runs} runs while writing, {deferred} stores caught mid-write and read again later")
