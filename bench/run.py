"""`make bench`: convarch's speed and memory against limits measured in the same run.

Every figure is printed with its ratio to a baseline measured here, on the same files:
ingest against orjson parsing every line on all cores (the parse limit), against DuckDB's
own fastest raw parse, and against parsing every line and keeping it as zstd Parquet (the
least an archive of raw lines does); a no-change re-ingest against the full ingest; each
source's cost per file against Claude Code's (bench/sources.py); a rewritten store's pick-up
against reading it again whole (bench/rewrites.py); export and redaction (bench/reading.py); and so on. Results are also written as
JSON, and each run ends by comparing its figures with the run before it (bench/compare.py).

Usage: python bench/run.py [--mb 1000] [--chain-sessions 1000] [--chain-records 2000] [--source-files 500]
       [--rewrite-mb 60] [--quick] [--compare EARLIER.json | --no-compare]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from compare import add_arguments, comparison, earlier_results, run_facts  # noqa: E402
from generate import VERSION, generate, generate_chain_corpus  # noqa: E402
from reading import export_cost, redaction_rate  # noqa: E402
from pickups import append_tails, report as pick_ups_report, series as pick_up_series  # noqa: E402
from reading import report as reading_report  # noqa: E402
from rewrites import report as rewrites_report  # noqa: E402
from rewrites import rewrites  # noqa: E402
from sources import every_source, report  # noqa: E402

INGEST = """
import json, resource, sys, time
from pathlib import Path
from convarch.adapters import get
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from convarch.etl.look import Look
roots, workers, noticed = [], None, []
for arg in sys.argv[2:]:            # source=root, workers=N, or noticed=PATH (as watch is told)
    name, value = arg.split("=", 1)
    if name == "workers":
        workers = int(value)
    elif name == "noticed":
        noticed.append(value)
    else:
        adapter = get(name)
        roots.append((adapter, adapter.resolve_root(Path(value))))
