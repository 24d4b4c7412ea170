"""Current and superseded values, found without a model.

Typed literals (ports, databases, commit prefixes, environment settings, file paths) are pulled
from what the user said, what edits changed and what commands ran, in conversation order. The
latest authoritative value of a slot is current; an earlier value is superseded when an edit
replaced it, the user corrected it, or the user later gave another. Superseded literals are then
masked wherever they appear in their slot's context, so a fresh agent never restates them, while
the same literal used elsewhere (an unrelated 8080) survives.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_CUE_OLD = r"(?:instead of|rather than|not|from|no longer|replace|replacing|old|was)"

SLOT_PATTERNS: dict[str, list[re.Pattern]] = {
    "port": [re.compile(p) for p in (
        r"(?i)\bport\s*(?:number\s*)?(?:is|to|=|:|of|on)?\s*[`'\"]?(\d{2,5})\b",
        r"(?i)\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{2,5})\b",
        r"(?i)--port[= ](\d{2,5})\b",
        r"\b[A-Z_]*PORT=[`'\"]?(\d{2,5})\b",
    )],
    "database": [re.compile(p) for p in (
        r"(?i)\bdatabase\s+(?:is\s+|was\s+)?(?:named|called)\s+[`'\"]?([A-Za-z][\w-]{2,})",
        r"(?i)\b(?:database|db_?name)\s*[:=]\s*[`'\"]?([A-Za-z][\w-]{2,})",
        r"(?i)\bdatabase\s+[`'\"]([A-Za-z][\w-]{2,})[`'\"]",
        r"(?i)\b(?:use|using|switch to|connect to|move to)\s+(?:the\s+)?[`'\"]?([A-Za-z][\w-]{2,})[`'\"]?\s+(?:database|db)\b",
        r"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?)://[^/\s]*/([A-Za-z][\w-]*)",
    )],
    "commit_prefix": [re.compile(p) for p in (
        r"(?i)\bcommits?(?:\s+messages?)?\s+(?:must\s+|should\s+)?(?:start|begin|be prefixed|are prefixed|prefixed)\s+with\s+[`'\"]?([A-Za-z][\w-]*:)",
        r"(?i)\bprefix\s+(?:every\s+|all\s+|each\s+)?commits?(?:\s+messages?)?\s+with\s+[`'\"]?([A-Za-z][\w-]*:)",
        r"(?i)\bcommit\s+prefix\s*(?:is|:|=)?\s*[`'\"]?([A-Za-z][\w-]*:)",
    )],
}
_ENV = re.compile(r"(?m)(?:^|[\s;&|])(?:export\s+)?([A-Z][A-Z0-9_]{2,})=([^\s\"'`;&|]+)")
_OLD_PORT = re.compile(rf"(?i)\b{_CUE_OLD}\s+(?:port\s+)?:?(\d{{4,5}})\b")
_MOVE = re.compile(r"(?:^|&&|;)\s*(?:git\s+)?mv\s+(?:-\w+\s+)*(\S+)\s+(\S+)\s*$")


@dataclass(frozen=True, slots=True)
class Mention:
    slot: str
    value: str
    seq: int
    evidence: str      # edit_new | edit_old | user | correction | command | assistant


@dataclass(frozen=True, slots=True)
class Value:
    slot: str
    value: str
    seq: int
    evidence: str


@dataclass
class Timeline:
    current: list[Value]
    superseded: list[tuple[Value, Value]]     # (old, new)

    def masks(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        current = {v.slot: v.value for v in self.current}
        for old, _new in self.superseded:
            if current.get(old.slot) != old.value:
                out.setdefault(old.slot, set()).add(old.value)
        return out


def mentions_in_text(text: str, seq: int, evidence: str) -> list[Mention]:
    found: list[Mention] = []
    if not text:
        return found
    for slot, patterns in SLOT_PATTERNS.items():
        for rx in patterns:
            for m in rx.finditer(text):
                found.append(Mention(slot, m.group(1), seq, evidence))
    if evidence in ("user", "correction") and re.search(r"(?i)\bport", text):
        for m in _OLD_PORT.finditer(text):
            found.append(Mention("port", m.group(1), seq, "edit_old"))
    for m in _ENV.finditer(text):
        key, value = m.group(1), m.group(2)
        if "PORT" in key or value.startswith("[REDACTED"):
            continue
        found.append(Mention(f"env:{key}", value, seq, evidence))
    return found


def mentions_in_edit(old: str, new: str, seq: int) -> list[Mention]:
    return [Mention(m.slot, m.value, seq, "edit_old") for m in mentions_in_text(old, seq, "edit")] + [
        Mention(m.slot, m.value, seq, "edit_new") for m in mentions_in_text(new, seq, "edit")
    ]


def mentions_in_command(command: str, seq: int) -> list[Mention]:
    found = [Mention(m.slot, m.value, seq, "command") for m in mentions_in_text(command, seq, "command")]
    for part in command.split("&&"):
        m = _MOVE.search(part.strip())
        if m:
            found.append(Mention("path", m.group(1), seq, "edit_old"))
            found.append(Mention("path", m.group(2), seq, "edit_new"))
    return found


_AUTHORITATIVE = {"user", "correction", "edit_new", "command"}


def build_timeline(mentions: Iterable[Mention]) -> Timeline:
    """Current value per slot = the latest authoritative mention; a value an assistant alone
    mentioned later is not acted on. Earlier authoritative values, and values an edit or a
    correction replaced, are superseded by the current one."""
    by_slot: dict[str, list[Mention]] = {}
    for m in sorted(mentions, key=lambda m: (m.seq, m.slot, m.value, m.evidence)):
        by_slot.setdefault(m.slot, []).append(m)
    current: list[Value] = []
    superseded: list[tuple[Value, Value]] = []
    for slot in sorted(by_slot):
        ms = by_slot[slot]
        olds = {m.value for m in ms if m.evidence == "edit_old"}
        strong = [m for m in ms if m.evidence in _AUTHORITATIVE and not (m.evidence != "edit_new" and m.value in olds and _replaced_after(ms, m))]
        if not strong:
            continue
        latest = strong[-1]
        if slot == "path":
            # a move names many paths; only the moved-away ones matter
            for m in ms:
                if m.evidence == "edit_old":
                    new = next((n for n in ms if n.seq == m.seq and n.evidence == "edit_new"), None)
                    if new:
                        superseded.append((Value(slot, m.value, m.seq, m.evidence), Value(slot, new.value, new.seq, new.evidence)))
            continue
        cur = Value(slot, latest.value, latest.seq, latest.evidence)
        current.append(cur)
        seen: set[str] = set()
        for m in ms:
            if m.value != cur.value and m.value not in seen and (m.evidence in _AUTHORITATIVE or m.evidence == "edit_old"):
                seen.add(m.value)
                superseded.append((Value(slot, m.value, m.seq, m.evidence), cur))
    return Timeline(current, superseded)


def _replaced_after(ms: list[Mention], m: Mention) -> bool:
    return any(o.evidence == "edit_old" and o.value == m.value and o.seq >= m.seq for o in ms)


def mask(text: str, masks: dict[str, set[str]], counter: list[int] | None = None) -> str:
    """Replace superseded literals in their slot context with ⟦superseded:slot⟧."""
    if not text or not masks:
        return text
    spans: list[tuple[int, int, str]] = []
    for slot, olds in masks.items():
        if slot == "path":
            for old in olds:
                for m in re.finditer(rf"(?<![\w/.-]){re.escape(old)}(?![\w/-])", text):
                    spans.append((m.start(), m.end(), slot))
            continue
        patterns = SLOT_PATTERNS.get(slot, [])
        if slot == "port":
            patterns = patterns + [_OLD_PORT]
        if slot.startswith("env:"):
            key = slot[4:]
            patterns = [re.compile(rf"\b{re.escape(key)}=([^\s\"'`;&|]+)")]
        for rx in patterns:
            for m in rx.finditer(text):
                if m.group(1) in olds:
                    spans.append((m.start(1), m.end(1), slot))
    if not spans:
        return text
    spans.sort()
    out, pos = [], 0
    for start, end, slot in spans:
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(f"⟦superseded:{slot}⟧")
        pos = end
        if counter is not None:
            counter[0] += 1
    out.append(text[pos:])
    return "".join(out)
