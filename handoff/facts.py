"""Everything a handoff states, derived from the warehouse's views for one session.

Loading runs the SQL in `sql/queries/handoff__*.sql`; deriving is plain Python over those rows
with explicit orderings, so the same rows always give the same facts. Secrets are redacted
before anything else looks at the text, and superseded values are computed from the redacted
text.
"""
from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import duckdb

from convarch import sql
from convarch.handoff import values
from convarch.etl.redact import Redactor

DECISION_CUES = re.compile(
    r"(?i)^(?:please\s+)?(?:don'?t|do not|never|always|must|use|switch|stop|prefer|make sure|avoid|keep|"
    r"no,|not\b|actually|instead|from now on)|\binstead of\b|\brather than\b|\bfrom now on\b|\bno longer\b|"
    r"\bdon'?t use\b|\bdo not use\b|\bnever use\b|\bbanned?\b|\bnot allowed\b|\bwithout\b.*\bdependenc"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CD_PREFIX = re.compile(r"^\s*cd\s+\S+\s*&&\s*")


@dataclass
class Turn:
    seq: int
    message_id: str | None
    role: str
    kind: str | None
    harness_kind: str | None
    timestamp: Any
    text: str
    model: str | None
    is_compact_boundary: bool


@dataclass
class Call:
    seq: int
    tool_name: str
    tool_kind: str
    path: str | None
    command: str | None
    input: dict
    output: str
    is_error: bool
    exit_code: int | None
    has_result: bool


@dataclass
class Facts:
    session: dict
    turns: list[Turn]
    calls: list[Call]
    goal_first: Turn | None = None
    goal_latest: Turn | None = None
    timeline: values.Timeline | None = None
    decisions: list[tuple[int, str]] = field(default_factory=list)
    todos: list[dict] = field(default_factory=list)
    todo_seq: int | None = None
    files: list[dict] = field(default_factory=list)
    commands: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    latest_assistant: Turn | None = None
    models: list[tuple[str, int]] = field(default_factory=list)
    compactions: int = 0
    input_sha256: str = ""
    redactions: Counter = field(default_factory=Counter)
    #: tool calls made on branches the session left (rewinds, forks), which nothing here states
    calls_left_out: int = 0
    #: files those calls edited or wrote: the change may still be on disk (a rewind of the
    #: conversation need not undo it), so the next agent is told to look
    left_writes: list[str] = field(default_factory=list)


def load(con: duckdb.DuckDBPyConnection, session_id: str) -> Facts:
    redact = Redactor()
    params = {"session_id": session_id}
    cur = con.execute(sql.read("queries/handoff__session"), params)
    cols = [d[0] for d in cur.description]
    session = dict(zip(cols, cur.fetchone()))
    for key in ("title", "cwd", "git_branch"):
        session[key] = redact(session.get(key))
    session["agent"] = _agent_title(session.get("source"))
    turns = []
    for row in con.execute(sql.read("queries/handoff__turns"), params).fetchall():
        seq, mid, role, kind, harness, ts, text, model, rtype, subtype, _is_cs = row
        turns.append(Turn(int(seq), mid, role or "", kind, harness, ts, redact(text) or "", model,
                          kind == "compact_boundary" or subtype == "compact_boundary"))
    seq_of = {t.message_id: t.seq for t in turns if t.message_id}
    seq_at = _seq_at_time(turns)
    calls = []
    left_out = 0
    left_writes: set[str] = set()
    last_seq = 0
    for row in con.execute(sql.read("queries/handoff__tool_calls"), params).fetchall():
        (call_id, mid, name, kind, path, command, inp, output, is_error, exit_code, has_result, ts, on_branch) = row
        if not on_branch:
            left_out += 1
            if path and kind in ("edit", "write") and not is_error:
                left_writes.add(redact(path))
            continue
        seq = seq_of.get(mid) or seq_at(ts) or last_seq or (1 if turns else 0)
        last_seq = max(last_seq, seq)
        try:
            parsed = json.loads(redact(inp) or "null") if inp else {}
        except ValueError:
            parsed = {}
        calls.append(Call(seq, name or "", kind or "other", redact(path), redact(command),
                          parsed if isinstance(parsed, dict) else {}, redact(output) or "",
                          bool(is_error), exit_code, bool(has_result)))
    facts = Facts(session, turns, calls, calls_left_out=left_out, left_writes=sorted(left_writes))
    facts.input_sha256 = _digest(session, turns, calls, (left_out, facts.left_writes))
    derive(facts)
    facts.redactions = redact.counts
    return facts


def _seq_at_time(turns: list[Turn]):
    """The message a call that is not itself on the chain (a subagent's) belongs with: the last
    one written at or before it, so its `#N` points into the conversation shown."""
    timed = sorted((t.timestamp, t.seq) for t in turns if t.timestamp is not None)
    times = [ts for ts, _ in timed]
    latest = list(accumulate((seq for _, seq in timed), max))

    def at(ts) -> int | None:
        if ts is None:
            return None
        i = bisect_right(times, ts)
        return latest[i - 1] if i else None
    return at


def _agent_title(source: str | None) -> str:
    from convarch import adapters

    try:
        return adapters.get(source or "").TITLE
    except KeyError:
        return source or "unknown agent"


def _digest(session: dict, turns: list[Turn], calls: list[Call], left: tuple[int, list[str]] = (0, [])) -> str:
    """A hash of the normalized rows a handoff was rendered from, not of any run's metadata."""
    h = hashlib.sha256()
    for key in sorted(k for k in session if k not in ("record_count",)):
        h.update(f"{key}={session[key]!s}\n".encode())
    for t in turns:
        h.update(json.dumps([t.seq, t.message_id, t.role, t.kind, t.harness_kind, str(t.timestamp), t.text]).encode())
    for c in calls:
        h.update(json.dumps([c.seq, c.tool_name, c.path, c.command, c.output, c.is_error, c.exit_code],
                            sort_keys=True).encode())
    if left[0]:          # calls on branches left: only their count and files are rendered
        h.update(json.dumps(["left", left[0], left[1]]).encode())
    return h.hexdigest()


def explicit_requests(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.role == "user" and t.kind == "prompt" and not t.harness_kind and t.text.strip()]


def derive(f: Facts) -> None:
    requests = explicit_requests(f.turns)
    f.goal_first = requests[0] if requests else None
    f.goal_latest = requests[-1] if requests else None
    f.compactions = sum(1 for t in f.turns if t.is_compact_boundary)
    f.latest_assistant = next(
        (t for t in reversed(f.turns) if t.role == "assistant" and t.kind in ("response", "tool_use") and t.text.strip()),
        None)
    f.models = sorted(Counter(t.model for t in f.turns if t.role == "assistant" and t.model and t.model != "<synthetic>").items(),
                      key=lambda kv: (-kv[1], kv[0]))
    f.timeline = values.build_timeline(_mentions(f, requests))
    f.decisions = _decisions(requests)
    f.todos, f.todo_seq = _todos(f.calls)
    masks = f.timeline.masks()
    moved_away = masks.get("path", set())
    f.files = _files(f.calls, moved_away)
    f.commands = _commands(f.calls)
    f.errors = _errors(f.calls)


def _mentions(f: Facts, requests: list[Turn]) -> list[values.Mention]:
    out: list[values.Mention] = []
    for t in requests:
        evidence = "correction" if DECISION_CUES.search(t.text) else "user"
        out += values.mentions_in_text(t.text, t.seq, evidence)
    for t in f.turns:
        if t.role == "assistant" and t.text:
            out += values.mentions_in_text(t.text, t.seq, "assistant")
    for c in f.calls:
        if c.is_error:
            continue
        if c.tool_kind == "edit":
            old = c.input.get("old_string") or c.input.get("old_str") or ""
            new = c.input.get("new_string") or c.input.get("new_str") or ""
            if isinstance(old, str) and isinstance(new, str):
                out += values.mentions_in_edit(old, new, c.seq)
            for e in c.input.get("edits") or []:
                if isinstance(e, dict):
                    out += values.mentions_in_edit(str(e.get("old_string", "")), str(e.get("new_string", "")), c.seq)
        elif c.tool_kind == "write":
            content = c.input.get("content")
            if isinstance(content, str):
                out += [values.Mention(m.slot, m.value, m.seq, "edit_new")
                        for m in values.mentions_in_text(content, c.seq, "edit")]
        elif c.tool_kind == "shell" and c.command:
            out += values.mentions_in_command(c.command, c.seq)
    return out


def _decisions(requests: list[Turn]) -> list[tuple[int, str]]:
    seen: set[str] = set()
    out: list[tuple[int, str]] = []
    for t in reversed(requests):
        for sentence in _SENTENCE.split(t.text):
            s = sentence.strip()
            if len(s) < 4 or not DECISION_CUES.search(s):
                continue
            key = " ".join(s.lower().split())
            if key in seen:
                continue
            seen.add(key)
            out.append((t.seq, s))
    return out


def _todos(calls: list[Call]) -> tuple[list[dict], int | None]:
    for c in reversed(calls):
        if c.tool_kind not in ("todo", "plan"):
            continue
        items = c.input.get("todos") or c.input.get("plan") or c.input.get("items")
        if not isinstance(items, list):
            continue
        todos = []
        for it in items:
            if not isinstance(it, dict):
                continue
            text = it.get("content") or it.get("description") or it.get("step") or it.get("title") or ""
            status = str(it.get("status") or "pending").lower()
            todos.append({"text": str(text), "status": status})
        return todos, c.seq
    return [], None


def _files(calls: list[Call], moved_away: set[str]) -> list[dict]:
    stats: dict[str, dict] = {}
    for c in calls:
        if not c.path or c.tool_kind not in ("read", "edit", "write"):
            continue
        s = stats.setdefault(c.path, {"path": c.path, "reads": 0, "edits": 0, "writes": 0, "failed_writes": 0, "last_seq": 0})
        if c.is_error:
            if c.tool_kind in ("edit", "write"):
                s["failed_writes"] += 1
        else:
            s[{"read": "reads", "edit": "edits", "write": "writes"}[c.tool_kind]] += 1
        s["last_seq"] = max(s["last_seq"], c.seq)
    rows = [s for s in stats.values() if s["path"] not in moved_away and (s["reads"] + s["edits"] + s["writes"])]
    return sorted(rows, key=lambda s: (-(s["edits"] + s["writes"]), -s["last_seq"], s["path"]))


def normalize_command(cmd: str) -> str:
    return " ".join(_CD_PREFIX.sub("", cmd).split())


def _commands(calls: list[Call]) -> list[dict]:
    out: dict[str, dict] = {}
    for c in calls:
        if c.tool_kind != "shell" or not c.command:
            continue
        key = normalize_command(c.command)
        s = out.setdefault(key, {"command": key, "runs": 0, "last_exit": None, "last_seq": 0})
        s["runs"] += 1
        if c.seq >= s["last_seq"]:
            s["last_seq"] = c.seq
            s["last_exit"] = c.exit_code
    return sorted(out.values(), key=lambda s: (-s["last_seq"], s["command"]))


_ERROR_LINE = re.compile(r"(?i)\b(?:error|exception|traceback|failed|failing|failure|fatal|panic|denied|not found)\b|error\[")
_EXIT_LINE = re.compile(r"(?i)^\s*(?:exit(?:ed with)? code:?\s*-?\d+|command failed)\s*$")


def _first_error_line(output: str) -> str:
    """The line that says what went wrong, not the harness's "Exit code 1" header."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not _EXIT_LINE.match(ln)]
    return next((ln for ln in lines if _ERROR_LINE.search(ln)), lines[0] if lines else "(no output)")


def _errors(calls: list[Call]) -> list[dict]:
    out: list[dict] = []
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(calls):
        failed = c.is_error or (c.exit_code not in (None, 0))
        if not failed:
            continue
        first = _first_error_line(c.output)
        subject = normalize_command(c.command) if c.command else f"{c.tool_name} {c.path or ''}".strip()
        key = (subject, first)
        if key in seen:
            continue
        seen.add(key)
        later = [d for d in calls[i + 1:] if (normalize_command(d.command) if d.command else f"{d.tool_name} {d.path or ''}".strip()) == subject]
        resolved = next((d for d in later if not d.is_error and d.exit_code in (0, None) and d.has_result), None)
        out.append({"subject": subject, "first_line": first, "exit_code": c.exit_code, "seq": c.seq,
                    "resolved": resolved is not None, "resolved_seq": resolved.seq if resolved else None})
    return sorted(out, key=lambda e: (e["resolved"], -e["seq"], e["subject"]))
