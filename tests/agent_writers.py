"""Agents at work, for tests that ingest while they write: run as a script in its own process,
it writes eight stores the way their agents do, step after step, with short pauses inside
each write so that a run can catch one half done.

- a Claude Code transcript gains records, each line written in two parts (the first part
  flushed on its own, as a line longer than the writer's buffer is);
- a Cline task history is written out whole after each message, by truncating the file and
  writing the new text in pieces (as the extension's fs.writeFile does), and now and then its
  last message is rewritten (an answer streamed in);
- a goose database in WAL mode gains a message per commit, and is checkpointed now and then;
- an OpenCode database in WAL mode gains messages in a session: a user's message and its
  part in one commit; an answer first with its text part in part, then, in a later commit,
  the part written whole, the message completed and the session's time moved on;
- a Cursor state.vscdb (rollback journal, as VS Code keeps it) gains bubbles in a chat, the
  bubble committed before its composer row names it; an answer's bubble is rewritten in
  place as it streams; an older chat is taken up again; and UI state is written on its own;
- a Gemini CLI op-log (appended, but read whole and replayed) gains a question, then an answer
  written twice under one id (first as it starts, then complete), and now and then a `$set`;
  each line written in two parts;
- a Codex CLI rollout gains turns: a turn context (now and then naming another model, which
  the lines after it carry), the user's message, reasoning, a tool call and its output, the
  answer and a token count, each line written in two parts;
- a Copilot CLI session folder gains events chained by parentId, each line written in two
  parts, and its workspace.yaml is written out again now and then, truncated first, its
  summary ending "(end)" so a torn one shows.

    python tests/agent_writers.py TRANSCRIPT HISTORY GOOSE_DB OPENCODE_DB CURSOR_DB GEMINI_LOG \
        CODEX_ROLLOUT COPILOT_SESSION STEPS SEED

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
    with open(path, "wb") as fh:          # truncated at open, as writeFile does, and left so a moment
        time.sleep(rng.uniform(0, 0.02))
        for a, b in zip([0, *cuts], [*cuts, len(data)]):
            fh.write(data[a:b])
            fh.flush()
            time.sleep(rng.uniform(0, 0.02))


def cline_message(i: int, rng: random.Random, final: bool = True) -> dict:
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 300)))
    if i % 2 == 0:
        return {"role": "user", "content": [{"type": "text", "text": f"<task>\n{words}\n</task>"}]}
    text = words if final else words[: len(words) // 3]
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


OPENCODE_SESSION = "ses_1f0a2b3c4d5eAbCdEfGhIjKlMn"
OPENCODE_T0 = 1778666400000 + 100_000


class OpenCodeWriter:
    """OpenCode's writes of one session: rows as its drizzle store keeps them (formats.md §8)."""

    def __init__(self, path: Path):
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("pragma busy_timeout = 5000")
        self.user: str | None = None
        self.open: tuple[str, str, int, str] | None = None    # an answer written in part

    def step(self, step: int, rng: random.Random) -> None:
        at = OPENCODE_T0 + 1000 * step
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 200)))
        con = self.con
        if self.open is not None:
            mid, pid, created, full = self.open
            con.execute("begin")
            con.execute("update part set data = ?, time_updated = ? where id = ?",
                        (json.dumps({"type": "text", "text": full, "time": {"start": created, "end": at}}), at, pid))
            info = json.loads(con.execute("select data from message where id = ?", (mid,)).fetchone()[0])
            info["time"]["completed"] = at
            info["finish"] = "stop"
            con.execute("update message set data = ?, time_updated = ? where id = ?", (json.dumps(info), at, mid))
            con.execute("update session set time_updated = ? where id = ?", (at, OPENCODE_SESSION))
            con.execute("commit")
            self.open = None
            return
        mid, pid = f"msg_f{step:021d}", f"prt_f{step:011d}Aa"
        con.execute("begin")
        if self.user is None or rng.random() < 0.4:
            info = {"role": "user", "time": {"created": at}, "agent": "build",
                    "model": {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}}
            part = {"type": "text", "text": text, "time": {"start": at, "end": at}}
            self.user = mid
        else:
            info = {"role": "assistant", "time": {"created": at}, "parentID": self.user,
                    "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build", "agent": "build",
                    "path": {"cwd": "/home/demo/weather-app", "root": "/home/demo/weather-app"}, "cost": 0.01,
                    "tokens": {"input": 100 + step, "output": 20, "reasoning": 0, "cache": {"read": 0, "write": 0}}}
            part = {"type": "text", "text": text[: len(text) // 2], "time": {"start": at}}
            self.open = (mid, pid, at, text)
        con.execute("insert into message values (?, ?, ?, ?, ?)", (mid, OPENCODE_SESSION, at, at, json.dumps(info)))
        con.execute("insert into part values (?, ?, ?, ?, ?, ?)", (pid, mid, OPENCODE_SESSION, at, at, json.dumps(part)))
        con.execute("update session set time_updated = ? where id = ?", (at, OPENCODE_SESSION))
        con.execute("commit")


class CursorWriter:
    """Cursor's writes to its global state.vscdb: bubbles under `bubbleId:<chat>:<bubble>`, a
    chat's composer row under `composerData:<chat>` naming them in order, UI state in ItemTable."""

    def __init__(self, path: Path):
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("pragma busy_timeout = 5000")
        self.chats = [key[len("composerData:"):] for (key,) in self.con.execute(
            "select key from cursorDiskKV where key like 'composerData:%' order by key")]
        self.streaming: tuple[str, str, dict] | None = None

    def _composer(self, chat: str) -> dict:
        (value,) = self.con.execute("select value from cursorDiskKV where key = ?", (f"composerData:{chat}",)).fetchone()
        return json.loads(value)

    def _put(self, key: str, value: dict) -> None:
        self.con.execute("insert or replace into cursorDiskKV (key, value) values (?, ?)", (key, json.dumps(value)))

    def step(self, step: int, rng: random.Random) -> None:
        at = 1767261600000 + 1_000_000 + 1000 * step
        what = rng.random()
        if self.streaming is not None:
            chat, bid, value = self.streaming
            value["text"] += " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
            self._put(f"bubbleId:{chat}:{bid}", value)          # the same bubble, rewritten in place
            if rng.random() < 0.5:
                self.streaming = None
            return
        if what < 0.2:
            self.con.execute("insert or replace into ItemTable (key, value) values (?, ?)",
                             ("workbench.panel.state", json.dumps({"step": step})))
            return
        chat = self.chats[0] if what < 0.85 else rng.choice(self.chats)
        bid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"cursor/{step}"))
        kind = rng.choice((1, 2))
        value = {"_v": 3, "type": kind, "bubbleId": bid, "text": " ".join(rng.choice(WORDS) for _ in range(5)),
                 "richText": "", "codeBlocks": [], "images": [], "isAgentic": kind == 2,
                 "createdAt": f"2026-01-01T12:{step // 60 % 60:02d}:{step % 60:02d}.000Z"}
        self._put(f"bubbleId:{chat}:{bid}", value)              # its own commit, before the header
        composer = self._composer(chat)
        if "conversation" in composer:                           # an older chat keeps bubbles inline
            composer["conversation"].append({"type": kind, "bubbleId": bid, "text": value["text"]})
            self.con.execute("delete from cursorDiskKV where key = ?", (f"bubbleId:{chat}:{bid}",))
        else:
            composer.setdefault("fullConversationHeadersOnly", []).append({"bubbleId": bid, "type": kind})
        composer["lastUpdatedAt"] = at
        self._put(f"composerData:{chat}", composer)
        if kind == 2 and "conversation" not in composer:
            self.streaming = (chat, bid, value)


