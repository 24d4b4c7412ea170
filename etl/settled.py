"""Whether a store an agent rewrites in place was caught while its writer was at work.

A JSONL file is read up to its last complete line, and the rest waits for the next run. A
store read whole has no such line to stop at: a copy made while the agent wrote it can be torn
(pages of a database from before and after a commit, a JSON document cut where the writer had
got to), and a JSON document is often written by truncating the file and writing it out again.
Read then, a history lost its lines until the next run, or had its torn tail quarantined and
every message after the tear loaded again. So a whole copy is taken only while the file's stat
stays the same, and a document that does not look whole, written in the last few seconds, is
left for the next run (etl/containers.py, etl/snapshot.py).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import ijson

if TYPE_CHECKING:
    from convarch.etl.snapshot import FileStat


class StillWriting(OSError):
    """A store caught while its writer was at work: not read this run, and read again at the
    next, as a JSONL file's incomplete last line is."""


#: Copies of a whole file made before one is taken as it was (its stat the same before and
#: after), each after a short wait; a file still changing then is read at the next run.
COPY_ATTEMPTS = 5
#: A document that does not look whole and was written this recently may be half written: it
#: is read at the next run, not quarantined. Older, it is read as it is: its complete elements
#: load and the rest is quarantined with its bytes (a writer that died mid-write).
WRITING_SECONDS = 5.0


def being_written(st: os.stat_result | FileStat, now_ns: int | None = None) -> bool:
    """Whether a file was written in the last WRITING_SECONDS (a time more than a second
    ahead of the clock is not taken as recent, so a skewed clock never keeps a file back)."""
    age = (time.time_ns() if now_ns is None else now_ns) - _mtime_ns(st)
    return WRITING_SECONDS > 0 and -1e9 <= age < WRITING_SECONDS * 1e9


def written_ago(st: os.stat_result | FileStat) -> str:
    return f"{max(0.0, (time.time_ns() - _mtime_ns(st)) / 1e9):.1f} s"


def _mtime_ns(st: os.stat_result | FileStat) -> int:
    return st.st_mtime_ns if isinstance(st, os.stat_result) else st.mtime_ns


def same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_ino, b.st_size, b.st_mtime_ns)


_PAIRS = {ord("{"): ord("}"), ord("["): ord("]")}
_BLANK = b" \t\r\n"


def looks_whole(path: Path, probe: int = 4096) -> bool:
    """Whether a copy is what its writer finished: a JSON document (.json) begins with { or [,
    ends with its match and parses to its end, a log read whole (.jsonl) is empty or ends
    with a newline, and a YAML document (Copilot CLI's workspace.yaml) is not empty and ends
    with one; a write cut short ends where the writer had got to (a YAML file caught truncated
    or half written out had loaded as a session with no summary, or half of one). Files of
    other kinds (Aider's Markdown) are taken as they are.

    The brackets reject most cuts at once; the parse catches the cut that happens to end on a
    bracket matching the first (a Cline history cut just after a message's content array).
    Only a file written in the last few seconds is asked (etl/containers.py)."""
    if path.suffix not in (".json", ".jsonl", ".yaml", ".yml"):
        return True
    with open(path, "rb") as fh:
        head = fh.read(probe).lstrip(_BLANK)
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - probe))
        end = fh.read()
    if path.suffix == ".jsonl":
        return not end or end.endswith(b"\n")
    if path.suffix != ".json":
        return bool(head) and end.endswith(b"\n")
    tail = end.rstrip(_BLANK)
    return bool(head) and bool(tail) and _PAIRS.get(head[0]) == tail[-1] and _parses(path, size)


#: A prefix no element of a document has: ijson then parses the whole document in C and
#: builds no value (a 65 MB history in 0.12-0.2 s, in a megabyte of memory).
_NOWHERE = "\x00"
#: Below this size a document ijson rejects is given to Python's parser, which accepts more
#: (NaN, integers past 64 bits); a bigger one so rejected waits out the window instead.
_PYTHON_BYTES = 16 << 20


def _parses(path: Path, size: int) -> bool:
    try:
        with open(path, "rb") as fh:
            for _ in ijson.items(fh, _NOWHERE, buf_size=1 << 20):
                pass
        return True
    except (ijson.JSONError, ValueError):
        pass
    if size > _PYTHON_BYTES:
        return False
    try:
        json.loads(path.read_bytes())
    except (ValueError, RecursionError):
        return False
    return True
