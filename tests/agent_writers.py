"""Agents at work, for tests that ingest while they write: run as a script in its own process,
it writes three stores the way their agents do, step after step, with short pauses inside
each write so that a run can catch one half done.

- a Claude Code transcript gains records, each line written in two parts (the first part
  flushed on its own, as a line longer than the writer's buffer is);
- a Cline task history is written out whole after each message, by truncating the file and
  writing the new text in pieces (as the extension's fs.writeFile does), and now and then its
  last message is rewritten (an answer streamed in);
- a goose database in WAL mode gains a message per commit, and is checkpointed now and then.

    python tests/agent_writers.py TRANSCRIPT HISTORY GOOSE_DB STEPS SEED

It prints the number of steps done when it ends.
"""
from __future__ import annotations

import json
import random
import sqlite3
import sys
import time
import uuid
from pathlib import Path

SESSION = "5f0c9a52-7d1e-4c58-9a0b-3e6f2d8c1b47"
GOOSE_SESSION = "20260505_1"
WORDS = "cache forecast retry parser window archive branch tool result merge answer".split()


def claude_record(i: int, parent: str | None, rng: random.Random) -> dict:
    kind = "user" if i % 2 == 0 else "assistant"
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 400)))
    message = {"role": kind, "content": text} if kind == "user" else \
        {"id": f"msg_live_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
         "usage": {"input_tokens": 10 + i, "output_tokens": 5}}
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/live/app",
            "sessionId": SESSION, "version": "2.1.80", "type": kind,
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"live/{i}")), "message": message,
            "timestamp": f"2026-12-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"}


def append_record(path: Path, record: dict, rng: random.Random) -> None:
    line = json.dumps(record).encode() + b"\n"
    cut = rng.randint(1, len(line) - 1)
    with open(path, "ab") as fh:
        fh.write(line[:cut])
        fh.flush()
        time.sleep(rng.uniform(0, 0.01))
        fh.write(line[cut:])


def rewrite_history(path: Path, history: list, rng: random.Random) -> None:
    data = json.dumps(history).encode()
    cuts = sorted(rng.sample(range(1, len(data)), 2))
    with open(path, "wb") as fh:          # truncated first, as writeFile does
        fh.flush()
        time.sleep(rng.uniform(0, 0.005))
        for a, b in zip([0, *cuts], [*cuts, len(data)]):
            fh.write(data[a:b])
            fh.flush()
            time.sleep(rng.uniform(0, 0.005))


def cline_message(i: int, rng: random.Random, final: bool = True) -> dict:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 300)))
    if i % 2 == 0:
        return {"role": "user", "content": [{"type": "text", "text": f"<task>\n{words}\n</task>"}]}
    text = words if final else words[: len(words) // 3]
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def main(transcript: Path, history_path: Path, goose_db: Path, steps: int, seed: int) -> int:
    rng = random.Random(seed)
    parent = None
    with open(transcript, "rb") as fh:
        lines = fh.read().splitlines()
    if lines:
        parent = json.loads(lines[-1])["uuid"]
    history = json.loads(history_path.read_bytes())
    con = sqlite3.connect(goose_db, isolation_level=None)
    con.execute("pragma busy_timeout = 5000")
    done = 0
    for step in range(steps):
        what = rng.random()
        if what < 0.4:
            record = claude_record(step, parent, rng)
            append_record(transcript, record, rng)
            parent = record["uuid"]
        elif what < 0.75:
            i = len(history)
            if i % 2 == 1 and rng.random() < 0.5:
                # an answer written in part, then again whole
                history.append(cline_message(i, random.Random(seed * 1000 + i), final=False))
                rewrite_history(history_path, history, rng)
                history[-1] = cline_message(i, random.Random(seed * 1000 + i))
            else:
                history.append(cline_message(i, random.Random(seed * 1000 + i)))
            rewrite_history(history_path, history, rng)
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 200)))
            con.execute("insert into messages (message_id, session_id, role, content_json, created_timestamp) "
                        "values (?, ?, ?, ?, ?)",
                        (f"msg_live_{step}", GOOSE_SESSION, "user" if step % 2 else "assistant",
                         json.dumps([{"type": "text", "text": text}]), 1777970000 + step))
            if rng.random() < 0.2:
                con.execute("pragma wal_checkpoint(passive)")
        done += 1
        time.sleep(rng.uniform(0, 0.02))
    con.close()
    return done


if __name__ == "__main__":
    t, h, g, n, s = sys.argv[1:6]
    print(main(Path(t), Path(h), Path(g), int(n), int(s)), flush=True)
