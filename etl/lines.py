"""Split a snapshot into numbered lines with exact byte offsets.

DuckDB's own JSON readers give neither line numbers nor offsets and fail a whole file on one bad
line (duckdb.md §3), so lines are cut here and parsed by DuckDB afterwards. Lines that are not
UTF-8 never reach the parser: they are set aside for quarantine with their bytes.
"""
from __future__ import annotations

import mmap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

LINES_SCHEMA = pa.schema(
    [("file_id", pa.int64()), ("line_no", pa.int64()), ("byte_offset", pa.int64()), ("line", pa.string())]
)
#: Bytes of lines cut at once when the reader does not say how many it has room for.
READ_CHUNK = 32 << 20
# Arrow's cut costs ~0.7 ms a call whatever the size, Python's split grows with the bytes: below
# this the Python split is the faster (a 1 KB file 0.77 ms -> 0.07 ms; even at 100 KB), and
# stores of one small file per event or per task are made of such files
SMALL_BODY = 64 << 10
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
    path: Path, file_id: int, start_offset: int, first_line_no: int, *,
    transform: Callable[[list[str]], list[str]] | None = None, skip: int = 0, room: Callable[[], int] | None = None,
) -> Iterator[LineBatch]:
    """Yield batches of complete lines from a snapshot that begins at `start_offset` of the
    original, from its byte `skip` on (lines loaded already come before it), whose first line
    is physical line `first_line_no`. Each batch holds `room()` bytes (READ_CHUNK when not
    given), asked as it is cut, and the rest of the line that reaches them: the reader's batch
    fills to its size and no further.

    The snapshot (our own private copy, never the live file: a live file cut short under a
    mapping would kill the process) is memory-mapped and handed to Arrow without a copy, so
    the bytes are copied once, by the cut itself, instead of by every read, join and slice."""
    size = path.stat().st_size
    if size <= skip:
        return
    with open(path, "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield from _cut(mm, size, file_id, start_offset + skip, first_line_no, transform, skip, room)
    finally:
        try:
            mm.close()
        except BufferError:     # a batch abandoned mid-way still holds a view; the GC unmaps it
            pass


def _cut(mm: mmap.mmap, size: int, file_id: int, offset: int, line_no: int,
         transform: Callable[[list[str]], list[str]] | None, pos: int = 0,
         room: Callable[[], int] | None = None) -> Iterator[LineBatch]:
    data = pa.py_buffer(mm)
    released = 0
    while pos < size:
        end = pos + chunk_bytes(room)
        # to the end of the line that reaches the chunk's size, so the reader's batch is full
        cut = mm.find(b"\n", end - 1) if end < size else size - 1
        if cut < 0:
            cut = size - 1
        body = data.slice(pos, cut + 1 - pos)
        pos = cut + 1
        batch, line_no, offset = _split_body(body, file_id, line_no, offset, transform)
        del body
        yield batch
        # the pages read so far are dropped from this process (they stay cached), so a big
        # snapshot does not count against its memory as it is read
        upto = pos - pos % mmap.PAGESIZE
        if upto > released and hasattr(mm, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            mm.madvise(mmap.MADV_DONTNEED, released, upto - released)
            released = upto


def chunk_bytes(room: Callable[[], int] | None) -> int:
    """Bytes to cut next: what the reader has room for (READ_CHUNK if it does not say)."""
    return READ_CHUNK if room is None else max(1, room())


def split_chunks(chunks: Iterable[bytes], file_id: int, *, transform: Callable[[list[str]], list[str]] | None = None
                 ) -> Iterator[LineBatch]:
    """Batches of lines from `chunks` of whole lines (each ending with its newline) made as
    they come: the lines of a container read for the first time, cut while the rest are
    still being made (etl/containers.py). Offsets and numbers are those a snapshot of all the
    chunks written out would give."""
    line_no, offset = 1, 0
    for chunk in chunks:
        batch, line_no, offset = _split_body(pa.py_buffer(chunk), file_id, line_no, offset, transform)
        yield batch


def _split_body(body: pa.Buffer, file_id: int, line_no: int, offset: int,
                transform: Callable[[list[str]], list[str]] | None) -> tuple[LineBatch, int, int]:
    """One chunk of whole lines cut by Arrow where it can, else by Python."""
    fast = transform is None and body.size >= SMALL_BODY
    done = _split_fast(body, file_id, line_no, offset) if fast else None
    return done or _split(body.to_pybytes(), file_id, line_no, offset, transform)


def _split(body: bytes, file_id: int, line_no: int, offset: int,
           transform: Callable[[list[str]], list[str]] | None = None) -> tuple[LineBatch, int, int]:
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
        texts.append(text)
    if transform is not None:       # a batch at a time: redaction spreads it over processes
        texts = transform(texts)
    table = pa.table(
        [pa.array([file_id] * len(nos), pa.int64()), pa.array(nos, pa.int64()), pa.array(offs, pa.int64()), pa.array(texts, pa.string())],
        schema=LINES_SCHEMA,
    )
    return LineBatch(table, bad, lines=len(parts), nbytes=len(body)), line_no, offset


def _split_fast(body: bytes | pa.Buffer, file_id: int, line_no: int, offset: int) -> tuple[LineBatch, int, int] | None:
    """The same cut done by Arrow's C++ kernels, which release the GIL so workers split in
    parallel. Returns None when the careful path is needed: a BOM at the start of the file, or
    bytes that are not UTF-8 (the careful path names each bad line)."""
    body = pa.py_buffer(body) if isinstance(body, bytes) else body
    size = body.size
    if offset == 0 and size >= len(BOM) and body.slice(0, len(BOM)).equals(pa.py_buffer(BOM)):
        return None
    whole = pa.Array.from_buffers(pa.binary(), 1, [None, pa.array([0, size], pa.int32()).buffers()[1], body])
    parts = pc.split_pattern(whole, b"\n").values
    if len(parts) and size and body.slice(size - 1, 1).equals(pa.py_buffer(b"\n")):
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
    )
    if not pc.all(keep).as_py():     # blank lines, rare: a filter copies every line
        table = table.filter(keep)
    end = offset + (ends[n - 1].as_py() if n else 0)
    return LineBatch(table, [], lines=n, nbytes=size), line_no + n, end
