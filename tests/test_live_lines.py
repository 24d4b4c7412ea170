"""A store read whole, again and again, keeps the lines it gave before where they were loaded
and loads only the rest (etl/containers.py LinesDigest, etl/live_lines.py): whatever the
edits, the live lines in line order are exactly the lines the store gives now."""
from __future__ import annotations

import hashlib
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from convarch.etl import live_lines as live
from convarch.etl import snapshot as snap
from convarch.etl.containers import LinesDigest
from convarch.etl.read_file import _what_loads


class Archive:
    """The lines loaded, by (epoch, line number), and the file's state as ingest keeps it."""

    def __init__(self):
        self.rows: dict[tuple[int, int], bytes] = {}
        self.state = None          # epoch, lines_read, versions, hashes
        self.loaded = 0            # lines loaded by the last read

    def read(self, lines: list[bytes], legacy: bool = False) -> None:
        before = self.state["hashes"] if self.state else None
        digest = LinesDigest(before, keep=True, legacy=legacy)
        new = [line for line in lines if not digest.add(line)]
        self.digest = digest
        self._took(lines, digest.stamp(snap.Snapshot(None, 0, 0, 0, 0, "")), new)

    def read_groups(self, groups: list[tuple[bytes, list[bytes]]]) -> None:
        """A read whose lines come in groups (key, lines), as a Cursor store gives its chats;
        `made` counts the lines of the groups not taken whole."""
        before = self.state["hashes"] if self.state else None
        digest = LinesDigest(before, keep=True, groups=self.state["groups"] if self.state else None)
        new: list[bytes] = []
        self.made = 0
        for key, lines in groups:
            if digest.take_group(key):
                continue
            self.made += len(lines)
            new += [line for line in lines if not digest.add(line)]
            digest.end_group()
        self.digest = digest
        self._took([line for _, lines in groups for line in lines], digest.stamp(snap.Snapshot(None, 0, 0, 0, 0, "")), new)

    def _took(self, lines: list[bytes], s: snap.Snapshot, new: list[bytes]) -> None:
        self.stamp = s
        if self.state is None:
            action, epoch, lines_read, versions = "new", 1, 0, []
        else:
            p = SimpleNamespace(prev=self.state, action="rewrite")
            runs = live.before(self.state["versions"], self.state["epoch"], self.state["lines_read"])
            assert 8 * live.count(runs) == len(self.state["hashes"])       # one hash a live line
            action, epoch, lines_read, versions = _what_loads(p, s, runs)
            assert action in ("append", "replace_tail", "rewrite")
            if action == "rewrite":
                new = lines              # nothing kept: every line loads (the copy holds them all)
        for i, line in enumerate(new):
            self.rows[(epoch, lines_read + 1 + i)] = line
        self.loaded = len(new)
        self.state = {"epoch": epoch, "lines_read": lines_read + len(new), "versions": versions,
                      "hashes": s.line_hashes, "groups": s.line_groups}

    def live(self) -> list[bytes]:
        runs = live.live_lines({"epoch": self.state["epoch"], "versions": self.state["versions"]})
        got = [(n, line) for (e, n), line in self.rows.items()
               if any(e == re and first <= n <= last for re, first, last in runs)]
        return [line for _, line in sorted(got)]


def chats(spec: list[tuple[str, int]]) -> list[bytes]:
    """A Cursor-like store: each chat's bubbles, then its own row."""
    out: list[bytes] = []
    for cid, n in spec:
        out += [f"{cid} bubble {i}\n".encode() for i in range(n)] + [f"{cid} row {n}\n".encode()]
    return out


def test_a_chat_taken_up_again_loads_only_its_own_lines():
    a = Archive()
    order = [("a", 3), ("b", 2), ("c", 4), ("d", 1)]
    a.read(chats(order))
    assert a.loaded == 14
    # b gains a bubble: it moves to the end, the chats after its old place stay
    order = [("a", 3), ("c", 4), ("d", 1), ("b", 3)]
    a.read(chats(order))
    assert a.loaded == 4 and a.live() == chats(order)
    # then a, the oldest, and a new chat e
    order = [("c", 4), ("d", 1), ("b", 3), ("a", 4), ("e", 1)]
    a.read(chats(order))
    assert a.loaded == 5 + 2 and a.live() == chats(order)
    # nothing changed but the end: an append in the same epoch
    epoch = a.state["epoch"]
    order = order + [("f", 2)]
    a.read(chats(order))
    assert (a.loaded, a.state["epoch"]) == (3, epoch) and a.live() == chats(order)
    # a chat deleted from the middle: nothing loads, its lines are no longer live
    order = [c for c in order if c[0] != "d"]
    a.read(chats(order))
    assert a.loaded == 0 and a.live() == chats(order)


