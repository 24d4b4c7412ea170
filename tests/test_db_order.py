"""A database's rows merged in time (adapters/db_order.py): each session's row right after its
last message, ties to the table listed first, times of any kind compared without failing, and
groups cut so that a row that moves changes only the groups it left and joined."""
from __future__ import annotations

import sqlite3

from convarch.adapters import db_order
from convarch.adapters.base import Group, keyed_group


def lines_of(cols, rows):
    for values in rows:
        yield repr(dict(zip(cols, values))).encode()


def store(sessions, messages, usage=()) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute("create table session (id text, created integer)")
    con.execute("create table message (id text, session_id text, t integer)")
    con.execute("create table usage (session_id text, t integer)")
    con.executemany("insert into session values (?, ?)", sessions)
    con.executemany("insert into message values (?, ?, ?)", messages)
    con.executemany("insert into usage values (?, ?)", usage)
    return con


def merged(con, size=256, own_time="created"):
    group = keyed_group(lines_of, b"code")
    tables = [db_order.table(con.execute("select * from message order by t, id"), "t", group),
              db_order.table(con.execute("select * from usage order by t"), "t", group),
              db_order.owners(con.execute("select * from session order by created, id"), "id",
                              db_order.last_times(con, "message", "session_id", "t"), own_time, group)]
    return list(db_order.merged(tables, size))


def flat(groups) -> list[str]:
    return [line.decode() for g in groups for line in g.lines()]


def test_a_sessions_row_follows_its_last_message_and_ties_go_to_the_first_table():
    con = store(sessions=[("a", 1), ("b", 2), ("empty", 25), ("no-time", None)],
                messages=[("m1", "a", 10), ("m2", "b", 20), ("m3", "a", 30)],
                usage=[("a", 15), ("b", 20), ("a", 30)])
    ids = lambda groups: [r.get("id", "usage:" + r.get("session_id", "")) for r in map(eval, flat(groups))]
    # the last group of messages, not full (as here, in groups of 256), is where the store
    # grows: every row at its time, a table listed earlier first at the same time: b's row
    # after its last message, the session with no message at its own time, one with no time
    # at all last
    assert ids(merged(con)) == ["m1", "usage:a", "m2", "usage:b", "b", "empty", "m3", "usage:a", "a", "no-time"]
    # a full group's messages first, then the other tables' rows up to its last message's time
    assert ids(merged(con, size=2)) == ["m1", "m2", "usage:a", "usage:b", "b", "empty", "m3", "usage:a", "a", "no-time"]
    assert ids(merged(con, size=1)) == ["m1", "m2", "usage:a", "usage:b", "b", "m3", "usage:a", "empty", "a", "no-time"]
    # no comparable time of its own: each goes last, in the cursor's order (a null time first)
    assert ids(merged(con, own_time=None))[-2:] == ["no-time", "empty"]


def test_times_of_mixed_kinds_compare_without_failing():
    con = sqlite3.connect(":memory:")
    con.execute("create table message (id text, session_id text, t)")
    con.execute("create table usage (session_id text, t)")
    con.execute("create table session (id text, created)")
    con.executemany("insert into message values (?, ?, ?)",
                    [("m1", "a", None), ("m2", "a", 5), ("m3", "a", "2026-05-05 10:00:00"), ("m4", "a", b"\x01")])
    con.execute("insert into session values ('a', 'text')")
    got = [eval(x).get("id") for x in flat(merged(con))]
    # none, numbers, text, anything else (as SQLite orders them too: its max is the blob)
    assert got == ["m1", "m2", "m3", "m4", "a"]


def test_groups_end_at_every_size_th_message_and_hold_the_rows_between():
    con = store(sessions=[("a", 1), ("b", 2)],
                messages=[(f"m{i}", "ab"[i % 2], i) for i in range(10)],
                usage=[("a", i) for i in range(0, 10, 2)])
    groups = merged(con, size=4)
    assert all(isinstance(g, Group) for g in groups)
    sizes = [sum(1 for x in g.lines() if "'id': 'm" in x.decode()) for g in groups]
    assert sizes == [4, 4, 2]
    assert len(flat(groups)) == 10 + 5 + 2
    # a session taken up again: its row moves after the new message; the full groups keep
    # their keys, and the lines are those before, that row taken out, then the new message
    # and the row (the last group, not full, has each row at its time)
    before, lines = [g.key for g in groups], flat(groups)
    con.execute("insert into message values ('m10', 'a', 10)")
    again = merged(con, size=4)
    assert [g.key for g in again][:2] == before[:2] and again[2].key != before[2]
    row = repr({"id": "a", "created": 1})
    assert flat(again) == [x for x in lines if x != row] + [repr({"id": "m10", "session_id": "a", "t": 10}), row]
    con.execute("insert into message values ('m11', 'b', 1)")   # a message back in time: its group changes
    assert merged(con, size=4)[0].key != again[0].key


