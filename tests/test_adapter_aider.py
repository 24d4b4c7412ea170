"""Aider: .aider.chat.history.md Markdown logs, found per repository, become one record per
session header and per message, nothing of the text lost; discovery stays bounded. Aider has
no public sample here; the fixtures are written the way aider's io.py appends to the log (see
fixtures/aider/build_contract.py)."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from convarch.adapters import aider
from convarch.adapters.base import RootError
from convarch.cli.targets import default_targets
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout
from conftest import REPO, contract_builder, tree_fingerprint
from helpers import rows, scalar

CONTRACT = REPO / "fixtures" / "aider" / "contract"
WEATHER = CONTRACT / "weather-app"
S1 = f"{WEATHER}@2026-03-02 09:14:55"
S2 = f"{WEATHER}@2026-03-03 17:40:02"

build = contract_builder("aider")


@pytest.fixture(autouse=True)
def utc_zone(monkeypatch):
    """Header times are local; tests pin the zone they are read in."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def run(db: Path, root: Path):
    return ingest(Layout(db), [(aider, aider.resolve_root(root))])


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_contract_store_sessions_and_messages(tmp_path):
    before = tree_fingerprint(CONTRACT)
    db = tmp_path / "w.duckdb"
    s = run(db, CONTRACT)
    assert tree_fingerprint(CONTRACT) == before
    # weather-app: session 1 = 1 header + 12 messages, session 2 = 1 + 8; notes-site: 1 + 4
    assert (s.files_scanned, s.records_added, s.quarantined) == (2, 27, 0)
    assert rows(db, "select session_id, cwd, agent_version, message_count, started_at::varchar from sessions "
                    "order by started_at") == [
        (f"{CONTRACT}/sites/notes-site@2026-02-20 08:00:00", f"{CONTRACT}/sites/notes-site", "0.86.1", 4,
         "2026-02-20 08:00:00"),
        (S1, str(WEATHER), "0.86.1", 12, "2026-03-02 09:14:55"),
        (S2, str(WEATHER), "0.86.1", 8, "2026-03-03 17:40:02"),
    ]
    got = rows(db, f"select role, kind, harness_kind, text from messages where session_id = '{S1}' order by line_no")
    assert got == [
        ("system", "system", None, "Aider v0.86.1\nMain model: anthropic/claude-sonnet-4-5 with diff edit format, "
         "infinite output\nWeak model: anthropic/claude-haiku-4-5\nGit repo: .git with 12 files\n"
         "Repo-map: using 4096 tokens, auto refresh"),
        ("user", "prompt", "slash_command", "/add src/cli.py"),
        ("system", "system", None, "Added src/cli.py to the chat"),
        ("user", "prompt", None, "add a --units flag (metric or imperial)\ndefault to metric"),
        ("assistant", "response", None, build.EDIT_REPLY),
        ("system", "system", None, "Tokens: 4.3k sent, 1.2k cache write, 210 received. Cost: $0.02 message, "
         "$0.02 session.\nApplied edit to src/cli.py\nCommit 1a2b3c4 feat: Add --units flag"),
        ("user", "prompt", "slash_command", "/run pytest -q"),
        ("system", "system", None, "1 failed, 11 passed\nFAILED tests/test_forecast.py::test_fahrenheit\n"
         "Add command output to the chat? (Y)es/(N)o [Yes]: y\nAdded 2 lines of output to the chat."),
        ("user", "prompt", "meta", "<blank>"),
        ("user", "prompt", None, "/ask why does test_fahrenheit fail?"),
        ("assistant", "response", None, "It still expects Fahrenheit by default, but the default is now metric."),
        ("system", "system", None, "Tokens: 5k sent, 12k cache hit, 95 received. Cost: $0.01 message, $0.03 session."),
    ]
    # the title is the first request a person typed (commands are not requests)
    assert scalar(db, f"select title from sessions where session_id = '{S1}'") == \
        "add a --units flag (metric or imperial) default to metric"
    # each reply is attributed to the model active when it was written (/model switches it)
    assert rows(db, f"select model from messages where session_id = '{S2}' and role = 'assistant' "
                    "order by line_no") == [("openai/gpt-5",), ("anthropic/claude-sonnet-4-5",)]
    assert rows(db, f"select sum(input_tokens), sum(output_tokens), sum(cache_creation_tokens), "
                    f"sum(cache_read_tokens) from stg_records where session_id = '{S1}'") == [(9300, 305, 1200, 12000)]
    # every message carries the session's start, the only time aider writes
    assert scalar(db, "select count(*) from messages where \"timestamp\" is null") == 0
    assert rows(db, "select distinct timestamp_raw from stg_records where session_id = ? ", [S2]) == [
        ("2026-03-03 17:40:02",)]
    assert scalar(db, "select count(*) from tool_calls") == 0
    # nothing is lost: each record keeps its verbatim Markdown and line span
    raw = scalar(db, f"select raw from stg_records where session_id = '{S1}' and text like 'add a --units%'")
    assert '"markdown":"#### add a --units flag (metric or imperial)  \\n#### default to metric  "' in raw
    assert rows(db, "select message_id, line_no from stg_records where record_type = 'user' "
                    f"and session_id = '{S1}' order by line_no limit 2") == [("L10", 3), ("L13", 5)]


