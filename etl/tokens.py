"""Cut search documents into words at ingest, the way the search_tokens macro cuts a query.

A word is a run of ASCII letters, digits and underscores (sql/search/macros.sql). DuckDB's
regexp_extract_all does this at about 25 MB/s per core, which made tokenizing the largest part
of building the index. The rule is a property of single bytes, so here every other byte of the
batch's text (punctuation, spaces, every byte of a multi-byte character) becomes a space in one
table-driven pass, and Arrow's C++ splitter cuts the result: the same words, several times
faster. tests/test_tokens.py holds the two to each other.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
#: every byte that cannot be part of a word maps to a space; the others to themselves
_SEPARATE = bytes(b if b in _WORD_BYTES else 0x20 for b in range(256))

TOKENS_SCHEMA = pa.schema([("doc_id", pa.int64()), ("word", pa.string())])


def words(doc_ids: pa.Array, bodies: pa.Array) -> pa.Table:
    """One row per word occurrence: (doc_id, word), in document order."""
    if isinstance(bodies, pa.ChunkedArray):
        bodies = bodies.combine_chunks()
    if isinstance(doc_ids, pa.ChunkedArray):
        doc_ids = doc_ids.combine_chunks()
    if bodies.type not in (pa.string(), pa.large_string()):
        raise TypeError(f"document bodies must be strings, not {bodies.type}")
    validity, offsets, data = bodies.buffers()
    if data is None or len(bodies) == 0:
        return TOKENS_SCHEMA.empty_table()
    # byte-for-byte, so the offsets still hold; the result is pure ASCII, hence valid UTF-8
    spaced = pa.py_buffer(data.to_pybytes().translate(_SEPARATE))
    text = pa.Array.from_buffers(bodies.type, len(bodies), [validity, offsets, spaced], bodies.null_count, bodies.offset)
    pieces = pc.ascii_split_whitespace(text)
    flat = pc.list_flatten(pieces)
    owner = pc.list_parent_indices(pieces)
    table = pa.table({"doc_id": pc.take(doc_ids.cast(pa.int64()), owner), "word": flat.cast(pa.string())})
    # splitting a text that begins with a separator yields an empty first piece
    return table.filter(pc.not_equal(pc.binary_length(table["word"]), 0))
