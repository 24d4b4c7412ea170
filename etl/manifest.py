"""The published catalog's manifest: which Parquet files the catalog names, by run.

Read by the CLI before it opens the catalog, so it stays free of what publishing needs.
"""
from __future__ import annotations

import json
import os

from convarch.etl.layout import Layout


def moved_from(layout: Layout, manifest: dict | None) -> str | None:
    """Where the catalog's files were when it was published, if not in this warehouse's lake:
    the catalog names each Parquet file by its absolute path, so a warehouse copied or moved
    (a backup restored, a new disk) would read the files at the old place, or fail to. None
    when the catalog is where it belongs."""
    marker = os.sep + "lake" + os.sep
    ours = (str(layout.lake) + os.sep, os.path.realpath(layout.lake) + os.sep)
    for paths in (manifest or {}).get("files", {}).values():
        for p in paths:
            if p.startswith(ours):
                continue
            head, sep, _ = p.rpartition(marker)
            # the same folder named through a symbolic link (macOS's /tmp) is not a move
            if sep and (os.path.realpath(head) + marker) in ours:
                ours += (head + marker,)
                continue
            return head if sep else p
    return None


def read_manifest(layout: Layout) -> dict | None:
    try:
        return json.loads(layout.manifest.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