def test_header_times_are_local_and_read_in_this_machines_zone(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    db = tmp_path / "w.duckdb"
    run(db, WEATHER)
    assert rows(db, "select session_id, started_at::varchar from sessions order by 2") == [
        (S1, "2026-03-02 08:14:55"), (S2, "2026-03-03 16:40:02")]
    assert scalar(db, f"select raw from stg_records where record_type = 'session' and session_id = '{S1}'").count(
        '"utc_offset":"+01:00"') == 1


def test_a_new_session_appended_loads_only_its_records(tmp_path):
    # the log is read again whole, but its earlier lines come first again: only the new load
    repo = tmp_path / "app"
    log = build.weather_log()
    f = write(repo / aider.HISTORY, log.text)
    db = tmp_path / "w.duckdb"
    assert run(db, repo).records_added == 22
    log.start("2026-03-04 08:00:00").tool("Aider v0.86.2").user("what changed?").ai("Only the flag.")
    f.write_text(log.text)
    s = run(db, repo)
    assert (s.files_changed, s.records_added) == (1, 4)
    assert scalar(db, "select count(*) from stg_records") == 26
    assert scalar(db, "select count(*) from lake_records") == 26
    assert rows(db, "select agent_version from sessions where session_id like '%2026-03-04 08:00:00'") == [("0.86.2",)]


def test_log_without_aiders_hard_breaks_uses_fences(tmp_path):
    """Trailing spaces stripped (an editor saved the file): #### and > lines outside a reply's
    code fence are aider's; inside a fence they are the reply's."""
    text = ("\n# aider chat started at 2026-01-05 10:00:00\n\n> Aider v0.50.0\n> Model: gpt-4o with diff edit format\n\n"
            "#### add a changelog\n\nCHANGELOG.md\n```markdown\n#### Added\n> quoted\n```\n\n"
            "> Applied edit to CHANGELOG.md\n")
    write(tmp_path / "app" / aider.HISTORY, text)
    db = tmp_path / "w.duckdb"
    assert run(db, tmp_path / "app").records_added == 5
    assert rows(db, "select role, text from messages order by line_no") == [
        ("system", "Aider v0.50.0\nModel: gpt-4o with diff edit format"),
        ("user", "add a changelog"),
        ("assistant", "CHANGELOG.md\n```markdown\n#### Added\n> quoted\n```"),
        ("system", "Applied edit to CHANGELOG.md")]
    assert rows(db, "select model from sessions") == [("gpt-4o",)]


def test_text_outside_any_session_and_odd_bytes_are_kept(tmp_path):
    body = ("left over from a truncated log\n\n#### half a prompt  \n"
            "\n# aider chat started at 2026-01-05 10:00:00\n\n#### hi  \n\nhello \xff there\n"
            "\n# aider chat started at 2026-01-05 10:00:00\n\n#### again  \n").encode("latin-1")
    f = write(tmp_path / "app" / aider.HISTORY, body.replace(b"\n", b"\r\n"))
    db = tmp_path / "w.duckdb"
    s = run(db, f)
    assert (s.records_added, s.quarantined) == (8, 0)
    app = tmp_path / "app"
    assert rows(db, "select session_id, count(*) filter (where role is not null) from stg_records "
                    "group by 1 order by 1") == [
        (f"{app}@2026-01-05 10:00:00", 2), (f"{app}@2026-01-05 10:00:00#2", 1), (f"{app}@unknown", 2)]
    assert rows(db, f"select role, text from messages where session_id = '{app}@unknown' order by line_no") == [
        ("assistant", "left over from a truncated log"), ("user", "half a prompt")]
    assert scalar(db, "select text from messages where role = 'assistant' and text like 'hello%'") == "hello \ufffd there"
    assert scalar(db, f"select count(*) from stg_records where session_id = '{app}@unknown' "
                      "and \"timestamp\" is not null") == 0


def test_empty_log_yields_nothing(tmp_path):
    write(tmp_path / "app" / aider.HISTORY, "")
    s = run(tmp_path / "w.duckdb", tmp_path / "app")
    assert (s.files_scanned, s.records_added, s.quarantined) == (1, 0, 0)


def test_folder_search_is_bounded(tmp_path):
    log = build.notes_log().text
    for rel in ("a", "b/c/d", "b/c/d/e", ".hidden/x", "node_modules/pkg", "x/venv/y"):
        write(tmp_path / "projects" / rel / aider.HISTORY, log)
    os.symlink(tmp_path / "projects" / "a", tmp_path / "projects" / "link")
    found = sorted(str(sf.path.parent.relative_to(tmp_path / "projects"))
                   for sf in aider.discover(aider.resolve_root(tmp_path / "projects")))
    assert found == ["a", "b/c/d"]                     # 3 levels, no hidden/vendor folders, no symlinks
    (tmp_path / "deep" / "1" / "2" / "3" / "4").mkdir(parents=True)
    write(tmp_path / "deep" / "1" / "2" / "3" / "4" / aider.HISTORY, log)
    with pytest.raises(RootError):
        aider.resolve_root(tmp_path / "deep")


def test_default_roots_search_home_and_project_folders(tmp_path, isolated_home, monkeypatch):
    home = isolated_home
    roots = aider.default_roots({}, home)
    assert roots[0] == home / "src" and roots[-1] == home
    log = build.notes_log().text
    write(home / "myapp" / aider.HISTORY, log)                    # a repository directly in HOME
    write(home / "myapp" / "sub" / aider.HISTORY, log)            # too deep for HOME's one level
    write(home / "src" / "org" / "tool" / aider.HISTORY, log)     # a project folder, 2 levels down
    targets = default_targets(aider)
    assert [r for _, r in targets] == [home / "src", home]
    found = sorted(str(sf.path.relative_to(home)) for _, r in targets for sf in aider.discover(r))
    assert found == ["myapp/.aider.chat.history.md", "src/org/tool/.aider.chat.history.md"]
    named = write(tmp_path / "elsewhere" / "chat.md", log)
    monkeypatch.setenv("AIDER_CHAT_HISTORY_FILE", str(named))
    assert default_targets(aider)[0][1] == named
    monkeypatch.setenv("AIDER_CHAT_HISTORY_FILE", "relative.md")
    assert default_targets(aider)[0][1] == home / "src"


def test_resolve_root_accepts_file_repo_or_folder(tmp_path):
    f = WEATHER / aider.HISTORY
    assert aider.resolve_root(f) == f
    assert aider.resolve_root(WEATHER) == WEATHER
    assert aider.resolve_root(CONTRACT) == CONTRACT
    assert [sf.path for sf in aider.discover(f)] == [f]
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    for bad in (tmp_path / "empty", tmp_path / "notes.txt", tmp_path / "missing"):
        with pytest.raises(RootError):
            aider.resolve_root(bad)


def test_symlinked_history_is_skipped_with_a_reason(tmp_path):
    repo = tmp_path / "app"
    repo.mkdir()
    os.symlink(WEATHER / aider.HISTORY, repo / aider.HISTORY)
    s = run(tmp_path / "w.duckdb", repo)
    assert s.records_added == 0 and dict(s.skipped)[str(repo / aider.HISTORY)].startswith("not a regular file")
