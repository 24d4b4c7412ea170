"""Two bench runs side by side: each figure then and now, and whether it moved beyond noise.

A single run's ratios say how convarch stands against its limits; whether a change made it
faster needs an earlier run. This project's virtual machine runs at other speeds through a day
(orjson parsed the bench corpus at 1,076 and 796 MB/s an hour apart), so times and rates are
first scaled by how fast the machine ran in each run (machine_speed, from three same-run
baselines); what noise is left is up to a fifth between runs of the same code, so a move within
`noise` (20% by default) is called noise, not progress. `--quick` runs moved by up to half
between two runs of the same code in a row, and their timings are never judged. Figures of a
section compare only between runs of the same sizes (fixed costs weigh more in a small corpus);
ratios to a baseline measured in the same run compare across machines too, times, rates and
sizes only on the same machine. A figure that does not compare is listed but not judged. Counts
of records loaded on a pick-up are behaviour, not speed: any change to one is reported.

`make bench` compares with the run before it by itself; by hand:
    python bench/compare.py EARLIER.json [LATER.json] [--noise 0.2] [--json]
(LATER defaults to bench/out/latest.json).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOISE = 0.20


@dataclass(frozen=True)
class Figure:
    """A figure of the results: `path` into the JSON ("*": every key there, in both runs),
    whether `higher` or `lower` is better ("same" for counts, where any change counts), and
    its kind: "ratio" (to a same-run baseline), "time" or "rate" (scaled by the machine's
    speed in each run, see machine_speed), "size" or "count"."""
    path: tuple[str, ...]
    label: str
    better: str
    kind: str


FIGURES = (
    Figure(("ingest", "ratio_to_parse_limit"), "ingest / parse limit", "higher", "ratio"),
    Figure(("ingest", "ratio_to_archive_floor"), "ingest / floor of keeping raw lines", "higher", "ratio"),
    Figure(("ingest", "ratio_to_duckdb_parse"), "ingest / DuckDB raw parse", "higher", "ratio"),
    Figure(("ingest", "no_change_ratio_to_full"), "no-change rerun / full ingest", "lower", "ratio"),
    Figure(("ingest", "mb_per_s"), "ingest MB/s", "higher", "rate"),
    Figure(("ingest", "mb_per_s_with_index"), "ingest MB/s with index and chains", "higher", "rate"),
    Figure(("ingest", "index_seconds"), "search index s", "lower", "time"),
    Figure(("ingest", "peak_rss_mb"), "peak RSS MB", "lower", "size"),
    Figure(("ingest", "peak_rss_mb_max_workers"), "peak RSS MB, most workers", "lower", "size"),
    Figure(("ingest", "append_10_lines_x5_seconds"), "append 10 lines x 5 s", "lower", "time"),
    Figure(("pick_ups", "mean_seconds"), "pick-ups in a row: mean s", "lower", "time"),
    Figure(("pick_ups", "compact_seconds"), "pick-ups in a row: merging s", "lower", "time"),
    Figure(("ingest", "records"), "records loaded", "same", "count"),
    Figure(("search", "p50_ms"), "search p50 ms", "lower", "time"),
    Figure(("search", "p95_ms"), "search p95 ms", "lower", "time"),
    Figure(("search", "index_ratio_to_corpus"), "index / corpus bytes", "lower", "ratio"),
    Figure(("search", "lake_ratio_to_corpus"), "lake / corpus bytes", "lower", "ratio"),
    Figure(("chains", "ratio_to_parse_load"), "chains / parsing and loading them", "lower", "ratio"),
    Figure(("chains", "build_seconds"), "chains build s", "lower", "time"),
    Figure(("handoff", "render_seconds"), "handoff render s", "lower", "time"),
    Figure(("export", "ratio_to_full_ingest"), "export / full ingest", "lower", "ratio"),
    Figure(("export", "peak_rss_mb"), "export peak RSS MB", "lower", "size"),
    Figure(("redact", "ratio_to_json_loads"), "redaction / json.loads", "higher", "ratio"),
    Figure(("redact", "pool_ratio_to_one_thread"), "redaction on processes / one thread", "higher", "ratio"),
    Figure(("sources", "together", "no_change_ratio_to_full"), "every source: no-change / full", "lower", "ratio"),
    Figure(("sources", "together", "seconds"), "every source together s", "lower", "time"),
    # each source's ms a file, not its ratio to Claude Code's: that baseline is itself a
    # third of a second of loading, and its noise moved every source's ratio at once
    Figure(("sources", "per_source", "*", "ms_per_file"), "ms per file: {}", "lower", "time"),
    Figure(("rewrites", "*", "ratio_to_whole"), "pick-up / read whole: {}", "lower", "ratio"),
    Figure(("rewrites", "*", "tail_ratio_to_whole"), "pick-up / read whole: {}, tail rewritten", "lower", "ratio"),
    Figure(("rewrites", "*", "taken_up_ratio_to_whole"), "pick-up / read whole: {}, taken up", "lower", "ratio"),
    Figure(("rewrites", "*", "turn_ratio_to_whole"), "pick-up / read whole: {}, a turn", "lower", "ratio"),
    Figure(("rewrites", "*", "records"), "records a pick-up loads: {}", "same", "count"),
    Figure(("rewrites", "*", "taken_up_records"), "records a pick-up loads: {}, taken up", "same", "count"),
    Figure(("rewrites", "*", "turn_records"), "records a pick-up loads: {}, a turn", "same", "count"),
)
#: The parameters that size each section: absolute figures of a section compare only when the
#: two runs used the same.
SIZES = {"ingest": ("mb",), "search": ("mb",), "chains": ("chain_sessions", "chain_records"),
         "handoff": (), "sources": ("source_files",), "rewrites": ("rewrite_mb",), "export": ("mb",), "redact": ("mb",),
         "pick_ups": ("mb", "pick_ups")}
SECTIONS = tuple(SIZES)


def run_facts() -> dict:
    """When this run started and from which commit (None outside a git checkout), kept in
    the results so a later comparison can say what it is compared with."""
    try:
        commit = subprocess.run(["git", "-C", str(HERE), "describe", "--always", "--dirty", "--abbrev=10"],
                                capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit}


def load(path: Path) -> dict:
    """A results file; a section written alone before sections carried their own name
    (bench/alone.py) is recognised by its keys."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a bench results file")
    if not any(k in data for k in (*SECTIONS, "machine")):
        if "per_source" in data:
            data = {"sources": data}
        elif data and all(isinstance(v, dict) and "ratio_to_whole" in v for v in data.values()):
            data = {"rewrites": data}
        else:
            raise ValueError(f"{path}: not a bench results file")
    data.setdefault("run", {})
    if not data["run"].get("started_at"):
        m = re.search(r"(\d{8}T\d{6})", path.name)
        stamp = time.strptime(m.group(1), "%Y%m%dT%H%M%S") if m else time.localtime(path.stat().st_mtime)
        data["run"] = {**data["run"], "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", stamp)}
    return data


