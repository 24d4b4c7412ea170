"""`convarch export`: Parquet any engine reads back whole, rewritten only where rows changed,
never half visible, and never written outside DIR whatever the data says."""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pytest
from click.testing import CliRunner

from conftest import DEMO, REPO, tree_fingerprint
from convarch import adapters, connect
from convarch.adapters import claude_code
from convarch.cli import cli
from convarch.etl import export as exporter
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from stories import Story

TABLES = [t.name for t in exporter.TABLES]
OTHERS = ("codex", "cursor", "gemini_cli")


def build(db: Path, claude_root: Path = DEMO, others: tuple[str, ...] = OTHERS) -> None:
    pairs = [(claude_code, claude_code.resolve_root(claude_root))]
    for name in others:
        adapter = adapters.get(name)
        pairs.append((adapter, adapter.resolve_root(REPO / "fixtures" / name / "contract")))
    ingest(Layout(db), pairs)


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("wh") / "w.duckdb"
    build(db)
    return db


def run_export(db: Path, dest: Path, *args: str) -> dict:
    r = CliRunner().invoke(cli, ["--db", str(db), "export", str(dest), "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def exported_counts(dest: Path, table: str) -> dict[str | None, int]:
    return dict(duckdb.execute(
        f"select source, count(*) from read_parquet('{dest / table}/**/*.parquet', hive_partitioning = true) "
        "group by all"
    ).fetchall())


def warehouse_counts(db: Path, table: str, where: str = "true", params=None) -> dict[str | None, int]:
    con = connect(db)
    try:
        return dict(con.execute(f"select source, count(*) from {table} where {where} group by all", params or []).fetchall())
    finally:
        con.close()


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet")}


def test_export_reads_back_with_the_same_rows_and_portable_types(warehouse, tmp_path):
    dest = tmp_path / "out"
    got = run_export(warehouse, dest)
    for table in TABLES:
        assert exported_counts(dest, table) == warehouse_counts(warehouse, table), table
        assert got["tables"][table]["rows"] == sum(warehouse_counts(warehouse, table).values())
        assert got["tables"][table]["unchanged"] == 0
    assert len(exported_counts(dest, "messages")) == 1 + len(OTHERS)

    # the same values, not only the same counts
    con = connect(warehouse)
    try:
        want = con.execute("select sum(hash(session_id, message_id, text, input_tokens)) from messages").fetchone()
    finally:
        con.close()
    assert duckdb.execute(
        f"select sum(hash(session_id, message_id, text, input_tokens)) "
        f"from read_parquet('{dest}/messages/**/*.parquet', hive_partitioning = true)"
    ).fetchone() == want

    # types every engine reads alike: UTC instants, strings for ids and JSON, no 128-bit ints
    types = {r[0]: r[1] for r in duckdb.execute(
        f"describe select * from read_parquet('{dest}/tool_calls/**/*.parquet', hive_partitioning = true)"
    ).fetchall()}
    assert types["timestamp"] == "TIMESTAMP WITH TIME ZONE"
    assert types["input"] == types["call_id"] == types["session_id"] == "VARCHAR"
    for table in TABLES:
        for _, typ, *_ in duckdb.execute(
            f"describe select * from read_parquet('{dest}/{table}/**/*.parquet', hive_partitioning = true)"
        ).fetchall():
            assert typ not in ("JSON", "HUGEINT", "TIMESTAMP", "UUID"), (table, typ)

    # pyarrow's own hive discovery agrees, and rows without a time land in the null month
    arrow = ds.dataset(dest / "messages", format="parquet", partitioning="hive").to_table()
    assert arrow.num_rows == sum(warehouse_counts(warehouse, "messages").values())
    assert str(arrow.schema.field("timestamp").type) == "timestamp[us, tz=UTC]"
    untimed = sum(warehouse_counts(warehouse, "messages", '"timestamp" is null').values())
    assert untimed and arrow.filter(ds.field("month").is_null()).num_rows == untimed

    # private: folders 0700, files 0600; no temporary folder left behind
    for path in [dest, *dest.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    assert not list(dest.glob(".convarch-export-tmp-*"))

    # README documents every exported column, partition columns included
    readme = (dest / "README.md").read_text()
    for table in TABLES:
        assert f"### `{table}`" in readme
        cols = duckdb.execute(
            f"describe select * from read_parquet('{dest}/{table}/**/*.parquet', hive_partitioning = true)"
        ).fetchall()
        for name, *_ in cols:
            assert f"| `{name}` |" in readme, (table, name)
    manifest = json.loads((dest / exporter.MANIFEST).read_text())
    listed = {p["file"] for t in manifest["tables"].values() for p in t["partitions"].values()}
    assert listed == files_under(dest)


def test_each_file_holds_its_rows_in_order_and_no_staging_is_left(warehouse, tmp_path):
    """Partitions are staged apart and sorted one at a time: each file still comes out in its
    table's order, and the staging folders go with the run's temporary folder."""
    dest = tmp_path / "out"
    run_export(warehouse, dest)
    for spec in exporter.TABLES:
        files = sorted((dest / spec.name).rglob("*.parquet"))
        assert files, spec.name
        for f in files:
            unordered, rows = duckdb.execute(
                f"select count(*) filter (where pos <> sorted_pos), count(*) from (select row_number() over () as pos, "
                f"row_number() over (order by {spec.order_by}) as sorted_pos from read_parquet('{f}'))"
            ).fetchone()
            assert rows > 0 and unordered == 0, (spec.name, f.name)
    assert not list(dest.glob(f"{exporter.TMP_PREFIX}*"))
    assert not list(dest.rglob(f"{exporter.STAGE_KEY}=*"))


def _same_export(dest: Path, reference: Path) -> None:
    """The same files as an export made the plain way, each holding the same rows in the
    same order, and nothing temporary left."""
    assert files_under(dest) == files_under(reference)
    for rel in files_under(dest):
        got, want = (duckdb.execute(f"select * from read_parquet('{d / rel}')").fetchall() for d in (dest, reference))
        assert got == want, rel
    assert not list(dest.glob(f"{exporter.TMP_PREFIX}*"))


@pytest.fixture(scope="module")
def plain_export(warehouse, tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("plain") / "out"
    exporter.export(warehouse, dest)
    return dest


def test_a_partition_too_big_to_sort_at_once_is_sorted_in_slices(warehouse, plain_export, tmp_path, monkeypatch):
    """A partition with more text than a slice is cut, in its order, into slices sorted one at
    a time and appended to one file: the same rows in the same order as one sort makes."""
    from convarch.etl import export_sort

    cut: list[int] = []
    real = export_sort.write_sorted

    def counting(*args, **kwargs):
        cut.append(real(*args, **kwargs))
        return cut[-1]

    monkeypatch.setattr(export_sort, "SLICE_BYTES", 256)
    monkeypatch.setattr(export_sort, "ROW_GROUP_BYTES", 1)
    monkeypatch.setattr(exporter, "write_sorted", counting)
    dest = tmp_path / "out"
    run_export(warehouse, dest)
    assert max(cut) >= 5 and len(cut) == sum(
        len(t["partitions"]) for t in json.loads((dest / exporter.MANIFEST).read_text())["tables"].values())
    _same_export(dest, plain_export)
    groups = [duckdb.execute(f"select count(*) from parquet_metadata('{f}') where column_id = 0").fetchall()[0][0]
              for f in (dest / "messages").rglob("*.parquet")]
    assert max(groups) > 1                       # a row group per flush, not one per file


def test_an_export_that_runs_out_of_memory_tries_again_with_more(warehouse, plain_export, tmp_path, monkeypatch):
    """Each step starts at MEMORY_MB of DuckDB memory and doubles it when it runs out, up to
    the cap; past the cap the export stops with one line, leaves no staging behind and only
    whole partitions, and a run with enough memory then completes it."""
    monkeypatch.setattr(exporter, "MEMORY_MB", 8)
    limits: list[int] = []
    real_run = exporter.Memory.run

    def watched(self, step, *, undo):
        out = real_run(self, step, undo=undo)
        limits.append(self.mb)
        return out

    monkeypatch.setattr(exporter.Memory, "run", watched)
    dest = tmp_path / "out"
    run_export(warehouse, dest)
    assert limits[-1] > 8 and limits == sorted(limits)     # it ran out at 8 MB, then had enough
    _same_export(dest, plain_export)

    monkeypatch.setattr(exporter, "memory_cap_mb", lambda: 1)
    again = tmp_path / "again"
    r = CliRunner().invoke(cli, ["--db", str(warehouse), "export", str(again)])
    assert r.exit_code == 1 and "export ran out of memory at 8 MB" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not list(again.glob(f"{exporter.TMP_PREFIX}*"))
    # which step runs out first varies from run to run (it differed only with the machine
    # loaded), so some partitions may already be in place: each of them whole, none listed in
    # the manifest (written only when an export completes), and the next run finishes the rest
    assert json.loads((again / exporter.MANIFEST).read_text())["tables"] == {}
    for part in again.rglob("*.parquet"):
        assert duckdb.execute(f"select count(*) from read_parquet('{part}')").fetchall()[0][0] > 0
    monkeypatch.undo()
    run_export(warehouse, again)
    _same_export(again, plain_export)


def test_second_export_with_no_change_rewrites_nothing(warehouse, tmp_path):
    dest = tmp_path / "out"
    run_export(warehouse, dest)
    before = tree_fingerprint(dest)
    got = run_export(warehouse, dest)
    assert tree_fingerprint(dest) == before          # bytes, mtimes and inodes, README and manifest too
    for table in TABLES:
        t = got["tables"][table]
        assert t["written"] == [] and t["removed"] == [] and t["unchanged"] == t["partitions"] > 0


def test_a_new_ingest_rewrites_only_the_partitions_it_touched(tmp_path):
    store = tmp_path / "claude"
    shutil.copytree(DEMO, store)
    db = tmp_path / "w.duckdb"
    build(db, store, ("codex",))
    dest = tmp_path / "out"
    run_export(db, dest)
    before = tree_fingerprint(dest)

    later = Story("next-year", cwd="/home/demo/orbit", start="2027-02-03T10:00:00")
    later.user("Bump the forecast cache to ten minutes.")
    later.bash("pytest -q", "4 passed")
    later.assistant("Done: the cache now keeps forecasts for ten minutes.")
    later.write(store)
    build(db, store, ("codex",))

    got = run_export(db, dest)
    after = tree_fingerprint(dest)
    month = "source=claude_code/month=2027-02"
    new_files = {f"{t}/{month}/{t}-claude_code-2027-02.parquet" for t in TABLES}
    assert set(after) - set(before) == new_files
    for path in set(before) - {"README.md", exporter.MANIFEST}:
        assert after[path] == before[path], path       # untouched: same bytes, mtime and inode
    assert after[exporter.MANIFEST] != before[exporter.MANIFEST]
    for t in TABLES:
        assert got["tables"][t]["written"] == [f"{t}/{month}/{t}-claude_code-2027-02.parquet"]
        assert exported_counts(dest, t) == warehouse_counts(db, t)


def test_since_filters_and_stale_partitions_go(warehouse, tmp_path):
    dest = tmp_path / "out"
    full = run_export(warehouse, dest)
    since = "2026-05-01"
    got = run_export(warehouse, dest, "--since", since)
    assert got["since"] == "2026-05-01 00:00:00"
    params = [since]
    assert exported_counts(dest, "messages") == warehouse_counts(warehouse, "messages", '"timestamp" >= ?', params)
    assert exported_counts(dest, "tool_calls") == warehouse_counts(warehouse, "tool_calls", '"timestamp" >= ?', params)
    assert exported_counts(dest, "sessions") == warehouse_counts(
        warehouse, "sessions", "coalesce(ended_at, started_at) >= ?", params)
    first = duckdb.execute(
        f"select min(\"timestamp\") from read_parquet('{dest}/messages/**/*.parquet', hive_partitioning = true)"
    ).fetchone()[0]
    assert first.isoformat() >= "2026-05-01"
    assert sum(len(t["removed"]) for t in got["tables"].values()) > 0
    # no partition folder is left empty, and the manifest names exactly the files present
    for folder in dest.rglob("*"):
        if folder.is_dir():
            assert any(folder.iterdir()), folder
    manifest = json.loads((dest / exporter.MANIFEST).read_text())
    assert {p["file"] for t in manifest["tables"].values() for p in t["partitions"].values()} == files_under(dest)
    assert "--since 2026-05-01" in (dest / "README.md").read_text()

    again = run_export(warehouse, dest)                # widening brings the old partitions back
    for t in TABLES:
        assert exported_counts(dest, t) == warehouse_counts(warehouse, t)
        assert again["tables"][t]["partitions"] == full["tables"][t]["partitions"]

    r = CliRunner().invoke(cli, ["--db", str(warehouse), "export", str(dest), "--since", "last tuesday"])
    assert r.exit_code == 2


def test_partition_names_cannot_leave_the_folder():
    nasty = ["..", ".", "../..", "../../etc/passwd", "/etc", "a/b", "a\\b", "%2e%2e", "..%2F..", "\x00",
             "__HIVE_DEFAULT_PARTITION__", "x" * 400, "é/..", " ", "source=x/month=y"]
    seen = set()
    for value in nasty:
        seg = exporter.partition_value(value)
        assert "/" not in seg and "\\" not in seg and "\x00" not in seg and seg not in (".", "..", "")
        assert seg != exporter.NULL_PARTITION and len(seg) <= 200
        seen.add(seg)
        name = exporter.file_name("messages", value, value)
        assert "/" not in name and ".." not in name and name.endswith(".parquet") and len(name) < 200
        root = Path("/export")
        assert os.path.normpath(root / f"source={seg}" / name).startswith("/export/")
    assert len(seen) == len(nasty)                    # distinct values stay distinct
    assert exporter.partition_value(None) == exporter.partition_value("") == exporter.NULL_PARTITION
    assert exporter.partition_value("claude_code") == "claude_code"
    assert exporter.partition_value("2026-11") == "2026-11"


def test_a_malicious_source_value_stays_inside_dir_and_reads_back(tmp_path):
    """A warehouse whose data says source='../../escape' (and worse) still exports inside DIR."""
    evil = tmp_path / "evil.duckdb"
    values = ["../../escape", "/tmp/abs", "..", "a/b", "%2F"]
    con = duckdb.connect(str(evil))
    rows = ", ".join(f"('{v}', 's{i}', timestamp '2026-0{i + 1}-02 03:04:05')" for i, v in enumerate(values))
    con.execute(f"create table raw(source varchar, session_id varchar, ts timestamp); insert into raw values {rows}")
    con.execute("create view sessions as select session_id, source, ts as started_at, ts as ended_at from raw")
    con.execute("create view messages as select session_id, source, ts as \"timestamp\", 1::bigint as file_id, "
                "1::bigint as line_no from raw")
    con.execute("create view tool_calls as select session_id, source, ts as \"timestamp\", 1::bigint as file_id, "
                "1::bigint as line_no, 'c' as call_id from raw")
    con.execute("create view chain_messages as select session_id, source, ts as \"timestamp\", 1::bigint as file_id, "
                "1::bigint as seq from raw")
    con.close()
    box = tmp_path / "box"
    dest = box / "out"
    box.mkdir()
    outside_before = {p for p in tmp_path.rglob("*") if box not in p.parents and p != box}
    result = exporter.export(evil, dest)
    outside_after = {p for p in tmp_path.rglob("*") if box not in p.parents and p != box}
    assert outside_after == outside_before
    assert [p.name for p in box.iterdir()] == ["out"]
    real = os.path.realpath(dest)
    for p in dest.rglob("*"):
        assert os.path.realpath(p).startswith(real + os.sep)
        assert ".." not in p.relative_to(dest).parts
    for t in TABLES:
        assert result.tables[t].rows == len(values)
        assert sorted(exported_counts(dest, t)) == sorted(values)   # percent-encoding round-trips


def test_refuses_a_foreign_non_empty_folder_and_a_concurrent_export(warehouse, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    r = CliRunner().invoke(cli, ["--db", str(warehouse), "export", str(foreign)])
    assert r.exit_code == 2 and "not empty" in r.output
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]

    dest = tmp_path / "out"
    run_export(warehouse, dest)
    fd = os.open(dest / exporter.LOCK, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = CliRunner().invoke(cli, ["--db", str(warehouse), "export", str(dest)])
        assert r.exit_code == 1 and "another convarch export" in r.output
    finally:
        os.close(fd)


def test_a_crash_mid_export_leaves_every_partition_whole(warehouse, tmp_path, monkeypatch):
    dest = tmp_path / "out"
    run_export(warehouse, dest, "--since", "2026-05-02")   # the full export then adds and rewrites partitions
    before = tree_fingerprint(dest)

    real_replace = os.replace
    calls = {"n": 0}

    def flaky_replace(src, dst):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return real_replace(src, dst)

    monkeypatch.setattr(exporter.os, "replace", flaky_replace)
    with pytest.raises(OSError, match="disk full"):
        exporter.export(warehouse, dest)
    monkeypatch.setattr(exporter.os, "replace", real_replace)
    assert calls["n"] == 3

    # every file is a whole Parquet file (old or new), the manifest is the old one, no temp left
    after = tree_fingerprint(dest)
    assert after[exporter.MANIFEST] == before[exporter.MANIFEST]
    assert not list(dest.glob(".convarch-export-tmp-*"))
    for rel in files_under(dest):
        duckdb.execute(f"select count(*) from read_parquet('{dest / rel}')").fetchone()

    got = run_export(warehouse, dest)                   # the next run finishes the job
    for t in TABLES:
        assert exported_counts(dest, t) == warehouse_counts(warehouse, t)
    assert any(got["tables"][t]["written"] for t in TABLES)
    assert files_under(dest) == {p["file"] for t in json.loads((dest / exporter.MANIFEST).read_text())["tables"].values()
                                 for p in t["partitions"].values()}


def test_a_tampered_manifest_cannot_make_export_delete_other_files(warehouse, tmp_path):
    dest = tmp_path / "box" / "out"
    run_export(warehouse, dest)
    victims = [tmp_path / "box" / "victim.parquet", dest / "notes.txt", dest / "messages" / "keep.parquet"]
    for v in victims:
        v.write_text("mine")
    manifest_path = dest / exporter.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["tables"]["messages"]["partitions"].update({
        "x1": {"file": "../victim.parquet"}, "x2": {"file": "notes.txt"}, "x3": {"file": "messages/keep.parquet"},
        "x4": {"file": str(victims[0])}, "x5": {"file": "messages/source=a/month=b/../../keep.parquet"},
    })
    manifest_path.write_text(json.dumps(manifest))
    run_export(warehouse, dest)
    assert all(v.read_text() == "mine" for v in victims)


def test_a_first_export_that_crashed_can_be_resumed(warehouse, tmp_path, monkeypatch):
    dest = tmp_path / "out"
    real = exporter._remove_stale

    def power_cut(*args):
        raise OSError("power cut")

    monkeypatch.setattr(exporter, "_remove_stale", power_cut)
    with pytest.raises(OSError, match="power cut"):
        exporter.export(warehouse, dest)
    monkeypatch.setattr(exporter, "_remove_stale", real)
    assert files_under(dest)                            # partitions in place, no manifest listing them yet
    got = run_export(warehouse, dest)
    for t in TABLES:
        assert exported_counts(dest, t) == warehouse_counts(warehouse, t)
        assert got["tables"][t]["written"]
