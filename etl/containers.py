"""Snapshots of stores that are not append-only JSONL: whole JSON documents, zstd JSONL and
SQLite families are copied privately and turned into JSON lines (by the adapter's `to_lines`
where it has one), so every container reaches the same line-parsing path."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from convarch.adapters.base import SourceFile
from convarch.etl import snapshot as snap


def snapshot_whole(file: SourceFile, dest: Path, workdir: Path) -> snap.Snapshot:
    """Copy a non-line container privately and write the JSON lines the adapter makes of it.

    A container the adapter cannot read (a corrupt zstd frame, a file that is not SQLite, a
    document that is not JSON) becomes one quarantined line carrying the reason.
    """
    from convarch import adapters

    adapter = adapters.get(file.source)
    to_lines = getattr(adapter, "to_lines", None)
    if file.container == "json" and to_lines is None:
        return snap.snapshot_document(file.path, dest)
    workdir.mkdir(mode=0o700)
    try:
        if file.container == "sqlite":
            copy = snap.snapshot_sqlite(file.path, workdir)
            size = sum(f.stat().st_size for f in workdir.iterdir())
        else:
            copy = workdir / file.path.name
            size = snap.copy_whole(file.path, copy)
        count = 0
        with open(dest, "wb") as out:
            try:
                lines = to_lines(copy, file) if to_lines else _default_lines(file.container, copy)
                for line in lines:
                    out.write(line.replace(b"\n", b" ") + b"\n")
                    count += 1
            except Exception as exc:  # noqa: BLE001 - any failure to read becomes a quarantined line
                out.write(_unreadable_line(file, exc) + b"\n")
        os.chmod(dest, 0o600)
        return snap.Snapshot(dest, 0, size, size, 0, "")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _default_lines(container: str, copy: Path):
    if container == "jsonl.zst":
        import io

        import zstandard

        with open(copy, "rb") as fh, zstandard.ZstdDecompressor().stream_reader(fh) as reader:
            for line in io.BufferedReader(reader):
                if line.strip():
                    yield line.rstrip(b"\r\n")
        return
    raise ValueError(f"no reader for container {container!r}")


def _unreadable_line(file: SourceFile, exc: Exception) -> bytes:
    """A line that cannot parse as JSON, so the whole unreadable container is quarantined
    once, with the reason in its text."""
    return f"unreadable {file.container} container: {type(exc).__name__}: {exc}".encode()
