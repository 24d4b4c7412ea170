"""Stores that live as a user's do, with an ingest after every few changes: a Claude Code
store's sessions begun, appended to, moved to another project folder (appended to on the way,
or not), deleted (a project's folder too, with all its sessions), and new ones made; a Cline
store's tasks begun, their histories written out again grown, edited or cut back (a
checkpoint restored), and deleted.

File systems give a deleted file's inode to the next file made (ext4 does so readily; the
test also hands new files a deleted one's inode on purpose, through the stat the planner
reads). After every run the archive holds every session ever seen, with its messages once,
as a model of the store says (a session made and deleted between two runs is never seen);
and no run touched the store. Narrowed, each run looks only at the paths the file-system
notices named, as `watch` does between full looks."""
from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from conftest import tree_fingerprint
from convarch.adapters import claude_code, cline
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import assistant, hand_inodes, rows, user
from test_live_writers import Notices

FOLDERS = ("-work-app", "-work-api", "-work-archive")


class Churn:
    """What both stores keep: the live sessions' files, every session's messages as the
    store holds them now, and the inodes deleted files freed, some of which new files get."""

    def __init__(self, root: Path, rng: random.Random):
        self.root, self.rng = root, rng
        self.path: dict[str, Path] = {}
        self.messages: dict[str, list[str]] = {}
        self.freed: list[int] = []
        self.given: dict[Path, int] = {}
        self.made = 0

    def maybe_recycle(self, path: Path) -> None:
        if self.freed and self.rng.random() < 0.5:
            self.given[path] = self.freed.pop(self.rng.randrange(len(self.freed)))

    def forget(self, sid: str) -> Path:
        path = self.path.pop(sid)
        self.freed.append(self.given.pop(path, None) or os.stat(path).st_ino)
        return path


class ClaudeStore(Churn):
    """Sessions whose messages the archive holds by uuid."""

    ADAPTER = claude_code
    ARCHIVED = ("select session_id, list(message_id order by message_id), count(*) from stg_records "
                "where message_id is not null group by 1 order by 1")

    def __init__(self, root: Path, rng: random.Random):
        super().__init__(root, rng)
        self.last: dict[str, str] = {}               # each session's last message name
        for folder in FOLDERS:
            (root / "projects" / folder).mkdir(parents=True)

    def _records(self, sid: str, n: int) -> str:
        out = []
        for _ in range(n):
            k = len(self.messages[sid])
            name, parent = f"{sid}-m{k}", self.last.get(sid)
            ts = f"2026-06-01T10:{k // 60 % 60:02d}:{k % 60:02d}.000Z"
            make = user if k % 2 == 0 else assistant
            out.append(make(name, parent, f"{sid} says {k}", ts, sid))
            self.messages[sid].append(out[-1]["uuid"])
            self.last[sid] = name
        return "".join(json.dumps(r) + "\n" for r in out)

    def step(self) -> str:
        live = sorted(self.path)
        op = self.rng.choice(["new", "new", "append", "append", "append", "move", "move_append", "delete",
                              "drop_folder"] if live else ["new"])
        if op == "drop_folder":          # a project's folder removed with all its sessions
            folder = self.path[self.rng.choice(live)].parent
            for sid in [s for s, p in self.path.items() if p.parent == folder]:
                self.forget(sid)
            shutil.rmtree(folder)
            return f"drop_folder {folder.name}"
        if op == "new":
            sid = f"c{self.made:03d}"
            self.made += 1
            path = self.root / "projects" / self.rng.choice(FOLDERS) / f"{sid}.jsonl"
            path.parent.mkdir(exist_ok=True)
            self.messages[sid], self.path[sid] = [], path
            path.write_text(self._records(sid, self.rng.randint(1, 4)))
            self.maybe_recycle(path)
            return f"new {sid}"
        sid = self.rng.choice(live)
        if op == "delete":
            self.forget(sid).unlink()
        if op in ("move", "move_append"):
            old = self.path[sid]
            new = self.root / "projects" / self.rng.choice([f for f in FOLDERS if f != old.parent.name]) / old.name
            new.parent.mkdir(exist_ok=True)
            old.rename(new)
            if old in self.given:
                self.given[new] = self.given.pop(old)
            self.path[sid] = new
        if op in ("append", "move_append"):
            with open(self.path[sid], "a") as fh:
                fh.write(self._records(sid, self.rng.randint(1, 3)))
        return f"{op} {sid}"

    def seen(self, sid: str) -> tuple[list[str], int]:
        return sorted(self.messages[sid]), len(self.messages[sid])


