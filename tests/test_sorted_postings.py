"""Search postings are stored sorted by term in narrow row groups, at load and after merging, so
a search reads the row groups of its own terms only; every posting is still there."""
from __future__ import annotations

import random
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
from stories import Story
from test_parallel_load import snapshot_of

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "te", "zo", "vi", "pa", "qu", "ex", "dor"]


def vocabulary_corpus(root: Path, files: int, seed: int) -> None:
    """Sessions whose words are drawn from a few thousand made-up terms."""
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice(SYLLABLES) for _ in range(rng.randrange(2, 5))) for _ in range(4000)})
    for i in range(files):
        s = Story(f"vocab{i}", cwd=f"/home/demo/v{i % 2}")
        for _ in range(rng.randrange(20, 40)):
            s.user(" ".join(rng.choices(words, k=rng.randrange(5, 40))))
            s.assistant(" ".join(rng.choices(words, k=rng.randrange(5, 60))))
        s.write(root)


def postings_files(db: Path) -> list[Path]:
    lake = Layout(db).lake / "postings"
    return sorted(p for p in lake.rglob("*.parquet") if not p.name.startswith("seed-"))


def group_ranges(path: Path) -> list[tuple[str, str, int]]:
    """(min term, max term, rows) of each row group, from the file's own statistics."""
    md = pq.ParquetFile(path).metadata
    col = md.schema.names.index("term")
    out = []
    for i in range(md.num_row_groups):
        stats = md.row_group(i).column(col).statistics
        out.append((stats.min, stats.max, md.row_group(i).num_rows))
    return out


def runs_in(terms: list[str]) -> int:
    """How many ascending runs a column of terms is made of."""
    return 1 + sum(b < a for a, b in zip(terms, terms[1:]))


def test_held_postings_are_written_as_sorted_runs_in_narrow_row_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(partfiles, "RUN_ROWS", 250)
    monkeypatch.setattr(partfiles, "RUN_GROUP_ROWS", 40)
    rng = random.Random(5)
    con = duckdb.connect()
    files = partfiles.PartitionFiles(1, tmp_path, 0)
    written: list[tuple[str, str, str, int]] = []
    for batch in range(7):
        rows = [(f"t{rng.randrange(500):03d}", rng.choice(["2025-01", "2025-02"]), batch, i) for i in range(90)]
        written += [(t, "s", m, b * 1000 + i) for t, m, b, i in rows]
        con.execute("create or replace table batch as select * from (values " + ", ".join(
            f"('{t}', 's', '{m}', {b * 1000 + i})" for t, m, b, i in rows) + ") v(term, source, month, n)")
        assert files.write(con, "postings", "select * from batch") == []     # held, not written
    files.close()

    got = []
    for path in sorted(tmp_path.rglob("*.parquet")):
        month = path.parent.name.split("=", 1)[1]
        table = pq.read_table(path)
        terms = table["term"].to_pylist()
        got += [(t, "s", month, n) for t, n in zip(terms, table["n"].to_pylist())]
        # 630 rows in runs of at least RUN_ROWS over both months: three runs, the last at close
        assert runs_in(terms) <= 3
        assert all(rows <= 40 for _, _, rows in group_ranges(path))
        assert pq.ParquetFile(path).metadata.num_row_groups > 3
    assert Counter(got) == Counter(written)


def test_a_loaded_and_a_merged_index_read_only_the_row_groups_of_a_term(tmp_path, monkeypatch):
    root = tmp_path / "home" / ".claude"
    vocabulary_corpus(root / "projects", files=16, seed=2)
    monkeypatch.setattr(extract_mod, "FLUSH_BYTES", 24 << 10)      # many batches
    monkeypatch.setattr(partfiles, "RUN_ROWS", 3000)
    monkeypatch.setattr(partfiles, "RUN_GROUP_ROWS", 256)
    monkeypatch.setattr(compact, "SMALL_FILES", 10**9)              # first, as loaded
    loaded = tmp_path / "loaded" / "w.duckdb"
    ingest(Layout(loaded), [(claude_code, claude_code.resolve_root(root))], workers=2)

    monkeypatch.setattr(partfiles, "FILE_BYTES", 1)                 # a file per run,
    monkeypatch.setattr(compact, "SMALL_FILES", 2)                  # all merged
    merged = tmp_path / "merged" / "w.duckdb"
    s = ingest(Layout(merged), [(claude_code, claude_code.resolve_root(root))], workers=2)
    assert s.files_merged > 0

    for db in (loaded, merged):
        files = postings_files(db)
        assert files
        runs = groups = rows = 0
        for path in files:
            terms = pq.read_table(path, columns=["term"])["term"].to_pylist()
            runs += runs_in(terms)
            ranges = group_ranges(path)
            groups += len(ranges)
            rows += len(terms)
        assert groups >= 4 * runs, (db, groups, runs)
        if db == merged:
            assert runs == len(files)             # merging sorted each file as a whole
        # a term's postings lie in one or two row groups of each run, so a search reads
        # those and skips the rest by the groups' min/max terms
        sample = pq.read_table(files[0], columns=["term"])["term"].to_pylist()[::97]
        for term in sample:
            touched = sum(lo <= term <= hi for path in files for lo, hi, _ in group_ranges(path))
            assert touched <= 2 * runs, (term, touched, runs)
        assert rows > 20 * 256

    assert snapshot_of(loaded) == snapshot_of(merged)
