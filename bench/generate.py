"""A deterministic synthetic corpus of agent stores for the benchmark.

Claude Code transcripts with realistic variety: string and block content, thinking, parallel
tool calls, large tool results, subagent files, compactions, metadata records and non-ASCII
text; sizes are log-normal like real projects. A quarter of the bytes are Codex CLI rollouts
(double-written messages, reasoning blobs, shell calls, token counts), so the corpus mixes
sources and both adapters' load paths are measured.
"""
from __future__ import annotations

import json
import os
import random
import uuid
from datetime import UTC, datetime
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
        ts = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
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


def _stamp_ms(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _rollout(rng: random.Random, thread: str, cwd: str, n_turns: int, start: float):
    """A Codex CLI rollout (envelope format, 2025-09 on), as Codex writes one: the session_meta
    with its long base instructions, then per turn the context, the user's message written twice
    (response_item and event_msg), reasoning with its encrypted blob, shell calls with outputs of
    log-normal size, token counts, and the answer, also written twice."""
    t = start
    total = 0

    def line(kind: str, payload: dict) -> dict:
        nonlocal t
        t += rng.random() * 3
        return {"timestamp": _stamp_ms(t), "type": kind, "payload": payload}

    yield line("session_meta", {"id": thread, "timestamp": _stamp_ms(t), "cwd": cwd, "originator": "codex_cli_rs",
                                "cli_version": "0.104.0", "source": "cli", "model_provider": "openai",
                                "base_instructions": {"text": _text(rng, 1800)},
                                "git": {"commit_hash": f"{rng.getrandbits(160):040x}", "branch": "main",
                                        "repository_url": "https://example.invalid/bench.git"}})
    yield line("response_item", {"type": "message", "role": "developer",
                                 "content": [{"type": "input_text", "text": _text(rng, 400)}]})
    for _ in range(n_turns):
        turn = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        yield line("event_msg", {"type": "task_started", "turn_id": turn, "model_context_window": 258400})
        yield line("turn_context", {"turn_id": turn, "cwd": cwd, "approval_policy": "on-request",
                                    "sandbox_policy": {"type": "workspace-write", "network_access": False},
                                    "model": "gpt-5.3-codex", "effort": rng.choice(["medium", "high"]),
                                    "summary": "auto"})
        ask = _text(rng, rng.randrange(5, 120))
        yield line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]})
        yield line("event_msg", {"type": "user_message", "message": ask, "images": [], "local_images": [],
                                 "text_elements": []})
        for _ in range(int(rng.lognormvariate(1.2, 0.8))):
            thought = _text(rng, rng.randrange(5, 40))
            yield line("event_msg", {"type": "agent_reasoning", "text": thought})
            yield line("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": thought}],
                                         "content": None,
                                         "encrypted_content": "gAAAAA" + f"{rng.getrandbits(8 * 900):x}"})
            call = f"call_{rng.getrandbits(96):024x}"
            command = f"{rng.choice(['rg -n', 'sed -n 1,200p', 'pytest -q', 'git diff'])} src/{rng.choice(WORDS)}.py"
            yield line("response_item", {"type": "function_call", "name": "exec_command", "call_id": call,
                                         "arguments": json.dumps({"cmd": command, "workdir": cwd, "yield_time_ms": 10000})})
            out = _text(rng, min(int(rng.lognormvariate(6.2, 1.6)), 12000))
            yield line("response_item", {"type": "function_call_output", "call_id": call,
                                         "output": f"Chunk ID: {rng.getrandbits(24):06x}\nWall time: 0.{rng.randrange(1000):03d} seconds\n"
                                                   f"Process exited with code {rng.choice([0, 0, 0, 1])}\nOutput:\n{out}"})
            used = {"input_tokens": rng.randrange(2000, 90000), "cached_input_tokens": rng.randrange(0, 80000),
                    "output_tokens": rng.randrange(10, 2000), "reasoning_output_tokens": rng.randrange(0, 900)}
            used["total_tokens"] = used["input_tokens"] + used["output_tokens"]
            total += used["total_tokens"]
            yield line("event_msg", {"type": "token_count",
                                     "info": {"total_token_usage": {**used, "total_tokens": total},
                                              "last_token_usage": used, "model_context_window": 258400},
                                     "rate_limits": {"primary": {"used_percent": 2.0, "window_minutes": 300}}})
        answer = _text(rng, rng.randrange(10, 250))
        yield line("response_item", {"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": answer}]})
        yield line("event_msg", {"type": "agent_message", "message": answer})
        yield line("event_msg", {"type": "task_complete", "turn_id": turn, "last_agent_message": answer})


#: Bumped when the corpus changes, so cached corpora are made again (2: file times, 3: Codex
#: rollouts beside the Claude Code transcripts).
VERSION = 3
#: The share of the corpus's bytes that are Codex rollouts; the rest is Claude Code.
CODEX_SHARE = 0.25


def _stamp(path: Path, last: str | None) -> None:
    """Give a transcript the modification time of its last record, as a real store's file has
    (it was last written then): loading orders new files by it."""
    if last:
        t = datetime.fromisoformat(last.replace("Z", "+00:00")).timestamp()
        os.utime(path, (t, t))


def generate(out: Path, target_mb: int, seed: int = 7) -> dict:
    """Claude Code transcripts (`out/claude/projects/`) and Codex rollouts (`out/codex/sessions/`),
    CODEX_SHARE of the bytes the latter, until the corpus holds `target_mb` MB."""
    rng = random.Random(seed)
    projects = out / "claude" / "projects"
    total = files = sessions = codex_bytes = 0
    target = target_mb * 1_000_000
    while total < target:
        cwd = f"/home/bench/project-{rng.randrange(40):02d}"
        if codex_bytes < CODEX_SHARE * total:
            size = _write_rollout(rng, out / "codex" / "sessions", cwd)
            codex_bytes += size
            total += size
            files += 1
            sessions += 1
            continue
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
    return {"bytes": total, "files": files, "sessions": sessions, "codex_bytes": codex_bytes, "version": VERSION}


def _write_rollout(rng: random.Random, sessions: Path, cwd: str) -> int:
    """One rollout where Codex puts it: sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl."""
    start = 1_760_000_000 + rng.randrange(0, 90 * 86400)
    thread = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    when = datetime.fromtimestamp(start, UTC)
    folder = sessions / when.strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{when.strftime('%Y-%m-%dT%H-%M-%S')}-{thread}.jsonl"
    last = None
    with open(path, "w", encoding="utf-8") as fh:
        for rec in _rollout(rng, thread, cwd, max(1, int(rng.lognormvariate(1.8, 0.8))), start):
            fh.write(json.dumps(rec, separators=(",", ":"), ensure_ascii=False) + "\n")
            last = rec["timestamp"]
    _stamp(path, last)
    return path.stat().st_size


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
