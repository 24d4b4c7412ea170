"""`convarch doctor`: which stores are at risk of losing history before the next ingest, and
how to schedule ingest so they are not."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from convarch import adapters
from convarch.cli import schedule
from convarch.cli.changes import folders_to_watch, native_notices, watch_limit
from convarch.cli.output import emit_json
from convarch.cli.targets import default_targets, home
from convarch.etl.duck import connect
from convarch.etl import readers
from convarch.etl.manifest import read_manifest

DAY = 86400


def claude_cleanup_days() -> tuple[int, str]:
    """Claude Code deletes transcripts older than `cleanupPeriodDays` (settings.json, default 30)."""
    cfg = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home() / ".claude") / "settings.json"
    try:
        value = json.loads(cfg.read_text()).get("cleanupPeriodDays")
        if isinstance(value, int) and value > 0:
            return value, str(cfg)
    except (OSError, ValueError, AttributeError):
        pass
    return 30, "default"


def archived_files(layout) -> dict[str, tuple[int, int]]:
    """Source path -> (size, mtime_ns) as of the last ingest; empty when there is no warehouse."""
    if not layout.state_db.exists():
        return {}
    try:
        con = connect(layout.state_db, read_only=True)
    except Exception:  # noqa: BLE001 - an ingest holding the state: report without it
        return {}
    try:
        return {p: (s, m) for p, s, m in con.execute("select path, size, mtime_ns from source_files").fetchall()}
    finally:
        con.close()


def lake_usage(layout) -> dict | None:
    """What the archive takes on disk: the Parquet the published catalog reads, and files
    merged away that wait until no reader holds an older catalog naming them (or a day, where
    that cannot be told). None when there is no warehouse."""
    manifest = read_manifest(layout)
    if manifest is None or not layout.lake.is_dir():
        return None
    listed = {os.path.realpath(f) for paths in manifest.get("files", {}).values() for f in paths}
    listed_bytes = waiting_bytes = waiting = 0
    for dirpath, _dirs, names in os.walk(layout.lake):
        for name in names:
            path = os.path.join(dirpath, name)
            try:
                size = os.stat(path).st_size
            except OSError:
                continue
            if os.path.realpath(path) in listed:
                listed_bytes += size
            elif name.endswith(".parquet"):
                waiting_bytes += size
                waiting += 1
    held = readers.held_count(layout)
    return {"listed_bytes": listed_bytes, "merged_away_bytes": waiting_bytes, "merged_away_files": waiting,
            "kept_catalogs": None if held is None else held[0],
            "catalogs_held_open": None if held is None else held[1]}


def notices_line(n: dict) -> str:
    """Whether `watch` can be told of changes in every store folder: where it cannot, each of
    its runs looks at every file of the stores it could not watch."""
    if not n["native"]:
        return "\nChange notices: none on this platform; `watch` looks at every file at each --interval"
    line = f"\nChange notices: {n['folders']:,} store folder(s) to watch"
    if n["watch_limit"] is None:
        return line
    line += f", of at most {n['watch_limit']:,} for all your processes (fs.inotify.max_user_watches)"
    if n["folders"] > n["watch_limit"]:
        line += ("\n  too many: `watch` cannot be told of every change, and each of its runs looks at every file "
                 "of a store it could not watch; raise fs.inotify.max_user_watches (sysctl)")
    return line


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--horizon", default=7, show_default=True, help="Days ahead to look for transcripts about to be deleted.")
@click.pass_obj
def doctor(obj, as_json: bool, horizon: int) -> None:
    """Report stores at risk and print a schedule for ingest."""
    days, setting = claude_cleanup_days()
    archived = archived_files(obj.layout)
    now = time.time()
    report = {"warehouse": str(obj.layout.db), "warehouse_exists": obj.layout.db.exists(), "sources": []}
    targets = [t for adapter in adapters.ADAPTERS.values() for t in default_targets(adapter)]
    for a, root in targets:
        files = at_risk = unarchived = 0
        for sf in a.discover(root):
            try:
                st = os.stat(sf.path, follow_symlinks=False)
            except OSError:
                continue
            files += 1
            seen = archived.get(str(sf.path))
            if seen != (st.st_size, st.st_mtime_ns):
                unarchived += 1
                if a.NAME == "claude_code" and now - st.st_mtime > (days - horizon) * DAY:
                    at_risk += 1
        entry = {"source": a.NAME, "store": str(root), "files": files, "not_yet_archived": unarchived}
        if a.NAME == "claude_code":
            entry |= {"cleanup_period_days": days, "cleanup_setting": setting,
                      "deleted_within_horizon_and_not_archived": at_risk}
        report["sources"].append(entry)
    report["lake"] = lake_usage(obj.layout)
    report["notices"] = {"native": native_notices(), "folders": folders_to_watch(root for _, root in targets),
                         "watch_limit": watch_limit()}
    db = obj.layout.db
    report["schedule"] = {
        "cron": schedule.cron_line(db),
        "systemd_service": schedule.systemd_service(db),
        "systemd_timer": "[Timer]\nOnBootSec=5min\nOnUnitActiveSec=30min\n\n[Install]\nWantedBy=timers.target",
        "watch": schedule.watch_line(db),
    }
    if as_json:
        emit_json(report)
        return
    if not report["sources"]:       # every store gone (cleaned up, moved): the archive still tells
        click.echo("No agent store found on this machine (see `convarch sources`); "
                   "the archive keeps what it holds.")
    for e in report["sources"]:
        line = f"{e['source']:<14} {e['files']:>6} files, {e['not_yet_archived']:>6} not yet archived  {e['store']}"
        click.echo(line)
        if "cleanup_period_days" in e:
            click.echo(f"{'':14} Claude Code deletes transcripts after {e['cleanup_period_days']} days "
                       f"({e['cleanup_setting']}); {e['deleted_within_horizon_and_not_archived']} unarchived "
                       f"transcripts are due within {horizon} days")
    if (lake := report["lake"]) is not None:
        held = ("" if lake["catalogs_held_open"] is None
                else f", {lake['catalogs_held_open']} older catalog(s) held open by readers")
        click.echo(f"\nArchive: {lake['listed_bytes'] / 1e6:,.1f} MB read by the catalog; "
                   f"{lake['merged_away_bytes'] / 1e6:,.1f} MB in {lake['merged_away_files']} merged-away "
                   f"file(s) waiting for their readers{held}")
    click.echo(notices_line(report["notices"]))
    click.echo("\nKeep the archive current with one of:")
    click.echo(f"  cron:    {report['schedule']['cron']}")
    click.echo("  systemd: a oneshot service running `ingest --all` plus a timer with OnUnitActiveSec=30min")
    click.echo(f"  or run:  {report['schedule']['watch']}")
