"""A load keeps one Parquet file open per worker and partition, a row group per batch: the
archive reads exactly as with a file per batch, and a first load leaves nothing to merge."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from convarch.adapters import claude_code
from convarch.etl import compact
from convarch.etl import extract as extract_mod
from convarch.etl import partfiles
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from test_parallel_load import snapshot_of
from test_reliability import corpus


def data_files(db: Path, table: str) -> list[Path]:
    return [p for p in (Layout(db).lake / table).rglob("*.parquet") if not p.name.startswith("seed-")]


def many_batches(monkeypatch, root: Path, files: int, seed: int, flush: int) -> None:
    """A Claude Code store at `root` loaded in batches of `flush` bytes, and no merging after,
    so what loading wrote is what the lake holds."""
    corpus(root / "projects", files=files, seed=seed)
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", flush)
    monkeypatch.setattr(compact, "SMALL_FILES", 10**9)


def load(db: Path, root: Path):
    return ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=2)


def test_row_groups_in_open_files_read_exactly_like_a_file_per_batch(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    many_batches(monkeypatch, root, files=20, seed=11, flush=24 << 10)     # dozens of batches

    kept_open = tmp_path / "open" / "w.duckdb"
    s = load(kept_open, root)
    assert s.files_merged == 0
    for table in ("records", "blocks"):
        files = data_files(kept_open, table)
        per_partition = Counter(p.parent for p in files)
        assert max(per_partition.values()) <= 2, per_partition       # one per worker at most
        groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in files)
        assert groups > 2 * len(files), "batches did not become row groups of shared files"

    monkeypatch.setattr(partfiles, "FILE_BYTES", 1)                 # close after every batch
    per_batch = tmp_path / "batch" / "w.duckdb"
    load(per_batch, root)
    assert len(data_files(per_batch, "records")) > 2 * len(data_files(kept_open, "records"))

    a, b = snapshot_of(kept_open), snapshot_of(per_batch)
    assert a["stg_records"] and a["search_postings"]
    assert a == b


def test_a_file_that_passes_its_size_is_closed_and_another_begun(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    many_batches(monkeypatch, root, files=12, seed=3, flush=16 << 10)
    monkeypatch.setattr(partfiles, "FILE_BYTES", 40 << 10)
    db = tmp_path / "w" / "w.duckdb"
    load(db, root)
    files = data_files(db, "records")
    assert max(Counter(p.parent for p in files).values()) > 2
    # every file but the last of each worker and partition passed the limit before it closed
    assert sum(p.stat().st_size >= 40 << 10 for p in files) >= len(files) // 2


def test_a_worker_never_holds_more_than_its_open_file_limit(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    many_batches(monkeypatch, root, files=12, seed=7, flush=16 << 10)
    roomy = tmp_path / "roomy" / "w.duckdb"
    load(roomy, root)
    peak = {"n": 0}
    real = partfiles.PartitionFiles._file

    def counting(self, *args):
        f = real(self, *args)
        peak["n"] = max(peak["n"], len(self._open))
        return f

    monkeypatch.setattr(partfiles.PartitionFiles, "_file", counting)
    monkeypatch.setattr(partfiles, "MAX_OPEN", 1)     # records and blocks take turns
    tight = tmp_path / "tight" / "w.duckdb"
    load(tight, root)
    assert peak["n"] == 1
    assert len(data_files(tight, "records")) > len(data_files(roomy, "records"))
    assert snapshot_of(tight) == snapshot_of(roomy)


def test_a_batch_over_several_months_puts_each_row_in_its_own_month_in_order(tmp_path):
    """Rows are split by one sort and a slice per partition: every row lands in its own
    (source, month) file, in the order the batch had it, and each row group names its rows."""
    import duckdb

    con = duckdb.connect()
    months = ["2025-03", "2025-01", "2025-03", "2025-02", "2025-01", "2025-03"]
    sources = ["a", "a", "b", "a", "b", "a"]
    con.execute("create table batch as select * from (values " + ", ".join(
        f"({i}, '{s}', '{m}', '{{\"i\": {i}}}'::json)" for i, (s, m) in enumerate(zip(sources, months))
    ) + ") t(n, source, month, doc)")
    files = partfiles.PartitionFiles(1, tmp_path, 0)
    first = files.write(con, "t", "select * from batch")
    second = files.write(con, "t", "select n + 100 as n, source, month, doc from batch")
    files.close()
    got: dict[tuple[str, str], list[int]] = {}
    for g in first + second:
        table = pq.ParquetFile(g.path).read()
        assert table.schema.field("doc").type.extension_name == "arrow.json"
        got.setdefault((g.source, g.month), []).extend(table["n"].to_pylist()[g.first_row:g.first_row + g.rows])
    expect: dict[tuple[str, str], list[int]] = {}
    for base in (0, 100):
        for i, (s, m) in enumerate(zip(sources, months)):
            expect.setdefault((s, m), []).append(base + i)
    assert got == expect
    assert {(g.source, g.month) for g in first} == set(expect)


def test_a_streamed_write_holds_a_row_group_of_its_size_at_a_time_and_keeps_every_row(tmp_path, monkeypatch):
    """A write streamed out of DuckDB (the chains of a long transcript) gives the rows of a
    whole one, in the same files and order, cut into row groups of about the size asked;
    a query with no rows writes nothing."""
    import duckdb

    monkeypatch.setattr(partfiles, "STREAM_ROWS", 100)
    con = duckdb.connect()
    con.execute("create table batch as select i as n, case when i % 3 = 0 then 'b' else 'a' end as source, "
                "'all' as month, repeat('x', 50) || i as text, ('{\"i\": ' || i || '}')::json as doc from range(5000) t(i)")
    whole = partfiles.PartitionFiles(1, tmp_path / "whole", 0)
    expected = whole.write(con, "t", "select * from batch")
    whole.close()
    streamed = partfiles.PartitionFiles(1, tmp_path / "streamed", 0)
    groups = streamed.write(con, "t", "select * from batch", group_bytes=32 << 10)
    assert streamed.write(con, "t", "select * from batch where n < 0", group_bytes=32 << 10) == []
    streamed.close()

    def read(groups) -> dict[str, list[tuple]]:
        got: dict[str, list[tuple]] = {}
        for g in groups:
            table = pq.ParquetFile(g.path).read_row_group(g.index)
            assert table.num_rows == g.rows
            assert table.schema.field("doc").type.extension_name == "arrow.json"
            got.setdefault(g.source, []).extend(zip(*(table[c].to_pylist() for c in ("n", "text", "doc"))))
        return got

    assert len(expected) == 2 and len(groups) > 10, (len(expected), len(groups))
    assert read(groups) == read(expected)
    assert sorted(n for rows in read(groups).values() for n, _, _ in rows) == list(range(5000))
    sizes = [g.rows for g in groups]
    assert max(sizes) < 2000, sizes                   # about 32 KB each, not the whole query


def test_free_text_columns_carry_no_statistics_and_keys_do(tmp_path, monkeypatch):
    """Row groups are pruned by their keys (file, line, session, time), never by a message's
    text or raw JSON, whose min/max would put up to two whole values per row group in every
    footer that each read-back parses."""
    root = tmp_path / "home" / ".claude"
    many_batches(monkeypatch, root, files=6, seed=5, flush=24 << 10)
    db = tmp_path / "w" / "w.duckdb"
    load(db, root)
    seen: dict[str, set[bool]] = {}
    for table in ("records", "blocks"):
        for p in data_files(db, table):
            md = pq.ParquetFile(p).metadata
            for g in range(md.num_row_groups):
                for c in range(md.num_columns):
                    col = md.row_group(g).column(c)
                    stats = col.statistics
                    seen.setdefault(f"{table}.{col.path_in_schema}", set()).add(
                        stats is not None and stats.has_min_max)
    for wide in ("records.raw", "records.text", "blocks.output_text", "blocks.tool_input"):
        assert seen[wide] == {False}, wide
    for key in ("records.file_id", "records.line_no", "records.session_id", "records.timestamp",
                "blocks.file_id", "blocks.line_no"):
        assert seen[key] == {True}, key
    # the wide columns hold text, so the test would not pass on empty ones
    con = duckdb.connect()
    lake = Layout(db).lake
    assert con.execute(f"select count(*) from read_parquet('{lake}/records/*/*/*.parquet') "
                       "where length(raw) > 0 and text is not null").fetchone()[0] > 0


def test_gathered_cuts_a_stream_where_each_piece_reaches_its_size():
    from convarch.etl.gather import gathered

    assert list(gathered([3, 1, 5, 2, 2, 9, 1], lambda n: n, 4)) == [[3, 1], [5], [2, 2], [9], [1]]
    assert list(gathered([], len, 4)) == []
    assert [sum(p) for p in gathered([1] * 10, lambda n: n, 3)] == [3, 3, 3, 1]
