"""Stores shaped like each agent's, of a chosen size, and the writes the agent makes to them
as a session goes on: what bench/rewrites.py reads again after each write."""
from __future__ import annotations

import importlib.util
import json
import random
import sqlite3
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WORDS = "alpha beta gamma delta retry cache build test lint deploy parser worker".split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def cline_messages(mb: int, seed: int = 5) -> list[dict]:
    """An API history of tool calls whose results are a few KB to tens of KB."""
    rng = random.Random(seed)
    msgs: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "<task>\nfix the build\n</task>"}]}]
    size, i = 0, 0
    while size < mb * 1e6:
        call = f"toolu_{i:06d}"
        out = [{"role": "assistant", "content": [
                   {"type": "text", "text": _words(rng, 30)},
                   {"type": "tool_use", "id": call, "name": "execute_command", "input": {"command": f"make test {i}"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                             "content": _words(rng, int(rng.lognormvariate(7, 1)))}]}]
        size += sum(len(json.dumps(m)) for m in out)
        msgs += out
        i += 1
    return msgs


def _builder(source: str):
    """fixtures/<source>/build_contract.py, whose schema and row helpers the stores reuse."""
    spec = importlib.util.spec_from_file_location(f"{source}_build", FIXTURES / source / "build_contract.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def goose_db(path: Path, mb: int, seed: int = 6) -> None:
    """A goose sessions.db whose messages alternate user and assistant, and, as goose (schema
    15 and later) writes them, a usage row for each request an answer took."""
    build = _builder("goose")
    build.write_db(path)
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    size, i = 0, 0
    while size < mb * 1e6:
        rows, usage = [], []
        for _ in range(1000):
            body = json.dumps([{"type": "text", "text": _words(rng, int(rng.lognormvariate(5, 1)))}])
            role = "user" if i % 2 else "assistant"
            rows.append((f"bench_{i}", "20260505_1", role, body, build.T0 + i))
            if role == "assistant":
                usage.append(("20260505_1", build.T0 + i, 1000 + i, 50))
            size += len(body)
            i += 1
        con.executemany("insert into messages (message_id, session_id, role, content_json, created_timestamp) "
                        "values (?, ?, ?, ?, ?)", rows)
        con.executemany("insert into usage_ledger (session_id, created_timestamp, model, input_tokens, output_tokens) "
                        "values (?, ?, 'gpt-5', ?, ?)", usage)
    con.commit()
    con.close()


def goose_turn(path: Path, i: int) -> None:
    """The session goes on, as goose writes it: the answer, its request's usage row, and the
    session's totals."""
    build = _builder("goose")
    con = sqlite3.connect(path)
    at = build.T0 + 10_000_000 + i
    con.execute("insert into messages (message_id, session_id, role, content_json, created_timestamp) "
                "values (?, '20260505_1', 'assistant', ?, ?)", (f"bench_turn_{i}", json.dumps([{"type": "text", "text": "done"}]), at))
    con.execute("insert into usage_ledger (session_id, created_timestamp, model, input_tokens, output_tokens) "
                "values ('20260505_1', ?, 'gpt-5', 1200, 40)", (at,))
    con.execute("update sessions set total_tokens = coalesce(total_tokens, 0) + 1240 where id = '20260505_1'")
    con.commit()
    con.close()


def cursor_store(path: Path, mb: int, seed: int = 7) -> None:
    """A Cursor state.vscdb of chats of 150 bubbles, each chat updated after the one before."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    con.execute("create table cursorDiskKV (key text unique on conflict replace, value blob)")
    con.execute("create table ItemTable (key text unique on conflict replace, value blob)")
    rng = random.Random(seed)
    size, c = 0, 0
    while size < mb * 1e6:
        cid, heads = f"chat{c:05d}", []
        for b in range(150):
            body = json.dumps({"type": 1 + b % 2, "text": _words(rng, int(rng.lognormvariate(5, 1))),
                               "createdAt": "2026-02-02T02:40:01.000Z"})
            con.execute("insert into cursorDiskKV values (?, ?)", (f"bubbleId:{cid}:b{b:04d}", body))
            heads.append({"bubbleId": f"b{b:04d}", "type": 1 + b % 2})
            size += len(body)
        con.execute("insert into cursorDiskKV values (?, ?)", (f"composerData:{cid}", json.dumps(
            {"composerId": cid, "name": f"chat {c}", "createdAt": 1770000000000 + c,
             "lastUpdatedAt": 1770000000000 + 1000 * c, "fullConversationHeadersOnly": heads})))
        c += 1
    con.commit()
    con.close()


def cursor_bubble(path: Path, cid: str, bid: str, text: str) -> None:
    """A bubble added to a chat, as Cursor writes it: the bubble, then the chat's row, updated
    now (after every other chat)."""
    con = sqlite3.connect(path)
    chat = json.loads(con.execute("select value from cursorDiskKV where key = ?", (f"composerData:{cid}",)).fetchone()[0])
    chat["fullConversationHeadersOnly"].append({"bubbleId": bid, "type": 2})
    (last,) = con.execute("select max(json_extract(value, '$.lastUpdatedAt')) from cursorDiskKV "
                          "where key like 'composerData:%'").fetchone()
    chat["lastUpdatedAt"] = last + 1000
    con.execute("insert into cursorDiskKV values (?, ?)", (f"bubbleId:{cid}:{bid}", json.dumps({"type": 2, "text": text})))
    con.execute("insert into cursorDiskKV values (?, ?)", (f"composerData:{cid}", json.dumps(chat)))
    con.commit()
    con.close()


def _opencode_message(build, rng: random.Random, session: str, i: int) -> tuple[tuple, list[tuple]]:
    """A message row and its part rows as OpenCode writes them: a user prompt, or an assistant
    step (its text and a tool call whose output is a few KB to tens of KB)."""
    at, mid = build.T0 + 1000 * i, f"msg_{i:010d}"
    if i % 2 == 0:
        info = {"role": "user", "time": {"created": at}, "agent": "build", "model": build.MODEL}
        parts = [build.text(_words(rng, 20), 1000 * i)]
    else:
        info = {"role": "assistant", "time": {"created": at, "completed": at + 900}, "parentID": f"msg_{i - 1:010d}",
                "modelID": build.MODEL["modelID"], "providerID": build.MODEL["providerID"], "mode": "build",
                "agent": "build", "path": {"cwd": build.CWD, "root": build.CWD}, "cost": 0.01,
                "tokens": {"input": 1000 + i, "output": 50, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                "finish": "tool-calls"}
        parts = [build.step_start(1000 * i), build.text(_words(rng, 30), 1000 * i),
                 build.tool(f"toolu_{i:08d}", "bash", "completed", {"command": f"make test {i}"}, 1000 * i,
                            output=_words(rng, int(rng.lognormvariate(6, 1))))]
    return ((mid, session, at, at, json.dumps(info)),
            [(f"prt_{i:010d}{k}", mid, session, at, at, json.dumps(p)) for k, p in enumerate(parts)])


def opencode_db(path: Path, mb: int, seed: int = 10) -> int:
    """An OpenCode database of sessions of 200 messages; returns how many messages."""
    build = _builder("opencode")
    build.write_db(path)
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    size, i = 0, 0
    while size < mb * 1e6:
        session = f"ses_bench{i // 200:06d}"
        if i % 200 == 0:
            con.execute("insert into session (id, project_id, slug, directory, title, version, time_created, "
                        "time_updated) values (?, ?, ?, ?, ?, '1.2.10', ?, ?)",
                        (session, build.PROJECT, session, build.CWD, f"bench {i // 200}", build.T0 + 1000 * i,
                         build.T0 + 1000 * i))
        message, parts = _opencode_message(build, rng, session, i)
        con.execute("insert into message values (?, ?, ?, ?, ?)", message)
        con.executemany("insert into part values (?, ?, ?, ?, ?, ?)", parts)
        size += len(message[4]) + sum(len(p[5]) for p in parts)
        i += 1
    con.commit()
    con.close()
    return i


def opencode_turn(path: Path, i: int) -> None:
    """The latest session goes on, as OpenCode writes it: a message, its parts, the session row."""
    build = _builder("opencode")
    con = sqlite3.connect(path)
    session = f"ses_bench{(i - 1) // 200:06d}"
    message, parts = _opencode_message(build, random.Random(i), session, i)
    con.execute("insert into message values (?, ?, ?, ?, ?)", message)
    con.executemany("insert into part values (?, ?, ?, ?, ?, ?)", parts)
    con.execute("update session set time_updated = ? where id = ?", (message[2], session))
    con.commit()
    con.close()


GEMINI_SESSION = "5d1c2b3a-7f0e-4c55-9a41-2b8e6d0c1f37"


def gemini_turn(rng: random.Random, i: int, answer: str | None = None) -> list[dict]:
    """A user question, then the answer as Gemini CLI writes it: in progress, then again
    complete with its tool call's result and tokens (the same id, which supersedes it)."""
    t = f"2026-05-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    call = {"id": f"call-{i}", "name": "run_shell_command", "args": {"command": f"make test {i}"},
            "status": "executing", "timestamp": t}
    done = dict(call, status="success", result=[{"functionResponse": {
        "id": f"call-{i}", "name": "run_shell_command",
        "response": {"output": _words(rng, int(rng.lognormvariate(7, 1)))}}}])
    reply = {"id": f"g-{i}", "timestamp": t, "type": "gemini", "content": "", "toolCalls": [call]}
    return [{"id": f"u-{i}", "timestamp": t, "type": "user", "content": [{"text": answer or _words(rng, 20)}]},
            reply,
            dict(reply, content=_words(rng, 30), toolCalls=[done],
                 tokens={"input": 1000 + i, "output": 50, "cached": 0, "thoughts": 0, "tool": 0, "total": 1050 + i})]


def gemini_log(path: Path, mb: int, seed: int = 8) -> None:
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"sessionId": GEMINI_SESSION, "projectHash": "f" * 64, "startTime": "2026-05-01T10:00:00.000Z",
              "lastUpdated": "2026-05-01T10:00:00.000Z", "kind": "main"}
    size, i = 0, 0
    with open(path, "w") as fh:
        fh.write(json.dumps(header) + "\n")
        while size < mb * 1e6:
            for r in gemini_turn(rng, i):
                line = json.dumps(r) + "\n"
                fh.write(line)
                size += len(line)
            i += 1
