"""A deterministic synthetic corpus of agent stores for the benchmark.

Claude Code transcripts with realistic variety: string and block content, thinking, parallel
tool calls, large tool results, subagent files, compactions, metadata records and non-ASCII
text; sizes are log-normal like real projects. Codex rollouts are added when that adapter is
registered, so the corpus mixes sources.
"""
from __future__ import annotations

import json
import os
import random
import uuid
from datetime import datetime
from pathlib import Path

WORDS = ("connection pool retry budget cache invalidation parser tokenizer migration schema index "
         "latency throughput worker queue deadlock mutex handler request response timeout config "
         "deploy rollback feature flag test fixture snapshot benchmark profile memory leak 缓存 ошибка "
         "naïve café 🚀 release build lint type check").split()


def _identifiers(n: int, seed: int = 1) -> list[str]:
    """Made-up code identifiers (snake_case, camelCase, with digits) so the vocabulary, and so
    the search index, is as varied as real transcripts, not just the common words."""
    rng = random.Random(seed)
    syllables = "ka lo mi ne ru sta pli vor tek dan fi gu hex zo bar qu ix".split()
    out = []
    for _ in range(n):
        parts = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
        style = rng.random()
        if style < 0.4:
            word = "_".join(parts)
        elif style < 0.8:
            word = parts[0] + "".join(p.capitalize() for p in parts[1:])
        else:
            word = "".join(parts) + str(rng.randint(0, 999))
        out.append(word)
    return out


IDENTIFIERS = _identifiers(50_000)


def _text(rng: random.Random, n: int) -> str:
    # three words in ten are rarer identifiers, drawn with a long tail
    return " ".join(rng.choice(WORDS) if rng.random() < 0.7
                    else IDENTIFIERS[min(int(rng.paretovariate(0.6)) - 1, len(IDENTIFIERS) - 1)]
                    for _ in range(n))


def _session(rng: random.Random, sid: str, cwd: str, n_records: int, *, sidechain: str | None = None):
    t = 1_760_000_000 + rng.randrange(0, 90 * 86400)
    prev = None
    for i in range(n_records):
        t += rng.randrange(1, 40)
        ts = f"{__import__('datetime').datetime.utcfromtimestamp(t).isoformat()}.000Z"
        uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        base = {"parentUuid": prev, "isSidechain": sidechain is not None, "userType": "external", "cwd": cwd,
                "sessionId": sid, "version": "2.1.80", "gitBranch": "main", "uuid": uid, "timestamp": ts}
        if sidechain:
            base["agentId"] = sidechain
        kind = rng.random()
        if i == 0 or kind < 0.12:
            rec = {**base, "type": "user", "message": {"role": "user", "content": _text(rng, rng.randrange(5, 80))}}
        elif kind < 0.45:
            blocks = []
            if rng.random() < 0.3:
                blocks.append({"type": "thinking", "thinking": _text(rng, 60), "signature": "sig" * 20})
            call = f"toolu_{rng.getrandbits(64):016x}"
            blocks.append({"type": "tool_use", "id": call, "name": rng.choice(["Read", "Edit", "Bash", "Grep"]),
                           "input": {"file_path": f"{cwd}/src/{rng.choice(WORDS)}.py", "command": "pytest -q"}})
            rec = {**base, "type": "assistant", "requestId": f"req_{i}",
                   "message": {"id": f"msg_{rng.getrandbits(48):012x}", "type": "message", "role": "assistant",
                               "model": rng.choice(["claude-sonnet-4-5", "claude-opus-4-1"]), "content": blocks,
                               "usage": {"input_tokens": rng.randrange(10, 5000), "output_tokens": rng.randrange(5, 900),
                                         "cache_read_input_tokens": rng.randrange(0, 90000)}}}
            prev = uid
            yield rec
            t += 1
            uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            size = int(rng.lognormvariate(6.5, 1.6))
            out = _text(rng, min(size, 12000))
            rec = {**base, "uuid": uid, "parentUuid": prev, "type": "user", "sourceToolAssistantUUID": prev,
                   "toolUseResult": {"stdout": out[:2000], "stderr": "", "interrupted": False},
                   "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                             "content": out, "is_error": rng.random() < 0.05}]}}
        elif kind < 0.9:
            rec = {**base, "type": "assistant", "requestId": f"req_{i}",
                   "message": {"id": f"msg_{rng.getrandbits(48):012x}", "type": "message", "role": "assistant",
                               "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": _text(rng, rng.randrange(10, 200))}],
                               "usage": {"input_tokens": 100, "output_tokens": 50}}}
        elif kind < 0.93 and not sidechain:
            rec = {**base, "type": "system", "subtype": "compact_boundary", "parentUuid": None,
                   "logicalParentUuid": prev, "content": "Conversation compacted",
                   "compactMetadata": {"trigger": "auto", "preTokens": 160000}}
        elif kind < 0.96:
            rec = {"type": "file-history-snapshot", "messageId": uid, "snapshot": {"messageId": uid, "trackedFileBackups": {},
                                                                                   "timestamp": ts}, "isSnapshotUpdate": False}
            yield rec
            continue
        else:
            rec = {**base, "type": "system", "subtype": "turn_duration", "durationMs": rng.randrange(100, 90000)}
        prev = uid
        yield rec


