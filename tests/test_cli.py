"""The command line: summaries, listings, read-only SQL, errors and exit codes."""
from __future__ import annotations

import json
import os
import shutil

from click.testing import CliRunner

from convarch.cli import cli
from conftest import DEMO


def invoke(*args, **kw):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **kw)


def test_ingest_json_summary_then_sessions_and_sql(tmp_path):
    db = str(tmp_path / "w.duckdb")
    r = invoke("--db", db, "ingest", "claude_code", "--root", str(DEMO), "--json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    for key in ("files_scanned", "files_changed", "sessions", "records_added", "quarantined", "seconds"):
        assert key in summary
    assert summary["files_scanned"] == 3 and summary["sessions"] == 2 and summary["quarantined"] == 0
    r = invoke("--db", db, "sessions", "--json")
    listed = json.loads(r.output)
    assert {s["source"] for s in listed} == {"claude_code"} and len(listed) == 2
    assert all(isinstance(s["started_at"], str) for s in listed)
    r = invoke("--db", db, "sessions", "--cwd", "/home/demo", "--json")
    assert len(json.loads(r.output)) == 2
    r = invoke("--db", db, "sessions", "--cwd", "/home/other", "--json")
    assert json.loads(r.output) == []
    r = invoke("--db", db, "sql", "select tool_name, is_error from tool_calls order by tool_name", "--csv")
    assert r.output.splitlines()[0] == "tool_name,is_error"
    assert "Bash,True" in r.output


def test_root_accepts_config_dir_projects_dir_and_project_folder(tmp_path):
    for i, root in enumerate([DEMO, DEMO / "projects", next((DEMO / "projects").iterdir())]):
        db = str(tmp_path / f"w{i}.duckdb")
        r = invoke("--db", db, "ingest", "claude", "--root", str(root), "--json")
        assert json.loads(r.output)["records_added"] > 0, root


def test_ingest_all_honours_home_and_claude_config_dir(tmp_path, isolated_home, monkeypatch):
    shutil.copytree(DEMO, isolated_home / ".claude")
    other = tmp_path / "elsewhere"
    shutil.copytree(DEMO / "projects", other / "projects" )
    db = str(tmp_path / "w.duckdb")
    r = invoke("--db", db, "ingest", "--all", "--json")
    assert json.loads(r.output)["files_scanned"] == 3
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(other))
    r = invoke("--db", db, "ingest", "--all", "--json")
    assert json.loads(r.output)["files_scanned"] == 6
    r = invoke("sources", "--json")
    src = {s["source"]: s for s in json.loads(r.output)}["claude_code"]
    assert src["found"] and src["files"] == 6
    assert [loc["found"] for loc in src["locations"]] == [True, True, False]


def test_sources_lists_a_place_two_variables_name_once_as_ingest_reads_it(tmp_path, isolated_home):
    """XDG_DATA_HOME set to ~/.local/share names Amp's default place twice."""
    threads = isolated_home / ".local" / "share" / "amp" / "threads"
    threads.mkdir(parents=True)
    for k in range(2):
        (threads / f"T-{k}.json").write_text(json.dumps({"id": f"T-{k}", "created": 1778000000000, "messages": []}))
    src = {s["source"]: s for s in json.loads(invoke("sources", "--json").output)}["amp"]
    assert [loc["path"] for loc in src["locations"]] == [str(threads.parent)]
    assert (src["found"], src["files"]) == (True, 2)
    r = invoke("--db", str(tmp_path / "w.duckdb"), "ingest", "--all", "--json")
    assert json.loads(r.output)["files_scanned"] == src["files"]


def test_default_warehouse_location_follows_xdg(isolated_home):
    r = invoke("ingest", "claude_code", "--root", str(DEMO), "--json")
    assert r.exit_code == 0
    db = isolated_home / ".local" / "share" / "convarch" / "convarch.duckdb"
    assert db.exists()
    assert os.stat(db.parent).st_mode & 0o777 == 0o700


