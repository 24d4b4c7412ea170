"""Claude Code conversation chains rebuilt in SQL the way Claude Code rebuilds them on resume
(research/claude-chain.md §3): branches, chain_messages, resume_messages, session_state and
chain_issues, checked on small hand-written transcripts (one session file per case, all
ingested into one warehouse), on random transcripts against a reference walk written in Python,
and on the peer samples."""
from __future__ import annotations

import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import convarch
from conftest import PEER
from convarch import adapters, sql
from convarch.adapters import claude_code
from convarch.etl import chains
from convarch.etl.duck import connect
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from test_lines_stand_alone import store_lines

SLUG = "-home-user-demo"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


# --- record builders ------------------------------------------------------------------------

def ts(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def entry(kind: str, uuid: str, parent: str | None, t: float | str, **extra) -> dict:
    return {
        "parentUuid": parent, "isSidechain": False, "type": kind, "uuid": uuid,
        "timestamp": t if isinstance(t, str) else ts(t),
        "cwd": "/home/user/demo", "version": "2.1.80", **extra,
    }


def user(uuid: str, parent: str | None, t, text: str = "please go on", **extra) -> dict:
    return entry("user", uuid, parent, t, message={"role": "user", "content": text}, **extra)


def assistant(uuid: str, parent: str | None, t, *blocks: dict, msg: str | None = None, **extra) -> dict:
    blocks = blocks or (text(f"reply {uuid}"),)
    return entry(
        "assistant", uuid, parent, t, requestId=f"req_{msg or uuid}",
        message={"id": msg or f"msg_{uuid}", "role": "assistant", "model": "claude-sonnet-4-5",
                 "content": list(blocks), "stop_reason": None,
                 "usage": {"input_tokens": 10, "output_tokens": 5,
                           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100}},
        **extra,
    )


def tool_result(uuid: str, parent: str, t, call_id: str, **extra) -> dict:
    return entry(
        "user", uuid, parent, t, sourceToolAssistantUUID=parent, toolUseResult={"stdout": "ok"},
        message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "ok"}]},
        **extra,
    )


def system(uuid: str, parent: str | None, t, subtype: str = "informational", **extra) -> dict:
    return entry("system", uuid, parent, t, subtype=subtype, content=subtype, level="info", **extra)


def boundary(uuid: str, logical_parent: str, t, segment: dict | None = None) -> dict:
    meta = {"trigger": "auto", "preTokens": 150000}
    if segment:
        meta["preservedSegment"] = segment
    return system(uuid, None, t, "compact_boundary", logicalParentUuid=logical_parent, compactMetadata=meta)


def compact_summary(uuid: str, parent: str, t) -> dict:
    return user(uuid, parent, t, "This session is being continued from a previous conversation.",
                isCompactSummary=True, isVisibleInTranscriptOnly=True)


def progress(uuid: str, parent: str | None, t) -> dict:
    return {"type": "progress", "uuid": uuid, "parentUuid": parent, "timestamp": ts(t),
            "data": {"type": "bash_progress", "output": "..."}, "toolUseID": "toolu_p", "parentToolUseID": "toolu_p"}


def text(s: str) -> dict:
    return {"type": "text", "text": s}


def tool_use(call_id: str, name: str = "Bash") -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"command": "ls"}}


def thinking() -> dict:
    return {"type": "thinking", "thinking": "Let me think.", "signature": "c2ln"}


def summary(leaf: str, title: str) -> dict:
    return {"type": "summary", "summary": title, "leafUuid": leaf}


def write_session(path: Path, records: list, tail: str = "") -> None:
    """One transcript; dict records get the file's session id, strings are written verbatim."""
    path.parent.mkdir(parents=True, exist_ok=True)
    session = path.stem if path.parent.name != "subagents" else path.parent.parent.name
    lines = [r if isinstance(r, str) else json.dumps({**r, "sessionId": r.get("sessionId", session)}) for r in records]
    path.write_text("".join(line + "\n" for line in lines) + tail)


# --- the cases ------------------------------------------------------------------------------

