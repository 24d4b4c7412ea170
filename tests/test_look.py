"""A pick-up under `watch` looks only at the paths change notices named (etl/look.py): what a
notice did not name waits for the next full look, and nothing named is missed."""
from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from watchdog.events import EventsLostEvent

from convarch.adapters import claude_code, goose
from convarch.cli import cli
from convarch.cli import watch as watch_mod
from convarch.cli.changes import StoreChanges
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.look import Look, Named
from conftest import DEMO, REPO
from helpers import rows, scalar
from test_whole_rewrites import goose_build, same_as_fresh


def record(session: str, n: int, parent: str | None) -> dict:
    return {"type": "user", "uuid": f"{session}-{n}", "parentUuid": parent, "sessionId": session,
            "timestamp": f"2026-11-01T10:00:{n:02d}Z", "message": {"role": "user", "content": f"line {n}"}}


def transcript(projects: Path, project: str, session: str, n: int = 2) -> Path:
    path = projects / project / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record(session, i, f"{session}-{i - 1}" if i else None)) + "\n"
                            for i in range(n)))
    return path


def append(path: Path, n: int) -> str:
    session = path.stem
    with open(path, "a") as fh:
        fh.write(json.dumps(record(session, n, f"{session}-{n - 1}")) + "\n")
    return f"{session}-{n}"


@pytest.fixture
def store(tmp_path, monkeypatch):
    """Three transcripts in two projects, loaded by a full look; counts the store's listings."""
    projects = tmp_path / "claude" / "projects"
    files = [transcript(projects, "-home-u-app", "s-a"), transcript(projects, "-home-u-app", "s-b"),
             transcript(projects, "-home-u-web", "s-c")]
    listed = []
    real = claude_code.discover
    monkeypatch.setattr(claude_code, "discover", lambda root: listed.append(root) or real(root))
    db = tmp_path / "w" / "convarch.duckdb"
    listings: dict = {}
    roots = [(claude_code, claude_code.resolve_root(tmp_path / "claude"))]

    def run(**look):
        return ingest(Layout(db), roots, look=Look(listings=listings, **look))

    s = run(full=True)
    assert (s.files_scanned, s.records_added) == (3, 6)
    listed.clear()
    return run, files, db, listed, projects


def loaded(db: Path, message_id: str) -> int:
    return scalar(db, "select count(*) from stg_records where message_id = ?", [message_id])


def test_a_pick_up_looks_only_at_the_files_a_notice_named(store):
    run, (a, b, c), db, listed, _ = store
    new_a, new_b = append(a, 2), append(b, 2)
    s = run(written=frozenset({str(a)}))
    assert (s.files_scanned, s.files_changed, s.records_added) == (1, 1, 1)
    assert listed == []                      # only written to: the store was not listed again
    assert (loaded(db, new_a), loaded(db, new_b)) == (1, 0)
    s = run()                                # nothing noticed: nothing looked at
    assert (s.files_scanned, s.files_changed) == (0, 0) and listed == []
    s = run(full=True)                       # the full look finds what no notice named
    assert (s.files_scanned, s.records_added) == (3, 1) and loaded(db, new_b) == 1
    assert len(listed) == 1


def test_files_that_came_went_or_moved_are_listed_again(store, tmp_path):
    run, (a, b, c), db, listed, projects = store
    d = transcript(projects, "-home-u-web", "s-d")
    s = run(listed=frozenset({str(d)}))
    assert (s.files_scanned, s.files_changed, s.records_added) == (1, 1, 2) and len(listed) == 1
    gone = "select gone from source_files where path = ?"
    a.unlink()
    assert run(written=frozenset({str(b)})).files_changed == 0
    assert scalar(db, gone, [str(a)]) is False          # not named: not found gone either
    run(listed=frozenset({str(a)}))
    assert scalar(db, gone, [str(a)]) is True
    # moved to a project folder made for it: named by the folder, found by its inode
    moved = projects / "-home-u-new" / b.name
    moved.parent.mkdir()
    os.rename(b, moved)
    s = run(listed=frozenset({str(b), str(moved.parent) + os.sep}))
    assert s.records_added == 0 and scalar(db, gone, [str(moved)]) is False
    assert scalar(db, "select count(*) from source_files where path = ?", [str(b)]) == 0
    # renamed where only its new name was noticed: a run narrowed to that name reads only its
    # row from the state, and still finds the file it was by its inode among all of them
    renamed = c.with_name("s-c-renamed.jsonl")
    os.rename(c, renamed)
    s = run(listed=frozenset({str(renamed)}))
    assert (s.files_scanned, s.records_added) == (1, 0)
    assert scalar(db, "select count(*) from source_files where path = ?", [str(c)]) == 0
    assert scalar(db, gone, [str(renamed)]) is False
    # a folder that came with a transcript in it, the transcript itself never named
    e = transcript(projects, "-home-u-cli", "s-e", n=3)
    s = run(listed=frozenset({str(e.parent) + os.sep}))
    assert (s.files_scanned, s.records_added) == (1, 3)
    # the narrowed runs left nothing for a full look to find (a deleted transcript stays archived)
    files = "select path, gone, records from source_files order by path"
    before = rows(db, files)
    s = run(full=True)
    assert (s.files_scanned, s.files_changed, s.records_added) == (4, 0, 0) and rows(db, files) == before


