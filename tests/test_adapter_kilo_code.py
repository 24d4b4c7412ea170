"""Kilo Code: the CLI database kilo.db (OpenCode's schema, read by OpenCode's own reader) and
the Roo-based extension's task folders ingest completely; a database that is not SQLite, a row
whose JSON does not parse and a write still in the -wal are handled as etl promises.

No public sample exists; the stores are written from the evidence in adapters/kilo_code.py
(fixtures/kilo_code/build_contract.py). One module-wide ingest keeps the suite fast."""
from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from conftest import REPO, contract_builder, tree_fingerprint
from convarch import sql
from convarch.adapters import kilo_code
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from helpers import rows, sample_counts, scalar

CONTRACT = REPO / "fixtures" / "kilo_code" / "contract"
EXTENSION = REPO / "fixtures" / "kilo_code" / "extension"
EXT = "kilocode.kilo-code"

build = contract_builder("kilo_code")
MAIN, CHILD, TASK = build.MAIN, build.CHILD, build.TASK


# Counts read off the stores by hand: kilo.db records = session rows + message rows + part
# rows whose message is missing + session_message rows; messages = message rows; tool calls
# = parts of type "tool". Task folders as in tests/test_adapter_roo_code.py.
SAMPLES = {
    # 2 sessions, 8 messages (5 tool parts), 1 orphan part, 1 session_message row
    "contract": dict(files=1, sessions=2, records=12, messages=8, tool_calls=5, quarantined=0),
    # 4 API messages (1 call) + 5 UI messages + 1 history item + 1 file entry
    "extension": dict(files=4, sessions=1, records=11, messages=4, tool_calls=1, quarantined=0),
    # a "kilo.db" that is not SQLite: quarantined once as unreadable
    "not_sqlite": dict(files=1, sessions=0, records=0, messages=0, tool_calls=0, quarantined=1),
    # the contract database with one message whose data is not JSON: that row is quarantined,
    # its two parts load as orphan part rows (its tool call with them), the rest as usual
    "malformed": dict(files=1, sessions=2, records=12 - 1 + 2, messages=7, tool_calls=5, quarantined=1),
    # a database in WAL mode whose last message is still only in the -wal
    "wal": dict(files=1, sessions=2, records=13, messages=9, tool_calls=5, quarantined=0),
}


def variant_db(path: Path, suffix: str) -> sqlite3.Connection:
    """The contract database under other session ids, so its rows never merge with the
    contract's in one warehouse."""
    con = sqlite3.connect(build.write_db(path))
    con.execute("update session set id = id || ?, parent_id = parent_id || ?", (suffix, suffix))
    for table in ("message", "part", "session_message"):
        con.execute(f"update {table} set session_id = session_id || ?", (suffix,))
    con.commit()
    return con


def write_variants(base: Path) -> dict[str, Path]:
    (base / "not_sqlite").mkdir()
    (base / "not_sqlite" / "kilo.db").write_bytes(b"this is not a database\n" * 40)
    con = variant_db(base / "malformed" / "kilo.db", "_m")
    con.execute("update message set data = '{\"role\": \"assistant\", \"tim' where id = 'msg_b002'")
    con.commit()
    con.close()
    return {"not_sqlite": base / "not_sqlite", "malformed": base / "malformed"}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    base = tmp_path_factory.mktemp("kilo-stores")
    roots = {"contract": CONTRACT, "extension": EXTENSION, **write_variants(base)}
    writer = variant_db(base / "wal" / "kilo.db", "_w")
    writer.execute("pragma journal_mode = wal")
    writer.execute("pragma wal_autocheckpoint = 0")
    late = build.user(200000)
    writer.execute("insert into message values ('msg_a007', ?, ?, ?, ?)",
                   (MAIN + "_w", late["time"]["created"], late["time"]["created"], json.dumps(late)))
    writer.execute("insert into part values ('prt_0100', 'msg_a007', ?, ?, ?, ?)",
                   (MAIN + "_w", late["time"]["created"], late["time"]["created"], json.dumps(build.text("one more thing", 200000))))
    writer.commit()
    roots["wal"] = base / "wal"
    assert (base / "wal" / "kilo.db-wal").stat().st_size > 0
    before = {n: tree_fingerprint(r) for n, r in roots.items() if n in ("contract", "extension")}
    db = base / "w.duckdb"
    summary = ingest(Layout(db), [(kilo_code, kilo_code.resolve_root(r)) for r in roots.values()])
    writer.close()
    files = {n: sorted(str(f.path) for f in kilo_code.discover(kilo_code.resolve_root(r))) for n, r in roots.items()}
    after = {n: tree_fingerprint(r) for n, r in roots.items() if n in ("contract", "extension")}
    return db, files, summary, before == after


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_store_loads_with_exact_counts(store, name):
    db, files, _summary, untouched = store
    assert untouched
    mine = files[name]
    got = sample_counts(db, mine)
    assert got == SAMPLES[name]


