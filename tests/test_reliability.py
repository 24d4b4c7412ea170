"""Never damage, never lose, never leak: ingest killed at random points, fuzzed input, and
secrets redacted before storage."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from convarch.adapters import claude_code
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import write_jsonl
from helpers import assistant, rows, run, scalar, tool_result, user
from stories import Story

SLOW = os.environ.get("CONVARCH_SLOW") == "1"


def fingerprint(db: Path) -> tuple:
    return rows(db, "select count(*), sum(hash(raw)), count(distinct file_id) from stg_records")[0] + (
        scalar(db, "select count(*) from quarantine"),
        scalar(db, "select count(*) from search_postings"),
        scalar(db, "select count(*) from tool_calls"),
    )


def corpus(root: Path, files: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    for i in range(files):
        s = Story(f"crash{i}", cwd=f"/home/demo/p{i % 3}")
        s.user(f"task {i}: " + "words " * rng.randrange(5, 50))
        for j in range(rng.randrange(20, 80)):
            if j % 3 == 0:
                s.bash(f"pytest -q t{j}.py", "ok " * rng.randrange(1, 400), exit_code=rng.choice([0, 0, 1]))
            else:
                s.assistant("step " * rng.randrange(1, 60))
        s.write(root)


INGEST = ("import sys; from pathlib import Path; from convarch.adapters import claude_code;"
          "from convarch.etl.ingest import ingest; from convarch.etl.layout import Layout;"
          "ingest(Layout(Path(sys.argv[1])), [(claude_code, claude_code.resolve_root(Path(sys.argv[2])))])")


def test_sigkill_at_random_points_never_leaves_a_partial_run(tmp_path):
    root = tmp_path / "claude"
    corpus(root, 40)
    reference = tmp_path / "ref" / "w.duckdb"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", INGEST, str(reference), str(root)], check=True)
    full_time = time.perf_counter() - t
    want = fingerprint(reference)
    rng = random.Random(7)
    kills = 40 if SLOW else 8
    killed_mid_run = 0
    for k in range(kills):
        db = tmp_path / f"k{k}" / "w.duckdb"
        # some warehouses already hold half the corpus, so the kill hits an incremental run
        if k % 2:
            half = tmp_path / f"half{k}"
            for f in sorted(root.rglob("*.jsonl"))[:20]:
                dest = half / f.relative_to(root)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(f.read_bytes())
            run(db, half)
            before = fingerprint(db)
            target = half
            for f in sorted(root.rglob("*.jsonl"))[20:]:
                dest = half / f.relative_to(root)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(f.read_bytes())
        else:
            before, target = None, root
        proc = subprocess.Popen([sys.executable, "-c", INGEST, str(db), str(target)])
        time.sleep(rng.uniform(0.05, full_time * 1.1))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed_mid_run += 1
        proc.wait()
        if db.exists():                       # whatever a reader sees now is a whole state
            seen = fingerprint(db)
            assert seen in (before, want), (k, seen)
        run(db, target)                       # the next ingest completes the job exactly
        assert fingerprint(db) == want, k
    assert killed_mid_run >= kills // 2


LINE = st.fixed_dictionaries({
    "type": st.sampled_from(["user", "assistant", "system", "summary", "weird-new-type"]),
    "uuid": st.one_of(st.uuids().map(str), st.integers(), st.none(), st.lists(st.integers(), max_size=2)),
    "timestamp": st.one_of(st.just("2026-05-01T10:00:00.000Z"), st.text(max_size=8), st.integers(),
                           st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    "isSidechain": st.one_of(st.booleans(), st.text(max_size=4), st.none()),
    "message": st.one_of(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                               "content": st.one_of(st.text(max_size=40), st.lists(
                                   st.fixed_dictionaries({"type": st.sampled_from(["text", "tool_use", "tool_result", "x"]),
                                                          "text": st.text(max_size=20), "id": st.text(max_size=6)}),
                                   max_size=3), st.integers())}),
        st.integers(), st.text(max_size=10), st.none()),
})


def mutate(data: bytes, rng: random.Random, how: str) -> bytes:
    if how == "truncate" and data:
        return data[: rng.randrange(len(data))]
    if how == "flip" and data:
        b = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if how == "invalid_utf8":
        return data + b'{"type":"user","message":{"content":"\xff\xfe\xc3"}}\n'
    if how == "deep":
        return data + b"[" * 20000 + b"]" * 20000 + b"\n" + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"\n"
    if how == "garbage":
        return data + bytes(rng.randrange(256) for _ in range(300)) + b"\n"
    return data


@settings(max_examples=60 if SLOW else 15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(lines=st.lists(LINE, min_size=1, max_size=12), seed=st.integers(0, 10_000),
       how=st.sampled_from(["none", "truncate", "flip", "invalid_utf8", "deep", "garbage"]))
def test_fuzzed_transcripts_never_crash_and_nothing_is_lost(tmp_path_factory, lines, seed, how):
    tmp = tmp_path_factory.mktemp("fuzz")
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    data = mutate(data, random.Random(seed), how)
    f = tmp / "claude" / "projects" / "-fuzz" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(data)
    db = tmp / "w.duckdb"
    summary = run(db, tmp / "claude")
    complete = data[: data.rfind(b"\n") + 1] if b"\n" in data else b""
    tail = data[len(complete):]
    nonblank = [ln for ln in complete.split(b"\n") if ln.strip()]
    loaded = scalar(db, "select count(*) from stg_records")
    bad = scalar(db, "select count(*) from quarantine where reason <> 'truncated_tail'")
    pending = scalar(db, "select count(*) from quarantine where reason = 'truncated_tail'")
    tail_loaded = 1 if tail.strip() and loaded + bad > len(nonblank) else 0
    assert loaded + bad == len(nonblank) + tail_loaded
    assert pending == (1 if tail.strip() and not tail_loaded else 0)
    assert summary.records_added == loaded
    reasons = {r for (r,) in rows(db, "select distinct reason from quarantine")}
    assert reasons <= {"invalid_json", "invalid_utf8", "not_object", "truncated_tail"}


def test_a_line_that_is_json_but_not_an_object_says_what_it_is_in_jsons_words(tmp_path):
    path = tmp_path / "home" / ".claude" / "projects" / "-w" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in
                            ['"text"', "42", "4.5", "[1]", "true", "null", '{"type": "user", "sessionId": "s1"}']))
    db = tmp_path / "w.duckdb"
    ingest(Layout(db), [(claude_code, claude_code.resolve_root(tmp_path / "home" / ".claude"))])
    assert rows(db, "select line_no, reason, error from quarantine order by line_no") == [
        (n, "not_object", f"valid JSON but {kind}, not an object") for n, kind in
        enumerate(["a string", "a number", "a number", "an array", "a boolean", "null"], start=1)]


def test_fifty_megabyte_line(tmp_path):
    """Behind a flag until 2026-12-01, and failing there unseen: the line ran out of a
    worker's DuckDB memory and ended the run. It now gets room of its own and loads."""
    big = "x" * 50_000_000
    root = tmp_path / "claude"
    write_jsonl(root / "projects" / "-big" / "s.jsonl",
                [user("u1", None, big, "2026-05-01T10:00:00.000Z"), assistant("a1", "u1", "ok", "2026-05-01T10:00:01.000Z")])
    db = tmp_path / "w.duckdb"
    run(db, root)
    assert scalar(db, "select count(*) from stg_records") == 2