class GeminiWriter:
    """Gemini CLI's op-log of one session: message records appended, an answer appended again
    under the same id when it completes (the replay keeps the last version)."""

    def __init__(self, path: Path):
        self.path = path
        self.open: dict | None = None        # an answer written as it started

    def step(self, step: int, rng: random.Random) -> None:
        at = f"2026-12-01T11:{step // 60 % 60:02d}:{step % 60:02d}.000Z"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 200)))
        if self.open is not None:
            record = dict(self.open, content=text, tokens={"input": 100 + step, "output": 20, "total": 120 + step})
            self.open = None
        elif rng.random() < 0.15:
            record = {"$set": {"lastUpdated": at}}
        elif rng.random() < 0.5:
            record = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"gemini/{step}")), "timestamp": at, "type": "user",
                      "content": [{"text": text}]}
        else:
            record = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"gemini/{step}")), "timestamp": at, "type": "gemini",
                      "content": "", "tokens": None, "model": "gemini-2.5-pro"}
            self.open = record
        append_record(self.path, record, rng)


class CodexWriter:
    """Codex CLI's rollout of one session: the lines of a turn appended one by one."""

    def __init__(self, path: Path):
        self.path = path
        self.model = "gpt-5-codex"
        self.turn = 0

    def line(self, at: str, kind: str, payload: dict, rng: random.Random) -> None:
        append_record(self.path, {"timestamp": at, "type": kind, "payload": payload}, rng)

    def step(self, step: int, rng: random.Random) -> None:
        at = f"2026-12-01T12:{step // 60 % 60:02d}:{step % 60:02d}.000Z"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 200)))
        what = rng.random()
        if what < 0.25:
            self.turn += 1
            if rng.random() < 0.3:
                self.model = "gpt-5" if self.model == "gpt-5-codex" else "gpt-5-codex"
            self.line(at, "turn_context", {"turn_id": f"turn-{self.turn}", "cwd": "/home/live/app",
                                           "approval_policy": "on-request", "model": self.model}, rng)
            self.line(at, "response_item", {"type": "message", "role": "user",
                                            "content": [{"type": "input_text", "text": text}]}, rng)
            self.line(at, "event_msg", {"type": "user_message", "message": text, "images": []}, rng)
        elif what < 0.5:
            call = f"call_{step}"
            self.line(at, "response_item", {"type": "function_call", "name": "exec_command", "call_id": call,
                                            "arguments": json.dumps({"cmd": f"grep -rn {rng.choice(WORDS)} ."})}, rng)
            self.line(at, "response_item", {"type": "function_call_output", "call_id": call,
                                            "output": f"Process exited with code 0\nOutput:\n{text}"}, rng)
        elif what < 0.75:
            self.line(at, "event_msg", {"type": "agent_reasoning", "text": f"**{text[:40]}**"}, rng)
            self.line(at, "response_item", {"type": "message", "role": "assistant",
                                            "content": [{"type": "output_text", "text": text}]}, rng)
        else:
            self.line(at, "event_msg", {"type": "token_count", "info": {"total_token_usage": {
                "input_tokens": 1000 + step, "cached_input_tokens": 10, "output_tokens": 50 + step,
                "reasoning_output_tokens": 5, "total_tokens": 1050 + 2 * step}}}, rng)