SCENARIOS: dict[str, list] = {
    "straight": [
        user("s1", None, 0), assistant("s2", "s1", 1), user("s3", "s2", 2), assistant("s4", "s3", 3),
    ],
    # a progress run sits between a tool call and the next message; the tool result is an
    # off-chain child of the assistant (the legacy "progress fork") and is recovered
    "progress": [
        user("p_u1", None, 0),
        assistant("p_a1", "p_u1", 1, tool_use("toolu_p1"), msg="msg_p1"),
        progress("pg1", "p_a1", 1.1),
        progress("pg2", "pg1", 1.2),
        tool_result("p_r1", "p_a1", 2, "toolu_p1"),
        assistant("p_a2", "pg2", 3),
    ],
    # a bridge only applies to a progress entry seen earlier in the file
    "progress-late": [
        user("pl1", None, 0), assistant("pl2", "pl1", 1),
        user("plx", "pgL", 2),
        progress("pgL", "pl2", 2.5),
        user("ply", "pgL", 3),
    ],
    "compact": [
        user("b1", None, 0), assistant("b2", "b1", 1), user("b3", "b2", 2), assistant("b4", "b3", 3),
        boundary("b5", "b4", 4), compact_summary("b6", "b5", 4.1),
        user("b7", "b6", 5), assistant("b8", "b7", 6),
        boundary("b9", "b8", 7), compact_summary("b10", "b9", 7.1),
        user("b11", "b10", 8), assistant("b12", "b11", 9),
    ],
    # suffix-preserving compaction: c5..c6 are kept and spliced behind the summary c8
    "preserved": [
        user("c1", None, 0), assistant("c2", "c1", 1), user("c3", "c2", 2), assistant("c4", "c3", 3),
        user("c5", "c4", 4), assistant("c6", "c5", 5),
        boundary("c7", "c6", 6, {"headUuid": "c5", "anchorUuid": "c8", "tailUuid": "c6"}),
        compact_summary("c8", "c7", 6.1),
        user("c9", "c8", 7), assistant("c10", "c9", 8),
    ],
    # the tail -> head walk never reaches the head: no relink and no prune
    "preserved-broken": [
        user("pb1", None, 0), assistant("pb2", "pb1", 1), user("pb5", "pb2", 4), assistant("pb6", "pb5", 5),
        boundary("pb7", "pb6", 6, {"headUuid": "pb-elsewhere", "anchorUuid": "pb8", "tailUuid": "pb6"}),
        compact_summary("pb8", "pb7", 6.1),
        user("pb9", "pb8", 7), assistant("pb10", "pb9", 8),
    ],
    # a later plain boundary makes the segment stale: no relink, everything before it pruned
    "preserved-stale": [
        user("st1", None, 0), assistant("st2", "st1", 1),
        boundary("st3", "st2", 2, {"headUuid": "st1", "anchorUuid": "st4", "tailUuid": "st2"}),
        compact_summary("st4", "st3", 2.1), user("st5", "st4", 3), assistant("st6", "st5", 4),
        boundary("st7", "st6", 5), compact_summary("st8", "st7", 5.1),
        user("st9", "st8", 6), assistant("st10", "st9", 7),
    ],
    "snip": [
        user("d0", "ghost", -1, "orphan pointing at a snipped unknown uuid"),
        user("d1", None, 0), assistant("d2", "d1", 1), user("d3", "d2", 2), assistant("d4", "d3", 3),
        user("d5", "d4", 4), assistant("d6", "d5", 5),
        system("d7", "d6", 6, "snip_boundary", snipMetadata={"removedUuids": ["d3", "d4", "ghost"]}),
        user("d8", "d7", 7),
    ],
    # three parallel tool calls streamed as three entries of one API message; the walk follows
    # only the first result
    "parallel": [
        user("q1", None, 0),
        assistant("q2", "q1", 1, tool_use("toolu_q1"), msg="msg_q"),
        assistant("q3", "q2", 1.1, tool_use("toolu_q2"), msg="msg_q"),
        assistant("q4", "q3", 1.2, tool_use("toolu_q3"), msg="msg_q"),
        tool_result("q5", "q2", 2.0, "toolu_q1"),
        tool_result("q6", "q3", 2.3, "toolu_q2"),
        tool_result("q7", "q4", 2.2, "toolu_q3"),
        assistant("q8", "q5", 3, msg="msg_q8"),
    ],
    "rewind": [
        summary("e4", "First attempt"),
        summary("e6", "Second attempt (draft)"),
        user("e1", None, 0), assistant("e2", "e1", 1), user("e3", "e2", 2), assistant("e4", "e3", 3),
        user("e5", "e2", 4), assistant("e6", "e5", 5),
        summary("e6", "Second attempt"),
    ],
    # timestamp tie -> earliest map position; unparsable timestamp and inline sidechain never win
    "leaf-rules": [
        user("l1", None, 0), assistant("l2", "l1", 5), assistant("l3", "l1", 5),
        assistant("l4", "l1", "not a time"),
        user("l5", None, 99, isSidechain=True, agentId="inline"),
    ],
    "sidechain": [
        user("g1", None, 0), assistant("g2", "g1", 1, tool_use("toolu_task", "Task"), msg="msg_g2"),
        tool_result("g3", "g2", 10, "toolu_task"), assistant("g4", "g3", 11),
    ],
    "fork-origin": [user("h1", None, 0), assistant("h2", "h1", 1), user("h3", "h2", 2)],
    "fork-copy": [
        summary("h3", "Copied history"),
        {**user("h1", None, 0), "sessionId": "fork-origin"},
        {**assistant("h2", "h1", 1), "sessionId": "fork-origin"},
        {**user("h3", "h2", 2), "sessionId": "fork-origin"},
        assistant("k1", "h3", 3), user("k2", "k1", 4),
    ],
    # x2 is re-emitted later with a new parent (last value wins, first position kept): x2 -> x4
    # -> x3 -> x2 is a cycle; x6 is its own parent
    "cycle": [
        user("x1", None, 0), assistant("x2", "x1", 1), user("x3", "x2", 2), assistant("x4", "x3", 3),
        user("x5", "x4", 4), system("x6", "x6", 0.5),
        assistant("x2", "x4", 1),
    ],
    "missing": [
        user("y1", None, 0), assistant("y2", "y1", 1), user("y3", "gone", 2), assistant("y4", "y3", 3),
    ],
    "truncated": [
        user("z1", None, 0), assistant("z2", "z1", 1), "{not json", user("z3", "z2", 2),
    ],
    "filters": [
        user("j1", None, 0),
        assistant("j2", "j1", 1, thinking(), msg="msg_jA"),
        assistant("j3", "j2", 1.1, text("Let me check."), msg="msg_jA"),
        assistant("j4", "j3", 1.2, tool_use("toolu_j1", "Read"), msg="msg_jA"),
        tool_result("j5", "j4", 2, "toolu_j1"),
        assistant("j6", "j5", 3, thinking(), msg="msg_jB"),
        assistant("j7", "j6", 4, tool_use("toolu_j2"), msg="msg_jC"),
        assistant("j8", "j7", 5, text("  \n "), msg="msg_jD"),
        assistant("j9", "j8", 6, text("API Error: overloaded"), msg="msg_jE", isApiErrorMessage=True),
    ],
    "brief-tool": [
        user("m1", None, 0), assistant("m2", "m1", 1, tool_use("toolu_m", "SendUserMessage")),
        tool_result("m3", "m2", 2, "toolu_m"),
    ],
    "attachment-last": [
        user("n1", None, 0), assistant("n2", "n1", 1),
        entry("attachment", "n3", "n2", 2, attachment={"type": "hook_success", "content": ""}),
        assistant("n4", "n3", 3, text("API Error: 500"), isApiErrorMessage=True),
    ],
}