def add_arguments(ap: argparse.ArgumentParser, name: str) -> None:
    """The options of a bench run that choose what it is compared with (see earlier_results)."""
    ap.add_argument("--compare", type=Path, metavar="EARLIER.json",
                    help=f"results to compare this run with (default: the last run's, out/{name}.json)")
    ap.add_argument("--no-compare", action="store_true", help="do not compare with an earlier run")


def comparison(baseline: tuple[Path, dict] | None, results: dict, wanted: bool = True) -> str | None:
    """The printed comparison of a finished run's results with `baseline`; when there is none
    and one was `wanted`, a line saying so (a first run on a machine is otherwise silent about
    why nothing was compared)."""
    if baseline is None:
        return ("compared          with nothing: no earlier run's results were found or could be read"
                if wanted else None)
    return report(baseline[0], baseline[1], results, compare(baseline[1], results))


def earlier_results(out: Path, name: str = "latest", choice: Path | None = None,
                    off: bool = False) -> tuple[Path, dict] | None:
    """What a run about to start is compared with: `choice` when given, else the last run's
    results in `out` (read now, before this run writes over them); None when off, or when
    there is no earlier run or its file cannot be read (said on stderr, the run goes on)."""
    if off:
        return None
    path = choice or out / f"{name}.json"
    if not path.exists():
        if choice is not None:
            sys.exit(f"--compare: {path} does not exist")
        return None
    try:
        return path, load(path)
    except (ValueError, OSError) as exc:
        print(f"not comparing with {path}: {exc}", file=sys.stderr)
        return None


