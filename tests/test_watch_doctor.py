"""watch keeps the warehouse current; doctor finds transcripts about to be deleted."""
from __future__ import annotations

import json
import os
import shutil
import time

from click.testing import CliRunner

from convarch.cli import cli
from convarch.cli import watch as watch_mod
from convarch.cli.watch import ReadBudget
from conftest import DEMO


def test_watch_runs_until_told_and_picks_up_changes(tmp_path, isolated_home):
    shutil.copytree(DEMO, isolated_home / ".claude")
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "2", "--interval", "0.5", "--debounce", "0",
                                 "--share", "1"])
    assert r.exit_code == 0, r.output
    assert "3 files changed" in r.output
    assert r.output.count("files changed") == 1          # the second look found nothing new
    r = CliRunner().invoke(cli, ["--db", db, "sql", "select count(*) as n from sessions", "--json"])
    assert json.loads(r.output) == [{"n": 2}]


def test_watch_loads_on_as_many_workers_as_told(tmp_path, isolated_home, monkeypatch):
    from convarch.etl import ingest as ingest_mod

    shutil.copytree(DEMO, isolated_home / ".claude")
    started: list[int] = []
    real = ingest_mod.Workers.__init__

    def counting(self, n, *args, **kwargs):
        started.append(n)
        real(self, n, *args, **kwargs)

    monkeypatch.setattr(ingest_mod.Workers, "__init__", counting)
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "1", "--workers", "3", "--debounce", "0"])
    assert r.exit_code == 0, r.output
    assert started == [3] and "3 files changed" in r.output


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


def test_doctor_says_whether_watch_can_be_told_of_every_change(tmp_path, isolated_home, monkeypatch):
    from convarch.cli import changes

    shutil.copytree(DEMO, isolated_home / ".claude")
    (isolated_home / ".claude" / "projects" / "-home-demo-other").mkdir()
    limit = tmp_path / "max_user_watches"
    limit.write_text("8192\n")
    monkeypatch.setattr(changes, "WATCH_LIMIT", limit)
    db = str(tmp_path / "w.duckdb")
    report = json.loads(CliRunner().invoke(cli, ["--db", db, "doctor", "--json"]).output)
    # projects/, its two project folders, the session's folder and its subagents/
    assert report["notices"] == {"native": changes.native_notices(), "folders": 5, "watch_limit": 8192}
    if not changes.native_notices():
        return
    text = CliRunner().invoke(cli, ["--db", db, "doctor"]).output
    assert "5 store folder(s) to watch, of at most 8,192" in text and "too many" not in text
    limit.write_text("4\n")
    text = CliRunner().invoke(cli, ["--db", db, "doctor"]).output
    assert "too many" in text and "raise fs.inotify.max_user_watches" in text


def test_doctor_with_every_store_gone_still_reports_the_archive(tmp_path, isolated_home):
    """A store deleted after it was archived (a cleanup, a reinstall): doctor says so and
    still shows the archive and the schedule, with exit code 0."""
    claude = isolated_home / ".claude"
    shutil.copytree(DEMO, claude)
    db = str(tmp_path / "w.duckdb")
    assert CliRunner().invoke(cli, ["--db", db, "ingest", "--all"]).exit_code == 0
    shutil.rmtree(claude)
    r = CliRunner().invoke(cli, ["--db", db, "doctor"])
    assert r.exit_code == 0, r.output
    assert "No agent store found" in r.output
    assert "Archive:" in r.output and "ingest --all" in r.output


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
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "2", "--interval", "120", "--debounce", "0.2",
                                 "--share", "0.5"])
    thread.join()
    assert r.exit_code == 0, r.output
    assert time.monotonic() - t < 60, "the second run waited for the poll, not the change notice"
    assert "3 files changed" in r.output and "1 files changed, 1 records added" in r.output


def test_a_store_slow_to_read_whole_is_read_again_at_most_a_share_of_the_time():
    budget = ReadBudget(share=0.1)
    said = budget.note({"/big/state.vscdb": 8.0, "/small/history.json": 0.2}, now=100.0)
    assert said == [("/big/state.vscdb", 8.0, 80.0)]            # said once, the cheap one never
    assert budget.deferred(150.0) == {"/big/state.vscdb"}
    assert budget.deferred(181.0) == set()                      # its time has come: read again
    assert budget.note({"/big/state.vscdb": 6.0}, now=185.0) == []
    assert budget.deferred(240.0) == {"/big/state.vscdb"} and budget.deferred(246.0) == set()
    budget.note({"/big/state.vscdb": 0.3}, now=300.0)           # cheap now: never put off
    assert budget.deferred(300.5) == set()


def test_a_run_is_followed_by_a_rest_so_running_takes_at_most_a_share_of_the_time():
    assert watch_mod.rest_after(0.7, 0.1, 20.0) == pytest.approx(6.3)
    assert watch_mod.rest_after(0.5, 0.25, 20.0) == pytest.approx(1.5)
    assert watch_mod.rest_after(5.0, 0.1, 20.0) == 20.0                # never past --max-wait
    assert watch_mod.rest_after(3.0, 1.0, 20.0) == 0.0