TRUNCATED_TAIL = '{"parentUuid":"z3","type":"assistant","uuid":"z4","message":{"role":"assis'

SUBAGENT = [
    user("sg1", None, 2, "Find the config file", isSidechain=True, agentId="abc"),
    assistant("sg2", "sg1", 3, isSidechain=True, agentId="abc"),
    user("sg3", "sg2", 4, isSidechain=True, agentId="abc"),
    assistant("sg4", "sg3", 5, isSidechain=True, agentId="abc"),
]


def build_store(root: Path) -> Path:
    project = root / "projects" / SLUG
    for name, records in SCENARIOS.items():
        write_session(project / f"{name}.jsonl", records, TRUNCATED_TAIL if name == "truncated" else "")
    write_session(project / "sidechain" / "subagents" / "agent-abc.jsonl", SUBAGENT)
    return root


class Warehouse:
    """Every row of the chain views, read once and grouped by session."""

    def __init__(self, con):
        self.con = con
        self.views = {
            view: self._grouped(view, order)
            for view, order in (
                ("chain_messages", "seq"), ("resume_messages", "seq"), ("branches", "leaf_node"),
                ("session_state", "session_id"), ("chain_issues", "issue, message_id"),
            )
        }

    def _grouped(self, view: str, order: str) -> dict[str, list[dict]]:
        cur = self.con.execute(f"select * from {view} order by session_id, {order}")
        cols = [d[0] for d in cur.description]
        out: dict[str, list[dict]] = {}
        for row in cur.fetchall():
            rec = dict(zip(cols, row))
            out.setdefault(rec["session_id"], []).append(rec)
        return out

    def rows(self, view: str, session: str) -> list[dict]:
        return self.views[view].get(session, [])


