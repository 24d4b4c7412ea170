"""How a Cursor SQLite row becomes one JSON line (adapters/cursor.py describes the stores):
an envelope naming where the row came from, with the row's own JSON spliced in verbatim, or
a deliberately non-JSON line that quarantines a row whose JSON does not parse."""
from __future__ import annotations

import json

from convarch.adapters.base import malformed_row


def _line(envelope: dict, value: bytes | str | None) -> bytes:
    """The envelope as JSON with the row's JSON text spliced in verbatim as ``value``.

    Only called with text that parsed, so the result is one valid JSON object."""
    return _splice(json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))[:-1], value)


def _splice(head: str, value: bytes | str | None) -> bytes:
    """`head` (an envelope's JSON without its closing brace) with ``value`` as its last member.
    A lone surrogate (JSON text may name one, UTF-8 cannot carry it) becomes '?'."""
    if value is None:
        return (head + ',"value":null}').encode("utf-8", "replace")
    if isinstance(value, str):
        value = value.encode("utf-8", "replace")
    return head.encode("utf-8", "replace") + b',"value":' + value.strip() + b"}"


def _malformed(where: str, raw: bytes | str | None, error: str) -> bytes:
    """A line that is deliberately not JSON, so the row is quarantined with its key, the
    parse error and its raw text."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    return malformed_row(f"cursor {where}", f"malformed JSON ({error})", raw)


def _no_constants(name: str):
    raise ValueError(f"{name} is not JSON")


#: one decoder for every row: json.loads with a keyword builds a decoder per call
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def _parse(raw: bytes | str) -> object:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")
    if raw.startswith("\ufeff"):
        return json.loads(raw)        # refused, with json.loads's own message
    return _DECODER.decode(raw)


def _s(value) -> str:
    """A key or name as text (TEXT columns are read as bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _as_text(raw) -> bytes | str | None:
    if isinstance(raw, (int, float)):
        return str(raw)
    return raw


def _dump(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