def test_database_sessions_messages_and_tools(store):
    db, files = store[0], store[1]
    contract = files["contract"]
    got = rows(db, "select session_id, any_value(parent_session_id) filter (parent_session_id is not null), "
                   "max(text) filter (kind = 'metadata'), max(cwd), max(version) from stg_records "
                   "where list_contains(?, source_file) group by 1 order by 1", [contract])
    assert got == [(MAIN, None, "Speed up the forecast cache", "/home/demo/weather-app", "7.4.17"),
                   (CHILD, MAIN, "Run the cache tests (@general subagent)", "/home/demo/weather-app", "7.4.17")]
    assert rows(db, "select message_id, kind, harness_kind, is_compact_summary, input_tokens, output_tokens "
                    "from messages where list_contains(?, source_file) order by session_id, line_no", [contract]) == [
        ("msg_a001", "prompt", None, False, None, None),
        ("msg_a002", "tool_use", None, False, 4200, 430),
        ("msg_a003", "prompt", None, False, None, None),
        ("msg_a004", "tool_use", None, False, 900, 420),
        ("msg_a005", "compact_boundary", "compaction", False, None, None),
        ("msg_a006", "response", None, True, 6000, 200),
        ("msg_b001", "prompt", "synthetic", False, None, None),
        ("msg_b002", "tool_use", None, False, 1500, 60),
    ]
    calls = rows(db, "select t.call_id, t.tool_name, t.is_error, t.output_text from tool_calls t "
                     "join (select distinct file_id, source_file from stg_records) using (file_id) "
                     "where list_contains(?, source_file) order by t.call_id", [contract])
    assert [c[:3] for c in calls] == [("toolu_k1", "read", False), ("toolu_k2", "bash", True), ("toolu_k3", "edit", False),
                                      ("toolu_k4", "task", False), ("toolu_k5", "bash", False)]
    assert calls[1][3] == "Command failed with exit code 1: 2 failing"
    blocks = rows(db, "select b.block_type, b.media_type from stg_blocks b join stg_records r using (file_id, line_no) "
                      "where list_contains(?, r.source_file) and r.message_id = 'msg_a003' order by block_index", [contract])
    assert blocks == [("text", None), ("image", "image/png")]
    assert rows(db, "select kind, text from stg_records where list_contains(?, source_file) and role is null "
                    "and kind <> 'metadata' order by kind", [contract]) == [
        ("part", "left behind by a revert"), ("session_message", None)]


def test_bad_rows_and_wal(store):
    db, files, summary, _ = store
    assert rows(db, "select reason from quarantine where list_contains(?, source_file)", [files["not_sqlite"]]) == [
        ("unreadable_container",)]
    assert rows(db, "select reason, error from quarantine where list_contains(?, source_file)", [files["malformed"]]) == [
        ("malformed_row", "opencode message row msg_b002: column data is not valid JSON")]
    assert scalar(db, "select text from messages where list_contains(?, source_file) and message_id = 'msg_a007'",
                  [files["wal"]]) == "one more thing"


