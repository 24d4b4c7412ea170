"""Where an export's files go and how they are written: partition folder names that no data
value can escape, the export folder's lock, and writes that are durable (fsync) and atomic
(rename into place). Export itself (etl/export.py) decides what to write.
"""
from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from convarch.etl.errors import Busy, ConvarchError, UsageError
from convarch.etl.layout import replace_durably

FORMAT = 1
MANIFEST = "_convarch_export.json"
README = "README.md"
LOCK = ".convarch-export.lock"
TMP_PREFIX = ".convarch-export-tmp-"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
MONTH = "__export_month"

_SAFE = re.compile(r"[A-Za-z0-9_-]")
#: The only files an export ever removes: partition files of the shape it writes.
_OWN_FILE = re.compile(r"[a-z_]+/source=[A-Za-z0-9_%~-]+/month=[A-Za-z0-9_%~-]+/[A-Za-z0-9_-]+\.parquet")


def partition_value(value: str | None) -> str:
    """A partition value as a folder-name segment: every character outside [A-Za-z0-9_-] is
    percent-encoded as UTF-8 (Hive's escaping, which DuckDB, Spark, Trino and pyarrow undo), so
    a value can never hold a `/`, be `.` or `..`, or otherwise leave its folder. Null and the
    empty string become Hive's null partition; a very long value is cut and given a hash."""
    if value is None or value == "":
        return NULL_PARTITION
    pieces = [ch if _SAFE.fullmatch(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8")) for ch in value]
    out = "".join(pieces)
    if out == NULL_PARTITION:
        out = "%5F" + out[1:]
    if len(out) > 180:  # folder names stay well under the usual 255-byte limit
        kept, size = [], 0
        for piece in pieces:
            if size + len(piece) > 160:
                break
            kept.append(piece)
            size += len(piece)
        out = "".join(kept) + "~" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]
    return out


def file_name(table: str, source: str | None, month: str | None) -> str:
    """The Parquet file of one partition: readable, and made only of [A-Za-z0-9_-]."""
    def part(v: str | None) -> str:
        if v is None or v == "":
            return "null"
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", v)[:60]
        return safe if safe == v else f"{safe}_{hashlib.sha256(v.encode('utf-8')).hexdigest()[:8]}"
    return f"{table}-{part(source)}-{part(month)}.parquet"


def partition_key(source: str | None, month: str | None) -> str:
    return f"source={partition_value(source)}/month={partition_value(month)}"


def inside(root: Path, path: Path) -> bool:
    root_real = os.path.realpath(root)
    return os.path.commonpath([root_real, os.path.realpath(path)]) == root_real


def prepare_dir(root: Path) -> Path:
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    if root.exists():
        if not (root / MANIFEST).exists() and any(p.name != LOCK for p in root.iterdir()):
            raise UsageError(f"{root} is not empty and holds no convarch export; give a new or empty folder")
    else:
        root.mkdir(parents=True, mode=0o700)
    os.chmod(root, 0o700)
    return root


@contextmanager
def locked(root: Path) -> Iterator[None]:
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise Busy(f"another convarch export is writing {root}; try again when it ends") from exc
            raise
        yield
    finally:
        os.close(fd)


def make_dirs(root: Path, folder: Path) -> None:
    """Create folder and its parents below root, each 0700; refuse a symlink on the way."""
    rel = folder.relative_to(root)
    here = root
    for part in rel.parts:
        if part in ("", ".", ".."):
            raise ConvarchError(f"refusing path segment {part!r} under {root}")
        here = here / part
        if here.is_symlink():
            raise ConvarchError(f"{here} is a symlink; refusing to write through it")
        if not here.exists():
            here.mkdir(mode=0o700)
            os.chmod(here, 0o700)


def make_durable(path: Path) -> None:
    os.chmod(path, 0o600)
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_stale(root: Path, old: dict, new: dict) -> dict[str, list[str]]:
    """Remove the files of partitions the new export no longer has (or names differently),
    then the folders that leaves empty. Only files the old manifest names are touched."""
    keep = {p["file"] for t in new["tables"].values() for p in t["partitions"].values()}
    removed: dict[str, list[str]] = {}
    for table, entry in old.get("tables", {}).items():
        for part in entry.get("partitions", {}).values():
            rel = part.get("file")
            if not isinstance(rel, str) or rel in keep:
                continue
            path = root / rel
            if not _OWN_FILE.fullmatch(rel) or ".." in Path(rel).parts or not inside(root, path.parent):
                continue
            if path.is_file() and not path.is_symlink():
                path.unlink()
            removed.setdefault(table, []).append(rel)
            folder = path.parent
            while folder != root and inside(root, folder):
                try:
                    folder.rmdir()
                except OSError:
                    break
                folder = folder.parent
    return removed


def write_if_changed(path: Path, body: bytes, tmp: Path) -> bool:
    try:
        if path.read_bytes() == body:
            return False
    except FileNotFoundError:
        pass
    replace_durably(path, body, tmp / f"{path.name}.new")
    return True
