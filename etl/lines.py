"""Split a snapshot into numbered lines with exact byte offsets.

DuckDB's own JSON readers give neither line numbers nor offsets and fail a whole file on one bad
line (duckdb.md §3), so lines are cut here and parsed by DuckDB afterwards. Lines that are not
UTF-8 never reach the parser: they are set aside for quarantine with their bytes.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

LINES_SCHEMA = pa.schema(
    [("file_id", pa.int64()), ("line_no", pa.int64()), ("byte_offset", pa.int64()), ("line", pa.string())]
)
READ_CHUNK = 32 << 20
BOM = b"\xef\xbb\xbf"


@dataclass(slots=True)
class BadLine:
    file_id: int
    line_no: int
    byte_offset: int
    reason: str
    error: str
    raw: bytes


@dataclass(slots=True)
class LineBatch:
    table: pa.Table
    bad: list[BadLine] = field(default_factory=list)
    lines: int = 0      # physical lines consumed, blank ones included
    nbytes: int = 0


def split_snapshot(
    path: Path, file_id: int, start_offset: int, first_line_no: int, *, keep_offsets: bool = True,
    transform: Callable[[str], str] | None = None,
) -> Iterator[LineBatch]:
    """Yield batches of complete lines from a snapshot that begins at `start_offset` of the
    original and whose first line is physical line `first_line_no`."""
    line_no = first_line_no
    offset = start_offset
    with open(path, "rb") as fh:
        carry = b""
        while True:
            chunk = fh.read(READ_CHUNK)
            if not chunk and not carry:
                return
            data = carry + chunk
            cut = data.rfind(b"\n") if chunk else len(data) - 1
            if cut < 0:
                carry = data
                continue
            body, carry = data[: cut + 1], data[cut + 1 :]
            split = _split_fast if transform is None else None
            done = split(body, file_id, line_no, offset) if split else None
            batch, line_no, offset = done or _split(body, file_id, line_no, offset, transform)
            if not keep_offsets:      # a compacted document: its bytes are not the original's
                batch.nbytes = len(body)
            yield batch
            if not chunk:
                return


def _split(body: bytes, file_id: int, line_no: int, offset: int,
           transform: Callable[[str], str] | None = None) -> tuple[LineBatch, int, int]:
    nos: list[int] = []
    offs: list[int] = []
    texts: list[str] = []
    bad: list[BadLine] = []
    parts = body.split(b"\n")
    if parts and parts[-1] == b"":
        parts.pop()
    for raw in parts:
        here = offset
        offset += len(raw) + 1
        no = line_no
        line_no += 1
        content = raw[:-1] if raw.endswith(b"\r") else raw
        if here == 0 and content.startswith(BOM):
            content = content[len(BOM) :]
        if not content.strip():
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append(BadLine(file_id, no, here, "invalid_utf8", f"not UTF-8: {exc.reason} at byte {exc.start}", raw))
            continue
        nos.append(no)
        offs.append(here)
        texts.append(transform(text) if transform else text)
    table = pa.table(
        [pa.array([file_id] * len(nos), pa.int64()), pa.array(nos, pa.int64()), pa.array(offs, pa.int64()), pa.array(texts, pa.string())],
        schema=LINES_SCHEMA,
    )
    return LineBatch(table, bad, lines=len(parts), nbytes=len(body)), line_no, offset


def _split_fast(body: bytes, file_id: int, line_no: int, offset: int) -> tuple[LineBatch, int, int] | None:
    """The same cut done by Arrow's C++ kernels, which release the GIL so workers split in
    parallel. Returns None when the careful path is needed: a BOM at the start of the file, or
    bytes that are not UTF-8 (the careful path names each bad line)."""
    if offset == 0 and body.startswith(BOM):
        return None
    parts = pc.split_pattern(pa.array([body], pa.binary()), b"\n").values
    if len(parts) and body.endswith(b"\n"):
        parts = parts.slice(0, len(parts) - 1)
    n = len(parts)
    try:
        text = parts.cast(pa.string())
    except pa.ArrowInvalid:
        return None
    lengths = pc.binary_length(parts)
    ends = pc.cumulative_sum(pc.add(lengths, 1))
    starts = pc.add(pc.subtract(ends, pc.add(lengths, 1)), offset)
    numbers = pc.add(pc.cumulative_sum(pa.repeat(1, n).cast(pa.int64())), line_no - 1)
    crlf = pc.ends_with(text, "\r")
    if pc.any(crlf).as_py():
        text = pc.if_else(crlf, pc.utf8_slice_codeunits(text, 0, -1), text)
    keep = pc.invert(pc.or_(pc.equal(pc.binary_length(text), 0), pc.ascii_is_space(text)))
    table = pa.table(
        [pa.repeat(file_id, n).cast(pa.int64()), numbers.cast(pa.int64()), starts.cast(pa.int64()), text],
        schema=LINES_SCHEMA,
    ).filter(keep)
    end = offset + (ends[n - 1].as_py() if n else 0)
    return LineBatch(table, [], lines=n, nbytes=len(body)), line_no + n, end
