"""Making recovered text inert: it may only ever appear as blockquote lines that cannot forge
a heading, a fence, a rule or the preamble, and with no invisible or control characters."""
from __future__ import annotations

import re
import unicodedata

_INVISIBLE = re.compile(
    "[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f"      # C0/C1 controls (not \t \n)
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad\u061c\u180e]"
)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*(?:\x07|\x1b\\)")
_MARKER = re.compile(r"(\[REDACTED:[a-z_]+\])")
_BLOCK_START = re.compile(r"^(\s*)([#>]|[-=_*]{3,}\s*$|`{3,}|~{3,}|[-+*]\s|\d+[.)]\s|<|\|)")


def clean(text: str | None) -> str:
    """NFC-normalized text without ANSI escapes, control, bidi or zero-width characters."""
    if not text:
        return ""
    text = _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    return unicodedata.normalize("NFC", _INVISIBLE.sub("", text))


def inline(text: str | None, limit: int = 200) -> str:
    """One line, safe inside a quote: brackets and backticks cannot open links or code."""
    t = " ".join(clean(text).split())
    parts = _MARKER.split(t)       # keep [REDACTED:kind] markers as they are
    t = "".join(
        p if _MARKER.fullmatch(p) else
        p.replace("[", "(").replace("]", ")").replace("`", "'").replace("<", "‹").replace(">", "›")
        for p in parts
    )
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _escape_line(line: str) -> str:
    line = line.replace("<", "&lt;")
    m = _BLOCK_START.match(line)
    if m:
        line = f"{m.group(1)}\\{line[len(m.group(1)):]}"
    return line


def quote(text: str | None, limit: int | None = None) -> list[str]:
    """Recovered text as `> ` lines; cut at `limit` characters with an omission marker."""
    body = clean(text).strip("\n")
    omitted = 0
    if limit is not None and len(body) > limit:
        omitted = len(body) - limit
        body = body[:limit].rstrip()
    lines = [f"> {_escape_line(ln)}".rstrip() if ln.strip() else ">" for ln in body.split("\n")]
    if omitted:
        lines.append(f"> [+{omitted} chars omitted]")
    return lines or [">"]