def _values(data: dict, path: tuple[str, ...], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], float]:
    """Numbers at `path` in `data`, keyed by the keys the wildcards took."""
    if not path:
        return {prefix: data} if isinstance(data, (int, float)) and not isinstance(data, bool) else {}
    if not isinstance(data, dict):
        return {}
    head, rest = path[0], path[1:]
    if head == "*":
        found = {}
        for key in sorted(data):
            found.update(_values(data[key], rest, (*prefix, key)))
        return found
    return _values(data[head], rest, prefix) if head in data else {}


#: The same-run baselines, each a fixed job on the same corpus that convarch's code does not
#: touch: orjson parsing it on all cores, DuckDB's raw parse of it, and orjson plus writing the
#: raw lines to zstd Parquet. Each drifts with the machine, but not always together: between two
#: runs of 2 December the parse limit rose by 1.38 while the other two rose by 1.27 and 1.26.
SPEED_BASELINES = ("parse_limit_mb_per_s", "duckdb_raw_parse_mb_per_s", "archive_floor_mb_per_s")


def machine_speed(earlier: dict, later: dict) -> float | None:
    """How fast the machine ran in the later run against the earlier: the geometric mean of how
    each same-run baseline (SPEED_BASELINES) in both runs moved. A virtual machine's speed drifts
    through the day by a quarter and more, and every time and rate with it; scaled by this, they
    compare. One baseline alone let its own noise move every figure at once. None when the runs
    share no baseline (a section run alone) or used different corpora."""
    a, b = earlier.get("ingest") or {}, later.get("ingest") or {}
    if (earlier.get("corpus") or {}).get("version") != (later.get("corpus") or {}).get("version"):
        return None
    moves = [b[k] / a[k] for k in SPEED_BASELINES if a.get(k) and b.get(k)]
    if not moves:
        return None
    return math.prod(moves) ** (1 / len(moves))


def speed_baselines(earlier: dict, later: dict) -> list[str]:
    """The baselines machine_speed took, in both runs."""
    a, b = earlier.get("ingest") or {}, later.get("ingest") or {}
    return [k for k in SPEED_BASELINES if a.get(k) and b.get(k)]


def _caveat(earlier: dict, later: dict, section: str, kind: str) -> str | None:
    """Why a figure of `section` of this kind cannot be judged between the two runs, if it
    cannot: other sizes or another corpus for any figure, another machine for a time, rate or
    size."""
    pa, pb = earlier.get("params"), later.get("params")
    if pa is None or pb is None:
        return "sizes unknown"
    if any(pa.get(k) != pb.get(k) for k in SIZES[section]):
        return "other sizes"
    if kind != "count" and (pa.get("quick") or pb.get("quick")):
        return "quick run"
    ca, cb = earlier.get("corpus") or {}, later.get("corpus") or {}
    if section in ("ingest", "search") and ca.get("version") != cb.get("version"):
        return "other corpus"
    if kind in ("ratio", "count"):
        return None
    a, b = earlier.get("machine"), later.get("machine")
    if not a or not b:
        return "machine unknown"
    if any(a.get(k) != b.get(k) for k in ("platform", "cpus", "workers", "python")):
        return "other machine"
    return None


