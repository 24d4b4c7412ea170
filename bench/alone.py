"""Running one section of the bench on its own (`make bench-sources`, `make bench-rewrites`):
the section's own option, a work folder removed afterwards, its results written as JSON beside
the full bench's and its report printed."""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_alone(name: str, option: str, default: int, help_text: str, measure, report) -> None:
    """`measure(ingest_script, work, value)` gives the section's results; `report` prints them."""
    sys.path.insert(0, str(HERE))
    from run import INGEST

    ap = argparse.ArgumentParser()
    ap.add_argument(f"--{option}", type=int, default=default, help=help_text)
    ap.add_argument("--out", type=Path, default=HERE / "out")
    args = ap.parse_args()
    work = args.out / f"work-{name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    res = measure(INGEST, work, getattr(args, option))
    shutil.rmtree(work, ignore_errors=True)
    (args.out / f"{name}-latest.json").write_text(json.dumps(res, indent=2))
    print(report(res))