def open_warehouse(db: Path):
    connection = convarch.connect(db)
    # the intermediate layers are not published (ingest materializes the chains); rebuild them
    # as temporary views so the tests can look inside
    from convarch import sql

    for name in sql.VIEWS:
        if sql.view_name(name).startswith("int_chain_"):
            connection.execute(f"create temp view {sql.view_name(name)} as {sql.read(name)}")
    try:
        return Warehouse(connection)
    except BaseException:
        connection.close()
        raise


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    root = build_store(tmp_path_factory.mktemp("store"))
    db = tmp_path_factory.mktemp("warehouse") / "w.duckdb"
    ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))])
    warehouse = open_warehouse(db)
    yield warehouse
    warehouse.con.close()


def chain(wh: Warehouse, session: str, column: str = "message_id") -> list:
    return [r[column] for r in wh.rows("chain_messages", session)]


def resumed(wh: Warehouse, session: str, column: str = "message_id") -> list:
    return [r[column] for r in wh.rows("resume_messages", session)]


def leaves(wh: Warehouse, session: str) -> dict[str, tuple]:
    return {r["leaf_id"]: (r["is_default"], r["summary"], r["length"]) for r in wh.rows("branches", session)}


def state(wh: Warehouse, session: str) -> str:
    (row,) = wh.rows("session_state", session)
    return row["interruption"]


def issues(wh: Warehouse, session: str) -> set[tuple]:
    return {(r["issue"], r["message_id"], r["detail"]) for r in wh.rows("chain_issues", session)}


# --- scenario tests -------------------------------------------------------------------------

def test_straight_chain(wh):
    assert chain(wh, "straight") == ["s1", "s2", "s3", "s4"]
    assert resumed(wh, "straight") == ["s1", "s2", "s3", "s4"]
    assert leaves(wh, "straight") == {"s4": (True, None, 4)}
    assert state(wh, "straight") == "none"
    assert issues(wh, "straight") == set()


def test_progress_is_bridged_and_its_fork_recovered(wh):
    assert chain(wh, "progress") == ["p_u1", "p_a1", "p_r1", "p_a2"]
    assert resumed(wh, "progress") == ["p_u1", "p_a1", "p_r1", "p_a2"]
    assert [r["message_id"] for r in wh.rows("chain_messages", "progress") if r["is_recovered"]] == ["p_r1"]
    # progress entries are never messages of the chain
    assert "pg1" not in chain(wh, "progress")


def test_progress_bridge_needs_the_progress_seen_earlier(wh):
    assert chain(wh, "progress-late") == ["pl1", "pl2", "ply"]
    assert set(leaves(wh, "progress-late")) == {"plx", "ply"}
    assert ("missing_parent", "plx", "pgL") in issues(wh, "progress-late")


def test_compact_boundary(wh):
    assert chain(wh, "compact") == [f"b{i}" for i in range(1, 13)]
    assert resumed(wh, "compact") == ["b9", "b10", "b11", "b12"]
    assert chain(wh, "compact", "compaction_index") == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    # plain boundaries prune nothing: the pre-compaction ends stay leaves
    assert leaves(wh, "compact") == {"b4": (False, None, 4), "b8": (False, None, 4), "b12": (True, None, 4)}
    # a boundary's null parent is not a missing parent
    assert issues(wh, "compact") == set()


def test_preserved_segment_is_relinked_behind_the_summary(wh):
    assert resumed(wh, "preserved") == ["c7", "c8", "c5", "c6", "c9", "c10"]
    assert chain(wh, "preserved") == [f"c{i}" for i in range(1, 11)]
    assert leaves(wh, "preserved") == {"c10": (True, None, 6)}
    # Claude Code zeroes the usage of the preserved assistant entries
    tokens = {r["message_id"]: r["output_tokens"] for r in wh.rows("resume_messages", "preserved") if r["role"] == "assistant"}
    assert tokens == {"c6": 0, "c10": 5}


