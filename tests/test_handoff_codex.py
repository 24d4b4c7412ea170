"""The handoff guarantees hold on a story written as a native Codex CLI rollout too."""
from __future__ import annotations

import json
import re

from convarch import connect
from convarch.adapters import codex
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.handoff import build

SID = "019e3a10-1111-7222-8333-444455556666"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"


def item(ts: str, payload: dict, kind: str = "response_item") -> dict:
    return {"timestamp": f"2026-05-04T09:{ts}.000Z", "type": kind, "payload": payload}


def text(role: str, body: str) -> dict:
    return {"type": "message", "role": role,
            "content": [{"type": "input_text" if role == "user" else "output_text", "text": body}]}


def rollout() -> list[dict]:
    return [
        item("15:00", {"id": SID, "timestamp": "2026-05-04T09:15:00.000Z", "cwd": "/home/demo/orbit-api",
                       "originator": "codex_cli_rs", "cli_version": "0.128.0", "source": "cli",
                       "git": {"branch": "main"}}, "session_meta"),
        item("15:01", {"model": "gpt-5.3-codex", "cwd": "/home/demo/orbit-api"}, "turn_context"),
        item("15:02", text("user", "# AGENTS.md instructions for /home/demo/orbit-api\n\n<INSTRUCTIONS>\nKeep diffs small.\n</INSTRUCTIONS>")),
        item("15:03", text("user", "<environment_context>\n  <cwd>/home/demo/orbit-api</cwd>\n</environment_context>")),
        item("15:04", text("user", f"Serve the API on port 8080 with key {STRIPE}. Never add lodash as a dependency.")),
        item("15:05", {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "npm test -- --grep EMBER"}),
                       "call_id": "call_t1"}),
        item("15:06", {"type": "function_call_output", "call_id": "call_t1",
                       "output": "Process exited with code 1\nOutput:\n1 failing: EMBER17 budget exceeded\n"}),
        item("15:07", text("user", "Actually, use port 43179 instead of 8080.")),
        item("15:08", text("assistant", "Switched the server to port 43179; the EMBER17 test still fails.")),
        item("15:09", text("user", "<environment_context>\n  <cwd>/home/demo/orbit-api</cwd>\n</environment_context>")),
    ]


def test_codex_story_handoff(tmp_path):
    home = tmp_path / "codex"
    path = home / "sessions" / "2026" / "05" / "04" / f"rollout-2026-05-04T11-15-00-{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rollout()))
    db = tmp_path / "w.duckdb"
    ingest(Layout(db), [(codex, codex.resolve_root(home))])
    con = connect(db)
    try:
        md = build(con, SID)
        js = json.loads(build(con, SID, fmt="json"))
    finally:
        con.close()
    goal = re.search(r"^## Goal\n(.*?)^## ", md, re.M | re.S).group(1)
    assert "Actually, use port" in goal and "environment_context" not in goal and "AGENTS.md" not in goal
    assert "port: 43179" in md
    assert "port 8080" not in md and "instead of 8080" not in md
    assert "Never add lodash" in md
    assert re.search(r"npm test -- --grep EMBER \(1 run, last exit 1", md)
    assert STRIPE[:12] not in md and "[REDACTED:stripe]" in md
    assert js["session"]["agent"] == "Codex CLI" and js["provenance"]["redactions"].get("stripe", 0) >= 1