def test_a_database_written_only_in_its_wal_is_looked_at_for_its_sidecar(tmp_path):
    sessions = tmp_path / "goose" / "sessions"
    con = goose_build.write_db(sessions / "sessions.db", wal=True, keep_open=True)
    try:
        db = tmp_path / "w" / "convarch.duckdb"
        roots = [(goose, goose.resolve_root(tmp_path / "goose"))]
        listings: dict = {}
        assert ingest(Layout(db), roots, look=Look(full=True, listings=listings)).records_added == 18
        mtime = os.stat(sessions / "sessions.db").st_mtime_ns
        con.execute("update sessions set name = 'renamed' where id = '20260505_1'")
        assert os.stat(sessions / "sessions.db").st_mtime_ns == mtime      # the write is in the -wal alone
        s = ingest(Layout(db), roots, look=Look(written=frozenset({str(tmp_path / "elsewhere.txt")}), listings=listings))
        assert s.files_changed == 0
        s = ingest(Layout(db), roots, look=Look(written=frozenset({str(sessions / "sessions.db-wal")}),
                                                listings=listings))
        assert (s.files_scanned, s.files_changed) == (1, 1) and s.records_added > 0
    finally:
        con.close()
    same_as_fresh(db, goose, tmp_path / "goose", tmp_path)