def compare(earlier: dict, later: dict, noise: float = NOISE) -> list[dict]:
    """A row per figure found in both runs: label, earlier, now, relative change, verdict
    ("better", "worse", "noise", "same", "changed" or "not judged: <why>")."""
    rows = []
    speed = machine_speed(earlier, later) or 1.0
    for fig in FIGURES:
        then, now = _values(earlier, fig.path), _values(later, fig.path)
        caveat = _caveat(earlier, later, fig.path[0], fig.kind)
        for key in sorted(then.keys() & now.keys()):
            a, b = then[key], now[key]
            # what the later figure would have been at the earlier run's speed
            scaled = b * speed if fig.kind == "time" else b / speed if fig.kind == "rate" else b
            change = (scaled - a) / abs(a) if a else (0.0 if scaled == a else None)
            if caveat:
                verdict = f"not judged: {caveat}"
            elif fig.kind == "count":
                verdict = "same" if a == b else "changed"
            elif change is None:
                verdict = "changed"
            elif abs(change) <= noise:
                verdict = "noise"
            else:
                verdict = "better" if (change > 0) == (fig.better == "higher") else "worse"
            rows.append({"figure": fig.label.format(*key), "path": ".".join(fig.path).replace("*", "{}").format(*key),
                         "kind": fig.kind, "better": fig.better, "earlier": a, "now": b,
                         "change": None if change is None else round(change, 4), "verdict": verdict})
    return rows


def _describe(data: dict) -> str:
    run = data.get("run") or {}
    at = f" at {run['commit']}" if run.get("commit") else ""
    return f"{run.get('started_at', 'an unknown time')}{at}"


def report(earlier_path: Path, earlier: dict, later: dict, rows: list[dict], noise: float = NOISE) -> str:
    """The printed comparison: where each run came from, a line per figure, and a count of
    verdicts."""
    lines = [f"compared with     {earlier_path} ({_describe(earlier)}); this run {_describe(later)}"]
    speed = machine_speed(earlier, later)
    if speed is not None:
        used = ", ".join(k.removesuffix("_mb_per_s").replace("_", " ") for k in speed_baselines(earlier, later))
        lines.append(f"  machine speed   {speed:.2f} of the earlier run's (geometric mean of its baselines: {used};"
                     " same corpus): times and rates are changed by that before they are compared")
    if not rows:
        lines.append("  no figure is in both runs")
        return "\n".join(lines)
    width = max(len(r["figure"]) for r in rows)
    lines.append(f"  {'figure':{width}s} {'earlier':>10s} {'now':>10s} {'change':>8s}  verdict (noise: within ±{noise:.0%})")
    for r in rows:
        change = "" if r["change"] is None else f"{r['change']:+.1%}"
        lines.append(f"  {r['figure']:{width}s} {_num(r['earlier']):>10s} {_num(r['now']):>10s} {change:>8s}  {r['verdict']}")
    counts: dict[str, int] = {}
    for r in rows:
        v = r["verdict"].split(":")[0]
        counts[v] = counts.get(v, 0) + 1
    order = ("better", "worse", "changed", "noise", "same", "not judged")
    lines.append("  " + ", ".join(f"{counts[v]} {v}" for v in order if v in counts))
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="compare two bench results files")
    ap.add_argument("earlier", type=Path)
    ap.add_argument("later", type=Path, nargs="?", default=HERE / "out" / "latest.json")
    ap.add_argument("--noise", type=float, default=NOISE, help="relative change taken as noise (default 0.2)")
    ap.add_argument("--json", action="store_true", help="the rows as JSON")
    args = ap.parse_args(argv)
    try:
        earlier, later = load(args.earlier), load(args.later)
    except (ValueError, OSError) as exc:
        sys.exit(f"error: {exc}")
    rows = compare(earlier, later, args.noise)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(report(args.earlier, earlier, later, rows, args.noise))


if __name__ == "__main__":
    main()
