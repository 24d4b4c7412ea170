"""Secret shapes redacted from handoffs (always) and from the archive (with `ingest --redact`),
with their label kept.

A handoff is text a user pastes into another tool, often another vendor's: anything that looks
like a credential is replaced by `[REDACTED:<kind>]` wherever it occurs. Patterns follow the
shapes each service documents; labelled values (`password=…`, `"api_key": "…"`) keep their
label so the reader still knows a secret was there.
"""
from __future__ import annotations

import functools
import json
import re
from collections import Counter
from dataclasses import dataclass, field

# (kind, pattern, needles): a text holding none of the needles cannot match, so the pattern
# is not run on it. Most text holds none, and a regex scan costs 50-100 times a substring
# test; a needle of a case-blind pattern is checked against the text's casefold(), which
# maps every letter re.IGNORECASE matches to these needles' letters.
_PATTERNS: list[tuple[str, str, tuple[str, ...]]] = [
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
     ("-----BEGIN ",)),
    ("jwt", r"\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]{8,}", ("eyJ",)),
    ("aws", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", ("AKIA", "ASIA")),
    ("aws", r"(?i)(?<=aws_secret_access_key)(\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{40}", ("aws_secret_access_key",)),
    ("github", r"\bgh[pousr]_[A-Za-z0-9]{36,}", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    ("github", r"\bgithub_pat_[A-Za-z0-9_]{22,}", ("github_pat_",)),
    ("gitlab", r"\bglpat-[A-Za-z0-9_-]{20,}", ("glpat-",)),
    ("slack", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+", ("https://hooks.slack.com/services/",)),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", ("xox",)),
    ("anthropic", r"\bsk-ant-(?:api\d\d-)?[A-Za-z0-9_-]{20,}", ("sk-ant-",)),
    ("openai", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}", ("sk-",)),
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", ("k_live_", "k_test_")),
    ("google", r"\bAIza[0-9A-Za-z_-]{35}", ("AIza",)),
    ("npm", r"\bnpm_[A-Za-z0-9]{36}", ("npm_",)),
    ("huggingface", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    ("sendgrid", r"\bSG\.[\w-]{22}\.[\w-]{43}", ("SG.",)),
]

# Whole-match patterns whose leading group (a label, a scheme, a header name) is kept.
# A labelled secret's match starts at its keyword: whatever comes before it in the label is
# left as it is either way, and a pattern that began with the label's other characters
# (`[\w.-]*password`) tried every length of them at every position, 2.5 MB/s on tool output;
# the lookahead on the keywords' first letters lets the engine skip the other positions fast.
_LABELLED: list[tuple[str, str, tuple[str, ...]]] = [
    ("url_credentials", r"\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)([^/\s@]+)(@)", ("://",)),
    ("auth_header", r"(?i)(authorization:\s*(?:basic|bearer|token)\s+)(\S+)()", ("author",)),
    ("npm", r"(_authToken=)(\S+)()", ("_authToken=",)),
    ("secret", r"(?i)(?=[pstac])((?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{6,})()",
     ("passw", "secret", "token", "key")),
]


#: The words every labelled-secret match begins with, casefolded: the pattern is tried only
#: where one of them starts (3 times faster than letting the engine scan every position).
#: Exact where casefold() keeps every character one character, and maps each letter that
#: re.IGNORECASE matches to one of these words' letters to that letter: true of all but the
#: dotted and dotless i, whose text goes to the plain scan.
_STARTS = {"secret": ("passw", "secret", "token", "api", "access", "private", "client")}
_ODD_I = ("\u0130", "\u0131")


def _compiled(patterns):
    return [(kind, re.compile(p), needles, p.startswith("(?i)"), _STARTS.get(kind)) for kind, p, needles in patterns]


def _starts_at(folded: str, starts: tuple[str, ...]) -> list[int]:
    """Where one of `starts` begins in `folded`, in order."""
    at = set()
    for word in starts:
        i = folded.find(word)
        while i >= 0:
            at.add(i)
            i = folded.find(word, i + 1)
    return sorted(at)


def _sub_at(rx: re.Pattern, text: str, folded: str, starts: tuple[str, ...], repl) -> tuple[str, int]:
    """rx.subn(repl, text), trying `rx` only where one of `starts` begins in `folded`, which
    lines up with `text` character for character; the same leftmost, non-overlapping matches."""
    out, last, n = [], 0, 0
    for pos in _starts_at(folded, starts):
        if pos < last:
            continue
        m = rx.match(text, pos)
        if m:
            out += (text[last:pos], repl(m))
            last, n = m.end(), n + 1
    if not n:
        return text, 0
    out.append(text[last:])
    return "".join(out), n


_COMPILED = _compiled(_PATTERNS)
_COMPILED_LABELLED = _compiled(_LABELLED)
_ALL = [(*c, False) for c in _COMPILED] + [(*c, True) for c in _COMPILED_LABELLED]
_ALREADY = re.compile(r"\[REDACTED:[a-z_]+\]")


@dataclass
class Redactor:
    """Redacts and counts, so the JSON handoff can report what was removed by kind."""

    counts: Counter = field(default_factory=Counter)

    def __call__(self, text: str | None) -> str | None:
        return self._redact(text, None)[0] if text else text

    def _redact(self, text: str, tried: list | None, patterns: list = _ALL) -> tuple[str, bool]:
        """The text redacted, and whether any pattern matched (even a secret already redacted,
        which is kept as it is). Each pattern whose needle the text holds is added to `tried`."""
        folded = None                   # the casefolded text, made once and again after a change
        matched = False
        for entry in patterns:
            kind, rx, needles, blind, starts, labelled = entry
            if blind:
                if folded is None:
                    folded = text.casefold()
                hay = folded
            else:
                hay = text
            for needle in needles:      # a loop, not any(): this runs ~20 times a JSON value
                if needle in hay:
                    break
            else:
                continue
            if tried is not None:
                tried.append(entry)
            repl = self._keep_label(kind) if labelled else self._plain(kind)
            if starts and len(hay) == len(text) and not any(c in text for c in _ODD_I):
                out, n = _sub_at(rx, text, hay, starts, repl)
            else:
                out, n = rx.subn(repl, text)
            if n:
                text, folded, matched = out, None, True
        return text, matched

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

    Most lines need no second pass, and it costs more than the first (json.loads and a redactor
    call for every string). Each decoded string is a piece of the line with its escapes undone
    (`_unescaped`); if no pattern matches anywhere in that, none matches in any of its strings.
    """
    tried: list = []
    out, matched = redactor._redact(line, tried)
    if not matched:
        plain = _unescaped(line)
        # a pattern matching anywhere in it, tried on a redactor whose counts are thrown away
        if plain is line or (plain is not None and not Redactor()._redact(plain, None, tried)[1]):
            return out
    return _strings_redacted(line, out, redactor)


def _strings_redacted(line: str, out: str, redactor: Redactor) -> str:
    """The second pass: `out` (the text pass's result) with each decoded string of the line
    redacted too, re-serialized only if that found something."""
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


# JSON's one-letter escapes, but `\\` and `\/`: a line is cut at each `\\` first, so every
# backslash left in a piece starts an escape.
_ESCAPES = (('\\"', '"'), ("\\b", "\b"), ("\\f", "\f"), ("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"))
# a \u escape, or two that make one character past U+FFFF, as json.loads joins them
_U_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})")


class _NeedleHidden(Exception):
    pass


@functools.lru_cache(maxsize=4096)
def _escaped_char(escape: str) -> str:
    """The character a \\u escape (or a pair) stands for; _NeedleHidden if it could be part of
    a needle: printable ASCII, or a letter whose casefold() holds ASCII (a Kelvin sign is `k`)."""
    if len(escape) == 12:
        high, low = int(escape[2:6], 16), int(escape[8:12], 16)
        char = chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    else:
        char = chr(int(escape[2:6], 16))
    if char >= " " and (char <= "\x7f" or any(c <= "\x7f" for c in char.casefold())):
        raise _NeedleHidden
    return char


def _unescaped(line: str) -> str | None:
    """The line with its JSON escapes undone (the line itself when it has none), or None when
    an escape could hide part of a pattern's needle (a letter written as a `\\u` escape, a
    slash as `\\/`).

    With none of those, the escapes left make only quotes, backslashes, control characters and
    letters that fold to no ASCII, which no needle holds: a needle found in the result was
    already in the line, so only the patterns the first pass tried can match the result."""
    if "\\" not in line:
        return line
    pieces = line.split("\\\\")
    try:
        for i, piece in enumerate(pieces):
            if "\\" not in piece:
                continue
            if "\\/" in piece:
                return None
            if "\\u" in piece:
                piece = _U_ESCAPE.sub(lambda m: _escaped_char(m.group()), piece)
            for escape, char in _ESCAPES:
                piece = piece.replace(escape, char)
            pieces[i] = piece
    except _NeedleHidden:
        return None
    return "\\".join(pieces)


def _walk(value, redactor: Redactor):
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, list):
        return [_walk(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, redactor) for k, v in value.items()}
    return value
