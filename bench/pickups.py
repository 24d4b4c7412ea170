"""Pick-ups in a row, as `watch` makes them while sessions run.

One pick-up seldom pays for merging the small files each pick-up leaves (a merge comes every
few), so the bench's single "append 10 x 5" hid that merging was most of a pick-up's time under
`watch` until 564fbdc. A series of them, each appending to the same files, shows it. Each is
told the files appended to, as `watch` is by change notices, and looks only at them
(etl/look.py); the single pick-up looks at every file, as `ingest` does.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Callable


def append_tails(files: list[str]) -> None:
    """Append each file's last 10 lines to it again, as a live session grows."""
    for f in files:
        lines = Path(f).read_text().splitlines()[-10:]
        with open(f, "a") as fh:
            fh.write("\n".join(lines) + "\n")


def series(files: list[str], n: int, ingest: Callable[[], dict], listed: Callable[[], int]) -> dict | None:
    """`n` pick-ups of 10 lines appended to each of `files`: mean and slowest seconds, merging
    seconds in all, and the files the catalog lists after (None when n is 0)."""
    runs = []
    for _ in range(n):
        append_tails(files)
        runs.append(ingest())
    if not runs:
        return None
    secs = sorted(r["seconds"] for r in runs)
    return {"pick_ups": len(runs), "mean_seconds": round(statistics.mean(secs), 3),
            "max_seconds": round(secs[-1], 3),
            "compact_seconds": round(sum(r["compact_seconds"] for r in runs), 2),
            "listed_files": listed()}


def report(p: dict | None) -> str:
    if not p:
        return "  in a row        not run (--pick-ups 0)"
    return (f"  in a row        {p['pick_ups']} more such pick-ups: mean {p['mean_seconds']} s, slowest "
            f"{p['max_seconds']} s, merging small files {p['compact_seconds']} s in all; "
            f"{p['listed_files']} files listed after")
