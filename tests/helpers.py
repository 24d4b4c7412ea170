"""Small builders for Claude Code records used across tests."""
from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from convarch import connect
from convarch.adapters import claude_code
from convarch.etl.ingest import Summary, ingest
from convarch.etl.layout import Layout

NS = uuid.UUID("0b6f1c8e-3d52-4c1a-9e0f-5a7b2c4d6e80")


def uid(name: str) -> str:
    return str(uuid.uuid5(NS, name))


def user(name: str, parent: str | None, text: str, ts: str, sid: str = "s1") -> dict:
    return {"type": "user", "uuid": uid(name), "parentUuid": uid(parent) if parent else None, "sessionId": sid,
            "timestamp": ts, "cwd": "/work/app", "gitBranch": "main", "version": "2.1.80",
            "isSidechain": False, "message": {"role": "user", "content": text}}


def assistant(name: str, parent: str | None, text: str, ts: str, sid: str = "s1", tool: tuple | None = None) -> dict:
    blocks = [{"type": "text", "text": text}] if text else []
    if tool:
        blocks.append({"type": "tool_use", "id": tool[0], "name": tool[1], "input": tool[2]})
    return {"type": "assistant", "uuid": uid(name), "parentUuid": uid(parent) if parent else None, "sessionId": sid,
            "timestamp": ts, "cwd": "/work/app", "isSidechain": False, "requestId": f"req_{name}",
            "message": {"id": f"msg_{name}", "role": "assistant", "model": "claude-sonnet-4-5", "content": blocks,
                        "usage": {"input_tokens": 10, "output_tokens": 5}}}


def tool_result(name: str, parent: str, call_id: str, output: str, ts: str, sid: str = "s1", error: bool = False) -> dict:
    return {"type": "user", "uuid": uid(name), "parentUuid": uid(parent), "sessionId": sid, "timestamp": ts,
            "isSidechain": False,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id,
                                                       "content": output, "is_error": error}]}}


def run(db: Path, root: Path) -> Summary:
    return ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))])


def scalar(db: Path, query: str, params=None):
    con = connect(db)
    try:
        return con.execute(query, params or []).fetchone()[0]
    finally:
        con.close()


def rows(db: Path, query: str, params=None) -> list[tuple]:
    con = connect(db)
    try:
        return con.execute(query, params or []).fetchall()
    finally:
        con.close()


class OtherReader:
    """A plain DuckDB client in another process, holding a warehouse open read-only: it
    counts stg_records once when it opens and once more when asked, over the same connection."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.answered = 0

    def count(self) -> str:
        if self.answered:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
        got = self.proc.stdout.readline().strip()
        assert got.isdigit(), self.proc.stderr.read()
        self.answered += 1
        return got


@contextmanager
def reader_in_another_process(db: Path) -> Iterator[OtherReader]:
    proc = subprocess.Popen(
        [sys.executable, "-c",
         "import duckdb, sys;"
         f"c = duckdb.connect({str(db)!r}, read_only=True);"
         "q = 'select count(*) from stg_records';"
         "print(c.execute(q).fetchone()[0], flush=True);"
         "sys.stdin.readline();"
         "print(c.execute(q).fetchone()[0], flush=True)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield OtherReader(proc)
    finally:
        proc.kill()
        proc.wait()


def hand_inodes(monkeypatch, given: dict[Path, int]) -> None:
    """Make the planner see each path of `given` with that inode, as a file system that gives
    a new file a deleted one's inode would (ext4 does so readily, but not when a test asks);
    a test that renames such a file moves its entry."""
    from convarch.etl import snapshot

    real = snapshot.stat_source

    def stat(path):
        st = real(path)
        return snapshot.FileStat(st.dev, given.get(Path(path), st.inode), st.size, st.mtime_ns)

    monkeypatch.setattr(snapshot, "stat_source", stat)


def ingest_samples(db: Path, samples: dict[str, tuple]) -> tuple[dict[str, list[str]], Summary, bool, Summary]:
    """Sample stores (name -> (adapter, root)) ingested in one run, as a user's several stores
    are, then once more: each sample's files (to count over), the run's summary, whether
    every sample was left as it was, and the second run's summary."""
    from conftest import tree_fingerprint

    def fingerprints() -> dict:
        return {n: tree_fingerprint(r if r.is_dir() else r.parent) for n, (_a, r) in samples.items()}

    before = fingerprints()
    targets = [(a, a.resolve_root(r)) for a, r in samples.values()]
    summary = ingest(Layout(db), targets)
    files = {n: sorted(str(f.path) for f in a.discover(a.resolve_root(r))) for n, (a, r) in samples.items()}
    untouched = fingerprints() == before
    return files, summary, untouched, ingest(Layout(db), targets)


def sample_counts(db: Path, files: list[str]) -> dict[str, int]:
    """What the archive holds of these source files: files, sessions, records, messages,
    tool calls, quarantined lines."""
    return dict(
        files=len(files),
        sessions=scalar(db, "select count(distinct session_id) from stg_records where list_contains(?, source_file)", [files]),
        records=scalar(db, "select count(*) from stg_records where list_contains(?, source_file)", [files]),
        messages=scalar(db, "select count(*) from messages where list_contains(?, source_file)", [files]),
        tool_calls=scalar(db, "select count(*) from tool_calls join (select distinct file_id, source_file from stg_records) "
                              "using (file_id) where list_contains(?, source_file)", [files]),
        quarantined=scalar(db, "select count(*) from quarantine where list_contains(?, source_file)", [files]),
    )


def sample_alone(tmp: Path, adapter, root: Path) -> tuple[Path, list[str]]:
    """A sample store ingested into a warehouse of its own, and its files. Samples of one
    agent often hold the same file (a session, then the same session with a subagent beside
    it), and an archive counts the copies of one file once: in a warehouse holding every
    sample, a sample's file can stand aside for another sample's copy of it."""
    db = tmp / "alone.duckdb"
    resolved = adapter.resolve_root(root)
    ingest(Layout(db), [(adapter, resolved)])
    return db, sorted(str(f.path) for f in adapter.discover(resolved))
