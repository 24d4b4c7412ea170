"""A store that lives as a user's does: sessions begun, appended to, moved to another project
folder (appended to on the way, or not), deleted, and new ones made, with an ingest after
every few changes. File systems give a deleted file's inode to the next file made (ext4 does
so readily; the test also hands new files a deleted one's inode on purpose, through the stat
the planner reads). After every run the archive holds every session ever written, each
message once, as a model of the store says (a session made and deleted between two runs is
never seen); and no run touched the store. Narrowed, each run looks only at the paths the
file-system notices named, as `watch` does between full looks."""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import pytest

from conftest import tree_fingerprint
from convarch.adapters import claude_code
from convarch.etl import snapshot
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import assistant, rows, user
from test_live_writers import Notices

FOLDERS = ("-work-app", "-work-api", "-work-archive")


class Store:
    """The store on disk and what the archive must hold of it: every session's messages by
    uuid, whether its file is still there or not."""

    def __init__(self, root: Path, rng: random.Random):
        self.root, self.rng = root, rng
        self.path: dict[str, Path] = {}              # live sessions' files
        self.messages: dict[str, list[str]] = {}     # every session ever written
        self.last: dict[str, str] = {}               # each session's last message name
        self.freed: list[int] = []                   # inodes of deleted files
        self.given: dict[Path, int] = {}             # files handed a freed inode
        self.made = 0

    def _records(self, sid: str, n: int) -> list[dict]:
        out = []
        for _ in range(n):
            k = len(self.messages[sid])
            name, parent = f"{sid}-m{k}", self.last.get(sid)
            ts = f"2026-06-{1 + k // 1000:02d}T10:{k // 60 % 60:02d}:{k % 60:02d}.000Z"
            make = user if k % 2 == 0 else assistant
            out.append(make(name, parent, f"{sid} says {k}", ts, sid))
            self.messages[sid].append(out[-1]["uuid"])
            self.last[sid] = name
        return out

    def _write(self, path: Path, records: list[dict], mode: str) -> None:
        with open(path, mode) as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in records))

    def new(self) -> None:
        sid = f"c{self.made:03d}"
        self.made += 1
        path = self.root / "projects" / self.rng.choice(FOLDERS) / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.messages[sid] = []
        self._write(path, self._records(sid, self.rng.randint(1, 4)), "x")
        self.path[sid] = path
        if self.freed and self.rng.random() < 0.5:
            self.given[path] = self.freed.pop(self.rng.randrange(len(self.freed)))

    def append(self, sid: str) -> None:
        self._write(self.path[sid], self._records(sid, self.rng.randint(1, 3)), "a")

    def move(self, sid: str) -> None:
        old = self.path[sid]
        new = self.root / "projects" / self.rng.choice([f for f in FOLDERS if f != old.parent.name]) / old.name
        new.parent.mkdir(parents=True, exist_ok=True)
        old.rename(new)
        if old in self.given:
            self.given[new] = self.given.pop(old)
        self.path[sid] = new

    def delete(self, sid: str) -> None:
        path = self.path.pop(sid)
        self.freed.append(self.given.pop(path, None) or os.stat(path).st_ino)
        path.unlink()

    def step(self) -> str:
        live = sorted(self.path)
        op = self.rng.choice(["new", "new", "append", "append", "append", "move", "move_append", "delete"]
                             if live else ["new"])
        if op == "new":
            self.new()
            return op
        sid = self.rng.choice(live)
        if op in ("move", "move_append"):
            self.move(sid)
        if op in ("append", "move_append"):
            self.append(sid)
        if op == "delete":
            self.delete(sid)
        return f"{op} {sid}"


@pytest.mark.parametrize("seed, narrowed", [(1, False), (2, False), (3, True), (4, True)])
def test_a_living_store_keeps_every_session_and_each_message_once(tmp_path, monkeypatch, seed, narrowed):
    rng = random.Random(seed)
    store = Store(tmp_path / "claude", rng)
    for folder in FOLDERS:
        (store.root / "projects" / folder).mkdir(parents=True)
    roots = [(claude_code, claude_code.resolve_root(store.root))]
    notices = Notices(roots) if narrowed else None
    real = snapshot.stat_source

    def stat(path):
        st = real(path)
        return snapshot.FileStat(st.dev, store.given.get(Path(path), st.inode), st.size, st.mtime_ns)

    monkeypatch.setattr(snapshot, "stat_source", stat)
    db = tmp_path / "w" / "convarch.duckdb"
    done: list[str] = []
    archived: dict[str, list[str]] = {}
    scanned = listed = 0
    for _ in range(20):
        done += [store.step() for _ in range(rng.randint(1, 4))]
        before = tree_fingerprint(store.root)
        if notices:
            time.sleep(0.3)                     # the notices of the changes arrive
        s = ingest(Layout(db), roots, look=notices.look() if notices else None)
        scanned += s.files_scanned
        listed += len(store.path)
        assert tree_fingerprint(store.root) == before
        # what a run can see: each live file as it is now; a file gone keeps what was seen
        archived.update({sid: list(store.messages[sid]) for sid in store.path})
        got = rows(db, "select session_id, list(message_id order by message_id), count(*) from stg_records "
                       "where message_id is not null group by 1 order by 1")
        want = [(sid, sorted(ids), len(ids)) for sid, ids in sorted(archived.items())]
        assert got == want, done
        sessions = rows(db, "select session_id, message_count from sessions order by 1")
        assert sessions == [(sid, len(ids)) for sid, ids in sorted(archived.items())], done
        live = rows(db, "select path from source_files where not gone order by 1")
        assert live == sorted((str(p),) for p in store.path.values()), done
    if notices:
        notices.changes.stop()
        assert scanned < listed / 2, (scanned, listed)           # the runs looked at what changed