def test_broken_preserved_segment_loads_without_relink_or_prune(wh):
    assert resumed(wh, "preserved-broken") == ["pb7", "pb8", "pb9", "pb10"]
    assert set(leaves(wh, "preserved-broken")) == {"pb6", "pb10"}
    assert ("broken_segment", "pb7", None) in issues(wh, "preserved-broken")


def test_stale_preserved_segment_prunes_before_the_last_boundary(wh):
    assert resumed(wh, "preserved-stale") == ["st7", "st8", "st9", "st10"]
    assert chain(wh, "preserved-stale") == [f"st{i}" for i in range(1, 11)]
    assert set(leaves(wh, "preserved-stale")) == {"st10"}


def test_snip_removes_and_relinks(wh):
    assert resumed(wh, "snip") == ["d1", "d2", "d5", "d6", "d7", "d8"]
    assert chain(wh, "snip") == ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"]
    assert [r["message_id"] for r in wh.rows("chain_messages", "snip") if r["is_snipped"]] == ["d3", "d4"]
    # a survivor whose parent was named by the snip but never existed becomes a root
    relinked = wh.con.execute(
        "select resume_parent_id, parent_id from int_chain_relinked "
        "where session_id = 'snip' and message_id = 'd0'").fetchall()
    assert relinked == [(None, "ghost")]
    assert state(wh, "snip") == "interrupted_prompt"


def test_parallel_tool_results_are_recovered_after_their_assistant(wh):
    expected = ["q1", "q2", "q3", "q4", "q7", "q6", "q5", "q8"]
    assert chain(wh, "parallel") == expected
    assert resumed(wh, "parallel") == expected
    assert [r["message_id"] for r in wh.rows("chain_messages", "parallel") if r["is_recovered"]] == ["q3", "q4", "q7", "q6"]
    assert set(leaves(wh, "parallel")) == {"q6", "q7", "q8"}
    assert leaves(wh, "parallel")["q8"][0] is True


def test_rewind_gives_two_branches_with_summaries(wh):
    assert leaves(wh, "rewind") == {
        "e4": (False, "First attempt", 4),
        "e6": (True, "Second attempt", 4),
    }
    assert chain(wh, "rewind") == ["e1", "e2", "e5", "e6"]


def test_leaf_choice_rules(wh):
    branches = leaves(wh, "leaf-rules")
    assert {leaf for leaf, (is_default, *_r) in branches.items() if is_default} == {"l2"}
    assert set(branches) == {"l2", "l3", "l4", "l5"}
    assert chain(wh, "leaf-rules") == ["l1", "l2"]


def test_subagent_file_is_its_own_session(wh):
    assert chain(wh, "sidechain") == ["g1", "g2", "g3", "g4"]
    assert chain(wh, "sidechain/agent-abc") == ["sg1", "sg2", "sg3", "sg4"]
    assert resumed(wh, "sidechain/agent-abc") == ["sg1", "sg2", "sg3", "sg4"]


def test_copied_history_belongs_to_each_file(wh):
    assert chain(wh, "fork-origin") == ["h1", "h2", "h3"]
    assert chain(wh, "fork-copy") == ["h1", "h2", "h3", "k1", "k2"]
    assert leaves(wh, "fork-origin") == {"h3": (True, None, 3)}
    assert state(wh, "fork-origin") == "interrupted_prompt"


def test_parent_cycle_terminates_and_is_reported(wh):
    assert chain(wh, "cycle") == ["x2", "x3", "x4", "x5"]
    assert resumed(wh, "cycle") == ["x2", "x3", "x4", "x5"]
    assert {i[1] for i in issues(wh, "cycle") if i[0] == "cycle"} == {"x2", "x3", "x4", "x6"}
    # cycle members are never leaves; the duplicate x2 kept its first position but took the
    # value of its last line
    assert leaves(wh, "cycle") == {"x1": (False, None, 1), "x5": (True, None, 4)}


def test_missing_parent_ends_the_chain_and_is_reported(wh):
    assert chain(wh, "missing") == ["y3", "y4"]
    assert issues(wh, "missing") == {("missing_parent", "y3", "gone")}


def test_truncated_last_line_leaves_the_chain_intact(wh):
    assert chain(wh, "truncated") == ["z1", "z2", "z3"]
    assert state(wh, "truncated") == "interrupted_prompt"
    reasons = {r[0] for r in wh.con.execute(
        "select reason from quarantine where source_file like '%/truncated.jsonl'").fetchall()}
    assert reasons == {"invalid_json", "truncated_tail"}