def test_sql_is_read_only_and_cannot_touch_files(tmp_path):
    db = str(tmp_path / "w.duckdb")
    invoke("--db", db, "ingest", "claude_code", "--root", str(DEMO))
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    for q in (f"select * from read_csv('{secret}')", f"copy (select 1) to '{tmp_path}/out.csv'",
              f"attach '{tmp_path}/x.db'", "install fts", "create table t (a int)",
              "set enable_external_access = true"):
        r = CliRunner().invoke(cli, ["--db", db, "sql", q])
        assert r.exit_code == 1, (q, r.output)
        assert r.output.startswith("Error:") and "Traceback" not in r.output
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "x.db").exists()


def test_exit_codes(tmp_path):
    db = str(tmp_path / "w.duckdb")
    r = CliRunner().invoke(cli, ["--db", db, "ingest", "no-such-agent"])
    assert r.exit_code == 2 and "unknown source" in r.output
    r = CliRunner().invoke(cli, ["--db", db, "ingest"])
    assert r.exit_code == 2
    r = CliRunner().invoke(cli, ["--db", db, "sessions"])
    assert r.exit_code == 1 and "no warehouse" in r.output
    r = CliRunner().invoke(cli, ["--db", db, "ingest", "claude", "--root", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "does not exist" in r.output


def test_a_moved_or_copied_warehouse_says_so_until_ingest_updates_it(tmp_path):
    """The catalog names its Parquet files by absolute path: a copy must not read the
    original's files, and a move must not fail with a file error."""
    first = tmp_path / "a" / "w.duckdb"
    assert invoke("--db", str(first), "ingest", "claude_code", "--root", str(DEMO)).exit_code == 0
    copy = tmp_path / "copy"
    shutil.copytree(first.parent, copy)
    moved = tmp_path / "moved"
    shutil.move(str(first.parent), str(moved))
    for folder in (copy, moved):
        db = str(folder / "w.duckdb")
        r = CliRunner().invoke(cli, ["--db", db, "sessions", "--json"])
        assert r.exit_code == 1 and "was moved or copied from" in r.output and str(tmp_path / "a") in r.output
        r = invoke("--db", db, "ingest", "claude_code", "--root", str(DEMO), "--json")
        assert r.exit_code == 0 and json.loads(r.output)["files_changed"] == 0
        r = invoke("--db", db, "sql", "select count(*) as n from messages", "--json")
        assert r.exit_code == 0 and json.loads(r.output)[0]["n"] > 0
        manifest = json.loads((folder / "w.d" / "manifest.json").read_text())
        assert all(p.startswith(str(folder)) for paths in manifest["files"].values() for p in paths)


def test_a_new_version_publishes_its_views_at_the_first_ingest_even_with_no_new_data(tmp_path):
    db = tmp_path / "w.duckdb"
    manifest = tmp_path / "w.d" / "manifest.json"
    assert invoke("--db", str(db), "ingest", "claude_code", "--root", str(DEMO)).exit_code == 0
    published = os.stat(db).st_mtime_ns, os.stat(db).st_ino
    assert invoke("--db", str(db), "ingest", "claude_code", "--root", str(DEMO)).exit_code == 0
    assert (os.stat(db).st_mtime_ns, os.stat(db).st_ino) == published       # nothing new: not again
    older = json.loads(manifest.read_text())
    current = older["catalog"]
    older["catalog"] = "made-by-an-older-version"
    manifest.write_text(json.dumps(older))
    r = invoke("--db", str(db), "ingest", "claude_code", "--root", str(DEMO), "--json")
    assert r.exit_code == 0 and json.loads(r.output)["files_changed"] == 0
    assert os.stat(db).st_ino != published[1]                                 # a new catalog swapped in
    assert json.loads(manifest.read_text())["catalog"] == current


def test_a_warehouse_named_through_a_symbolic_link_has_not_moved(tmp_path):
    from convarch.etl.layout import Layout
    from convarch.etl.manifest import moved_from

    (tmp_path / "real" / "w.d" / "lake").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "lake" / "w.d" / "lake").mkdir(parents=True)      # a folder named lake above it
    for published, opened, moved in (("link", "real", False), ("real", "link", False), ("link", "link", False),
                                      ("lake", "lake", False), ("link", "lake", True), ("lake", "real", True)):
        lake = Layout(tmp_path / published / "w.duckdb").lake
        manifest = {"files": {"records": [str(lake / "records" / "source=x" / "month=y" / "a.parquet")]}}
        got = moved_from(Layout(tmp_path / opened / "w.duckdb"), manifest)
        assert got == (str(tmp_path / published / "w.d") if moved else None), (published, opened)


def test_each_command_loads_only_its_own_module(tmp_path):
    """Reading commands must not pay for the load machinery (Arrow, ingest) at start."""
    import subprocess
    import sys

    from convarch.cli import COMMANDS

    probe = (
        "import sys\n"
        "from convarch.cli import cli\n"
        "try:\n"
        "    cli(['search', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('pyarrow', 'convarch.etl.ingest', 'convarch.cli.ingest') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "HOME": str(tmp_path)})
    assert out.stdout.strip().splitlines()[-1] == "[]"
    # every listed command resolves to a command of that name, and help lists them all
    for name in COMMANDS:
        assert cli.get_command(None, name).name == name
    listed = invoke("--help").output
    assert all(f"  {name} " in listed for name in COMMANDS)


def test_ctrl_c_inside_a_duckdb_query_is_an_abort_like_any_other(tmp_path, monkeypatch):
    """DuckDB turns Ctrl-C that arrives mid-query into its own error; the user sees the same
    'Aborted!' and exit code as for Ctrl-C anywhere else, not a one-line internal error."""
    import duckdb

    from convarch.cli import ingest as ingest_cli

    shutil.copytree(DEMO, tmp_path / ".claude")
    db = str(tmp_path / "w.duckdb")
    for exc in (duckdb.InterruptException("INTERRUPT Error: Interrupted!"), RuntimeError("Query interrupted"),
                KeyboardInterrupt()):
        def stopped(*args, _exc=exc, **kwargs):
            raise _exc

        monkeypatch.setattr(ingest_cli, "run_ingest", stopped)
        r = CliRunner().invoke(cli, ["--db", db, "ingest", "claude", "--root", str(tmp_path / ".claude")])
        assert (r.exit_code, r.output.strip().splitlines()[-1]) == (1, "Aborted!"), r.output
    monkeypatch.setattr(ingest_cli, "run_ingest", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("disk on fire")))
    r = CliRunner().invoke(cli, ["--db", db, "ingest", "claude", "--root", str(tmp_path / ".claude")])
    assert r.exit_code == 1 and "RuntimeError: disk on fire" in r.output


def test_a_reader_that_stops_early_is_not_an_error(tmp_path):
    """`convarch sources | head -2`: the closed pipe ends the command quietly with 0, both when
    the output outgrows the pipe mid-command and when it is only flushed at exit."""
    import subprocess
    import sys

    env = {**os.environ, "HOME": str(tmp_path), "CONVARCH_DB": str(tmp_path / "w.duckdb")}
    assert invoke("--db", env["CONVARCH_DB"], "ingest", "claude_code", "--root", str(DEMO)).exit_code == 0
    for args in (["sources"], ["sources", "--json"], ["sessions", "--limit", "1"], ["--version"], ["--help"],
                 ["sessions", "--help"]):
        proc = subprocess.Popen([sys.executable, "-m", "convarch.cli", *args], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()                     # the reader is gone before the first write
        err = proc.stderr.read().decode()
        proc.stderr.close()
        assert proc.wait() == 0, (args, err)
        assert err == "", (args, err)