def test_extension_task(store):
    db = store[0]
    assert rows(db, "select title, cwd, model, message_count from sessions where session_id = ?", [TASK]) == [
        ("Add a Kelvin conversion to src/units.ts", "/home/demo/weather-app", "kilocode/anthropic/claude-sonnet-4", 4)]
    assert rows(db, "select sum(input_tokens), sum(output_tokens) from stg_records where session_id = ?", [TASK]) == [(6400, 110)]


# --- roots and discovery ---------------------------------------------------------------------------

def test_default_locations_and_kilo_db(isolated_home, monkeypatch, tmp_path):
    home = isolated_home
    data = home / ".local" / "share" / "kilo"
    data.mkdir(parents=True)
    (data / "opencode.db").write_bytes(b"")
    assert [f.path.name for f in kilo_code.discover(kilo_code.resolve_root(data))] == ["opencode.db"]
    for name in ("kilo-beta.db", "kilo.db", "kilo.db-wal", "kilo.db-shm"):
        (data / name).write_bytes(b"")
    # kilo.db first, a channel database after it; a pre-rename opencode.db only without them
    assert [(f.path.name, f.container) for f in kilo_code.discover(data)] == [("kilo.db", "sqlite"), ("kilo-beta.db", "sqlite")]
    legacy = home / ".kilocode" / "cli" / "global" / "tasks" / "t1"
    legacy.mkdir(parents=True)
    (legacy / "ui_messages.json").write_text("[]")
    ext = home / ".config" / "Cursor" / "User" / "globalStorage" / EXT / "tasks" / "t2"
    ext.mkdir(parents=True)
    (ext / "api_conversation_history.json").write_text("[]")
    assert [s for _a, s in default_targets(kilo_code)] == [data, home / ".kilocode" / "cli" / "global", ext.parent.parent]
    assert kilo_code.resolve_root(home / ".kilocode") == home / ".kilocode" / "cli" / "global"
    # KILO_DB: an absolute file, or a name inside the data folder; :memory: is no file
    monkeypatch.setenv("KILO_DB", str(tmp_path / "other.db"))
    assert kilo_code.default_roots(os.environ, home)[0] == tmp_path / "other.db"
    monkeypatch.setenv("KILO_DB", "kilo-dev.db")
    assert kilo_code.default_roots(os.environ, home)[0] == data / "kilo-dev.db"
    monkeypatch.setenv("KILO_DB", ":memory:")
    assert kilo_code.default_roots(os.environ, home)[0] == data


def test_resolve_root(tmp_path):
    (tmp_path / "kilo.db").write_bytes(b"")
    assert kilo_code.resolve_root(tmp_path / "kilo.db") == tmp_path / "kilo.db"
    assert kilo_code.resolve_root(tmp_path) == tmp_path
    assert [f.container for f in kilo_code.discover(tmp_path / "kilo.db")] == ["sqlite"]
    for bad in (tmp_path / "kilo.db-wal", tmp_path / "missing", tmp_path / "empty"):
        if bad.name == "kilo.db-wal":
            bad.write_bytes(b"")
        if bad.name == "empty":
            bad.mkdir()
        with pytest.raises(RootError):
            kilo_code.resolve_root(bad)


def test_a_database_rows_data_is_typed_as_an_extension_element_is():
    """cline_family__records types an extension's `item` in the line's parse and a kilo.db
    row's `data` apart, and coalesces the two: a field added to one only would silently come
    out null from the other, so the two structs are held to be the same."""
    text = sql.read("extract/cline_family__records")
    line = json.loads(re.search(r"json_transform\(l\.line, '(\{.*?\})'\) as j", text, re.S).group(1))
    data = json.loads(re.search(r"json_transform\(j\.data, '(\{.*?\})'\)\) as d", text, re.S).group(1))
    assert line["item"] == data
    assert "content" in data and "tokens" in data
