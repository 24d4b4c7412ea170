"""Rows of the Cursor desktop's ``state.vscdb`` stores (adapters/cursor.py describes them):
composers and their bubbles from ``cursorDiskKV``, chat and prompt history from ``ItemTable``."""
from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from functools import partial

from json.encoder import encode_basestring as _json_text

from convarch.adapters import _cursor_rows, base
from convarch.adapters._cursor_rows import _as_text, _dump, _line, _malformed, _parse, _s, _splice
from convarch.adapters.base import Group, SourceFile, Unchecked, code_key, feed_values, key_digest, key_hash

ITEM_KEYS = (
    "workbench.panel.aichat.view.aichat.chatdata",
    "aiService.prompts",
    "aiService.generations",
    "composer.composerData",
)


def _vscdb_lines(con: sqlite3.Connection, tables: set[str], file: SourceFile,
                 unchecked: bool = False) -> Iterator[bytes | Unchecked | Group]:
    """The store's lines; with `unchecked`, each bubble's as an Unchecked (adapters/base.py)."""
    scope = file.path.parent.name
    if "cursorDiskKV" in tables:
        yield from _composer_lines(con, unchecked)
    if "ItemTable" in tables:
        yield from _item_lines(con, scope)


def _kv(con: sqlite3.Connection, key: str):
    row = con.execute("select value from cursorDiskKV where key = ?", (key,)).fetchone()
    return None if row is None else row[0]


#: Keys looked up per statement: a statement per bubble was a third of the time it took to
#: read a store (66,000 bubbles: 0.58 of 1.77 s), and a chunk bounds what is held at once.
LOOKUP_CHUNK = 256


def _kvs(con: sqlite3.Connection, keys: list[str]) -> dict[str, bytes | str]:
    """The non-null values of those of `keys` that exist, in one statement."""
    marks = ",".join("?" * len(keys))
    return {_s(k): v for k, v in con.execute(
        f"select key, value from cursorDiskKV where key in ({marks}) and value is not null", keys)}


def _key_range(prefix: str) -> tuple[str, str]:
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _composer_lines(con: sqlite3.Connection, unchecked: bool) -> Iterator[bytes | Unchecked | Group]:
    """Each composer, the one updated longest ago first: its bubbles in turn order, then its
    bubbles no header names, then its own row; last, bubbles whose composer row is gone.

    A composer's row changes with every bubble (its update time, its list of bubbles), the
    bubbles of the other composers do not: in this order a store read again after a chat went
    on gives the other chats' lines as before, in the same order, and that chat's after them,
    so only that chat's lines load again (etl/live_lines.py), whether it was the latest or one
    taken up again after months. Each chat's lines are a Group keyed by its rows (_chat_key),
    so a chat whose rows did not change is not made again at all. Rows are read one at a time."""
    seen: set[str] = set()
    lo, hi = _key_range("composerData:")
    updated = ("case when json_valid(cast(value as text)) then coalesce(json_extract(cast(value as text), "
               "'$.lastUpdatedAt'), json_extract(cast(value as text), '$.createdAt')) end")
    keys = [_s(k) for (k,) in con.execute(
        f"select key from cursorDiskKV where key >= ? and key < ? and value is not null "
        f"order by coalesce({updated}, 0), key", (lo, hi))]
    for key in keys:
        raw = _kv(con, key)
        if raw is None:
            continue
        cid = key[len("composerData:"):]
        seen.add(cid)
        raw = _as_text(raw)
        yield Group(_chat_key(con, cid, key, raw), partial(_chat_lines, con, cid, key, raw, unchecked))
    # bubbles of composers that have no composerData row (deleted or never written)
    for cid in _bubble_owners(con):
        if cid not in seen:
            seen.add(cid)
            yield Group(_chat_key(con, cid, None, None), partial(_bubble_lines, con, cid, [], {}, unchecked))


def _bubble_owners(con: sqlite3.Connection) -> Iterator[str]:
    """The composer ids bubble keys name, in key order: a seek per composer past its bubbles,
    not a walk over every bubble key (850,000 keys took 1.7 s)."""
    # keys are sought as their bytes (cast to text, so they compare as the keys do): a key that
    # is not UTF-8 decodes to other bytes, and seeking past those could find it again forever
    at, hi = b"bubbleId:", b"bubbleId;"
    while True:
        row = con.execute("select cast(key as blob) from cursorDiskKV where key >= cast(? as text) "
                          "and key < cast(? as text) order by key limit 1", (at, hi)).fetchone()
        if row is None:
            return
        key = bytes(row[0])
        parts = key.split(b":", 2)
        if len(parts) < 3:           # a key with no bubble id: the next key after it
            yield ""
            at = key + b"\x00"
            continue
        yield _s(parts[1])
        at = b"bubbleId:" + parts[1] + b";"


