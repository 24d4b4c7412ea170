"""Snapshots copy only what is safe to read and never disturb the original."""
from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys

import pytest

from convarch.etl import settled
from convarch.etl import snapshot as snap
from conftest import tree_fingerprint


def test_lines_snapshot_stops_at_last_complete_line(tmp_path):
    src = tmp_path / "a.jsonl"
    src.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    s = snap.snapshot_lines(src, 0, tmp_path / "copy")
    assert (s.end, s.size) == (16, 21)
    assert (tmp_path / "copy").read_bytes() == b'{"a":1}\n{"b":2}\n'
    s2 = snap.snapshot_lines(src, 8, tmp_path / "copy2")
    assert (tmp_path / "copy2").read_bytes() == b'{"b":2}\n'
    assert s2.end == 16
    assert oct(os.stat(tmp_path / "copy").st_mode & 0o777) == "0o600"


@pytest.mark.parametrize("kernel", ["copy_file_range", "sendfile", "neither", "cut short"])
def test_lines_snapshot_is_the_same_however_the_bytes_are_copied(tmp_path, monkeypatch, kernel):
    """The kernel copy, each fallback and the careful chunked copy (taken when the source ends
    early, i.e. was truncated meanwhile) give the same bytes and the same watermark."""
    body = b"".join(b'{"n":%d,"pad":"%s"}\n' % (i, b"x" * (i * 37 % 900)) for i in range(400))
    src = tmp_path / "a.jsonl"
    src.write_bytes(b'{"head":1}\n' + body + b'{"last":true}')      # a final record without newline
    monkeypatch.setattr(snap, "CHUNK", 4096)
    unsupported = OSError(errno.EXDEV, "cross-device")
    calls = []

    def refuse(*a):
        calls.append("refused")
        raise unsupported

    if kernel in ("sendfile", "neither"):
        monkeypatch.setattr(snap, "_copy_file_range", refuse)
    if kernel == "neither":
        monkeypatch.setattr(snap, "_sendfile", refuse)
    if kernel == "cut short":
        monkeypatch.setattr(snap, "_copy_file_range", lambda *a: calls.append("short") or 0)
    s = snap.snapshot_lines(src, 11, tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == body + b'{"last":true}\n'
    assert (s.start, s.end, s.size) == (11, src.stat().st_size, src.stat().st_size)
    assert calls == {"copy_file_range": [], "sendfile": ["refused"], "neither": ["refused"] * 2,
                     "cut short": ["short"]}[kernel]


def test_sqlite_family_copy_sees_wal_commits_and_leaves_source_alone(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    db = store / "sessions.db"
    # a writer in another process keeps the database open in WAL mode with rows only in the -wal
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys;"
         f"c = sqlite3.connect({str(db)!r}, isolation_level=None);"
         "c.execute('pragma journal_mode=wal'); c.execute('pragma wal_autocheckpoint=0');"
         "c.execute('create table t (i integer)');"
         "[c.execute('insert into t values (?)', (i,)) for i in range(500)];"
         "print('ready', flush=True); sys.stdin.readline();"
         "c.execute('insert into t values (999)'); print('wrote', flush=True); sys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        assert (store / "sessions.db-wal").exists()
        before = tree_fingerprint(store)
        out = tmp_path / "snap"
        out.mkdir()
        copy = snap.snapshot_sqlite(db, out)
        assert tree_fingerprint(store) == before           # nothing created, nothing changed
        con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        assert con.execute("select count(*) from t").fetchone()[0] == 500
        con.close()
        fingerprint = snap.stat_family(db)
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "wrote"   # the writer was never blocked
        assert snap.stat_family(db) != fingerprint            # a WAL-only commit is a change
    finally:
        writer.kill()
        writer.wait()


def test_a_file_shorter_than_its_stat_is_copied_up_to_what_it_holds(tmp_path, monkeypatch):
    """Cut short between the stat and the copy: the snapshot ends at the last complete line the
    file still holds, and its size is what was read, not what the stat said."""
    src = tmp_path / "a.jsonl"
    src.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    real = os.fstat

    def stale(fd):
        st = real(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid,
                               st.st_size + 500, st.st_atime, st.st_mtime, st.st_ctime))

    monkeypatch.setattr(snap.os, "fstat", stale)
    s = snap.snapshot_lines(src, 0, tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b'{"a":1}\n{"b":2}\n'
    assert (s.end, s.size) == (16, 21)


@pytest.mark.parametrize("kernel", ["copy_file_range", "sendfile", "neither", "cut short", "grew"])
def test_a_whole_file_copy_is_the_same_however_the_bytes_are_copied(tmp_path, monkeypatch, kernel):
    """A whole file (a SQLite store, a document) is copied by the kernel where it can, by each
    fallback where not; a file cut short meanwhile is copied as far as it goes, one that grew
    meanwhile up to its new end (the SQLite copy compares the stat before and after)."""
    src = tmp_path / "store.db"
    data = bytes(range(256)) * 97 + b"tail"
    src.write_bytes(data)
    monkeypatch.setattr(snap, "CHUNK", 1000)
    calls = []

    def refuse(*a):
        calls.append("refused")
        raise OSError(errno.EXDEV, "cross-device")

    if kernel in ("sendfile", "neither"):
        monkeypatch.setattr(snap, "_copy_file_range", refuse)
    if kernel == "neither":
        monkeypatch.setattr(snap, "_sendfile", refuse)
    if kernel == "cut short":
        real = snap._copy_file_range

        def short(src_fd, dst, offset, count):    # the kernel copy meets the end after 5,000 bytes
            if offset >= 5000:
                calls.append("short")
                return 0
            return real(src_fd, dst, offset, min(count, 5000 - offset))

        monkeypatch.setattr(snap, "_copy_file_range", short)
        monkeypatch.setattr(snap.os, "pread", lambda fd, n, off: b"")
    if kernel == "grew":
        real_fstat = os.fstat

        def earlier(fd):                           # the stat taken before 4 bytes were appended
            st = real_fstat(fd)
            return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid,
                                   st.st_size - 4, st.st_atime, st.st_mtime, st.st_ctime))

        monkeypatch.setattr(snap.os, "fstat", earlier)
    snap.copy_whole(src, tmp_path / "copy")
    got = (tmp_path / "copy").read_bytes()
    assert got == (data[:5000] if kernel == "cut short" else data)
    assert calls == {"copy_file_range": [], "sendfile": ["refused"], "neither": ["refused"] * 2,
                     "cut short": ["short"], "grew": []}[kernel]
    assert oct(os.stat(tmp_path / "copy").st_mode & 0o777) == "0o600"


