"""Seeded stories written as native Claude Code transcripts, for end-to-end handoff tests."""
from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

NS = uuid.UUID("4c1d7e2a-9b8f-4e3d-a1c2-b3d4e5f60718")


class Story:
    def __init__(self, name: str, *, cwd="/home/demo/orbit", branch="main", model="claude-sonnet-4-5",
                 start="2026-10-01T09:00:00"):
        self.name = name
        self.sid = str(uuid.uuid5(NS, name))
        self.cwd, self.branch, self.model = cwd, branch, model
        self.t = datetime.fromisoformat(start).replace(tzinfo=timezone.utc)
        self.records: list[dict] = []
        self.prev: str | None = None
        self.n = 0
        self.calls = 0
        self.side = False

    def _id(self) -> str:
        self.n += 1
        return str(uuid.uuid5(NS, f"{self.name}/{self.n}"))

    def _ts(self) -> str:
        self.t += timedelta(seconds=3)
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def _add(self, rec: dict, *, parent: str | None | bool = True) -> dict:
        uid = self._id()
        base = {"parentUuid": self.prev if parent is True else parent, "isSidechain": self.side, "userType": "external",
                "cwd": self.cwd, "sessionId": self.sid, "version": "2.1.80", "gitBranch": self.branch,
                "uuid": uid, "timestamp": self._ts()}
        base.update(rec)
        self.records.append(base)
        self.prev = uid
        return base

    def user(self, text: str, **extra) -> "Story":
        self._add({"type": "user", "message": {"role": "user", "content": text}, **extra})
        return self

    def assistant(self, text: str, model: str | None = None) -> "Story":
        self.calls += 1
        self._add({"type": "assistant", "requestId": f"req_{self.n}",
                   "message": {"id": f"msg_{self.name}_{self.n}", "type": "message", "role": "assistant",
                               "model": model or self.model, "content": [{"type": "text", "text": text}],
                               "usage": {"input_tokens": 100, "output_tokens": 20}}})
        return self

    def tool(self, name: str, input: dict, output: str, *, error: bool = False, model: str | None = None) -> "Story":
        self.calls += 1
        call = f"toolu_{self.name}_{self.calls:04d}"
        self._add({"type": "assistant", "requestId": f"req_{self.n}",
                   "message": {"id": f"msg_{self.name}_{self.n}", "type": "message", "role": "assistant",
                               "model": model or self.model,
                               "content": [{"type": "tool_use", "id": call, "name": name, "input": input}],
                               "usage": {"input_tokens": 100, "output_tokens": 20}}})
        self._add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output, "is_error": error}]}})
        return self

    def bash(self, command: str, output: str, exit_code: int = 0) -> "Story":
        text = output if exit_code == 0 else f"Exit code {exit_code}\n{output}"
        return self.tool("Bash", {"command": command}, text, error=exit_code != 0)

    def todo(self, items: list[tuple[str, str]]) -> "Story":
        return self.tool("TodoWrite", {"todos": [{"content": c, "status": s, "activeForm": c} for c, s in items]},
                         "Todos have been modified successfully.")

    def rewind(self, to: str | None) -> "Story":
        """The person goes back to the record `to` (a uuid from `mark`) and goes on from there; what
        came after it stays in the file as a branch the session left."""
        self.prev = to
        return self

    def mark(self) -> str | None:
        return self.prev

    def delegate(self, prompt: str, calls: list[tuple[str, dict, str]], answer: str) -> "Story":
        """A Task call whose subagent writes its records into the same file on a side chain, as
        Claude Code did before subagents had files of their own."""
        self.calls += 1
        call = f"toolu_{self.name}_{self.calls:04d}"
        self._add({"type": "assistant", "requestId": f"req_{self.n}",
                   "message": {"id": f"msg_{self.name}_{self.n}", "type": "message", "role": "assistant",
                               "model": self.model,
                               "content": [{"type": "tool_use", "id": call, "name": "Task",
                                            "input": {"description": prompt[:40], "prompt": prompt}}],
                               "usage": {"input_tokens": 100, "output_tokens": 20}}})
        main, self.prev, self.side = self.prev, None, True
        self.user(prompt)
        for name, input, output in calls:
            self.tool(name, input, output)
        self.prev, self.side = main, False
        self._add({"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": answer}]}})
        return self

    def compact(self, summary: str) -> "Story":
        leaf = self.prev
        self._add({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                   "logicalParentUuid": leaf, "compactMetadata": {"trigger": "auto", "preTokens": 150000}},
                  parent=None)
        self._add({"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                   "message": {"role": "user", "content": summary}})
        return self

    def title(self, text: str) -> "Story":
        self.records.append({"type": "custom-title", "customTitle": text, "sessionId": self.sid})
        return self

    def write(self, root: Path) -> Path:
        slug = "".join(c if c.isalnum() else "-" for c in self.cwd)
        path = root / "projects" / slug / f"{self.sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            for r in self.records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        return path
