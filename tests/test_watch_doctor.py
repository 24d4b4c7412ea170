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


# --- change notices -------------------------------------------------------------------------

import threading  # noqa: E402

import pytest  # noqa: E402

from convarch.cli.changes import StoreChanges  # noqa: E402


@pytest.fixture
def notices(tmp_path):
    changes = StoreChanges(ignore=(str(tmp_path / "store" / "ours") + os.sep,))
    if not changes.native:
        pytest.skip("no native file-system change notices on this platform")
    (tmp_path / "store" / "ours").mkdir(parents=True)
    (tmp_path / "store" / "a.jsonl").write_text('{"n": 1}\n')
    assert changes.watch([tmp_path / "store"]) == []
    time.sleep(0.2)                  # let the observer settle before anything happens
    yield changes, tmp_path / "store"
    changes.stop()


def test_a_write_wakes_the_wait_and_a_read_does_not(notices):
    changes, store = notices
    (store / "a.jsonl").read_bytes()                       # ingest's own snapshot reads
    (store / "ours" / "state.tmp").write_text("x")         # the warehouse's own writes
    assert changes.wait(interval=1.0, debounce=0.1, max_wait=5) is False
    with open(store / "a.jsonl", "a") as fh:
        fh.write('{"n": 2}\n')
    t = time.monotonic()
    assert changes.wait(interval=30, debounce=0.1, max_wait=5) is True
    assert time.monotonic() - t < 10                      # woken by the notice, not the poll
    changes.seen()
    assert changes.wait(interval=0.5, debounce=0.1, max_wait=5) is False


def test_a_store_that_never_goes_quiet_is_looked_at_within_max_wait(notices):
    changes, store = notices
    stop = threading.Event()

    def writer():
        with open(store / "a.jsonl", "a") as fh:
            while not stop.is_set():
                fh.write('{"n": 3}\n')
                fh.flush()
                time.sleep(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert changes.wait(interval=30, debounce=5, max_wait=0.5) is True
        assert thread.is_alive()                           # still writing: debounce never ended
    finally:
        stop.set()
        thread.join()


def test_watch_picks_up_an_append_without_waiting_for_the_interval(tmp_path, isolated_home):
    shutil.copytree(DEMO, isolated_home / ".claude")
    db = str(tmp_path / "w.duckdb")
    main = next((isolated_home / ".claude" / "projects").glob("*/*.jsonl"))
    last = main.read_text().splitlines()[-1]

    def append_later():
        time.sleep(3)
        with open(main, "a") as fh:
            fh.write(last.replace('"uuid":"', '"uuid":"x-', 1) + "\n")

    thread = threading.Thread(target=append_later)
    t = time.monotonic()
    thread.start()
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "2", "--interval", "120", "--debounce", "0.2"])
    thread.join()
    assert r.exit_code == 0, r.output
    assert time.monotonic() - t < 60, "the second run waited for the poll, not the change notice"
    assert "3 files changed" in r.output and "1 files changed, 1 records added" in r.output
