"""An adapter that declares LINES_STAND_ALONE promises that its extraction SQL reads each line
on its own, so a rewritten document whose old lines come first again can load just its new
lines (etl/extract.py). Each such adapter's contract store is held to it: every line of every
file extracted alone gives exactly the records and blocks of all the lines extracted together.
A window, join or aggregate across a file's lines would make them differ."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from convarch import adapters, sql
from convarch.etl.containers import snapshot_whole
from convarch.etl.duck import connect
from conftest import REPO

STAND_ALONE = sorted(n for n, a in adapters.ADAPTERS.items() if getattr(a, "LINES_STAND_ALONE", False))


def test_the_adapters_that_read_lines_across_a_file_do_not_declare_it():
    assert {"cline", "cursor", "goose", "amp", "continue_dev", "opencode", "gemini_cli", "grok_build"} <= set(STAND_ALONE)
    # Antigravity, Copilot CLI and Codex look across a file's lines
    assert not {"antigravity", "copilot_cli", "codex"} & set(STAND_ALONE)


def store_lines(name: str, tmp_path: Path) -> tuple[pa.Table, pa.Table]:
    """(lines, batch_files) of every file of the adapter's contract store, as the loader makes them."""
    adapter = adapters.ADAPTERS[name]
    root = next(p for p in (REPO / "fixtures" / name / "contract", REPO / "fixtures" / name / "demo") if p.exists())
    rows, files = [], []
    for file_id, sf in enumerate(adapter.discover(adapter.resolve_root(root)), start=1):
        if sf.container == "jsonl":
            data = sf.path.read_bytes()
        else:
            dest = tmp_path / f"{file_id}.jsonl"
            snapshot_whole(sf, dest, tmp_path / f"{file_id}.copy")
            data = dest.read_bytes()
        offset = 0
        for line_no, raw in enumerate(data.split(b"\n"), start=1):
            text = raw.decode("utf-8", "replace").strip()
            if text.startswith("{"):
                rows.append({"file_id": file_id, "line_no": line_no, "byte_offset": offset, "line": text})
            offset += len(raw) + 1
        files.append({"file_id": file_id, "source": name, "file_epoch": 1, "source_file": str(sf.path),
                      "file_stem": sf.path.stem, "session_hint": sf.session_hint,
                      "parent_session_hint": sf.parent_session_hint, "run_id": 1})
    return pa.Table.from_pylist(rows), pa.Table.from_pylist(files)


def extract(con, name: str, lines: pa.Table) -> tuple[list, list]:
    ext = adapters.ADAPTERS[name].EXTRACT
    con.register("lines", lines)
    con.execute(f"create or replace temp table records_batch as {sql.read(ext.records)}")
    con.execute(f"create or replace temp table blocks_batch as {sql.read(ext.blocks)}")
    records = con.execute(f"select * from ({sql.read('extract/stored_records')})").fetchall()
    blocks = con.execute("select * from blocks_batch").fetchall()
    con.unregister("lines")
    return records, blocks


@pytest.mark.parametrize("name", STAND_ALONE)
def test_each_line_extracted_alone_gives_what_all_lines_give(name, tmp_path):
    lines, files = store_lines(name, tmp_path)
    assert lines.num_rows > 1
    con = connect()
    con.register("batch_files", files)
    together = extract(con, name, lines)
    alone: tuple[list, list] = ([], [])
    for i in range(lines.num_rows):
        records, blocks = extract(con, name, lines.slice(i, 1))
        alone[0].extend(records)
        alone[1].extend(blocks)
    assert together[0], "the store gave no records"
    assert sorted(map(repr, alone[0])) == sorted(map(repr, together[0]))
    assert sorted(map(repr, alone[1])) == sorted(map(repr, together[1]))
