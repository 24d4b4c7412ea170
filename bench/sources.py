"""Every source at scale: the bench's big corpus has two stores of large transcripts, where
cost follows bytes. Many stores are made of small files instead (a JSON file per event in
OpenHands, several per task in Cline and Roo Code, a database per project), where cost
follows files, and a per-file cost that hides in the big corpus is minutes for their users.

Each source's contract store (fixtures/<source>/contract, the agent's own layout) is copied
until the source has about `files_per_source` files, and each source is ingested alone in a
process of its own. Its time to snapshot, parse and load them (the run's fixed costs,
planning and publishing, apart) per file and per record is printed with its ratio to Claude
Code's in the same run, beside the time to read the same files once. Then every copy of every
source is ingested in one run, as `convarch ingest --all` does, and again with nothing
changed. The copies repeat their session ids, so the sessions and chains of this archive are
not a real store's; the loading timed per source does not depend on them.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MAX_COPIES = 200          # a store that is one database: 200 copies is a lot of databases


def contract_stores() -> dict[str, Path]:
    """Each source's own store in the agent's layout (Claude Code's is its demo)."""
    stores = {}
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for name in ("contract", "demo"):
            if (folder / name).is_dir():
                stores[folder.name] = folder / name
                break
    return stores


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.name.startswith("build_contract")]


def make_copies(source: str, store: Path, dest: Path, files_per_source: int) -> list[Path]:
    """Copies of one store, each a root of its own, until there are about files_per_source."""
    n = len(_files(store))
    copies = max(1, min(MAX_COPIES, math.ceil(files_per_source / max(n, 1))))
    roots = []
    for i in range(copies):
        root = dest / source / f"copy{i:03d}"
        shutil.copytree(store, root, symlinks=True, ignore=shutil.ignore_patterns("build_contract*", "README*"))
        roots.append(root)
    return roots


def read_whole(roots: list[Path]) -> float:
    """Seconds to open and read every file once, on one thread: the least a snapshot does."""
    t = time.perf_counter()
    for root in roots:
        for p in _files(root):
            with open(p, "rb") as fh:
                fh.read()
    return time.perf_counter() - t


def run(ingest_script: str, db: Path, targets: list[tuple[str, Path]]) -> dict:
    out = subprocess.run([sys.executable, "-c", ingest_script, str(db), *(f"{s}={r}" for s, r in targets)],
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"ingest failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def every_source(ingest_script: str, work: Path, files_per_source: int) -> dict:
    """Per-source and all-together figures; see the module docstring."""
    copies = work / "copies"
    per_source: dict[str, dict] = {}
    everything: list[tuple[str, Path]] = []
    for source, store in contract_stores().items():
        roots = make_copies(source, store, copies, files_per_source)
        everything += [(source, r) for r in roots]
        r = run(ingest_script, work / "wh" / source / "convarch.duckdb", [(source, r) for r in roots])
        read_s = read_whole(roots)
        load_s = r["extract_seconds"]       # snapshot, parse, load: without the run's fixed costs
        per_source[source] = {
            "copies": len(roots), "files": r["files"], "records": r["records"],
            "mb": round(sum(p.stat().st_size for root in roots for p in _files(root)) / 1e6, 2),
            "seconds": round(r["seconds"], 3), "load_seconds": round(load_s, 3),
            "chain_seconds": round(r["chain_seconds"], 3), "index_seconds": round(r["index_seconds"], 3),
            "ms_per_file": round(1000 * load_s / max(r["files"], 1), 3),
            "us_per_record": round(1e6 * load_s / max(r["records"], 1), 1),
            "read_whole_ms_per_file": round(1000 * read_s / max(r["files"], 1), 4),
        }
    base = per_source.get("claude_code")
    for fig in per_source.values():
        fig["per_file_ratio_to_claude_code"] = round(fig["ms_per_file"] / base["ms_per_file"], 2) if base else None
        fig["per_record_ratio_to_claude_code"] = round(fig["us_per_record"] / base["us_per_record"], 2) if base else None
    db = work / "wh" / "all" / "convarch.duckdb"
    full = run(ingest_script, db, everything)
    again = run(ingest_script, db, everything)
    together = {"sources": len(per_source), "roots": len(everything), "files": full["files"], "records": full["records"],
                "seconds": round(full["seconds"], 2), "chain_seconds": round(full["chain_seconds"], 2),
                "index_seconds": round(full["index_seconds"], 2), "peak_rss_mb": round(full["peak_rss_mb"], 1),
                "no_change_seconds": round(again["seconds"], 3),
                "no_change_ratio_to_full": round(again["seconds"] / full["seconds"], 4)}
    shutil.rmtree(copies, ignore_errors=True)
    return {"files_per_source": files_per_source, "per_source": per_source, "together": together}


def report(res: dict) -> str:
    """The printed table: a line per source, slowest per file first, and the run of them all."""
    rows = sorted(res["per_source"].items(), key=lambda kv: -kv[1]["ms_per_file"])
    lines = [f"every source      copies of each contract store, ~{res['files_per_source']} files a source, "
             f"each source alone (ratios: to Claude Code in this run)",
             f"  {'source':14s} {'files':>6s} {'records':>8s} {'MB':>6s} {'load s':>7s} {'ms/file':>8s} {'x':>5s} "
             f"{'us/record':>9s} {'x':>5s} {'read ms/file':>12s}"]
    for source, f in rows:
        lines.append(f"  {source:14s} {f['files']:6d} {f['records']:8d} {f['mb']:6.1f} {f['load_seconds']:7.2f} "
                     f"{f['ms_per_file']:8.2f} {f['per_file_ratio_to_claude_code']:5.1f} {f['us_per_record']:9.0f} "
                     f"{f['per_record_ratio_to_claude_code']:5.1f} {f['read_whole_ms_per_file']:12.3f}")
    t = res["together"]
    lines.append(f"  all together    {t['files']} files of {t['sources']} sources in {t['roots']} roots, {t['records']} records: "
                 f"{t['seconds']} s (chains {t['chain_seconds']} s, index {t['index_seconds']} s), peak RSS {t['peak_rss_mb']} MB")
    lines.append(f"  no-change rerun {t['no_change_seconds']} s -> ratio to full {t['no_change_ratio_to_full']}")
    return "\n".join(lines)


def main() -> None:
    """`python bench/sources.py [--files N]`: this section of the bench alone."""
    from alone import run_alone

    run_alone("sources", "files", 500, "about this many files of each source", every_source, report)


if __name__ == "__main__":
    main()
