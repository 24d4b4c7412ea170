"""Where each row of an agent's database goes among the lines the adapter gives.

A database is read again whole whenever it changes, and its lines are matched in order against
the lines it gave before (etl/containers.py): those are kept where they were loaded, and from
the first line that is new, every line loads again. So a row that changes as the store goes on
belongs where the store is growing. A session's row changes with every message it gains (its
counts, cost, update time), and other tables grow beside the messages (goose's usage rows,
OpenClaw's session windows, grok-cli's tool calls). Given after all the messages, every one of
those rows followed each new message and loaded again at every pick-up: 764 records for a
512 MB OpenCode database of 755 sessions that gained a message, 20,506 records (0.47 MB of
archive) for a 79 MB goose database with a usage row per answer, and all but one line of an
OpenClaw database whose windows and nodes came first. Merged in time, a new message and what
it changed come last, and the rest stays where it was loaded.

So a database's tables are merged in time (merged): each table's rows in its own order, the
messages in groups, each followed by the other tables' rows up to its last message's time, and
in the last group, where the store grows, every row at its time. A session's time is that of
its last message (its own time when it has none): its row moves to the end only when that
session goes on. Rows that carry no time come first, a session whose time cannot be compared
with its messages' goes last; a schema without the usual columns thus gives its tables one
after the other, as before.

A database an earlier version loaded, its lines in the old order, loads once more whole the
first time it changes (151,276 records and 22 s for that OpenCode database); the rows loaded
before stay in the archive, no longer current.
"""
from __future__ import annotations

import sqlite3
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import accumulate, islice
from typing import NamedTuple

from convarch.adapters import base
from convarch.adapters.base import Group

#: The time of a row that goes after every row with a time (a session with no message and no
#: time of its own comparable with its messages').
LAST = ("last",)


class Table(NamedTuple):
    """A table's part in a merge: its `rows` in the order their lines go, each row's time its
    value at index `at` (None: no time) or, given `times`, the time beside it there; and
    `group(cols, rows)`, which makes the Group of consecutive rows of it (or, for rows not
    worth a key, their lines)."""
    cols: list[str]
    rows: Iterable[tuple]
    group: Callable[[list[str], list[tuple]], Group | Iterable[bytes]]
    at: int | None = None
    times: list | None = None


#: A group holds at most this many times `size` rows, whatever table they come from (a store
#: whose first table is nearly empty).
MOST_ROWS = 8


def merged(tables: list[Table], size: int | None = None) -> Iterator[Group]:
    """The rows of `tables` in time, as groups: `size` rows of the first table (the messages)
    at a time, counted from its first row, each group followed by the other tables' rows up to
    the time of its last message, in table order; the last group of messages, not yet full,
    with those rows between its messages, each at its time; then the rows of the others that
    come after every message, in groups of at most MOST_ROWS times `size`.

    Within a full group the messages come first: rows interleaved one by one cost a key and a
    Group each (a usage row after each of goose's answers made 53,197 groups of one or two rows
    out of 79,537 rows, and reading the store took 0.3 s more). The last group is where a store
    grows, so there each row is at its time, and a message more loads with it only the rows it
    changed; once the group is full its rows take their places as a full group's, once. A row
    that moves (a session's row after its new last message) changes the key of the group it
    left and of the one it joined, and the others keep theirs, so a store read again need not
    make their lines again (adapters/base.py Group). By default `size` is GROUP_ROWS."""
    size = size or base.GROUP_ROWS
    most = MOST_ROWS * size
    streams = [_Stream(i, table) for i, table in enumerate(tables)]
    first, others = streams[0], streams[1:]
    while first.more():
        rows, keys = first.take(size - first.n % size)
        if first.n % size and not first.more():
            yield from _in_time(tables, [(k, 0, n, r) for n, (k, r) in enumerate(zip(keys, rows))], others,
                                keys[-1], most)
            break
        segments = [(0, rows)]
        held = len(rows)
        for s in others:
            while s.more() and s.keys[s.pos] <= keys[-1]:
                taken, _ = s.take(min(bisect_right(s.keys, keys[-1], s.pos) - s.pos, most - held))
                segments.append((s.i, taken))
                held += len(taken)
                if held >= most:
                    yield _group(tables, segments)
                    segments, held = [], 0
        if segments:
            yield _group(tables, segments)
    for s in others:
        while s.more():
            taken, _ = s.take(most)
            yield _group(tables, [(s.i, taken)])