COPILOT_SESSION = "0b7e3c1d-2f4a-4b6c-8d9e-1a2b3c4d5e6f"


def copilot_workspace(summary: str, updated: str) -> str:
    return (f"id: {COPILOT_SESSION}\ncwd: /home/live/app\ngit_root: /home/live/app\nbranch: main\n"
            f"summary: {summary}\nsummary_count: 1\ncreated_at: 2026-12-01T13:00:00.000Z\nupdated_at: {updated}\n")


class CopilotWriter:
    """Copilot CLI's session folder: events.jsonl appended, workspace.yaml written out again."""

    def __init__(self, folder: Path):
        self.events = folder / "events.jsonl"
        self.workspace = folder / "workspace.yaml"
        with open(self.events, "rb") as fh:
            self.parent = json.loads(fh.read().splitlines()[-1])["id"]
        self.tool: str | None = None

    def event(self, step: int, n: int, kind: str, data: dict, rng: random.Random) -> None:
        eid = f"ev-{step}-{n}"
        append_record(self.events, {"type": kind, "data": data, "id": eid, "parentId": self.parent,
                                    "timestamp": f"2026-12-01T13:{step // 60 % 60:02d}:{step % 60:02d}.{n:03d}Z"}, rng)
        self.parent = eid

    def step(self, step: int, rng: random.Random) -> None:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 200)))
        what = rng.random()
        if what < 0.2:
            rewrite_text(self.workspace, copilot_workspace(f"Work through step {step} of {text[:60]} (end)",
                                                           f"2026-12-01T13:{step // 60 % 60:02d}:{step % 60:02d}.000Z"), rng)
        elif self.tool is not None:
            self.event(step, 0, "tool.execution_complete", {"toolCallId": self.tool, "success": True,
                                                            "result": {"content": text}}, rng)
            self.tool = None
        elif what < 0.55:
            self.event(step, 0, "user.message", {"content": text, "transformedContent": text, "attachments": []}, rng)
            self.event(step, 1, "assistant.turn_start", {"turnId": str(step)}, rng)
        else:
            call = f"call_{step}" if rng.random() < 0.5 else None
            requests = [{"toolCallId": call, "name": "bash", "arguments": {"command": "pytest -q"},
                         "type": "function"}] if call else []
            self.event(step, 0, "assistant.message", {"messageId": f"msg-{step}", "content": text,
                                                      "toolRequests": requests, "outputTokens": 20}, rng)
            if call:
                self.event(step, 1, "tool.execution_start", {"toolCallId": call, "toolName": "bash",
                                                             "arguments": {"command": "pytest -q"}}, rng)
                self.tool = call


