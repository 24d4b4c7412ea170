"""The small contract every agent adapter keeps, so snapshotting, watermarks and loading can
live once in `etl/` and an adapter stays a parser.

An adapter is a module with these names:

- ``NAME``: stable source id used in the warehouse (``claude_code``).
- ``TITLE``: what a user calls the agent.
- ``ENV_VARS``: the agent's own home overrides, shown by ``convarch sources``.
- ``default_roots(env, home)``: where the agent keeps its store, in preference order.
- ``resolve_root(path)``: turn what a user passes to ``--root`` into the store folder.
- ``discover(root)``: list the store's files, classified by path only; never parse.
- ``EXTRACT``: for line-oriented stores, the names of the SQL files (under ``sql/extract``)
  that turn a snapshot's lines into normalized ``records`` and ``blocks``.
"""
from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One file of an agent store, as found on disk (the original, never opened for writing)."""

    source: str
    path: Path
    root: Path
    session_hint: str | None = None
    parent_session_hint: str | None = None
    #: How the file is snapshotted and turned into lines of JSON for the extraction SQL:
    #: "jsonl": append-only, one record per line, read from its watermark;
    #: "json": one document, read whole whenever it changes (one record, or the lines the
    #:         adapter's ``to_lines`` makes of it);
    #: "jsonl.zst": zstd-compressed JSONL, decompressed whole whenever it changes;
    #: "sqlite": a SQLite database (with its -wal/-journal), copied as a verified family
    #:           and turned into lines by the adapter's ``to_lines``.
    container: str = "jsonl"


@dataclass(frozen=True, slots=True)
class Extract:
    """SQL files that normalize a snapshot's lines; each reads the relation ``lines``."""

    records: str
    blocks: str
    #: The records SQL parses every line it is given (json_transform into columns it keeps)
    #: and makes exactly one row of each, so a malformed line fails the query instead of
    #: being skipped. Such a batch's lines that start with '{' are not validated up front
    #: (a second full parse of every byte); a failure or a missing row sends the batch down
    #: the validating path instead (etl/load.py).
    one_parsed_row_per_line: bool = False
    #: SQL that picks, from a file's lines already loaded (the relation ``earlier``), the few
    #: whose values the records SQL carries forward over later lines; the loader gives them to
    #: the records SQL of the file's next lines with negative line numbers, and the records SQL
    #: leaves such lines out of what it returns.
    context: str | None = None


class Adapter(Protocol):
    NAME: str
    TITLE: str
    ENV_VARS: tuple[str, ...]
    EXTRACT: Extract

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]: ...

    def resolve_root(self, path: Path) -> Path: ...

    def discover(self, root: Path) -> Iterator[SourceFile]: ...

    # Optional: FILES_STAND_ALONE = True when no record depends on its file's place among the
    # store's other files, so new files may be numbered in the order they were last written
    # (etl/extract.py); without it they keep the order discover() gives.

    # Optional: LINES_STAND_ALONE = True when the extraction SQL reads each line on its own (no
    # window or join across a file's lines). A whole container (not "jsonl") that is rewritten
    # then keeps the lines it gave before where they were loaded, as long as they come in the
    # same order, and loads only the rest (etl/live_lines.py); without it such a container is
    # loaded again whole. Lines that change as a session goes on (a session's totals) are best
    # given where the store grows: a database's session rows right after each session's last
    # message (adapters/db_order.py).

    # Optional, for containers other than "jsonl": turn the private copy of a file into JSON
    # lines (bytes, no newline), one per record, in a stable order.
    # def to_lines(self, copy: Path, file: SourceFile) -> Iterator[bytes]: ...

    # Optional, beside to_lines: the same lines, each either bytes or, for a line that splices
    # a row's JSON text into an envelope unparsed, an Unchecked (below), so that a store read
    # again need not parse the rows it gave before.
    # def to_lines_unchecked(self, copy: Path, file: SourceFile) -> Iterator[bytes | Unchecked]: ...

    # Either may also give a Group (below) in place of the lines it stands for.


class Unchecked(NamedTuple):
    """A line made without the check that the row's text in it is JSON.

    `checked()` gives the line to load: `line` itself when the row's text parses, else a
    malformed_row line. Checking is most of what such a line costs to make (a JSON parse in
    Python), and a store read whole at every change gives mostly the lines it gave before.
    So a line that is, byte for byte, the line the store gave at the same place last time is
    taken unchecked: it was checked when it was first made (etl/containers.py)."""

    line: bytes
    checked: Callable[[], bytes]