def test_resume_filters_and_interruption(wh):
    assert chain(wh, "filters") == [f"j{i}" for i in range(1, 10)]
    # j6 thinking only, j7 unresolved tool_use only, j8 blank text; j2 is thinking only but
    # its API message has text elsewhere
    assert resumed(wh, "filters") == ["j1", "j2", "j3", "j4", "j5", "j9"]
    (row,) = wh.rows("session_state", "filters")
    assert (row["interruption"], row["appends_continue_prompt"], row["appends_no_response_sentinel"],
            row["last_message_id"]) == ("interrupted_turn", True, True, "j5")
    assert ("unresolved_tool_use", "j7", "toolu_j2") in issues(wh, "filters")


def test_interruption_kinds(wh):
    assert state(wh, "brief-tool") == "none"
    assert state(wh, "attachment-last") == "interrupted_turn"
    assert state(wh, "compact") == "none"


def test_every_chain_is_numbered_one_to_n(wh):
    for view in ("chain_messages", "resume_messages"):
        for session, rows in wh.views[view].items():
            assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1)), (view, session)
            assert len({r["message_id"] for r in rows}) == len(rows), (view, session)
    for session, rows in wh.views["branches"].items():
        assert sum(r["is_default"] for r in rows) <= 1, session
        assert (sum(r["is_default"] for r in rows) == 1) == bool(wh.rows("chain_messages", session)), session


# --- random transcripts against a reference walk ---------------------------------------------


def reference_chain(records: list[dict]) -> list[str]:
    """claude-chain.md §3.2, §3.5 and §3.6 in plain Python: Map semantics with progress bridged,
    leaves, the newest non-sidechain leaf (tie: first in map order), then the parent walk."""
    bridge: dict[str, str | None] = {}
    nodes: dict[str, dict] = {}
    for r in records:
        parent = r["parentUuid"]
        if r["type"] == "progress":
            bridge[r["uuid"]] = bridge[parent] if parent in bridge else parent
            continue
        if parent in bridge:
            parent = bridge[parent]
        nodes[r["uuid"]] = {**r, "parentUuid": parent}
    named = {n["parentUuid"] for n in nodes.values() if n["parentUuid"]}
    found: set[str] = set()
    for uuid in nodes:
        if uuid in named:
            continue
        seen: set[str] = set()
        cur = nodes.get(uuid)
        while cur and cur["uuid"] not in seen:
            seen.add(cur["uuid"])
            if cur["type"] in ("user", "assistant"):
                found.add(cur["uuid"])
                break
            cur = nodes.get(cur["parentUuid"]) if cur["parentUuid"] else None
    best, best_ms = None, None
    for uuid, n in nodes.items():
        if uuid not in found or n.get("isSidechain"):
            continue
        try:
            ms = (datetime.fromisoformat(n["timestamp"]) - T0) // timedelta(milliseconds=1)
        except ValueError:
            continue
        if best_ms is None or ms > best_ms:
            best, best_ms = uuid, ms
    out: list[str] = []
    seen = set()
    cur = nodes.get(best) if best else None
    while cur and cur["uuid"] not in seen:
        seen.add(cur["uuid"])
        out.append(cur["uuid"])
        cur = nodes.get(cur["parentUuid"]) if cur["parentUuid"] else None
    return out[::-1]


