"""Where a warehouse keeps its parts.

The file a user opens (``convarch.duckdb``) is a small catalog of views, rebuilt and swapped in
atomically by each ingest; the archive itself is Parquet in the folder beside it, and ingest's
own bookkeeping is a private state database that no reader opens. That split is what lets a
notebook hold the warehouse open while ingest runs (duckdb.md §7).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("CONVARCH_DB"):
        return Path(env["CONVARCH_DB"]).expanduser()
    data_home = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".local" / "share")
    return Path(data_home) / "convarch" / "convarch.duckdb"


@dataclass(frozen=True)
class Layout:
    db: Path

    @property
    def data_dir(self) -> Path:
        return self.db.parent / f"{self.db.stem}.d"

    @property
    def state_db(self) -> Path:
        return self.data_dir / "state.duckdb"

    @property
    def lake(self) -> Path:
        return self.data_dir / "lake"

    @property
    def tmp(self) -> Path:
        return self.data_dir / "tmp"

    @property
    def manifest(self) -> Path:
        return self.data_dir / "manifest.json"

    @property
    def catalog_base(self) -> Path:
        """A copy of the published catalog that no reader opens, for the next run to start from."""
        return self.data_dir / "catalog-base.duckdb"

    def create(self) -> None:
        """Create the folders private to the user (0700); files inside are made 0600."""
        for d in (self.db.parent, self.data_dir, self.lake, self.tmp):
            d.mkdir(parents=True, exist_ok=True)
        for d in (self.data_dir, self.lake, self.tmp):
            os.chmod(d, 0o700)
        if self.db.parent.name == "convarch":
            os.chmod(self.db.parent, 0o700)


def make_private(path: Path) -> None:
    os.chmod(path, 0o600)


def replace_durably(path: Path, body: bytes, staged: Path) -> None:
    """Write `body` to `staged` (0600), flush it to disk, then rename it over `path`: a reader
    sees the old file or the new one whole, never a part, even after a crash."""
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    make_private(staged)
    os.replace(staged, path)
