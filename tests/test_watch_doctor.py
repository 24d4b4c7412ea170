"""watch keeps the warehouse current; doctor finds transcripts about to be deleted."""
from __future__ import annotations

import json
import os
import shutil
import time

from click.testing import CliRunner

from convarch.cli import cli
from conftest import DEMO


def test_watch_runs_until_told_and_picks_up_changes(tmp_path, isolated_home):
    shutil.copytree(DEMO, isolated_home / ".claude")
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "2", "--interval", "0.5", "--debounce", "0"])
    assert r.exit_code == 0, r.output
    assert "3 files changed" in r.output
    assert r.output.count("files changed") == 1          # the second look found nothing new
    r = CliRunner().invoke(cli, ["--db", db, "sql", "select count(*) as n from sessions", "--json"])
    assert json.loads(r.output) == [{"n": 2}]


def test_doctor_reports_transcripts_due_for_deletion(tmp_path, isolated_home):
    claude = isolated_home / ".claude"
    shutil.copytree(DEMO, claude)
    (claude / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 10}))
    old = time.time() - 9 * 86400
    main = next((claude / "projects").glob("*/*.jsonl"))
    os.utime(main, (old, old))
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "doctor", "--json"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.output)
    entry = next(e for e in report["sources"] if e["source"] == "claude_code")
    assert (entry["cleanup_period_days"], entry["deleted_within_horizon_and_not_archived"]) == (10, 1)
    assert "ingest --all" in report["schedule"]["cron"]
    CliRunner().invoke(cli, ["--db", db, "ingest", "--all"])
    report = json.loads(CliRunner().invoke(cli, ["--db", db, "doctor", "--json"]).output)
    entry = next(e for e in report["sources"] if e["source"] == "claude_code")
    assert (entry["not_yet_archived"], entry["deleted_within_horizon_and_not_archived"]) == (0, 0)
    text = CliRunner().invoke(cli, ["--db", db, "doctor"]).output
    assert "deletes transcripts after 10 days" in text