def rewrite_text(path: Path, text: str, rng: random.Random) -> None:
    """A small file written out again as Node's writeFile does it: truncated at open, then
    written in one call (a reader sees it empty, or whole)."""
    with open(path, "wb") as fh:
        fh.flush()
        time.sleep(rng.uniform(0, 0.02))
        fh.write(text.encode())


def main(transcript: Path, history_path: Path, goose_db: Path, opencode_db: Path, cursor_db: Path,
         gemini_log: Path, codex_rollout: Path, copilot_session: Path, steps: int, seed: int) -> int:
    rng = random.Random(seed)
    parent = None
    with open(transcript, "rb") as fh:
        lines = fh.read().splitlines()
    if lines:
        parent = json.loads(lines[-1])["uuid"]
    history = json.loads(history_path.read_bytes())
    con = sqlite3.connect(goose_db, isolation_level=None)
    con.execute("pragma busy_timeout = 5000")
    opencode = OpenCodeWriter(opencode_db)
    cursor = CursorWriter(cursor_db)
    gemini = GeminiWriter(gemini_log)
    codex = CodexWriter(codex_rollout)
    copilot = CopilotWriter(copilot_session)
    done = 0
    for step in range(steps):
        what = rng.random()
        if what < 0.16:
            record = claude_record(step, parent, rng)
            append_record(transcript, record, rng)
            parent = record["uuid"]
        elif what < 0.3:
            i = len(history)
            if i % 2 == 1 and rng.random() < 0.5:
                # an answer written in part, then again whole
                history.append(cline_message(i, random.Random(seed * 1000 + i), final=False))
                rewrite_history(history_path, history, rng)
                history[-1] = cline_message(i, random.Random(seed * 1000 + i))
            else:
                history.append(cline_message(i, random.Random(seed * 1000 + i)))
            rewrite_history(history_path, history, rng)
        elif what < 0.42:
            opencode.step(step, rng)
        elif what < 0.55:
            cursor.step(step, rng)
        elif what < 0.67:
            gemini.step(step, rng)
        elif what < 0.78:
            codex.step(step, rng)
        elif what < 0.89:
            copilot.step(step, rng)
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
    opencode.con.close()
    cursor.con.close()
    return done


if __name__ == "__main__":
    *paths, n, s = sys.argv[1:11]
    print(main(*map(Path, paths), int(n), int(s)), flush=True)