def test_a_group_holds_a_bounded_number_of_rows_when_the_first_table_is_empty():
    con = store(sessions=[(f"s{i}", i) for i in range(50)], messages=[])
    groups = merged(con, size=2)
    assert [sum(1 for _ in g.lines()) for g in groups] == [2 * db_order.MOST_ROWS] * 3 + [50 - 3 * 2 * db_order.MOST_ROWS]


def test_lines_made_at_once_are_keyed_by_their_bytes():
    con = store(sessions=[], messages=[("m1", "a", 1), ("m2", "a", 3)])
    group = keyed_group(lines_of, b"code")

    def groups(made):
        return list(db_order.merged([db_order.table(con.execute("select * from message order by t"), "t", group),
                                     db_order.lines(made)], size=1))

    first = groups([(2, b"line at 2"), (0, b"line at 0")])
    assert [[x[:9] for x in g.lines()] for g in first] == [[b"{'id': 'm", b"line at 0"], [b"{'id': 'm", b"line at 2"]]
    again = groups([(2, b"line at 2 changed"), (0, b"line at 0")])
    assert again[0].key == first[0].key and again[1].key != first[1].key


def test_a_sessions_last_time_is_its_last_rows_by_the_tables_order_when_asked():
    con = sqlite3.connect(":memory:")
    con.execute("create table messages (id integer primary key, session_id text, t integer)")
    con.execute("create index by_session on messages (session_id)")
    con.executemany("insert into messages (session_id, t) values (?, ?)", [("a", 5), ("b", 7), ("a", 3), (None, 9)])
    assert db_order.last_times(con, "messages", "session_id", "t") == {"a": 5, "b": 7}
    # the row written last (an import back in time): its time, found through the index
    assert db_order.last_times(con, "messages", "session_id", "t", by="id") == {"a": 3, "b": 7}
    plan = " ".join(r[-1] for r in con.execute(
        "explain query plan select session_id, max(id) from messages where session_id is not null group by session_id"))
    assert "COVERING INDEX" in plan
    assert db_order.last_times(con, "messages", "session_id", "no_such_column", by="id") == {}


def test_a_sessions_row_written_after_its_last_message_goes_at_that_time():
    """`touched`: an old session renamed moves to where the store grows; a touch before its
    last message, none, or one of another kind (text against numbers) leaves it in place."""
    con = sqlite3.connect(":memory:")
    con.execute("create table session (id text, created integer, updated)")
    con.execute("create table message (id text, session_id text, t integer)")
    con.executemany("insert into session values (?, ?, ?)",
                    [("renamed", 1, 99), ("early", 2, 5), ("never", 3, None), ("text", 4, "2030-01-01"),
                     ("empty", 50, 60), ("converted", 6, "99")])
    con.executemany("insert into message values (?, ?, ?)",
                    [("m1", "renamed", 10), ("m2", "early", 20), ("m3", "never", 30), ("m4", "text", 40),
                     ("m5", "converted", 45), ("m6", "early", 70)])

    def ids(as_time=None):
        group = keyed_group(lines_of, b"code")
        tables = [db_order.table(con.execute("select * from message order by t, id"), "t", group),
                  db_order.owners(con.execute("select * from session order by created, id"), "id",
                                  db_order.last_times(con, "message", "session_id", "t"), "created", group,
                                  touched="updated", as_time=as_time)]
        return [eval(x)["id"] for x in flat(db_order.merged(tables, 256))]

    assert ids() == ["m1", "m2", "m3", "never", "m4", "text", "m5", "converted", "empty", "m6", "early", "renamed"]
    # a converter makes a value of another kind a time: "99" read as 99
    assert ids(lambda v: int(v) if isinstance(v, str) and v.isdigit() else v)[-2:] == ["renamed", "converted"]