#: Bumped when the corpus changes, so cached corpora are made again (2: file times).
VERSION = 2


def _stamp(path: Path, last: str | None) -> None:
    """Give a transcript the modification time of its last record, as a real store's file has
    (it was last written then): loading orders new files by it."""
    if last:
        t = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
        os.utime(path, (t, t))


def generate(out: Path, target_mb: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    projects = out / "claude" / "projects"
    total = files = sessions = 0
    target = target_mb * 1_000_000
    while total < target:
        cwd = f"/home/bench/project-{rng.randrange(40):02d}"
        folder = projects / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        n = max(20, int(rng.lognormvariate(5.2, 0.9)))
        path = folder / f"{sid}.jsonl"
        last = None
        with open(path, "w", encoding="utf-8") as fh:
            for rec in _session(rng, sid, cwd, n):
                fh.write(json.dumps(rec, ensure_ascii=rng.random() < 0.5) + "\n")
                last = rec.get("timestamp", last)
            fh.write(json.dumps({"type": "custom-title", "customTitle": _text(rng, 5), "sessionId": sid}) + "\n")
        _stamp(path, last)
        total += path.stat().st_size
        files += 1
        sessions += 1
        if rng.random() < 0.15:
            agent = f"{rng.getrandbits(64):016x}"
            sub = folder / sid / "subagents" / f"agent-{agent}.jsonl"
            sub.parent.mkdir(parents=True, exist_ok=True)
            last = None
            with open(sub, "w", encoding="utf-8") as fh:
                for rec in _session(rng, sid, cwd, max(10, n // 4), sidechain=agent):
                    fh.write(json.dumps(rec) + "\n")
                    last = rec.get("timestamp", last)
            _stamp(sub, last)
            total += sub.stat().st_size
            files += 1
    return {"bytes": total, "files": files, "sessions": sessions, "version": VERSION}


def generate_chain_corpus(out: Path, sessions: int, records: int, seed: int = 11) -> int:
    """`sessions` transcripts of exactly `records` chained records each (for the chain figure)."""
    rng = random.Random(seed)
    folder = out / "claude" / "projects" / "-home-bench-chains"
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for s in range(sessions):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        path = folder / f"{sid}.jsonl"
        prev = None
        with open(path, "w") as fh:
            for i in range(records):
                uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                role = "user" if i % 2 == 0 else "assistant"
                msg = {"role": role, "content": f"turn {i}"} if role == "user" else {
                    "id": f"msg_{s}_{i}", "role": "assistant", "model": "m", "content": [{"type": "text", "text": f"turn {i}"}]}
                fh.write(json.dumps({"type": role, "uuid": uid, "parentUuid": prev, "sessionId": sid,
                                     "timestamp": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i // 3600:03d}Z",
                                     "message": msg}) + "\n")
                prev = uid
        total += path.stat().st_size
    return total
