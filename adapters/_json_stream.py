"""Reading a big JSON document a piece at a time, for adapters whose stores keep a session as
one document (the Cline family's task histories, Amp threads, Continue sessions, Gemini CLI's
older sessions).

Parsed whole, a document of a few hundred megabytes took three to four times its size in
memory. ijson (its C parser) reads an array's elements, or one member's array in an object,
one at a time, at json.loads's speed; hand-written Python cannot, since `raw_decode` needs the
whole text as one string. The streamed reading must still give what a whole parse gives, so
whatever the streaming parser rejects that Python's accepts (an integer beyond 64 bits, NaN)
is handed to Python's parser, and an array cut short (stores rewritten in place can be torn)
yields its complete elements before raising Torn with the rest.
"""
from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path

import ijson

_BUFFER = 1 << 20
#: Documents at least this big are read a piece at a time by the adapters that can; smaller
#: ones are parsed whole (faster, and their memory does not matter).
STREAM_BYTES = 16 << 20
_OPEN, _CLOSE = frozenset({"start_map", "start_array"}), frozenset({"end_map", "end_array"})
_SPACE = " \t\r\n"


class Torn(Exception):
    """An array that stops being readable after `count` elements; `rest` is the bytes from
    there on, `error` what the parser said about the whole document."""

    def __init__(self, count: int, error: str, rest: bytes):
        super().__init__(error)
        self.count, self.error, self.rest = count, error, rest


def until_torn(items: Iterator, torn: list[Torn]) -> Iterator:
    """`items` until a torn tail, which is put in `torn`: the elements before it still load."""
    try:
        yield from items
    except Torn as t:
        torn.append(t)


def opening(path: Path) -> bytes:
    """The document's first character after white space: b"[" an array, b"{" an object."""
    with open(path, "rb") as fh:
        return fh.read(4096).lstrip()[:1]


def is_text(path: Path) -> bool:
    """Whether the file is UTF-8, read a megabyte at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(_BUFFER):
                decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def array_items(path: Path) -> Iterator:
    """The elements of the top-level array in the UTF-8 file at `path`, one at a time; raises
    Torn after the last readable one."""
    count = 0
    with open(path, "rb") as fh:
        try:
            for item in ijson.items(fh, "item", use_float=True, buf_size=_BUFFER):
                yield item
                count += 1
            return
        except (ijson.JSONError, ValueError):
            pass
    # the streaming parser stopped: Python's goes on from the same element (only such files
    # are read whole)
    text = path.read_bytes().decode("utf-8")
    try:
        yield from decoded_items(text, skip=count)
    except Torn as torn:
        if not torn.error:
            torn.error = _whole_error(text)
        raise


def decoded_items(text: str, skip: int = 0) -> Iterator:
    """The elements of the top-level array in `text` after the first `skip`, by Python's
    parser; raises Torn where the array stops being readable (with an empty error when that is
    past an element, where only the whole document's parse says what is wrong)."""
    decoder = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if not text.startswith("[", i):
        raise Torn(0, "not a JSON array", text.encode("utf-8"))
    i += 1
    count = 0
    while True:
        while i < len(text) and text[i] in _SPACE:
            i += 1
        try:
            item, end = decoder.raw_decode(text, i)
        except (ValueError, RecursionError) as exc:
            if count == 0 and text.startswith("]", i) and not text[i + 1:].strip():
                return                                           # an empty array
            raise Torn(count, str(exc), text[i:].encode("utf-8")) from None
        if count >= skip:
            yield item
        count += 1
        i = end
        while i < len(text) and text[i] in _SPACE:
            i += 1
        if i < len(text) and text[i] == ",":
            i += 1
        elif text.startswith("]", i) and not text[i + 1:].strip():
            return
        else:
            raise Torn(count, "", text[i:].encode("utf-8"))


def salvage_array(data: bytes) -> tuple[list | None, bytes]:
    """The complete elements at the head of a top-level JSON array cut short, and the bytes
    after them; (None, data) when the document is not such an array."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, data
    if not text.lstrip().startswith("["):
        return None, data
    items: list = []
    try:
        for item in decoded_items(text):
            items.append(item)
    except Torn as torn:
        return items, torn.rest
    return items, b""


def members_without(path: Path, key: str) -> dict | None:
    """The top-level members of an object document other than its `key` array, in file order,
    with the array passed over unbuilt; None when the document has no such array or is not one
    the streaming parser reads to the end (the caller then parses it whole, so a document is
    either streamed completely or parsed as before)."""
    rest: dict = {}
    member, depth, builder, arrays = None, 0, None, 0
    try:
        with open(path, "rb") as fh:
            events = ijson.parse(fh, use_float=True, buf_size=_BUFFER)
            if next(events)[1] != "start_map":
                return None
            for _prefix, event, value in events:
                if depth == 0:                       # between the document's members
                    if event == "map_key":
                        if value.startswith(key + "."):      # named like the array's items
                            return None
                        member = value
                        continue
                    if event == "end_map":
                        break
                    if member == key:                # passed over, not built
                        if event != "start_array":
                            return None
                        arrays += 1
                    elif event in _OPEN:
                        builder = ijson.ObjectBuilder()
                    else:
                        rest[member] = value
                        continue
                if builder is not None:
                    builder.event(event, value)
                if event in _OPEN:
                    depth += 1
                elif event in _CLOSE:
                    depth -= 1
                    if depth == 0 and builder is not None:
                        rest[member] = builder.value
                        builder = None
            for _ in events:                         # white space only, or the parser raises
                pass
    except (ijson.JSONError, ValueError, StopIteration):
        return None
    # a second `key` member would make the streamed elements both arrays' (json.loads keeps the
    # last): such a document is parsed whole
    return rest if arrays == 1 else None


def big_object(path: Path, key: str, threshold: int) -> dict | None:
    """For an object document of `threshold` bytes or more whose `key` member is an array the
    streaming parser reads to the end: its other members (stream the array with member_items).
    None for a smaller document or one to parse whole, as before."""
    if path.stat().st_size < threshold or opening(path) != b"{":
        return None
    return members_without(path, key)


def member_items(path: Path, key: str) -> Iterator:
    """The elements of the top-level member `key`'s array, one at a time (for a document
    members_without has read to its end)."""
    with open(path, "rb") as fh:
        yield from ijson.items(fh, f"{key}.item", use_float=True, buf_size=_BUFFER)


def _whole_error(text: str) -> str:
    try:
        json.loads(text)
    except (ValueError, RecursionError) as exc:
        return str(exc)
    return "not a JSON array"