def test_a_transcript_of_big_tool_results_loads(tmp_path):
    """1,400 lines of 55 KB tool results (a session that read big files): a batch of them
    needs more than a worker's DuckDB memory in one piece, and used to end the whole run with
    an out-of-memory error. Every record loads, none is quarantined."""
    recs, prev = [], None
    for i in range(700):
        recs.append(assistant(f"a{i}", prev, "reading", "2026-05-01T10:00:00.000Z", tool=(f"toolu_{i}", "Read", {"file_path": "/x.py"})))
        recs.append(tool_result(f"r{i}", f"a{i}", f"toolu_{i}", f"line {i} of the file\n" * 2600, "2026-05-01T10:00:01.000Z"))
        prev = f"r{i}"
    root = tmp_path / "claude"
    write_jsonl(root / "projects" / "-big" / "s.jsonl", recs)
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert (s.records_added, s.quarantined) == (1400, 0)
    assert scalar(db, "select count(*) from stg_blocks where block_type = 'tool_result' and length(output_text) > 45000") == 700


def test_out_of_memory_loads_halves_and_sets_aside_only_the_line_that_cannot_fit(tmp_path, monkeypatch):
    """DuckDB running out of memory is simulated, at the end of the records query, for any
    batch of more than 8 lines and for the one line marked UNLOADABLE: the rest loads in
    halves, that line is quarantined as too_large with its bytes, and each broken line is
    quarantined once, not once per half."""
    from convarch.etl import load

    real = load.BatchWriter._records_batch

    def tight(self, lines):
        real(self, lines)              # lines registered, bad lines set aside, then the failure
        if lines.num_rows > 8 or any("UNLOADABLE" in x for x in lines["line"].to_pylist()):
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data (simulated)")

    monkeypatch.setattr(load.BatchWriter, "_records_batch", tight)
    recs = [user(f"u{i}", f"u{i - 1}" if i else None, f"turn {i}" + (" UNLOADABLE" if i == 23 else ""),
                 "2026-05-01T10:00:00.000Z") for i in range(40)]
    lines = [json.dumps(r) for r in recs]
    lines.insert(31, "{broken")
    lines.insert(12, "not json")
    root = tmp_path / "claude"
    f = root / "projects" / "-oom" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("\n".join(lines) + "\n")
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert (s.records_added, s.quarantined) == (39, 3)
    assert rows(db, "select line_no, reason from quarantine order by line_no") == [
        (13, "invalid_json"), (25, "too_large"), (33, "invalid_json")]
    assert "does not load within a worker's memory" in scalar(db, "select error from quarantine where reason = 'too_large'")
    assert scalar(db, "select raw_text from lake_quarantine where reason = 'too_large'") == lines[24]
    loaded = [n for (n,) in rows(db, "select line_no from stg_records order by line_no")]
    assert loaded == [n for n in range(1, 43) if n not in (13, 25, 33)]


