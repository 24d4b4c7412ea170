"""What using the archive costs once it is loaded, for `make bench`: `convarch export` of the
whole corpus (time against the full ingest, peak RSS against the corpus) and redaction as
`ingest --redact` does it (MB/s against json.loads of the same lines on the same core)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

EXPORT = """
import json, resource, sys, time
from convarch.etl.export import export
t = time.perf_counter()
r = export(sys.argv[1], sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - t, "rows": sum(x.rows for x in r.tables.values()),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def export_cost(db: Path, dest: Path, full_ingest_s: float, corpus_mb: float) -> dict:
    """Export the warehouse at `db` into `dest` in a process of its own, so its peak RSS is
    its own."""
    out = subprocess.run([sys.executable, "-c", EXPORT, str(db), str(dest)], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"export failed:\n{out.stderr}")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return {"seconds": round(got["seconds"], 2), "rows": got["rows"],
            "ratio_to_full_ingest": round(got["seconds"] / full_ingest_s, 3),
            "peak_rss_mb": round(got["peak_rss_mb"], 1),
            "peak_rss_ratio_to_corpus": round(got["peak_rss_mb"] / corpus_mb, 3)}


def redaction_rate(files: list[str], most_bytes: int = 40_000_000) -> dict:
    """Redacting Claude Code lines as `ingest --redact` stores them (a text pass, then each
    JSON string), against json.loads of the same lines, on one thread and then on the pool of
    processes ingest spreads a batch over."""
    from convarch.etl import redact_pool
    from convarch.etl.redact import Redactor, redact_json_line

    lines, n = [], 0
    for f in sorted(f for f in files if "/claude/" in f):
        for line in Path(f).read_text(encoding="utf-8").splitlines():
            lines.append(line)
            n += len(line.encode())
        if n >= most_bytes:
            break
    t = time.perf_counter()
    for line in lines:
        json.loads(line)
    parse_s = time.perf_counter() - t
    r = Redactor()
    t = time.perf_counter()
    for line in lines:
        redact_json_line(line, r)
    redact_s = time.perf_counter() - t
    # as ingest hands a batch to its pool of processes (etl/redact_pool.py), started first
    redact_pool.redact_lines(lines[:2000], Redactor())
    t = time.perf_counter()
    redact_pool.redact_lines(lines, Redactor())
    pool_s = time.perf_counter() - t
    return {"mb": round(n / 1e6, 1), "mb_per_s": round(n / 1e6 / redact_s, 1),
            "json_loads_mb_per_s": round(n / 1e6 / parse_s, 1), "ratio_to_json_loads": round(parse_s / redact_s, 3),
            "pool_processes": redact_pool.processes(), "pool_mb_per_s": round(n / 1e6 / pool_s, 1),
            "pool_ratio_to_one_thread": round(redact_s / pool_s, 3)}


def report(x: dict, r: dict) -> str:
    return (f"export            {x['rows']:,} rows in {x['seconds']} s -> ratio to the full ingest "
            f"{x['ratio_to_full_ingest']}; peak RSS {x['peak_rss_mb']} MB = {x['peak_rss_ratio_to_corpus']} of the corpus\n"
            f"redaction         {r['mb_per_s']} MB/s on {r['mb']} MB of lines (ingest --redact) vs json.loads "
            f"on the same core {r['json_loads_mb_per_s']} MB/s -> ratio {r['ratio_to_json_loads']}\n"
            f"  on processes    {r['pool_mb_per_s']} MB/s with {r['pool_processes']} processes, as ingest redacts a batch "
            f"-> ratio to one thread {r['pool_ratio_to_one_thread']}")