t = time.perf_counter()
s = ingest(Layout(Path(sys.argv[1])), roots, workers=workers, look=Look(written=frozenset(noticed)) if noticed else None)
print(json.dumps({"seconds": time.perf_counter() - t, "index_seconds": s.index_seconds,
                  "extract_seconds": s.extract_seconds, "stage_seconds": s.stage_seconds,
                  "chain_seconds": s.chain_seconds, "compact_seconds": s.compact_seconds,
                  "records": s.records_added, "files": s.files_changed,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

def _parse_file(path: str) -> int:
    import orjson

    n = 0
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                orjson.loads(line)
                n += len(line)
    return n


def parse_limit(files: list[str]) -> float:
    """Seconds for orjson to parse every line of every file, on all cores."""
    t = time.perf_counter()
    with multiprocessing.Pool(os.cpu_count() or 2) as pool:
        sum(pool.imap_unordered(_parse_file, files, chunksize=8))
    return time.perf_counter() - t


def _parse_and_keep_file(job: tuple[str, str]) -> int:
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    path, out = job
    lines = []
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                orjson.loads(line)
                lines.append(line.rstrip(b"\n"))
    table = pa.table({"raw": pa.array(lines, pa.binary()).cast(pa.string())})
    pq.write_table(table, out, compression="zstd")
    return len(lines)


def archive_floor(files: list[str], scratch: Path) -> float:
    """Seconds, on all cores, for the least an archive that keeps every line can do: parse
    each line with orjson and write the lines, unchanged, to zstd Parquet (convarch's codec).
    convarch does this and stores the parsed columns and content blocks besides."""
    scratch.mkdir(parents=True, exist_ok=True)
    jobs = [(f, str(scratch / f"{i:06d}.parquet")) for i, f in enumerate(files)]
    t = time.perf_counter()
    with multiprocessing.Pool(os.cpu_count() or 2) as pool:
        sum(pool.imap_unordered(_parse_and_keep_file, jobs, chunksize=8))
    seconds = time.perf_counter() - t
    shutil.rmtree(scratch)
    return seconds


def duckdb_parse(globs: list[str]) -> float:
    """Seconds for DuckDB's fastest raw path: lines read as text, each parsed once (into a
    Claude-shaped struct; a Codex line is parsed just the same and yields nulls)."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    t = time.perf_counter()
    con.execute(
        "select count(*), count(j.uuid) from (select json_transform(line, "
        "'{\"type\":\"VARCHAR\",\"uuid\":\"VARCHAR\",\"parentUuid\":\"VARCHAR\",\"timestamp\":\"VARCHAR\","
        "\"message\":{\"role\":\"VARCHAR\",\"content\":\"JSON\"}}') as j from read_csv(?, columns={'line':'VARCHAR'}, "
        "delim=E'\\x01', quote='', escape='', header=false, auto_detect=false, max_line_size=16000000))",
        [globs],
    ).fetchall()
    return time.perf_counter() - t


def run_ingest(db: Path, corpus: Path, workers: int | None = None, noticed: list[str] = ()) -> dict:
    """Ingest every store of a generated corpus (its `claude/` and `codex/` folders) in a
    process of its own, so its peak RSS is its own; with `workers`, that many, else the
    default for this machine; with `noticed`, looking only at those files, as `watch` does
    when change notices name them."""
    stores = [f"{name}={corpus / folder}" for name, folder in (("claude_code", "claude"), ("codex", "codex"))
              if (corpus / folder).is_dir()]
    if workers is not None:
        stores.append(f"workers={workers}")
    stores += [f"noticed={path}" for path in noticed]
    out = subprocess.run([sys.executable, "-c", INGEST, str(db), *stores], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"ingest failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def convarch_listed(db: Path) -> list[str]:
    """The Parquet files the published catalog reads (retired ones still on disk excluded)."""
    manifest = json.loads((db.parent / f"{db.stem}.d" / "manifest.json").read_text())
    return [f for files in manifest["files"].values() for f in files]


def tree_bytes(root: Path) -> tuple[int, list[str]]:
    files = [str(p) for p in root.rglob("*.jsonl")]
    return sum(os.path.getsize(f) for f in files), files


def cached(folder: Path, make, dest: Path):
    """Generate a corpus once per size (generation is deterministic) and give each run a
    fresh copy, since the run appends to some of its files."""
    marker = folder / ".generated.json"
    info = json.loads(marker.read_text()) if marker.exists() else None
    if info is None or (isinstance(info, dict) and info.get("version") != VERSION):   # made by an older generator
        shutil.rmtree(folder, ignore_errors=True)
        info = make(folder)
        marker.write_text(json.dumps(info))
    shutil.copytree(folder, dest, ignore=shutil.ignore_patterns(".generated.json"))
    return json.loads(marker.read_text())


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "n/a"


STAGE_NAMES = {"copy": "copy", "cut": "cutting lines", "parse": "records SQL", "blocks": "blocks SQL",
               "write_records": "records to Parquet", "write_blocks": "blocks to Parquet",
               "quarantine": "quarantine"}


def stages_report(i: dict, limit_s: float, mb: float) -> str:
    """Where the ingest's time went (seconds summed over the workers, the rest being
    planning, publishing and waiting), and the ratio the records SQL alone would allow: what
    stops the ingest ratio going higher, measured in this run."""
    stages, workers = i["stage_seconds"], i["workers"]
    busy = i["seconds_without_index"] * workers
    rest = busy - sum(stages.values())
    parts = " · ".join(f"{STAGE_NAMES[k]} {v:.2f} ({v / busy:.0%})"
                       for k, v in sorted(stages.items(), key=lambda kv: -kv[1])) + f" · the rest {rest:.2f}"
    alone = limit_s / (stages["parse"] / workers) if stages.get("parse") else 0
    return (f"  where it goes   {busy:.1f} worker-seconds ({workers} workers): {parts}\n"
            f"  records SQL     alone, ratio {alone:.3f} to the parse limit: parsing every line into typed columns"
            f" in DuckDB costs {stages.get('parse', 0) * 1000 / mb:.1f} worker-seconds a GB, and the writes"
            " of the raw lines and blocks come on top")


def machine() -> dict:
    from convarch.etl.workers import default_workers

    return {"platform": platform.platform(), "cpus": os.cpu_count(), "workers": default_workers(),
            "python": platform.python_version()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1000, help="size of the mixed corpus")
    ap.add_argument("--chain-sessions", type=int, default=1000)
    ap.add_argument("--chain-records", type=int, default=2000)
    ap.add_argument("--source-files", type=int, default=500,
                    help="about this many files of each source in the every-source section (0: skip it)")
    ap.add_argument("--rewrite-mb", type=int, default=60,
                    help="size of each store in the rewritten-stores section (0: skip it)")
    ap.add_argument("--pick-ups", type=int, default=20,
                    help="pick-ups in a row, each of 10 lines appended to the same 5 files, as under watch")
    ap.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    add_arguments(ap, "latest")
    args = ap.parse_args()
    baseline = earlier_results(args.out, "latest", args.compare, args.no_compare)
    if args.quick:
        args.mb, args.chain_sessions, args.chain_records, args.source_files, args.rewrite_mb = 50, 50, 500, 100, 5
        args.pick_ups = min(args.pick_ups, 5)
    work = args.out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    from convarch.etl.workers import MAX_WORKERS, default_workers

    results: dict = {"run": run_facts(), "machine": machine(),
                     "params": {k: v for k, v in vars(args).items() if k not in ("out", "compare", "no_compare")}}

    print(f"generating a ~{args.mb} MB corpus …", flush=True)
    corpus = cached(args.out / "cache" / f"mixed-{args.mb}mb", lambda d: generate(d, args.mb), work / "corpus")
    nbytes, files = tree_bytes(work / "corpus")
    mb = nbytes / 1e6
    results["corpus"] = corpus | {"mb": round(mb, 1)}

    limit_s = parse_limit(files)
    floor_s = archive_floor(files, work / "floor")
    duck_s = duckdb_parse([str(work / "corpus" / "claude" / "projects" / "**" / "*.jsonl"),
                           str(work / "corpus" / "codex" / "sessions" / "**" / "*.jsonl")])
    db = work / "wh" / "convarch.duckdb"
    full = run_ingest(db, work / "corpus")
    again = run_ingest(db, work / "corpus")
    appended = sorted(f for f in files if "/claude/" in f)[:3] + sorted(f for f in files if "/codex/" in f)[:2]
    append_tails(appended)
    t = time.perf_counter()
    append = run_ingest(db, work / "corpus")
    append["wall"] = time.perf_counter() - t
    # memory follows the workers, not the cores: a machine with more cores than this one
    # starts up to MAX_WORKERS, so their peak is measured here too (as threads)
    if default_workers() < MAX_WORKERS:
        most = run_ingest(work / "wh_most" / "convarch.duckdb", work / "corpus", MAX_WORKERS)
        shutil.rmtree(work / "wh_most", ignore_errors=True)
    else:
        most = full

    # the search index and the chains are derived data, and merging small files is upkeep:
    # each is reported apart
    ingest_s = full["seconds"] - full["index_seconds"] - full["chain_seconds"] - full["compact_seconds"]
    ingest_mbps = mb / ingest_s
    results["ingest"] = {
        "full_seconds": round(full["seconds"], 2), "index_seconds": round(full["index_seconds"], 2),
        "chain_seconds": round(full["chain_seconds"], 2), "compact_seconds": round(full["compact_seconds"], 2),
        "seconds_without_index": round(ingest_s, 2), "mb_per_s": round(ingest_mbps, 1),
        "mb_per_s_with_index": round(mb / full["seconds"], 1),
        "parse_limit_mb_per_s": round(mb / limit_s, 1), "duckdb_raw_parse_mb_per_s": round(mb / duck_s, 1),
        "ratio_to_parse_limit": round(ingest_mbps / (mb / limit_s), 3),
        "ratio_to_duckdb_parse": round(ingest_mbps / (mb / duck_s), 3),
        "archive_floor_mb_per_s": round(mb / floor_s, 1),
        "archive_floor_ratio_to_parse_limit": round(limit_s / floor_s, 3),
        "ratio_to_archive_floor": round(ingest_mbps / (mb / floor_s), 3),
        "records": full["records"], "peak_rss_mb": round(full["peak_rss_mb"], 1),
        "max_workers": MAX_WORKERS, "peak_rss_mb_max_workers": round(most["peak_rss_mb"], 1),
        "no_change_seconds": round(again["seconds"], 3),
        "no_change_ratio_to_full": round(again["seconds"] / full["seconds"], 4),
        "append_10_lines_x5_seconds": round(append["seconds"], 3), "append_records": append["records"],
        "append_compact_seconds": round(append["compact_seconds"], 3),
        "stage_seconds": full["stage_seconds"],
        "workers": default_workers(),
    }

    import duckdb  # noqa: F401

    sys.path.insert(0, str(HERE.parent))
    import convarch
    from convarch.handoff import build

    con = convarch.connect(db)
    listed = convarch_listed(db)           # files merged away but inside their grace are not the lake
    lake = db.parent / f"{db.stem}.d" / "lake"
    index_bytes = sum(os.path.getsize(f) for f in listed
                      if Path(f).is_relative_to(lake / "postings") or Path(f).is_relative_to(lake / "search_docs"))
    lake_bytes = sum(os.path.getsize(f) for f in listed)
    lake_files = len(listed)
    con.close()
    lat = []
    import random

    rng = random.Random(3)
    from generate import WORDS

    for _ in range(30):
        q = " ".join(rng.sample(WORDS[:30], 2))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "convarch.cli", "--db", str(db), "search", q, "--json", "--limit", "10"],
                       capture_output=True, check=False)
        lat.append(time.perf_counter() - t)
    noop = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "convarch.cli", "--version"], capture_output=True, check=True)
        noop.append(time.perf_counter() - t)
    lat.sort()
    results["search"] = {
        "p50_ms": round(statistics.median(lat) * 1000, 1), "p95_ms": round(lat[int(len(lat) * 0.95) - 1] * 1000, 1),
        "cli_startup_ms": round(statistics.median(noop) * 1000, 1),
        "index_mb": round(index_bytes / 1e6, 1), "index_ratio_to_corpus": round(index_bytes / nbytes, 3),
        "lake_mb": round(lake_bytes / 1e6, 1), "lake_ratio_to_corpus": round(lake_bytes / nbytes, 3),
        "lake_files": lake_files,
    }

    results["export"] = export_cost(db, work / "export", full["seconds"], mb)
    results["redact"] = redaction_rate(files)

    if picked := pick_up_series(appended, args.pick_ups, lambda: run_ingest(db, work / "corpus", noticed=appended),
                                lambda: len(convarch_listed(db))):
        results["pick_ups"] = picked

    print("chain corpus …", flush=True)
    cdb = work / "chains" / "convarch.duckdb"
    cbytes = cached(args.out / "cache" / f"chains-{args.chain_sessions}x{args.chain_records}",
                    lambda d: generate_chain_corpus(d, args.chain_sessions, args.chain_records), work / "chain_corpus")
    cingest = run_ingest(cdb, work / "chain_corpus")
    con = convarch.connect(cdb)
    t = time.perf_counter()
    n = con.execute("select count(*) from chain_messages").fetchone()[0]
    read_s = time.perf_counter() - t
    con.close()
    chain_s = cingest["chain_seconds"]                       # built once, at ingest
    parse_s = cingest["seconds"] - chain_s - cingest["index_seconds"] - cingest["compact_seconds"]
    results["chains"] = {"sessions": args.chain_sessions, "records_per_session": args.chain_records,
                         "chain_rows": n, "build_seconds": round(chain_s, 2), "read_all_seconds": round(read_s, 2),
                         "parse_load_seconds": round(parse_s, 2),
                         "ratio_to_parse_load": round(chain_s / parse_s, 3), "corpus_mb": round(cbytes / 1e6, 1)}

    hdb = work / "handoff" / "convarch.duckdb"
    generate_chain_corpus(work / "handoff_corpus", 1, 20000, seed=5)
    run_ingest(hdb, work / "handoff_corpus")
    con = convarch.connect(hdb)
    sid = con.execute("select session_id from sessions").fetchone()[0]
    t = time.perf_counter()
    doc = build(con, sid)
    render_s = time.perf_counter() - t
    con.close()
    results["handoff"] = {"turns": 10000, "records": 20000, "render_seconds": round(render_s, 2), "chars": len(doc)}

    if args.source_files:
        print("every source …", flush=True)
        results["sources"] = every_source(INGEST, work / "sources", args.source_files)

    if args.rewrite_mb:
        print("rewritten stores …", flush=True)
        (work / "rewrites").mkdir()
        results["rewrites"] = rewrites(INGEST, work / "rewrites", args.rewrite_mb)

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (args.out / f"results-{stamp}.json").write_text(json.dumps(results, indent=2))
    (args.out / "latest.json").write_text(json.dumps(results, indent=2))
    i, s, c, h = results["ingest"], results["search"], results["chains"], results["handoff"]
    print(f"""
corpus            {mb:.0f} MB ({corpus['codex_bytes'] / nbytes:.0%} Codex rollouts, the rest Claude Code), {corpus['files']} files, {i['records']} records
ingest            {i['seconds_without_index']} s = {i['mb_per_s']} MB/s (snapshot, parse, load, publish)
  + derived data  search index {i['index_seconds']} s, chains {i['chain_seconds']} s; merging small files {i['compact_seconds']} s; all in {i['mb_per_s_with_index']} MB/s
  vs parse limit  orjson on {os.cpu_count()} cores {i['parse_limit_mb_per_s']} MB/s -> ratio {i['ratio_to_parse_limit']} (target >= 0.3)
  vs DuckDB parse read_csv lines + json_transform {i['duckdb_raw_parse_mb_per_s']} MB/s -> ratio {i['ratio_to_duckdb_parse']}
  vs keeping raw  orjson parse + the lines alone to zstd Parquet {i['archive_floor_mb_per_s']} MB/s -> ratio {i['ratio_to_archive_floor']} (this floor is {i['archive_floor_ratio_to_parse_limit']} of the parse limit)
{stages_report(i, limit_s, mb)}
  peak RSS        {i['peak_rss_mb']} MB with {i['workers']} workers; {i['peak_rss_mb_max_workers']} MB with {i['max_workers']}, the most a run starts on any machine (target < 1024 for 1 GB)
no-change rerun   {i['no_change_seconds']} s -> ratio to full {i['no_change_ratio_to_full']} (target < 0.02)
append 10 x 5     {i['append_10_lines_x5_seconds']} s for {i['append_records']} records (of which merging small files {i['append_compact_seconds']} s)
{pick_ups_report(results.get("pick_ups"))}
search            p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms per CLI call (process start alone {s['cli_startup_ms']} ms)
  index           {s['index_mb']} MB = {s['index_ratio_to_corpus']} of the corpus; whole lake {s['lake_ratio_to_corpus']} in {s['lake_files']} Parquet files
chains            {c['sessions']} x {c['records_per_session']}: built in {c['build_seconds']} s at ingest -> ratio to parsing and loading them {c['ratio_to_parse_load']}; reading all {c['chain_rows']} rows {c['read_all_seconds']} s
handoff           {h['turns']:,} turns ({h['records']:,} records) rendered in {h['render_seconds']} s ({h['chars']} chars)
{reading_report(results["export"], results["redact"])}
results           {args.out / 'latest.json'}""")
    if "sources" in results:
        print(report(results["sources"]))
    if "rewrites" in results:
        print(rewrites_report(results["rewrites"]))
    if (compared := comparison(baseline, results, wanted=not args.no_compare)) is not None:
        print(compared)


if __name__ == "__main__":
    main()
