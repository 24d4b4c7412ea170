"""Lines set aside at loading: the quarantine table's columns, its rows, and the reason a line
is not a JSON object. Nothing is dropped silently: each such line is kept with its bytes.
"""
from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pyarrow as pa

from convarch.adapters.base import MALFORMED_ROW

if TYPE_CHECKING:
    from convarch.etl.lines import BadLine
    from convarch.etl.load import FileContext


QUARANTINE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("file_id", pa.int64()),
        ("file_epoch", pa.int32()),
        ("source_file", pa.string()),
        ("line_no", pa.int64()),
        ("byte_offset", pa.int64()),
        ("reason", pa.string()),
        ("error", pa.string()),
        ("raw_text", pa.string()),
        ("raw_bytes", pa.binary()),
        ("ingest_run_id", pa.int64()),
        ("quarantined_at", pa.timestamp("us")),
        ("month", pa.string()),
    ]
)


def quarantine_rows(bad: list[tuple[BadLine, FileContext]], run_id: int) -> pa.Table:
    """The rows of a batch's lines set aside, each with its file, place and reason."""
    now = datetime.now(UTC).replace(tzinfo=None)
    month = now.strftime("%Y-%m")
    rows = [
        {
            "source": c.source,
            "file_id": b.file_id,
            "file_epoch": c.epoch,
            "source_file": c.source_file,
            "line_no": b.line_no,
            "byte_offset": b.byte_offset,
            "reason": b.reason,
            "error": b.error,
            "raw_text": b.raw.decode("utf-8", errors="replace"),
            "raw_bytes": b.raw,
            "ingest_run_id": run_id,
            "quarantined_at": now,
            "month": month,
        }
        for b, c in bad
    ]
    return pa.Table.from_pylist(rows, schema=QUARANTINE_SCHEMA)


def json_error(line: str) -> tuple[str, str]:
    """Name why a line is not a JSON object; the standard parser gives a precise position."""
    if line.startswith("unreadable ") and " container: " in line:
        return "unreadable_container", line
    if line.startswith(MALFORMED_ROW):
        return "malformed_row", line[len(MALFORMED_ROW):].split(" :: ", 1)[0]
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        return "invalid_json", f"not valid JSON: {exc}"
    return "not_object", f"valid JSON but {_JSON_KINDS.get(type(value), 'a ' + type(value).__name__)}, not an object"


#: What a JSON value that is not an object is, in JSON's words (a user reads these, not Python's)
_JSON_KINDS = {str: "a string", int: "a number", float: "a number", bool: "a boolean", list: "an array",
               type(None): "null"}
