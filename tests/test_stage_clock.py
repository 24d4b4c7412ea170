"""Where a run's loading time goes: each stage is timed on its own, in the threads that run
it, and the stages never add up to more than the workers had."""
from __future__ import annotations

import json
import shutil
import time

from click.testing import CliRunner

from conftest import DEMO, REPO
from convarch.cli import cli
from convarch.etl.stage_clock import STAGES, StageClock
from convarch.etl.workers import default_workers


def test_a_generator_is_charged_for_making_items_not_for_what_the_consumer_does():
    clock = StageClock()

    def slow_items():
        for i in range(3):
            time.sleep(0.02)
            yield i

    got = []
    for item in clock.timed("cut", slow_items()):
        time.sleep(0.05)          # the consumer's own work: not the generator's
        got.append(item)
    assert got == [0, 1, 2]
    assert 0.06 <= clock.seconds["cut"] < 0.14


def test_timing_adds_up_over_threads_and_survives_an_error():
    clock = StageClock()
    try:
        with clock.timing("parse"):
            time.sleep(0.02)
            raise ValueError("a failing query")
    except ValueError:
        pass
    with clock.timing("parse"):
        time.sleep(0.02)
    assert 0.04 <= clock.seconds["parse"] < 0.1
    assert list(clock.as_json()) == ["parse"]


def _ingest(db, source, root):
    r = CliRunner().invoke(cli, ["--db", str(db), "ingest", source, "--root", str(root), "--json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_ingest_reports_every_stage_a_run_went_through(tmp_path):
    root = tmp_path / "claude"
    shutil.copytree(DEMO, root)
    transcript = next((root / "projects").rglob("*.jsonl"))
    with open(transcript, "a") as fh:
        fh.write("{not json\n")
    summary = _ingest(tmp_path / "w.duckdb", "claude_code", root)
    stages = summary["stage_seconds"]
    assert set(stages) == set(STAGES)            # a bad line: quarantine too
    assert all(v >= 0 for v in stages.values())
    # time the workers spent, never more than they had
    assert sum(stages.values()) <= summary["extract_seconds"] * default_workers() + 0.01


def test_a_container_read_for_the_first_time_has_its_copy_apart_from_its_cutting(tmp_path):
    """A new SQLite store is copied and turned into lines while its batches are cut: the copy
    is charged to copy, and cutting is never left below zero by it."""
    summary = _ingest(tmp_path / "w.duckdb", "goose", REPO / "fixtures" / "goose" / "contract")
    stages = summary["stage_seconds"]
    assert stages["copy"] > 0 and stages["cut"] >= 0 and stages["parse"] > 0
    assert "quarantine" not in stages or summary["quarantined"] > 0


def test_nothing_changed_nothing_timed(tmp_path):
    db = tmp_path / "w.duckdb"
    _ingest(db, "claude_code", DEMO)
    assert _ingest(db, "claude_code", DEMO)["stage_seconds"] == {}