@st.composite
def transcripts(draw) -> list[dict]:
    """Append-only sessions: replies, rewinds to an earlier entry, progress runs, system and
    attachment entries, dangling parents, re-emitted uuids (which may close cycles), tied and
    unparsable timestamps."""
    records: list[dict] = []
    uuids: list[str] = []
    cursor: str | None = None
    for i in range(draw(st.integers(1, 24))):
        action = draw(st.sampled_from(
            ["reply"] * 6 + ["rewind", "progress", "system", "attachment", "dangling", "duplicate"]))
        second = draw(st.integers(0, 6))
        stamp = ts(second) if draw(st.integers(0, 15)) else "garbage"
        if action == "rewind" and uuids:
            cursor = draw(st.sampled_from(uuids + [None]))
            action = "reply"
        if action == "progress":
            records.append(progress(f"p{i}", cursor, second))
            cursor = f"p{i}"
            uuids.append(cursor)
            continue
        if action == "duplicate" and records:
            original = draw(st.sampled_from([r for r in records if r["type"] != "progress"] or [None]))
            if original is not None:
                parent = draw(st.sampled_from(uuids + [original["parentUuid"]]))
                records.append({**original, "parentUuid": parent, "timestamp": stamp})
                continue
        parent = f"missing-{i}" if action == "dangling" else cursor
        uuid = f"m{i}"
        if action in ("system", "attachment"):
            rec = system(uuid, parent, stamp) if action == "system" else entry(
                "attachment", uuid, parent, stamp, attachment={"type": "hook_success"})
        elif draw(st.booleans()):
            rec = user(uuid, parent, stamp, f"prompt {i}")
        else:
            rec = assistant(uuid, parent, stamp, text(f"answer {i}"))
        records.append(rec)
        uuids.append(uuid)
        cursor = uuid
    return records


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.data_too_large])
@given(st.lists(transcripts(), min_size=20, max_size=40))
def test_random_transcripts_match_the_reference_walk(sessions):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        for k, records in enumerate(sessions):
            write_session(root / "projects" / SLUG / f"rand-{k:03d}.jsonl", records)
        db = Path(tmp) / "w.duckdb"
        ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))])
        con = convarch.connect(db)
        try:
            got_chain = _ids_by_session(con, "chain_messages")
            got_resume = _ids_by_session(con, "resume_messages")
            default_lengths = dict(con.execute("select session_id, length from branches where is_default").fetchall())
            cycles: dict[str, set] = {}
            for session, message in con.execute(
                    "select session_id, message_id from chain_issues where issue = 'cycle'").fetchall():
                cycles.setdefault(session, set()).add(message)
        finally:
            con.close()
    for k, records in enumerate(sessions):
        expected = reference_chain(records)
        assert got_chain.get(f"rand-{k:03d}", []) == expected, records
        # no boundary, tool call or blank reply: resume reloads exactly the same chain
        assert got_resume.get(f"rand-{k:03d}", []) == expected, records
        # the default branch counts the messages up from its leaf, as far as a first repeat
        assert default_lengths.get(f"rand-{k:03d}") == (len(expected) or None), records
        assert cycles.get(f"rand-{k:03d}", set()) == reference_cycle_members(records), records


def reference_cycle_members(records: list[dict]) -> set[str]:
    """The messages on a parent cycle, progress bridged as in reference_chain."""
    bridge: dict[str, str | None] = {}
    parents: dict[str, str | None] = {}
    for r in records:
        parent = r["parentUuid"]
        if r["type"] == "progress":
            bridge[r["uuid"]] = bridge[parent] if parent in bridge else parent
            continue
        parents[r["uuid"]] = bridge[parent] if parent in bridge else parent
    members = set()
    for start in parents:
        cur, seen = parents.get(start), set()
        while cur in parents and cur not in seen and cur != start:
            seen.add(cur)
            cur = parents[cur]
        if cur == start:
            members.add(start)
    return members


