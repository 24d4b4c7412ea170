"""Rows of a ``cursor-agent`` CLI chat's ``store.db`` (adapters/cursor.py describes it): its
meta rows, then the message blobs reached by walking the content-addressed blob tree from the
root, then the message blobs the walk did not reach."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from convarch.adapters._cursor_rows import _as_text, _dump, _line, _malformed, _parse, _s
from convarch.adapters.base import SourceFile

STORE_DB = "store.db"
MAX_TREE_DEPTH = 64
MAX_TREE_VISITS = 2_000_000


def _store_db_lines(con: sqlite3.Connection, tables: set[str], file: SourceFile) -> Iterator[bytes]:
    metas: list[tuple[str, object, str | None]] = []
    if "meta" in tables:
        for key, raw in con.execute("select key, value from meta order by key"):
            try:
                metas.append((_s(key), _parse(_unhex(raw)), None))
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                metas.append((_s(key), raw, str(exc)))
    head = next((v for k, v, err in metas if k == "0" and err is None and isinstance(v, dict)), {})
    # the chat folder names the chat (Cursor resumes by it); a store found under another
    # name falls back to the agentId its meta row records
    chat_id = file.session_hint if file.path.name == STORE_DB else None
    if chat_id is None and isinstance(head.get("agentId"), str):
        chat_id = head["agentId"]
    root_id = head.get("latestRootBlobId")
    info = head.get("subagentInfo")
    parent = info.get("parentAgentId") if isinstance(info, dict) else None
    base = {"_src": "store_db", "_table": "blobs", "agentId": chat_id,
            "parentAgentId": parent if isinstance(parent, str) else None}
    for key, value, err in metas:
        if err is not None:
            yield _malformed(f"meta[{key}]", value if isinstance(value, (bytes, str)) else str(value), err)
        else:
            yield _dump({**base, "_table": "meta", "_key": key, "_type": "chat_meta", "value": value}).encode("utf-8")
    if "blobs" not in tables:
        return
    walked: set[str] = set()
    if isinstance(root_id, str) and root_id:
        yield from _walk(con, root_id, base, walked)
    # JSON message blobs the walk did not reach (every blob when there is no root), in
    # table order, one row at a time
    try:
        cur = con.execute("select id, data from blobs order by rowid")
    except sqlite3.OperationalError:
        cur = con.execute("select id, data from blobs order by id")
    reachable = None if not walked else False
    for blob_id, data in cur:
        blob_id = _s(blob_id)
        if blob_id in walked or not _looks_json(data):
            continue
        yield _message_line(base, blob_id, data, None, reachable)


def _unhex(raw) -> bytes | str:
    """meta values are hex-encoded JSON; plain JSON text is accepted too."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("ascii")
        except UnicodeDecodeError:
            return raw
    if not isinstance(raw, str):
        raise ValueError(f"a {type(raw).__name__} value, not JSON text")
    text = raw.strip()
    if text and len(text) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in text):
        return bytes.fromhex(text)
    return text


def _looks_json(data) -> bool:
    if isinstance(data, str):
        return data.lstrip()[:1] == "{"
    return isinstance(data, bytes) and data.lstrip()[:1] == b"{"


def _message_line(base: dict, key: str, data, seq: int | None, reachable: bool | None) -> bytes:
    raw = _as_text(data)
    try:
        _parse(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return _malformed(f"blobs[{key}]", raw, str(exc))
    return _line({**base, "_key": key, "_type": "blob_message", "seq": seq, "reachable": reachable}, raw)


def _walk(con: sqlite3.Connection, root_id: str, base: dict, walked: set[str]) -> Iterator[bytes]:
    """Depth-first, in field order, from the root blob: JSON blobs are messages, binary blobs
    are nodes whose 32-byte fields name children. A blob on the current path is not entered
    again (no cycles), and the walk is bounded."""
    seq = 0
    visits = 0
    path: list[str] = []

    def fetch(blob_id: str):
        row = con.execute("select data from blobs where id = ?", (blob_id,)).fetchone()
        return None if row is None else row[0]

    def visit(blob_id: str, data, depth: int):
        nonlocal seq, visits
        visits += 1
        walked.add(blob_id)
        if _looks_json(data):
            seq += 1
            yield _message_line(base, blob_id, data, seq, True)
            return
        if depth >= MAX_TREE_DEPTH or visits > MAX_TREE_VISITS or not isinstance(data, bytes):
            return
        path.append(blob_id)
        for number, value in _fields(data):
            if len(value) == 32:
                child = value.hex()
                if child in path:
                    continue
                child_data = fetch(child)
                if child_data is None:
                    if number == 1:   # the reference field: the blob it names is gone
                        yield _dump({**base, "_key": child, "_type": "missing_blob", "seq": None,
                                     "referencedBy": blob_id, "value": None}).encode("utf-8")
                    continue
                yield from visit(child, child_data, depth + 1)
            elif value[:1] == b"{":
                try:
                    obj = _parse(value)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    continue
                if isinstance(obj, dict) and "role" in obj:
                    seq += 1
                    yield _line({**base, "_key": f"{blob_id}#{number}", "_type": "blob_message", "seq": seq,
                                 "reachable": True, "embedded": True}, value)
        path.pop()

    data = fetch(root_id)
    if data is None:
        yield _dump({**base, "_key": root_id, "_type": "missing_blob", "seq": None,
                     "referencedBy": "meta.latestRootBlobId", "value": None}).encode("utf-8")
        return
    yield from visit(root_id, data, 0)


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """The length-delimited fields of a protobuf-framed node, in order; [] if it is not one."""
    out: list[tuple[int, bytes]] = []
    i, n = 0, len(data)
    while i < n:
        key, i = _varint(data, i)
        if key is None:
            return out
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(data, i)
            if i is None:
                return out
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            length, i = _varint(data, i)
            if length is None or i + length > n:
                return out
            out.append((number, data[i:i + length]))
            i += length
        else:
            return out
    return out


def _varint(data: bytes, i: int) -> tuple[int | None, int | None]:
    value = shift = 0
    while i < len(data) and shift < 64:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7
    return None, None