def _same_size_store(path, journal_mode="delete"):
    """A database whose rows can change in place without changing its size."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute(f"pragma journal_mode={journal_mode}")
    con.execute("create table t (k integer primary key, v text)")
    con.executemany("insert into t values (?, ?)", [(i, "a" * 40) for i in range(200)])
    return con


def _keep_time(path, st):
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_commit_that_keeps_size_and_time_still_changes_the_family_stat(tmp_path):
    """Two commits inside one tick of the clock that stamps file times leave the same time:
    the database's own change counter tells them apart."""
    db = tmp_path / "store.db"
    con = _same_size_store(db)
    before = snap.stat_family(db)
    st = db.stat()
    con.execute("update t set v = ? where k = 7", ("b" * 40,))
    _keep_time(db, st)
    after = snap.stat_family(db)
    assert (after.size, after.mtime_ns) == (before.size, before.mtime_ns)
    assert after != before and after.version != before.version


def test_a_wal_that_starts_over_at_the_same_size_still_changes_the_family_stat(tmp_path):
    db = tmp_path / "store.db"
    con = _same_size_store(db, "wal")
    con.execute("pragma wal_autocheckpoint = 0")
    con.execute("update t set v = ? where k = 1", ("c" * 40,))
    con.execute("pragma wal_checkpoint(passive)")       # the -wal is kept, to start over
    before = snap.stat_family(db)
    wal = tmp_path / "store.db-wal"
    st_db, st_wal = db.stat(), wal.stat()
    con.execute("update t set v = ? where k = 2", ("d" * 40,))   # the same frames, over again
    _keep_time(db, st_db)
    _keep_time(wal, st_wal)
    after = snap.stat_family(db)
    assert (after.size, after.mtime_ns) == (before.size, before.mtime_ns)
    assert after != before


def test_a_commit_during_the_copy_that_keeps_size_and_time_is_copied_again(tmp_path, monkeypatch):
    """Pages written while the database was copied would make a torn copy: the copy is taken
    again, and holds the commit."""
    db = tmp_path / "store.db"
    con = _same_size_store(db)
    real = snap._copy_file
    writes = []

    def copy_then_commit(src, dst):
        real(src, dst)
        if not writes:
            st = db.stat()
            con.execute("update t set v = ? where k = 3", ("e" * 40,))
            _keep_time(db, st)
            writes.append(1)

    monkeypatch.setattr(snap, "_copy_file", copy_then_commit)
    out = tmp_path / "snap"
    out.mkdir()
    copy = snap.snapshot_sqlite(db, out)
    got = sqlite3.connect(f"file:{copy}?mode=ro", uri=True).execute("select v from t where k = 3").fetchone()[0]
    assert got == "e" * 40