def _in_time(tables: list[Table], rows: list[tuple], others: list[_Stream], bound: tuple,
             most: int) -> Iterator[Group]:
    """The last messages (`rows`: key, table, number, values) and the other tables' rows up to
    `bound`, each at its time, a table listed earlier first at the same time, in groups of at
    most `most` rows."""
    for s in others:
        while s.more() and s.keys[s.pos] <= bound:
            start = s.n
            taken, keys = s.take(bisect_right(s.keys, bound, s.pos) - s.pos)
            rows.extend((k, s.i, start + n, r) for n, (k, r) in enumerate(zip(keys, taken)))
    rows.sort(key=lambda r: r[:3])
    for at in range(0, len(rows), most):
        segments: list[tuple[int, list[tuple]]] = []
        for _, i, _, values in rows[at:at + most]:
            if segments and segments[-1][0] == i:
                segments[-1][1].append(values)
            else:
                segments.append((i, [values]))
        yield _group(tables, segments)


class _Stream:
    """A table's rows read a chunk at a time, each with its merge key: its time as _sortable
    makes it, and never below the key of a row before it in the table (a table's own order
    stands, and its keys are sorted, so the rows up to a time are found by bisection)."""

    CHUNK = 4096

    def __init__(self, i: int, table: Table):
        self.i, self.table = i, table
        self.rows = iter(table.rows)
        self.times = iter(table.times) if table.times is not None else None
        self.values: list[tuple] = []
        self.keys: list[tuple] = []
        self.pos = 0
        self.n = 0                       # rows of this table taken so far
        self.top: tuple | None = None    # the highest key so far

    def take(self, n: int) -> tuple[list[tuple], list[tuple]]:
        """Up to `n` of this chunk's rows from the next one on, and their keys."""
        end = min(self.pos + n, len(self.values))
        rows, keys = self.values[self.pos:end], self.keys[self.pos:end]
        self.n += end - self.pos
        self.pos = end
        return rows, keys

    def more(self) -> bool:
        """True while rows are left; reads the next chunk when this one is used up."""
        if self.pos < len(self.values):
            return True
        self.values = list(islice(self.rows, self.CHUNK))
        self.pos = 0
        if not self.values:
            return False
        if self.times is not None:
            keys = _keys(list(islice(self.times, len(self.values))))
        elif self.table.at is None:
            keys = [(0,)] * len(self.values)
        else:
            at = self.table.at
            keys = _keys([v[at] for v in self.values])
        if self.top is not None:
            keys[0] = max(keys[0], self.top)
        self.keys = list(accumulate(keys, max))
        self.top = self.keys[-1]
        return True


def _group(tables: list[Table], segments: list[tuple[int, list[tuple]]]) -> Group:
    """One Group of runs of rows of several tables: keyed by each run's key (the rows' Group's,
    or the hash of lines made at once), its lines theirs in order."""
    parts: list[Group | list[bytes]] = []
    for i, rows in segments:
        made = tables[i].group(tables[i].cols, rows)
        parts.append(made if isinstance(made, Group) else list(made))
    if len(parts) == 1 and isinstance(parts[0], Group):
        return parts[0]
    h = base.key_hash()
    for part in parts:
        if isinstance(part, Group):
            h.update(b"g" + part.key)
        else:
            h.update(b"l%d:" % len(part))
            for line in part:
                h.update(b"%d:" % len(line) + line)
    return Group(base.key_digest(h), partial(_lines_of, parts))


def _lines_of(parts: list[Group | list[bytes]]) -> Iterator:
    for part in parts:
        yield from part.lines() if isinstance(part, Group) else part


def _keys(times: list) -> list[tuple]:
    """_sortable of each time; numbers, the usual times, without a call each."""
    if set(map(type, times)) <= {int, float}:
        return [(1, t) for t in times]
    return [_sortable(t) for t in times]


