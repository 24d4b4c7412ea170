"""New files are loaded in the order they were last written, so a batch holds files of about
the same time and leaves one row group in each month's file instead of one in every month."""
from __future__ import annotations

import os
from datetime import datetime

import pyarrow.parquet as pq

from convarch.adapters import claude_code
from convarch.etl import extract as extract_mod
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import write_jsonl
from helpers import rows, user


def test_files_of_a_batch_share_their_month(tmp_path, monkeypatch):
    root = tmp_path / "claude"
    months = ["2026-01", "2026-03"] * 4          # by name the files alternate months
    for i, month in enumerate(months):
        f = root / "projects" / "-work-app" / f"s{i}.jsonl"
        write_jsonl(f, [user(f"u{i}-{k}", f"u{i}-{k - 1}" if k else None, "word " * 400,
                             f"{month}-0{1 + i % 2}T10:00:{k:02d}Z", sid=f"s{i}") for k in range(10)])
        t = datetime.fromisoformat(f"{month}-05T00:00:00+00:00").timestamp() + i
        os.utime(f, (t, t))                      # last written when its last record was
    size = max(p.stat().st_size for p in root.rglob("*.jsonl"))
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 2 * size + 100)     # two files a batch
    db = tmp_path / "wh" / "convarch.duckdb"
    s = ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], workers=1)
    assert s.records_added == 80
    lake = Layout(db).lake / "records"
    groups = {p.parent.name: pq.ParquetFile(p).metadata.num_row_groups for p in lake.rglob("*.parquet")
              if pq.ParquetFile(p).metadata.num_rows}        # not the empty seed that fixes the schema
    # four batches of two files each, every batch within one month: one row group each
    assert groups == {"month=2026-01": 2, "month=2026-03": 2}
    # and nothing was lost or doubled on the way
    assert rows(db, "select count(*), count(distinct (file_id, line_no)) from stg_records") == [(80, 80)]