FAKE = {"stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "aws": "AKIAIOSFODNN7EXAMPLE"}


@pytest.mark.parametrize("pooled", [False, True])
def test_redact_at_ingest_stores_no_secret_anywhere(tmp_path, monkeypatch, request, pooled):
    """In the ingest's threads, and (pooled) on the processes a big batch is redacted on."""
    from convarch.etl import redact_pool

    if pooled:
        monkeypatch.setattr(redact_pool, "IN_THREAD_BYTES", 0)
        monkeypatch.setattr(redact_pool, "processes", lambda: 2)
        redact_pool.shutdown()
        request.addfinalizer(redact_pool.shutdown)
        monkeypatch.setattr(redact_pool, "redact_lines", _must_pool(redact_pool.redact_lines))
    root = tmp_path / "claude"
    write_jsonl(root / "projects" / "-r" / "s.jsonl", [
        user("u1", None, f"deploy with {FAKE['stripe']} please", "2026-05-01T10:00:00.000Z"),
        assistant("a1", "u1", "ok", "2026-05-01T10:00:01.000Z", tool=("toolu_1", "Bash", {"command": f"export GH={FAKE['github']}"})),
        tool_result("r1", "a1", "toolu_1", f'{{"password": "hunter2hunter2", "key": "{FAKE["aws"]}"}}', "2026-05-01T10:00:02.000Z"),
    ])
    db = tmp_path / "w" / "convarch.duckdb"
    s = ingest(Layout(db), [(claude_code, claude_code.resolve_root(root))], redact=True)
    assert s.redacted >= 4
    assert "[REDACTED:stripe]" in scalar(db, "select text from messages where role = 'user'")
    # a later run without the flag keeps redacting
    with open(next(root.rglob("s.jsonl")), "a") as fh:
        fh.write(json.dumps(user("u2", "r1", f"again {FAKE['stripe']}", "2026-05-01T10:01:00.000Z")) + "\n")
    assert run(db, root).redacting
    blobs = b""
    for p in (tmp_path / "w").rglob("*"):
        if p.is_file() and p.suffix in (".parquet", ".duckdb", ".json"):
            if p.suffix == ".parquet":
                con = duckdb.connect()
                blobs += json.dumps(con.execute(f"select * from read_parquet('{p}')").fetchall(), default=str).encode()
            else:
                blobs += p.read_bytes()
    for secret in [*FAKE.values(), "hunter2hunter2"]:
        assert secret.encode() not in blobs, secret
        assert secret[4:16].encode() not in blobs, secret
    assert scalar(db, "select count(*) from stg_records") == 4
    assert scalar(db, "select count(*) from quarantine") == 0


def _must_pool(redact_lines):
    def checked(lines, redactor):
        from convarch.etl import redact_pool
        out = redact_lines(lines, redactor)
        assert redact_pool._pool is not None and not redact_pool._failed
        return out
    return checked


def test_a_batch_size_that_ran_out_of_memory_is_not_tried_again_by_the_runs_other_writers(tmp_path, monkeypatch):
    """A run makes a writer for each FLUSH_BYTES of files. Once one writer's queries ran out of
    memory on a batch, the others cut theirs small up front instead of failing once each."""
    from convarch.etl import extract, load

    real = load.BatchWriter._records_batch
    failures = []

    def tight(self, lines):
        real(self, lines)
        if lines.num_rows > 8:
            failures.append(lines.num_rows)
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data (simulated)")

    monkeypatch.setattr(load.BatchWriter, "_records_batch", tight)
    monkeypatch.setattr(extract, "FLUSH_BYTES", 24_000)      # a unit (and a writer) for each file
    root = tmp_path / "claude"
    for f in range(12):
        write_jsonl(root / "projects" / "-oom" / f"s{f:02d}.jsonl", [
            user(f"f{f}u{i}", f"f{f}u{i - 1}" if i else None, f"turn {i} " + "x" * 200, "2026-05-01T10:00:00.000Z")
            for i in range(40)])
    db = tmp_path / "w.duckdb"
    s = run(db, root)
    assert s.records_added == 480
    assert scalar(db, "select count(*) from stg_records") == 480
    # each file of ~20 KB is a writer of its own, and one batch. Alone, each of the 12 would
    # fail on its 40 lines, then on 20, then on 10: 36 failures. Shared, a size fails at most once a worker
    # (the workers start side by side), so 3 sizes x 2 workers here
    from convarch.etl.workers import default_workers

    assert 0 < len(failures) <= 3 * default_workers() < 36, failures
    assert sorted(set(failures)) == [10, 20, 40]
