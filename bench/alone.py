"""Running one section of the bench on its own (`make bench-sources`, `make bench-rewrites`):
the section's own option, a work folder removed afterwards, its results written as JSON beside
the full bench's, its report printed and compared with the section's run before it."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The full bench's name for each section's option, so the two runs' sizes compare.
PARAMS = {"rewrites": "rewrite_mb", "sources": "source_files"}


def run_alone(name: str, option: str, default: int, help_text: str, measure, report) -> None:
    """`measure(ingest_script, work, value)` gives the section's results; `report` prints them."""
    sys.path.insert(0, str(HERE))
    from compare import add_arguments, comparison, earlier_results, run_facts
    from run import INGEST, machine

    ap = argparse.ArgumentParser()
    ap.add_argument(f"--{option}", type=int, default=default, help=help_text)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    add_arguments(ap, f"{name}-latest")
    args = ap.parse_args()
    baseline = earlier_results(args.out, f"{name}-latest", args.compare, args.no_compare)
    facts = run_facts()
    work = args.out / f"work-{name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    res = measure(INGEST, work, getattr(args, option))
    shutil.rmtree(work, ignore_errors=True)
    results = {"run": facts, "machine": machine(), "params": {PARAMS.get(name, option): getattr(args, option)},
               name: res}
    (args.out / f"{name}-latest.json").write_text(json.dumps(results, indent=2))
    print(report(res))
    if (compared := comparison(baseline, results)) is not None:
        print(compared)