def test_a_root_given_relative_or_inside_a_folder_that_moved_is_looked_at_whole(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    named = Look(written=frozenset({str(root / "a.jsonl")}))._under(str(root))
    assert named == Named(frozenset({str(root / "a.jsonl")}), ())
    assert Look(written=frozenset({str(root / "a.jsonl")}))._under("store") is None
    assert Look(listed=frozenset({str(tmp_path) + os.sep}))._under(str(root)) is None
    # a sibling whose name starts the same is not under it
    assert Look(written=frozenset({str(tmp_path / "store2" / "a.jsonl")}))._under(str(root)) == Named(frozenset(), ())
    # a store reached through a symlink, noticed under its real path (as macOS names it)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    real_file = str(tmp_path / "real" / "a.jsonl")
    assert Look(written=frozenset({real_file}))._under(str(tmp_path / "link")) == \
        Named(frozenset({str(tmp_path / "link" / "a.jsonl")}), ())
    # a file that came there, named by its real path: the store is listed again
    assert Look(listed=frozenset({real_file}))._under(str(tmp_path / "link")).relist
    db = Named(frozenset({"/s/x.db-wal"}), ())
    assert db("/s/x.db") and not db("/s/y.db") and db.files() == {"/s/x.db-wal", "/s/x.db"}


def test_a_transcript_that_came_to_a_store_reached_through_a_symlink_is_loaded(tmp_path):
    projects = tmp_path / "real" / "projects"
    transcript(projects, "-home-u-app", "s-a")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    roots = [(claude_code, claude_code.resolve_root(tmp_path / "link"))]
    db = tmp_path / "w" / "convarch.duckdb"
    listings: dict = {}
    assert ingest(Layout(db), roots, look=Look(full=True, listings=listings)).records_added == 2
    new = transcript(projects, "-home-u-app", "s-b")           # noticed under the real path
    s = ingest(Layout(db), roots, look=Look(listed=frozenset({str(new)}), listings=listings))
    assert (s.files_scanned, s.records_added) == (1, 2)


@pytest.fixture
def notices(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "a.jsonl").write_text('{"n": 1}\n')
    changes = StoreChanges()
    if not changes.native:
        pytest.skip("no native file-system change notices on this platform")
    assert changes.watch([store]) == [] and changes.watching(store)
    time.sleep(0.2)
    yield changes, store
    changes.stop()


def settle(changes: StoreChanges):
    changes.wait(interval=0.5, debounce=0.2, max_wait=2)
    return changes.seen()


def test_notices_name_files_written_apart_from_paths_that_came_went_or_moved(notices):
    changes, store = notices
    (store / "a.jsonl").read_bytes()
    assert settle(changes) == (frozenset(), frozenset(), False)         # a read names nothing
    with open(store / "a.jsonl", "a") as fh:
        fh.write('{"n": 2}\n')
    assert settle(changes) == (frozenset({str(store / "a.jsonl")}), frozenset(), False)
    (store / "b.tmp").write_text("{}")
    os.replace(store / "b.tmp", store / "b.json")         # written out whole, as Cline does
    (store / "sub").mkdir()
    noticed = settle(changes)
    assert {str(store / "b.tmp"), str(store / "b.json"), str(store / "sub") + os.sep} <= noticed.listed
    changes.on_any_event(EventsLostEvent(str(store)))
    assert changes.seen().lost


def looks_of_watch(tmp_path, monkeypatch, args: list[str], during=None) -> tuple[list[Look], str]:
    looks: list[Look] = []
    real = watch_mod.run_ingest

    def wrapped(*a, **kw):
        looks.append(kw["look"])
        return real(*a, **kw)

    monkeypatch.setattr(watch_mod, "run_ingest", wrapped)
    thread = threading.Thread(target=during) if during else None
    if thread:
        thread.start()
    r = CliRunner().invoke(cli, ["--db", str(tmp_path / "w.duckdb"), "watch", *args])
    if thread:
        thread.join()
    assert r.exit_code == 0, r.output
    return looks, r.output


def test_watch_narrows_a_run_woken_by_a_notice_and_looks_whole_every_interval(tmp_path, isolated_home, monkeypatch):
    shutil.copytree(DEMO, isolated_home / ".claude")
    main = next((isolated_home / ".claude" / "projects").glob("*/*.jsonl"))
    last = main.read_text().splitlines()[-1]

    def append_later():
        time.sleep(3)
        # a store that was not there to watch: whatever it holds was never noticed
        shutil.copytree(REPO / "fixtures" / "codex" / "contract", isolated_home / ".codex")
        with open(main, "a") as fh:
            fh.write(last.replace('"uuid":"', '"uuid":"x-', 1) + "\n")

    looks, output = looks_of_watch(tmp_path, monkeypatch, ["--runs", "2", "--interval", "120", "--debounce", "0.5"],
                                   append_later)
    assert looks[0].full and not looks[1].full
    assert str(main) in looks[1].written
    assert str(isolated_home / ".codex") in looks[1].whole          # looked at whole
    s = json.loads(CliRunner().invoke(cli, ["--db", str(tmp_path / "w.duckdb"), "sql",
                                            "select count(distinct source_file) as n from stg_records "
                                            "where source = 'codex'", "--json"]).output)
    assert s[0]["n"] >= 4
    assert "1 files changed, 1 records added" not in output and "files changed" in output
    looks, _ = looks_of_watch(tmp_path, monkeypatch, ["--runs", "2", "--interval", "0.5", "--debounce", "0"])
    assert looks[0].full and looks[1].full    # no notice within the interval: a full look


def test_a_store_that_cannot_be_watched_is_said_and_looked_at_whole_not_a_crash(tmp_path, monkeypatch):
    """Past the inotify watch limit (or a folder that cannot be read), watching a store fails
    when its watch starts; the first stores were only started with the observer, and one
    failing took watch down with a traceback."""
    from watchdog.observers import Observer
    from watchdog.observers.polling import PollingObserver

    if Observer is PollingObserver:
        pytest.skip("no native file-system change notices on this platform")
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    emitter = Observer()._emitter_class          # inotify's, here
    real = emitter.on_thread_start

    def limited(self):
        if str(self.watch.path) == str(bad):
            raise OSError(28, "inotify watch limit reached")
        return real(self)

    monkeypatch.setattr(emitter, "on_thread_start", limited)
    changes = StoreChanges()
    try:
        problems = changes.watch([good, bad])
        assert len(problems) == 1 and str(bad) in problems[0] and "limit" in problems[0]
        assert changes.watching(good) and not changes.watching(bad)
        time.sleep(0.2)
        (good / "a.jsonl").write_text("{}\n")
        assert str(good / "a.jsonl") in settle(changes).listed
    finally:
        changes.stop()


def test_a_store_folder_deleted_and_made_again_is_watched_again(notices):
    """Its watch ends with the folder; the next look schedules the folder again, and notices
    come from the new one (the dead watch, reused, gave none)."""
    changes, store = notices
    shutil.rmtree(store)
    noticed = settle(changes)
    assert str(store) + os.sep in noticed.listed       # the store looked at whole meanwhile
    store.mkdir()
    assert changes.watch([store]) == [] and changes.watching(store)
    time.sleep(0.2)
    (store / "b.jsonl").write_text('{"n": 1}\n')
    assert str(store / "b.jsonl") in settle(changes).listed