@pytest.mark.parametrize("name, text, whole", [
    ("doc.json", b'{"a": [1, 2]}\n', True), ("doc.json", b'  [\n {"a": 1}\n]  \n', True),
    ("doc.json", b'{"a": [1, 2', False), ("doc.json", b'[{"a": 1}, {"b": 2}', False),
    ("doc.json", b'[{"a": 1}}', False), ("doc.json", b"", False), ("doc.json", b"   \n", False),
    ("doc.json", b'{"a": 1]', False),
    # cut on a bracket matching the first, or left with the end of a longer version after it
    ("doc.json", b'[{"a": [1]}, {"b": [2]', False), ("doc.json", b'[{"a": 1}]\n{"b": 2}]', False),
    # what Python's parser reads and ijson's does not is still whole
    ("doc.json", b'[NaN, 123456789012345678901234567890]', True),
    ("log.jsonl", b'{"a": 1}\n{"b": 2}\n', True), ("log.jsonl", b"", True), ("log.jsonl", b'{"a": 1}\n{"b"', False),
    ("history.md", b"# aider chat started\n> half a li", True),
    # Copilot CLI's workspace.yaml: truncated, or cut inside a line
    ("workspace.yaml", b"id: s1\nsummary: Add a flag\n", True), ("workspace.yaml", b"", False),
    ("workspace.yaml", b"id: s1\nsumm", False), ("state.yml", b"id: s1\n", True),
])
def test_a_file_cut_short_does_not_look_whole(tmp_path, name, text, whole):
    path = tmp_path / name
    path.write_bytes(text)
    assert settled.looks_whole(path) is whole


def test_a_file_is_being_written_only_inside_the_window(tmp_path, monkeypatch):
    monkeypatch.setattr(settled, "WRITING_SECONDS", 5.0)
    path = tmp_path / "doc.json"
    path.write_bytes(b"{}")
    now = path.stat().st_mtime_ns
    st = path.stat()
    assert settled.being_written(st, now + 1_000_000_000)
    assert not settled.being_written(st, now + 6_000_000_000)
    assert settled.being_written(st, now - 500_000_000)              # a clock a little behind
    assert not settled.being_written(st, now - 60_000_000_000)       # a time far ahead is not held back
    monkeypatch.setattr(settled, "WRITING_SECONDS", 0.0)
    assert not settled.being_written(st, now)


def test_a_whole_file_changing_while_copied_is_copied_again(tmp_path, monkeypatch):
    src = tmp_path / "history.json"
    src.write_bytes(b'[{"a": 1}]')
    real = snap._copy_file
    calls = []

    def copy_then_write(s, d):
        real(s, d)
        calls.append(1)
        if len(calls) == 1:
            src.write_bytes(b'[{"a": 1}, {"b": 2}]')

    monkeypatch.setattr(snap, "_copy_file", copy_then_write)
    size, _ = snap.copy_whole(src, tmp_path / "copy")
    assert len(calls) == 2 and (tmp_path / "copy").read_bytes() == src.read_bytes() and size == src.stat().st_size

    def always_write(s, d):
        real(s, d)
        src.write_bytes(src.read_bytes() + b" ")

    monkeypatch.setattr(snap, "_copy_file", always_write)
    monkeypatch.setattr(snap.time, "sleep", lambda s: None)
    with pytest.raises(settled.StillWriting, match="kept changing"):
        snap.copy_whole(src, tmp_path / "copy2")


def test_a_document_that_does_not_parse_waits_while_it_may_be_half_written(tmp_path, monkeypatch):
    monkeypatch.setattr(settled, "WRITING_SECONDS", 5.0)
    doc = tmp_path / "task.json"
    doc.write_bytes(b'{"messages": [{"a": 1}, {"b"')
    with pytest.raises(settled.StillWriting, match="does not parse"):
        snap.snapshot_document(doc, tmp_path / "copy")
    old = doc.stat().st_mtime - 60
    os.utime(doc, (old, old))                  # left torn by a writer long gone: quarantined
    s = snap.snapshot_document(doc, tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == b'{"messages": [{"a": 1}, {"b"\n' and s.size == doc.stat().st_size