def _chat_lines(con: sqlite3.Connection, cid: str, key: str, raw: bytes | str,
                unchecked: bool) -> Iterator[bytes | Unchecked]:
    """A composer's lines: its inline and stored bubbles, then its own row."""
    try:
        value = _parse(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        yield from _bubble_lines(con, cid, [], {}, unchecked)
        yield _malformed(f"cursorDiskKV[{key}]", raw, str(exc))
        return
    composer = value if isinstance(value, dict) else {}
    inline = composer.get("conversation")
    inline = inline if isinstance(inline, list) else []
    info = composer.get("subagentInfo")
    parent = info.get("parentComposerId") if isinstance(info, dict) else None
    ctx = {"composerCreatedAt": composer.get("createdAt"),
           "parentComposerId": parent if isinstance(parent, str) else None}
    env = {"_src": "vscdb", "_table": "cursorDiskKV", "_key": key, "_type": "composer",
           "composerId": cid, "inlineBubbles": len(inline)}
    # the inline bubbles become lines of their own; the composer line keeps the rest
    for i, bubble in enumerate(inline):
        bid = bubble.get("bubbleId") if isinstance(bubble, dict) else None
        yield _line({"_src": "vscdb", "_table": "cursorDiskKV", "_key": key, "_type": "bubble",
                     "composerId": cid, "bubbleId": bid, "seq": i, "inline": True, **ctx},
                    _dump(bubble))
    headers = composer.get("fullConversationHeadersOnly")
    order = [h.get("bubbleId") for h in headers if isinstance(h, dict) and isinstance(h.get("bubbleId"), str)] \
        if isinstance(headers, list) else []
    yield from _bubble_lines(con, cid, order, ctx, unchecked)
    yield _line(env, _dump({k: v for k, v in composer.items() if k != "conversation"}) if inline else raw)


def _chat_key(con: sqlite3.Connection, cid: str, key: str | None, raw: bytes | str | None) -> bytes:
    """The hash of everything a chat's lines are made of: the code that makes them, its
    composer row (none for bubbles whose composer is gone) and every row of its bubbles, in
    key order, each with its length. A bubble rewritten in place, its composer row unchanged,
    changes it too. Read in one range scan, this is a quarter of what making the lines costs
    (1.3 GB of bubbles: 1.85 s with SHA-256, base.key_hash, against 7). The code is this module, _cursor_rows and
    adapters/base.py (base.code_key)."""
    h = key_hash(code_key(sys.modules[__name__], _cursor_rows, base))
    feed_values(h, (key, raw))
    lo, hi = _key_range(f"bubbleId:{cid}:")
    for k, v in con.execute("select key, value from cursorDiskKV where key >= ? and key < ? order by key", (lo, hi)):
        if type(k) is bytes and type(v) is bytes:      # nearly every row: two calls, not six
            h.update(b"%d;%d;%b" % (len(k), len(v), k))
            h.update(v)
        else:
            h.update(b"o")
            feed_values(h, (k, v))
    return key_digest(h)


def _bubble_lines(con: sqlite3.Connection, cid: str, order: list[str], ctx: dict,
                  unchecked: bool) -> Iterator[bytes | Unchecked]:
    """A composer's bubbles: those its headers name, in their order (a bubble named twice
    once, at its first place), then the rest of its bubbles in key order; each read in chunks
    of LOOKUP_CHUNK keys."""
    done: set[str] = set()
    prefix = f"bubbleId:{cid}:"
    envelope = BubbleEnvelope(cid, ctx)
    make = _unchecked_bubble if unchecked else _bubble_line
    for start in range(0, len(order), LOOKUP_CHUNK):
        chunk = order[start:start + LOOKUP_CHUNK]
        values = _kvs(con, [prefix + bid for bid in dict.fromkeys(chunk) if bid not in done])
        for i, bid in enumerate(chunk, start):
            if bid in done:
                continue
            raw = values.get(prefix + bid)
            if raw is None:
                continue
            done.add(bid)
            yield make(envelope, prefix + bid, bid, i, raw)
    lo, hi = _key_range(prefix)
    # nearly always every bubble is named: a count says so without listing and decoding the keys
    (n,) = con.execute("select count(*) from cursorDiskKV where key >= ? and key < ?", (lo, hi)).fetchone()
    if n == len(done):
        return
    rest = [k for k in (_s(k)[len(lo):] for (k,) in con.execute(
        "select key from cursorDiskKV where key >= ? and key < ? order by key", (lo, hi))) if k not in done]
    for start in range(0, len(rest), LOOKUP_CHUNK):
        chunk = rest[start:start + LOOKUP_CHUNK]
        values = _kvs(con, [prefix + bid for bid in chunk])
        for bid in chunk:
            raw = values.get(prefix + bid)
            if raw is not None:
                yield make(envelope, prefix + bid, bid, None, raw)


class BubbleEnvelope:
    """The envelope of a composer's bubble lines, written as _line writes it: the parts all
    its bubbles share are encoded once (json.dumps of each bubble's envelope was a fifth of
    the time it took to read a store)."""

    def __init__(self, cid: str, ctx: dict):
        self._cid = _json_text(cid)
        self._tail = ',"inline":false' + ("," + _dump(ctx)[1:-1] if ctx else "")

    def head(self, key: str, bid: str, seq: int | None) -> str:
        return ('{"_src":"vscdb","_table":"cursorDiskKV","_key":' + _json_text(key)
                + ',"_type":"bubble","composerId":' + self._cid + ',"bubbleId":' + _json_text(bid)
                + ',"seq":' + ("null" if seq is None else str(int(seq))) + self._tail)


def _bubble_line(envelope: BubbleEnvelope, key: str, bid: str, seq: int | None, raw) -> bytes:
    raw = _as_text(raw)
    return _checked_bubble(_splice(envelope.head(key, bid, seq), raw), key, raw)


def _unchecked_bubble(envelope: BubbleEnvelope, key: str, bid: str, seq: int | None, raw) -> Unchecked:
    """A bubble's line before its check: bubbles are most of a store's bytes, and a store
    read again gives mostly the bubbles it gave before (adapters/base.py, Unchecked)."""
    raw = _as_text(raw)
    line = _splice(envelope.head(key, bid, seq), raw)
    return Unchecked(line, partial(_checked_bubble, line, key, raw))


def _checked_bubble(line: bytes, key: str, raw: bytes | str) -> bytes:
    try:
        _parse(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return _malformed(f"cursorDiskKV[{key}]", raw, str(exc))
    return line


def _item_lines(con: sqlite3.Connection, scope: str) -> Iterator[bytes]:
    marks = ", ".join("?" for _ in ITEM_KEYS)
    rows = con.execute(
        f"select key, value from ItemTable where key in ({marks}) and value is not null order by key", ITEM_KEYS)
    for key, raw in rows:
        key = _s(key)
        raw = _as_text(raw)
        try:
            value = _parse(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            yield _malformed(f"ItemTable[{key}]", raw, str(exc))
            continue
        base = {"_src": "vscdb", "_table": "ItemTable", "_key": key, "scope": scope}
        if key == "workbench.panel.aichat.view.aichat.chatdata":
            tabs = value.get("tabs") if isinstance(value, dict) else None
            for t, tab in enumerate(tabs if isinstance(tabs, list) else []):
                if not isinstance(tab, dict):
                    continue
                tab_id = tab.get("tabId") or f"aichat:{scope}:{t}"
                bubbles = tab.get("bubbles")
                bubbles = bubbles if isinstance(bubbles, list) else []
                rest = {k: v for k, v in tab.items() if k != "bubbles"}
                yield _line({**base, "_type": "aichat_tab", "tabId": tab_id, "seq": t,
                             "bubbleCount": len(bubbles)}, _dump(rest))
                for i, bubble in enumerate(bubbles):
                    yield _line({**base, "_type": "aichat_bubble", "tabId": tab_id, "seq": i,
                                 "tabLastSendTime": tab.get("lastSendTime")}, _dump(bubble))
        elif key in ("aiService.prompts", "aiService.generations"):
            kind = "prompt_history" if key == "aiService.prompts" else "generation_history"
            for i, entry in enumerate(value if isinstance(value, list) else [value]):
                yield _line({**base, "_type": kind, "seq": i}, _dump(entry))
        else:  # composer.composerData: the composers this workspace lists
            listed = value.get("allComposers") if isinstance(value, dict) else None
            for i, entry in enumerate(listed if isinstance(listed, list) else []):
                cid = entry.get("composerId") if isinstance(entry, dict) else None
                if isinstance(cid, str):
                    yield _line({**base, "_type": "composer_index", "composerId": cid, "seq": i}, _dump(entry))