def test_a_store_hashed_the_old_way_keeps_only_its_first_lines_once():
    a = Archive()
    first = chats([("a", 2), ("b", 2), ("c", 2)])
    a.read(first)
    # the hashes an earlier version kept: the running hash after each line
    h, chain = hashlib.blake2b(digest_size=16), b""
    for line in first:
        h.update(line)
        chain += h.digest()[:8]
    a.state["hashes"] = chain
    moved = chats([("a", 2), ("c", 2), ("b", 3)])
    a.read(moved, legacy=True)
    assert a.loaded == 7 and a.live() == moved          # a kept: its first lines
    again = chats([("c", 2), ("b", 3), ("a", 3)])
    a.read(again)
    assert a.loaded == 4 and a.live() == again           # now with each line's own hash


edits = st.lists(st.tuples(st.sampled_from(["move", "drop", "add", "change", "dup"]),
                           st.integers(0, 10 ** 6), st.integers(1, 4)), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 12), edits)
def test_any_edits_leave_the_live_lines_those_the_store_gives(n, steps):
    """Lines moved to the end, dropped, added, changed in place or repeated: after each read
    the live lines, in line order, are the store's, and a move loads only what moved."""
    a = Archive()
    lines = [f"line {i}\n".encode() for i in range(n)]
    a.read(lines)
    fresh = 0
    for kind, at, k in steps:
        i = at % (len(lines) + 1)
        if kind == "move":
            moved = lines[i:i + k]
            lines = lines[:i] + lines[i + k:] + moved
        elif kind == "drop":
            lines = lines[:i] + lines[i + k:]
        elif kind == "add":
            lines = lines[:i] + [f"new {fresh}.{j}\n".encode() for j in range(k)] + lines[i:]
            fresh += 1
        elif kind == "change" and lines:
            lines = lines[:i] + [f"changed {fresh}\n".encode()] + lines[i + 1:]
            fresh += 1
        elif kind == "dup" and lines:
            lines = lines + [lines[i % len(lines)]]
        before = a.live()
        a.read(lines)
        assert a.live() == lines
        if kind == "move" and len(set(before)) == len(before) and before != lines:
            assert a.loaded <= k


chat_edits = st.lists(st.tuples(st.sampled_from(["grow", "touch", "drop", "new", "resort", "none"]),
                                st.integers(0, 10 ** 6)), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 8), chat_edits)
def test_chats_whose_rows_did_not_change_are_not_made_and_load_as_if_they_were(n, steps):
    """Lines given in groups keyed by what they are made of (Cursor chats): a chat grown
    moves to the end, one touched changes a line in place, dropped, new, the order resorted.
    After each read the live lines are the store's, the read kept and hashed exactly what a
    read that made every line did, and only the chats that changed were made."""
    grouped, flat = Archive(), Archive()
    store = {f"c{i}": [f"c{i} line {j}\n".encode() for j in range(i % 3 + 1)] for i in range(n)}
    order = list(store)
    fresh = 0

    def groups():
        return [(hashlib.blake2b(b"".join(store[c]), digest_size=16).digest(), store[c]) for c in order]

    def read():
        grouped.read_groups(groups())
        flat.read([line for _, lines in groups() for line in lines])
        assert grouped.live() == flat.live() == [line for _, lines in groups() for line in lines]
        for field in ("kept", "lines", "lines_hash", "line_hashes"):
            assert getattr(grouped.stamp, field) == getattr(flat.stamp, field), field
        for field in ("nbytes", "kept_bytes"):      # the bytes kept are the bytes left out of the copy
            assert getattr(grouped.digest, field) == getattr(flat.digest, field), field
        assert grouped.loaded == flat.loaded

    read()
    assert grouped.made == sum(len(v) for v in store.values())
    for kind, at in steps:
        c = order[at % len(order)] if order else None
        changed = []
        if kind == "grow" and c:
            store[c] = store[c] + [f"{c} more {fresh}\n".encode()]
            order.remove(c)
            order.append(c)
            changed = [c]
        elif kind == "touch" and c:
            store[c] = [f"{c} touched {fresh}\n".encode()] + store[c][1:]
            changed = [c]
        elif kind == "drop" and c:
            order.remove(c)
            del store[c]
        elif kind == "new":
            store[f"n{fresh}"] = [f"n{fresh} line\n".encode()]
            order.append(f"n{fresh}")
            changed = [f"n{fresh}"]
        elif kind == "resort" and order:
            order = order[at % len(order):] + order[:at % len(order)]
        fresh += 1
        read()
        if kind != "resort":
            # a chat is made when it changed, or, lines before it having changed, it is behind
            # them (every line after the first new one loads again)
            first = min((order.index(x) for x in changed), default=len(order))
            assert grouped.made == sum(len(store[x]) for x in order[first:])
