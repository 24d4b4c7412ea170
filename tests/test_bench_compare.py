"""A bench run compared with an earlier one must call a move beyond noise better or worse by
the figure's own direction, leave alone what does not compare (other sizes, another machine
for seconds), and catch any change in what a pick-up loads."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import compare as bench_compare  # noqa: E402


def results(**over) -> dict:
    r = {
        "run": {"started_at": "2026-12-01T10:00:00Z", "commit": "abc1234567"},
        "machine": {"platform": "Linux-x", "cpus": 2, "workers": 2, "python": "3.11.7"},
        "params": {"mb": 1000, "chain_sessions": 1000, "chain_records": 2000, "source_files": 500,
                   "rewrite_mb": 60, "quick": False},
        "corpus": {"version": 3, "mb": 1001.1},
        "ingest": {"ratio_to_parse_limit": 0.115, "mb_per_s": 113.3, "peak_rss_mb": 570.0,
                   "no_change_ratio_to_full": 0.004, "records": 235540},
        "search": {"p50_ms": 335.9},
        "rewrites": {"cursor_latest_chat": {"ratio_to_whole": 0.25, "records": 2, "taken_up_ratio_to_whole": 0.22,
                                            "taken_up_records": 152},
                     "goose_same_lines": {"ratio_to_whole": 0.11, "records": 0}},
    }
    for path, value in over.items():
        *head, last = path.split("__")
        node = r
        for key in head:
            node = node[key]
        node[last] = value
    return r


def verdicts(earlier: dict, later: dict, **kw) -> dict[str, str]:
    return {row["path"]: row["verdict"] for row in bench_compare.compare(earlier, later, **kw)}


def test_each_figure_is_judged_by_its_own_direction_beyond_noise():
    earlier = results()
    later = results(ingest__ratio_to_parse_limit=0.14,       # higher is better: +22%
                    ingest__peak_rss_mb=700.0,               # lower is better: +23%
                    ingest__mb_per_s=130.0,                  # +15%: noise
                    search__p50_ms=250.0,                    # lower is better: -26%
                    ingest__no_change_ratio_to_full=0.0041)  # +2.5%: noise
    v = verdicts(earlier, later)
    assert v["ingest.ratio_to_parse_limit"] == "better"
    assert v["ingest.peak_rss_mb"] == "worse"
    assert v["ingest.mb_per_s"] == "noise"
    assert v["search.p50_ms"] == "better"
    assert v["ingest.no_change_ratio_to_full"] == "noise"
    assert v["ingest.records"] == "same"
    # a narrower noise band judges the same moves
    assert verdicts(earlier, later, noise=0.1)["ingest.mb_per_s"] == "better"


def test_wildcard_figures_are_compared_key_by_key_and_counts_catch_any_change():
    later = results()
    later["rewrites"]["cursor_latest_chat"]["taken_up_records"] = 153     # one record more is behaviour
    later["rewrites"]["goose_same_lines"]["ratio_to_whole"] = 0.15
    later["rewrites"]["opencode_turn"] = {"ratio_to_whole": 0.25, "records": 116}   # new in this run
    rows = bench_compare.compare(results(), later)
    v = {r["path"]: r["verdict"] for r in rows}
    assert v["rewrites.cursor_latest_chat.taken_up_records"] == "changed"
    assert v["rewrites.cursor_latest_chat.records"] == "same"
    assert v["rewrites.goose_same_lines.ratio_to_whole"] == "worse"
    assert not any("opencode_turn" in p for p in v)         # only in one run: nothing to compare
    labels = {r["path"]: r["figure"] for r in rows}
    assert labels["rewrites.cursor_latest_chat.taken_up_ratio_to_whole"] == \
        "pick-up / read whole: cursor_latest_chat, taken up"


def test_other_sizes_judge_nothing_and_another_machine_judges_only_ratios():
    faster = results(ingest__ratio_to_parse_limit=0.2, ingest__mb_per_s=200.0)
    smaller = copy.deepcopy(faster)
    smaller["params"]["mb"] = 50
    v = verdicts(results(), smaller)
    assert v["ingest.ratio_to_parse_limit"] == v["ingest.mb_per_s"] == "not judged: other sizes"
    assert v["rewrites.goose_same_lines.ratio_to_whole"] == "noise"     # its own size did not change
    elsewhere = copy.deepcopy(faster)
    elsewhere["machine"]["cpus"] = 8
    v = verdicts(results(), elsewhere)
    assert v["ingest.ratio_to_parse_limit"] == "better"
    assert v["ingest.mb_per_s"] == "not judged: other machine"
    newer_corpus = copy.deepcopy(faster)
    newer_corpus["corpus"]["version"] = 4
    assert verdicts(results(), newer_corpus)["ingest.mb_per_s"] == "not judged: other corpus"
    # quick runs are too small to time: only what they load is compared
    quick_then, quick_now = results(params__quick=True), copy.deepcopy(faster)
    quick_now["params"]["quick"] = True
    quick_now["rewrites"]["goose_same_lines"]["records"] = 3
    v = verdicts(quick_then, quick_now)
    assert v["ingest.ratio_to_parse_limit"] == "not judged: quick run"
    assert v["rewrites.goose_same_lines.records"] == "changed"


def test_pick_ups_in_a_row_compare_only_runs_of_as_many():
    """Merging small files is paid every few pick-ups, so a mean over 20 and one over 5 differ
    by more than speed; a run from before the series existed has nothing to compare."""
    def with_series(n: int, mean: float) -> dict:
        r = results()
        r["params"]["pick_ups"] = n
        r["pick_ups"] = {"pick_ups": n, "mean_seconds": mean, "compact_seconds": 2.0}
        return r

    v = verdicts(with_series(20, 2.4), with_series(20, 1.1))
    assert v["pick_ups.mean_seconds"] == "better" and v["pick_ups.compact_seconds"] == "noise"
    assert verdicts(with_series(5, 2.4), with_series(20, 1.1))["pick_ups.mean_seconds"] == "not judged: other sizes"
    assert not any(k.startswith("pick_ups") for k in verdicts(results(), with_series(20, 1.1)))


def test_times_and_rates_are_judged_at_the_speed_the_machine_ran_each_time():
    """The same code on a machine running a quarter slower: its seconds and MB/s move by a
    third, which is the machine, not the code; memory does not move with speed."""
    earlier = results(ingest__parse_limit_mb_per_s=1000.0, search__p50_ms=300.0)
    later = results(ingest__parse_limit_mb_per_s=750.0,          # the machine ran at 0.75
                    ingest__mb_per_s=113.3 * 0.75, search__p50_ms=400.0,
                    ingest__peak_rss_mb=700.0)
    assert bench_compare.machine_speed(earlier, later) == pytest.approx(0.75)
    rows = {r["path"]: r for r in bench_compare.compare(earlier, later)}
    assert rows["ingest.mb_per_s"]["verdict"] == rows["search.p50_ms"]["verdict"] == "noise"
    assert rows["search.p50_ms"]["change"] == pytest.approx(0.0)
    assert rows["ingest.peak_rss_mb"]["verdict"] == "worse"
    # twice as slow at the same machine speed is the code
    slower = results(ingest__parse_limit_mb_per_s=1000.0, search__p50_ms=600.0)
    assert verdicts(earlier, slower)["search.p50_ms"] == "worse"
    # a run without the parse limit (a section alone) is compared as measured
    assert bench_compare.machine_speed(results(), later) is None


def test_the_machine_speed_is_the_mean_of_every_baseline_so_one_jumping_alone_moves_it_less():
    """Measured on 2 December: between two runs the parse limit rose by 1.38, DuckDB's raw
    parse by 1.27 and the floor of keeping raw lines by 1.26, and ingest by 1.17. Scaled by the
    parse limit alone, ingest read as 16% slower; by all three, as 11%."""
    earlier = results(ingest__parse_limit_mb_per_s=748.0, ingest__duckdb_raw_parse_mb_per_s=1034.6,
                      ingest__archive_floor_mb_per_s=254.4, ingest__mb_per_s=87.1)
    later = results(ingest__parse_limit_mb_per_s=1035.8, ingest__duckdb_raw_parse_mb_per_s=1318.9,
                    ingest__archive_floor_mb_per_s=319.5, ingest__mb_per_s=101.6)
    speed = bench_compare.machine_speed(earlier, later)
    assert speed == pytest.approx((1035.8 / 748.0 * 1318.9 / 1034.6 * 319.5 / 254.4) ** (1 / 3))
    assert 1.29 < speed < 1.31
    row = {r["path"]: r for r in bench_compare.compare(earlier, later)}["ingest.mb_per_s"]
    assert row["verdict"] == "noise"
    assert row["change"] == pytest.approx(101.6 / speed / 87.1 - 1, abs=1e-4)
    # a baseline only one run has is left out, not read as zero
    del later["ingest"]["archive_floor_mb_per_s"]
    assert bench_compare.speed_baselines(earlier, later) == ["parse_limit_mb_per_s", "duckdb_raw_parse_mb_per_s"]
    assert bench_compare.machine_speed(earlier, later) == pytest.approx((1035.8 / 748.0 * 1318.9 / 1034.6) ** 0.5)
    # another corpus: its baselines measured other bytes
    assert bench_compare.machine_speed(earlier, results(corpus__version=4, ingest__parse_limit_mb_per_s=900.0)) is None
    printed = bench_compare.report(Path("earlier.json"), earlier, later, bench_compare.compare(earlier, later))
    assert "1.33 of the earlier run's" in printed and "parse limit, duckdb raw parse" in printed


def test_a_section_written_alone_before_it_was_named_still_loads(tmp_path):
    bare = tmp_path / "rewrites-latest.json"
    bare.write_text(json.dumps(results()["rewrites"]))
    loaded = bench_compare.load(bare)
    assert loaded["rewrites"] == results()["rewrites"]
    assert loaded["run"]["started_at"]                       # taken from the file's time
    # with no sizes recorded, nothing of it is judged, but every figure is listed
    v = verdicts(loaded, results())
    assert v and set(v.values()) == {"not judged: sizes unknown"}
    stamped = tmp_path / "results-20261201T224442.json"
    stamped.write_text(json.dumps({k: v for k, v in results().items() if k != "run"}))
    assert bench_compare.load(stamped)["run"]["started_at"] == "2026-12-01T22:44:42"
    junk = tmp_path / "other.json"
    junk.write_text(json.dumps({"something": 1}))
    with pytest.raises(ValueError, match="not a bench results file"):
        bench_compare.load(junk)


def test_the_run_before_is_read_before_it_is_written_over(tmp_path, capsys):
    out = tmp_path / "out"
    assert bench_compare.earlier_results(out) is None         # a first run compares with nothing
    out.mkdir()
    (out / "latest.json").write_text(json.dumps(results()))
    path, earlier = bench_compare.earlier_results(out)
    assert path == out / "latest.json" and earlier["ingest"]["mb_per_s"] == 113.3
    assert bench_compare.earlier_results(out, off=True) is None
    (out / "latest.json").write_text("{not json")
    assert bench_compare.earlier_results(out) is None         # said, and the run goes on
    assert "not comparing with" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="does not exist"):
        bench_compare.earlier_results(out, choice=tmp_path / "missing.json")


def test_the_command_prints_a_line_per_figure_and_a_count_of_verdicts(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results()))
    b.write_text(json.dumps(results(ingest__ratio_to_parse_limit=0.14, run={"started_at": "later", "commit": "def"})))
    bench_compare.main([str(a), str(b)])
    text = capsys.readouterr().out
    assert "(2026-12-01T10:00:00Z at abc1234567); this run later at def" in text
    line = next(ln for ln in text.splitlines() if "ingest / parse limit" in ln)
    assert line.split()[-4:] == ["0.115", "0.14", "+21.7%", "better"]
    assert text.splitlines()[-1].strip().startswith("1 better")
    bench_compare.main([str(a), str(b), "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert {r["verdict"] for r in rows} >= {"better", "same", "noise"}
    with pytest.raises(SystemExit, match="error: .*not a bench results file"):
        (tmp_path / "c.json").write_text("[]")
        bench_compare.main([str(tmp_path / "c.json"), str(b)])


def test_a_run_with_nothing_to_compare_with_says_so_unless_told_not_to_compare():
    assert "no earlier run" in bench_compare.comparison(None, results())
    assert bench_compare.comparison(None, results(), wanted=False) is None
    shown = bench_compare.comparison((Path("earlier.json"), results()), results())
    assert shown is not None and "no earlier run" not in shown