class Group(NamedTuple):
    """Lines that are made from rows of their own (a Cursor chat: its composer row and its
    bubbles), not yet made.

    `key` hashes every input the lines are made of, the code that makes them included; a group
    whose key is the one it had at the read before gives the same lines, so a store read again
    whole takes them as they were (etl/containers.py) without making them: hashing a chat's
    rows costs a fraction of making its lines. `lines()` makes them (bytes or Unchecked) when
    the key is new."""

    key: bytes
    lines: Callable[[], Iterator[bytes | Unchecked]]


@functools.cache
def code_key(*modules) -> bytes:
    """A hash of the source of `modules`, the code that makes a group's lines: part of every
    group's key, so that lines made by other code are made again, never taken as they were,
    with no version number to forget to raise. Without a source to read, a key that never
    matches."""
    h = hashlib.blake2b(digest_size=16)
    for module in modules:
        try:
            h.update(Path(module.__file__).read_bytes())
        except (OSError, TypeError):
            h.update(os.urandom(16))
    return h.digest()


#: Bytes of a group's key (etl/containers.py GROUP)
KEY_BYTES = 16


def key_hash(data: bytes = b""):
    """A new hash for a group's key (key_digest gives the key): SHA-256. A key reads every row
    of its group, so a Cursor store's keys hash all its bubbles at every pick-up; with the SHA
    instructions of current CPUs (x86 SHA-NI, ARMv8) OpenSSL's SHA-256 ran at 1.3-1.5 GB/s here
    against blake2b's 0.6, and the 1.3 GB store's chat keys took 1.85 s instead of 2.4."""
    return hashlib.sha256(data)


def key_digest(h) -> bytes:
    return h.digest()[:KEY_BYTES]


#: Text or bytes longer than this are fed to a key as they are, not in a repr
LONG_VALUE = 64


def feed_values(h, values) -> None:
    """A row's values (text, bytes, numbers, None) into a group's key: the repr of their tuple,
    each long text or bytes replaced there by its kind and length, then those long values
    themselves. The repr reads back as the same values and tells where each long value ends,
    so rows that differ never feed the same bytes; and long values are not escaped into a repr
    (repr was most of what hashing an OpenCode database's rows cost)."""
    small: list = []
    long: list[bytes] = []
    for v in values:
        if isinstance(v, str) and len(v) > LONG_VALUE:
            v = v.encode("utf-8", "surrogatepass")
            small.append(("s", len(v)))
            long.append(v)
        elif isinstance(v, bytes) and len(v) > LONG_VALUE:
            small.append(("b", len(v)))
            long.append(v)
        else:
            small.append(v)
    h.update(repr(tuple(small)).encode("utf-8", "surrogatepass"))
    for v in long:
        h.update(v)


#: Rows of a table a group holds (adapters/db_order.py): a database that gained rows at its end
#: makes again only its last group or two.
GROUP_ROWS = 256


def keyed_group(make: Callable[[list[str], list[tuple]], Iterator[bytes | Unchecked]], code: bytes,
                context: tuple = ()) -> Callable[[list[str], list[tuple]], Group]:
    """Makes the Group of some rows, keyed by `code` (code_key of the modules that make their
    lines), `context` (what else their lines carry: the table's name, a schema version), the
    columns and the rows; `make(columns, rows)` makes their lines."""
    started: dict[tuple, object] = {}      # the hash of code, context and columns, fed once

    def group(cols: list[str], rows: list[tuple]) -> Group:
        h = started.get(tuple(cols))
        if h is None:
            h = started[tuple(cols)] = key_hash(code)
            feed_values(h, context)
            feed_values(h, cols)
        h = h.copy()
        for values in rows:
            feed_values(h, values)
        return Group(key_digest(h), functools.partial(make, cols, rows))
    return group


def made_lines(items: Iterable[bytes | Unchecked | Group]) -> Iterator[bytes | Unchecked]:
    """The lines of `items`, every group's made: what a first read takes."""
    for item in items:
        if isinstance(item, Group):
            yield from item.lines()
        else:
            yield item


def checked_line(line: bytes | Unchecked) -> bytes:
    """The line itself, checked."""
    return line.checked() if isinstance(line, Unchecked) else line


class RootError(ValueError):
    """A path given as a store root that holds nothing this adapter can read."""


MALFORMED_ROW = "malformed row: "


def malformed_row(where: str, error: str, raw: bytes | str | None) -> bytes:
    """A line for `to_lines` to yield in place of a row it cannot read (e.g. a JSON column that
    does not parse). It is deliberately not JSON, so etl quarantines it with the reason
    `malformed_row`, `where` and `error` as the message, and the raw value kept."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "replace")
    head = f"{MALFORMED_ROW}{where}: {error} :: ".replace("\n", " ").encode("utf-8", "replace")
    return head + (raw or b"").replace(b"\r", b" ").replace(b"\n", b" ")
