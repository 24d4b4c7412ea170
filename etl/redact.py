"""Secret shapes redacted from handoffs (always) and from the archive (with `ingest --redact`),
with their label kept.

A handoff is text a user pastes into another tool, often another vendor's: anything that looks
like a credential is replaced by `[REDACTED:<kind>]` wherever it occurs. Patterns follow the
shapes each service documents; labelled values (`password=…`, `"api_key": "…"`) keep their
label so the reader still knows a secret was there.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

_PATTERNS: list[tuple[str, str]] = [
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"),
    ("jwt", r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}"),
    ("aws", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("aws", r"(?i)(?<=aws_secret_access_key)(\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{40}"),
    ("github", r"\bgh[pousr]_[A-Za-z0-9]{36,}"),
    ("github", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("anthropic", r"\bsk-ant-(?:api\d\d-)?[A-Za-z0-9_-]{20,}"),
    ("openai", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}"),
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("npm", r"\bnpm_[A-Za-z0-9]{36}"),
    ("huggingface", r"\bhf_[A-Za-z0-9]{30,}"),
    ("sendgrid", r"\bSG\.[\w-]{22}\.[\w-]{43}"),
]

# Whole-match patterns whose leading group (a label, a scheme, a header name) is kept.
_LABELLED: list[tuple[str, str]] = [
    ("url_credentials", r"\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)"),
    ("auth_header", r"(?i)(authorization:\s*(?:basic|bearer|token)\s+)(\S+)()"),
    ("npm", r"(_authToken=)(\S+)()"),
    ("secret", r"(?i)([\"']?[\w.-]*(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{6,})()"),
]

_COMPILED = [(kind, re.compile(p)) for kind, p in _PATTERNS]
_COMPILED_LABELLED = [(kind, re.compile(p)) for kind, p in _LABELLED]
_ALREADY = re.compile(r"\[REDACTED:[a-z_]+\]")


@dataclass
class Redactor:
    """Redacts and counts, so the JSON handoff can report what was removed by kind."""

    counts: Counter = field(default_factory=Counter)

    def __call__(self, text: str | None) -> str | None:
        if not text:
            return text
        for kind, rx in _COMPILED:
            text = rx.sub(self._plain(kind), text)
        for kind, rx in _COMPILED_LABELLED:
            text = rx.sub(self._keep_label(kind), text)
        return text

    def _plain(self, kind: str):
        def sub(m: re.Match) -> str:
            if kind == "aws" and m.lastindex:           # keep the `= ` separator of a labelled key
                self.counts[kind] += 1
                return f"{m.group(1)}[REDACTED:{kind}]"
            self.counts[kind] += 1
            return f"[REDACTED:{kind}]"
        return sub

    def _keep_label(self, kind: str):
        def sub(m: re.Match) -> str:
            if _ALREADY.fullmatch(m.group(2)) or m.group(2).startswith("[REDACTED:"):
                return m.group(0)
            self.counts[kind] += 1
            return f"{m.group(1)}[REDACTED:{kind}]{m.group(3)}"
        return sub


def redact_json_line(line: str, redactor: Redactor) -> str:
    """Redact a JSON line for storage, keeping it valid JSON.

    A text pass first keeps the line byte-identical apart from the secrets; then every string
    value is checked once decoded, which finds secrets the raw text hides behind JSON escapes
    (a quoted `\"password\": \"…\"` inside a tool result). The line is re-serialized only
    when that second pass changed something, or when a secret spanned JSON syntax.
    """
    out = redactor(line)
    try:
        value = json.loads(out)
    except ValueError:
        try:
            value = json.loads(line)
        except ValueError:
            return out                      # not JSON at all: redacted as text
        return json.dumps(_walk(value, redactor), ensure_ascii=False, separators=(",", ":"))
    before = sum(redactor.counts.values())
    walked = _walk(value, redactor)
    if sum(redactor.counts.values()) == before:
        return out
    return json.dumps(walked, ensure_ascii=False, separators=(",", ":"))


def _walk(value, redactor: Redactor):
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, list):
        return [_walk(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, redactor) for k, v in value.items()}
    return value