class ClineStore(Churn):
    """Tasks whose API history is written out whole at every change; the archive holds each
    task's messages in order as last seen (a history cut back loses the messages cut)."""

    ADAPTER = cline
    ARCHIVED = ("select session_id, list(text order by line_no), count(*) from messages "
                "where kind in ('prompt', 'response') group by 1 order by 1")

    def __init__(self, root: Path, rng: random.Random):
        super().__init__(root, rng)
        self.words = 0
        (root / "tasks").mkdir(parents=True)

    def _texts(self, n: int) -> list[str]:
        self.words += n
        return [f"word{self.words - i}" for i in range(n)]

    def _write(self, sid: str) -> None:
        history = [{"role": "assistant" if k % 2 else "user", "content": [{"type": "text", "text": t}]}
                   for k, t in enumerate(self.messages[sid])]
        self.path[sid].write_text(json.dumps(history))

    def step(self) -> str:
        live = sorted(self.path)
        op = self.rng.choice(["new", "new", "grow", "grow", "grow", "edit", "cut", "delete"] if live else ["new"])
        if op == "new":
            sid = str(1778600000000 + self.made)
            self.made += 1
            path = self.root / "tasks" / sid / "api_conversation_history.json"
            path.parent.mkdir()
            self.path[sid], self.messages[sid] = path, self._texts(self.rng.randint(1, 4))
            self._write(sid)
            self.maybe_recycle(path)
            return f"new {sid}"
        sid = self.rng.choice(live)
        texts = self.messages[sid]
        if op == "delete":
            shutil.rmtree(self.forget(sid).parent)
            return f"delete {sid}"
        if op == "grow":
            texts += self._texts(self.rng.randint(1, 3))
        elif op == "edit":
            texts[self.rng.randrange(len(texts))] = self._texts(1)[0]
        elif op == "cut" and len(texts) > 1:
            del texts[self.rng.randint(1, len(texts) - 1):]
        self._write(sid)
        return f"{op} {sid}"

    def seen(self, sid: str) -> tuple[list[str], int]:
        return list(self.messages[sid]), len(self.messages[sid])


@pytest.mark.parametrize("kind, seed, narrowed", [(ClaudeStore, 1, False), (ClaudeStore, 4, True),
                                                  (ClineStore, 5, False), (ClineStore, 6, True)])
def test_a_living_store_keeps_every_session_and_its_messages_once(tmp_path, monkeypatch, kind, seed, narrowed):
    rng = random.Random(seed)
    store = kind(tmp_path / "store", rng)
    roots = [(kind.ADAPTER, kind.ADAPTER.resolve_root(store.root))]
    notices = Notices(roots) if narrowed else None
    hand_inodes(monkeypatch, store.given)
    db = tmp_path / "w" / "convarch.duckdb"
    done: list[str] = []
    archived: dict[str, tuple] = {}
    scanned = listed = 0
    for _ in range(20):
        done += [store.step() for _ in range(rng.randint(1, 4))]
        before = tree_fingerprint(store.root)
        if notices:
            # as `watch` waits for the notices of a burst to end; watchdog holds a move's
            # notice back half a second for its other half, and those after it with it
            notices.changes.wait(interval=2.0, debounce=0.6, max_wait=5.0)
        s = ingest(Layout(db), roots, look=notices.look() if notices else None)
        scanned += s.files_scanned
        listed += len(store.path)
        assert tree_fingerprint(store.root) == before
        # what a run can see: each live file as it is now; a file gone keeps what was seen
        archived.update({sid: store.seen(sid) for sid in store.path})
        assert rows(db, kind.ARCHIVED) == [(sid, *seen) for sid, seen in sorted(archived.items())], done
        sessions = rows(db, "select session_id, message_count from sessions order by 1")
        assert sessions == [(sid, n) for sid, (_, n) in sorted(archived.items())], done
        live = rows(db, "select path from source_files where not gone order by 1")
        assert live == sorted((str(p),) for p in store.path.values()), done
    if notices:
        notices.changes.stop()
        assert scanned < 0.8 * listed, (scanned, listed)         # the runs looked at what changed