def _sortable(t) -> tuple:
    """A row's time as a key any two rows' compare by: none first, then numbers, then text,
    then anything else by its repr; LAST after all."""
    kind = type(t)
    if kind is int or kind is float:
        return (1, t)
    if t is LAST:
        return (4,)
    if t is None:
        return (0,)
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return (1, t)
    if isinstance(t, str):
        return (2, t)
    return (3, repr(t))


def table(cur: sqlite3.Cursor, time_column: str, group: Callable[[list[str], list[tuple]], Group | Iterable[bytes]]
          ) -> Table:
    """A cursor's rows, in its order, at the time in `time_column` (none when the table has no
    such column)."""
    cols = [d[0] for d in cur.description]
    return Table(cols, cur, group, cols.index(time_column) if time_column in cols else None)


def owners(cur: sqlite3.Cursor, id_column: str, last: dict, own_time: str | None,
           group: Callable[[list[str], list[tuple]], Group | Iterable[bytes]],
           touched: str | None = None, as_time: Callable[[object], object] | None = None) -> Table:
    """Owners' rows (sessions) at the time of the last row each owns (`last`: owner id -> the
    time of its last message), one that owns none at its own time (`own_time`, a column whose
    times compare with the owned rows'; None for none: it goes last); in that order, the
    cursor's order among equals.

    `touched` names the column the agent sets whenever it writes the row (OpenCode's
    time_updated), `as_time` making its value a time of the messages' kind: a row touched
    after its last message goes at that time. An old session renamed, archived or shared
    then moves to the end of the lines, where its one line loads; at its old place, every
    line after it loaded again (a 77 MB OpenCode database: every message from there on)."""
    cols = [d[0] for d in cur.description]
    at = cols.index(id_column) if id_column in cols else None
    own = cols.index(own_time) if own_time is not None and own_time in cols else None
    seen = cols.index(touched) if touched is not None and touched in cols else None
    rows = []
    for values in cur:
        key = None if at is None else values[at]
        if key is not None and key in last:
            t = last[key]
        elif own is not None and values[own] is not None:
            t = values[own]
        else:
            t = LAST
        if seen is not None and t is not LAST:
            t = _later(t, values[seen] if as_time is None else as_time(values[seen]))
        rows.append((t, values))
    rows.sort(key=lambda r: _sortable(r[0]))        # stable: the cursor's order among equals
    return Table(cols, [r[1] for r in rows], group, times=[r[0] for r in rows])


def _later(t, touched):
    """`touched` when it is a time of `t`'s kind and after it, else `t`: a value of another
    kind (a date as text against numbers) says nothing about where the row goes."""
    if touched is None or _sortable(touched)[0] != _sortable(t)[0]:
        return t
    return touched if touched > t else t


def lines(timed: list[tuple[object, bytes]]) -> Table:
    """Lines made already, each at its time: in time, the list's order among equals."""
    timed = sorted(timed, key=lambda r: _sortable(r[0]))
    return Table(["line"], [(line,) for _, line in timed], lambda cols, rows: (r[0] for r in rows),
                 times=[t for t, _ in timed])


def last_times(con: sqlite3.Connection, table: str, owner: str, time: str, by: str | None = None) -> dict:
    """Each owner's time of its last row in `table` (a session's last message): the latest
    time, or, with `by` (an integer column the table is ordered by), the time of the row with
    the highest `by`, which an index on the owner finds without reading the table (max(time)
    read all of a 79 MB goose database: 78 ms against 6). Empty for a schema without those
    columns."""
    queries = [f"select {owner}, max({time}) from {table} where {owner} is not null group by {owner}"]
    if by is not None:
        queries.insert(0, f"select t.{owner}, t.{time} from {table} as t join (select {owner}, max({by}) as last "
                          f"from {table} where {owner} is not null group by {owner}) as l on t.{by} = l.last")
    for query in queries:
        try:
            return dict(con.execute(query))
        except sqlite3.OperationalError:
            continue
    return {}