def test_watch_rests_after_each_run(tmp_path, isolated_home, monkeypatch):
    shutil.copytree(DEMO, isolated_home / ".claude")
    spans: list[tuple[float, float]] = []
    real = watch_mod.run_ingest

    def slow(*args, **kwargs):
        t = time.monotonic()
        s = real(*args, **kwargs)
        time.sleep(max(0.0, 0.5 - (time.monotonic() - t)))        # every run takes at least 0.5 s
        spans.append((t, time.monotonic()))
        return s

    monkeypatch.setattr(watch_mod, "run_ingest", slow)
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "3", "--interval", "0.5", "--debounce", "0",
                                 "--share", "0.25", "--max-wait", "5"])
    assert r.exit_code == 0, r.output
    for (start, end), (nxt, _) in zip(spans, spans[1:]):
        assert nxt - end >= 3 * (end - start) - 0.05, spans      # a run of t rests 3t at a share of 1/4


def watch_twice(tmp_path, monkeypatch, after_run) -> tuple[str, list[set[str]], str]:
    """Two watch runs, `after_run(run number, summary)` called on each run's summary; gives
    the output, the paths each run was told to put off, and the warehouse."""
    calls: list[set[str]] = []
    real = watch_mod.run_ingest

    def wrapped(*args, **kwargs):
        calls.append(set(kwargs.get("defer") or ()))
        s = real(*args, **kwargs)
        after_run(len(calls), s)
        return s

    monkeypatch.setattr(watch_mod, "run_ingest", wrapped)
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "watch", "--runs", "2", "--interval", "0.5", "--debounce", "0",
                                 "--share", "0.5"])
    assert r.exit_code == 0, r.output
    return r.output, calls, db


def test_watch_puts_off_a_store_slow_to_read_and_says_so(tmp_path, isolated_home, monkeypatch):
    shutil.copytree(DEMO, isolated_home / ".claude")
    output, calls, _ = watch_twice(tmp_path, monkeypatch,
                                   lambda n, s: s.read_seconds.__setitem__("/store/state.vscdb", 30.0))
    assert calls == [set(), {"/store/state.vscdb"}]
    assert "/store/state.vscdb takes 30.0 s to read whole" in output and "at most every 60 s" in output


def test_a_long_transcripts_chain_rebuild_counts_as_its_read_and_puts_it_off(tmp_path, isolated_home, monkeypatch):
    """A transcript whose chains took long to rebuild is spaced out like a store read whole:
    the next run leaves its appended lines for later, and a run after its time loads them all."""
    shutil.copytree(DEMO, isolated_home / ".claude")
    transcript = next(p for p in (isolated_home / ".claude" / "projects").rglob("*.jsonl") if "subagents" not in p.parts)
    costs = []

    def slow_chains(n, s):
        costs.append(dict(s.chain_seconds_by_file))
        if n == 1:
            s.chain_seconds_by_file[str(transcript)] = 30.0       # as a 600,000-record session's
            last = [r for r in map(json.loads, transcript.read_text().splitlines()) if r.get("type") == "user"][-1]
            with open(transcript, "a") as fh:
                fh.write(json.dumps({**last, "uuid": "appended-1", "parentUuid": last["uuid"]}) + "\n")

    output, calls, db = watch_twice(tmp_path, monkeypatch, slow_chains)
    assert str(transcript) in costs[0] and all(secs > 0 for secs in costs[0].values())   # every changed transcript
    assert calls == [set(), {str(transcript)}]
    assert f"{transcript} takes 30.0 s to pick up, as its chains are rebuilt whole" in output
    assert "at most every 60 s" in output
    count = ["--db", db, "sql", "select count(*) as n from messages where message_id = 'appended-1'", "--json"]
    assert json.loads(CliRunner().invoke(cli, count).output) == [{"n": 0}]       # put off, not lost
    r = CliRunner().invoke(cli, ["--db", db, "ingest", "claude-code", "--root", str(isolated_home / ".claude"), "--json"])
    assert json.loads(r.output)["records_added"] == 1
    assert json.loads(CliRunner().invoke(cli, count).output) == [{"n": 1}]


def test_pick_up_cost_adds_a_files_chain_rebuild_to_its_read():
    from convarch.etl.summary import Summary

    s = Summary(read_seconds={"/a/store.json": 2.0}, chain_seconds_by_file={"/a/store.json": 1.0, "/b/t.jsonl": 4.0})
    assert watch_mod.pick_up_seconds(s) == {"/a/store.json": 3.0, "/b/t.jsonl": 4.0}


# --- the schedule lines ---------------------------------------------------------------------

def test_the_printed_cron_line_runs_as_cron_would_run_it(tmp_path, isolated_home, monkeypatch):
    """Paths with spaces, quotes and a percent sign, and the store location the user set in
    the environment, survive cron's /bin/sh with a bare environment."""
    import subprocess

    place = tmp_path / "we ird" / "it's 100%"
    claude = place / "claude config"
    shutil.copytree(DEMO, claude)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    db = place / "ware house.duckdb"
    report = json.loads(CliRunner().invoke(cli, ["--db", str(db), "doctor", "--json"]).output)
    cron = report["schedule"]["cron"]
    assert cron.startswith("*/30 * * * * ")
    # cron turns an unescaped % into a newline and hands the rest to /bin/sh
    line = cron[len("*/30 * * * * "):]
    assert "%" not in line.replace("\\%", "")
    bare = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["/bin/sh", "-c", line.replace("\\%", "%")], env=bare, timeout=120)
    assert done.returncode == 0
    r = CliRunner().invoke(cli, ["--db", str(db), "sessions", "--json"])
    assert r.exit_code == 0 and len(json.loads(r.output)) == 2      # the store CLAUDE_CONFIG_DIR names
    service = report["schedule"]["systemd_service"]
    assert f'Environment="CLAUDE_CONFIG_DIR={str(claude).replace("%", "%%")}"' in service.replace("\\'", "'")
    assert f'--db "{str(db).replace("%", "%%")}" ingest --all' in service
