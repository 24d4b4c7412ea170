"""Logs an adapter replays whole before it writes their lines (Gemini CLI's op-log, Grok Build's
updates): a later line changes what an earlier one means, so the replay writes what it found
about each line onto it, ``{"cv": {...}, "line": <the line>}``, and the extraction SQL reads
every line on its own. Shared here: cutting the file into lines by their spans (the bytes are
sliced out when a line is read, so the lines are never all held beside the file's bytes), a
line's text, and the wrapping."""
from __future__ import annotations

import json

BOM = b"\xef\xbb\xbf"


def line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each line of `data`, without its newline."""
    spans = []
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        spans.append((start, end))
        start = end + 1
    return spans


def line_bytes(offset: int, raw: bytes) -> bytes:
    """A line's bytes without its CR (and the file's BOM, on the line at offset 0)."""
    content = raw[:-1] if raw.endswith(b"\r") else raw
    return content[len(BOM):] if offset == 0 and content.startswith(BOM) else content


def line_text(offset: int, raw: bytes) -> str | None:
    """A line's text (line_bytes, decoded); None when it is not UTF-8."""
    try:
        return line_bytes(offset, raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


def wrap(cv: dict, text: str) -> bytes:
    """The line as the extraction SQL reads it (which tests that it starts ``{"cv": {``)."""
    return json.dumps({"cv": cv, "line": text}, ensure_ascii=False).encode("utf-8")
