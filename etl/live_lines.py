"""Which lines of a file its current version holds, when it is more than one load.

A file is its current epoch whole, unless it is a store read whole whose lines were matched
against those it gave before (etl/containers.py LinesDigest): the lines kept stay where they
were loaded, under the epoch and line numbers they were loaded with, and only the new lines
load, as a new epoch numbered from the line after the last one kept. Its `versions` list
that: (epoch, first line) of each run of lines in line order, each live up to the line before
the next run; epoch DEAD marks a run no longer live (a chat that moved to the end of a
Cursor store, read again after it). Line numbers thus keep the order of the lines as the
store last gave them, which orders the messages that have no time of their own.
"""
from __future__ import annotations

from bisect import bisect_right

#: The epoch of a run of lines that are no longer live: no load has it.
DEAD = 0
#: The last line of a load that is live to the end of its file.
LAST_LINE = (1 << 63) - 1


def whole(epoch: int) -> tuple[tuple[int, int, int], ...]:
    """The live lines of a file that is its current epoch whole."""
    return ((epoch, 1, LAST_LINE),)


def live_lines(u: dict) -> tuple[tuple[int, int, int], ...]:
    """(epoch, first line, last line) of each run of live lines a loaded file's current
    version holds, from its update's `versions` (empty when it is its epoch whole), and then
    the runs of earlier epochs it keeps `retained` (etl/retained.py)."""
    return version_lines(u) + tuple(u.get("retained") or ())


def version_lines(u: dict) -> tuple[tuple[int, int, int], ...]:
    """The live runs of the file's current version alone, without the lines it retains."""
    if len(u["versions"]) < 2:
        return whole(u["epoch"])
    return tuple(r for r in _runs(u["versions"], LAST_LINE) if r[0] != DEAD)


def _runs(versions: list, last_line: int) -> list[tuple[int, int, int]]:
    """Every run of `versions`, the last one up to `last_line`."""
    vs = sorted(versions, key=lambda v: v[1])
    lasts = [first - 1 for _, first in vs[1:]] + [last_line]
    return [(e, first, last) for (e, first), last in zip(vs, lasts)]


def before(versions: list, epoch: int, lines_read: int) -> list[tuple[int, int, int]]:
    """The live runs of a file's version read before, in line order, its last line
    `lines_read`: the lines its kept hashes (one a line, in this order) stand for."""
    runs = _runs(versions or [(epoch, 1)], lines_read)
    return [r for r in runs if r[0] != DEAD and r[2] >= r[1]]


def count(runs: list[tuple[int, int, int]]) -> int:
    return sum(last - first + 1 for _, first, last in runs)


def after_matching(runs: list[tuple[int, int, int]], kept: tuple[tuple[int, int], ...],
                   new_epoch: int) -> tuple[list[tuple[int, int]], int]:
    """The versions of a file whose new lines are, in order, the lines before at indices
    `kept` ([first, end) runs of indices into the live lines `runs`) and then new lines, and
    the line after which those new lines are numbered (under `new_epoch`).

    Every kept line keeps its epoch and number; a gap between kept lines is a DEAD run; the
    new epoch's run starts after the last line kept and marks any line before after it dead."""
    starts = []                 # index of each run's first line among the lines before
    n = 0
    for _, first, last in runs:
        starts.append(n)
        n += last - first + 1
    pieces: list[list[int]] = []          # [epoch, first line, last line]
    for a, b in kept:
        i = a
        while i < b:
            r = bisect_right(starts, i) - 1
            epoch, first, last = runs[r]
            line = first + (i - starts[r])
            upto = min(b, starts[r] + (last - first + 1))     # the indices this run holds
            if upto <= i:
                raise ValueError(f"kept line {i} is not one of the {n} lines before")
            end = line + (upto - i) - 1
            if pieces and pieces[-1][0] == epoch and pieces[-1][2] + 1 == line:
                pieces[-1][2] = end
            else:
                pieces.append([epoch, line, end])
            i = upto
    versions: list[tuple[int, int]] = []
    for k, (epoch, first, last) in enumerate(pieces):
        versions.append((epoch, first))
        if k + 1 < len(pieces) and pieces[k + 1][1] > last + 1:
            versions.append((DEAD, last + 1))
    last_kept = pieces[-1][2] if pieces else 0
    versions.append((new_epoch, last_kept + 1))
    return versions, last_kept