def _ids_by_session(con, view: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for session, message in con.execute(f"select session_id, message_id from {view} order by session_id, seq").fetchall():
        out.setdefault(session, []).append(message)
    return out


# --- peer samples ---------------------------------------------------------------------------

PORTABLE = PEER / "portable-resume" / "claude"
PEER_ROOTS = [
    PEER / "daaain__claude-code-log" / "test" / "test_data",
    PEER / "jazzyalex__agent-sessions" / "Resources" / "Fixtures" / "stage0" / "agents" / "claude",
    PEER / "xmartlabs__gnomon" / "tests" / "fixtures" / "claude",
    *sorted(case / "root" for case in PORTABLE.glob("s-cla-*")),
]


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    if not PEER.is_dir():
        pytest.skip("shared/peer-fixtures is not beside this checkout")
    db = tmp_path_factory.mktemp("peer") / "w.duckdb"
    ingest(Layout(db), [(claude_code, claude_code.resolve_root(r)) for r in PEER_ROOTS])
    warehouse = open_warehouse(db)
    yield warehouse
    warehouse.con.close()


def test_peer_samples_build_sensible_chains(peer):
    # every session that has a user/assistant entry with a uuid and a parsable timestamp gets a chain
    without = peer.con.execute("""
        select distinct session_id from stg_records
        where source = 'claude_code' and record_type in ('user', 'assistant')
            and message_id is not null and "timestamp" is not null
            and not is_sidechain
        except
        select session_id from chain_messages
    """).fetchall()
    assert without == []
    assert sum(len(rows) for rows in peer.views["resume_messages"].values()) > 0
    assert sum(len(rows) for rows in peer.views["session_state"].values()) > 0
    # gnomon's sample has no uuids at all: no conversation to rebuild
    assert chain(peer, "session-claude") == []


def test_peer_samples_exact_chains(peer):
    def first_ids(session: str) -> list[str]:
        return [m[:8] for m in chain(peer, session)]

    # portable-resume: an ordinary chain, a fork with tied timestamps (the first in file order
    # wins), a boundary written with a parent, a dangling parent, a half-written last line
    assert first_ids("7e0a1246-d538-5993-8d6f-3495aafcdd92") == ["93efcefc", "b13ddf02"]
    assert first_ids("df341ecc-17d4-5a90-80c4-67c5d0a7f88f") == ["ed89b63f", "fe9194d3"]
    assert first_ids("fbd73656-cc48-5729-b0c6-35ff13089dc2") == ["32488d31", "e8af3ac0", "9670ec27", "2c648237", "ae9c2166"]
    assert first_ids("450c468a-a11a-5473-8917-f9c0908e0a90") == ["63837bfe"]
    assert ("missing_parent",) in {
        r[:1] for r in issues(peer, "450c468a-a11a-5473-8917-f9c0908e0a90")}
    assert first_ids("26639f09-fe64-5104-9200-a1f439d5e249") == ["144e30b9", "ce24cfd5"]
    # the last assistant's Bash call never got a result: Claude Code drops it on resume and
    # finds the turn interrupted
    tool_session = "8a3fcf79-ff1d-56c2-a213-4e8ef612b42a"
    assert first_ids(tool_session) == ["c195ad25", "83222b54", "ba94e954", "70888ba0"]
    assert [m[:8] for m in resumed(peer, tool_session)] == ["c195ad25", "83222b54", "ba94e954"]
    assert state(peer, tool_session) == "interrupted_turn"
    # claude-code-log: every entry of representative_messages is a root, so each is a leaf and
    # the newest is resumed alone, with the summary written for it
    branches = leaves(peer, "representative_messages")
    assert len(branches) == 11
    assert branches["msg_011"][0] is True
    assert branches["msg_011"][1].startswith("User learned about Python decorators")
    assert chain(peer, "representative_messages") == ["msg_011"]
    assert chain(peer, "todowrite_examples") == [
        "user_001", "assistant_001", "assistant_002", "user_002", "assistant_003", "assistant_004",
        "user_003", "user_004", "assistant_005", "assistant_006", "user_005",
    ]
    # jazzyalex stage0: a session whose newest branch ends after a nested tool call, and a
    # subagent file rebuilt on its own
    assert chain(peer, "small") == ["sys1", "u1", "a-nested-1", "u-nested-1"]
    (sub,) = [s for s in peer.views["branches"] if s.startswith("0a1b2c3d-") and "/agent-" in s]
    assert chain(peer, sub) == ["cu1", "ca1", "cu2"]


@pytest.mark.parametrize("name", sorted(adapters.ADAPTERS))
def test_only_the_chain_sources_have_chains(name, tmp_path):
    """Ingest computes chains for the files of CHAIN_SOURCES only; every other adapter's
    contract store, run through the chain views, gives no row of any of them."""
    lines, files = store_lines(name, tmp_path)
    ext = adapters.ADAPTERS[name].EXTRACT
    con = connect(threads=1)
    con.register("batch_files", files)
    con.register("lines", lines)
    con.execute(f"create temp table records_batch as {sql.read(ext.records)}")
    con.execute(sql.read("extract/fill_month"))
    con.execute(f"create temp table blocks_batch as {sql.read(ext.blocks)}")
    con.execute(f"create temp table stg_records as select * exclude (metadata_raw) from ({sql.read('extract/stored_records')})")
    con.execute("create temp table stg_blocks as select * from blocks_batch")
    chains.build_chain_tables(con)
    counts = {v: con.execute(f"select count(*) from {v}").fetchone()[0] for v in chains.MATERIALIZED}
    if name in chains.CHAIN_SOURCES:
        assert counts["chain_messages"] > 0 and counts["session_state"] > 0
    else:
        assert not any(counts.values()), counts
