"""The lines `convarch doctor` prints for running ingest on a schedule, ready to paste.

A scheduler runs them without the user's shell: cron hands the line to /bin/sh with a bare
environment (and reads `%` as a newline), systemd splits ExecStart by its own quoting rules
(and expands `%` and `$`). So every path is quoted for the one that reads it, and the store
locations the user set in the environment (CLAUDE_CONFIG_DIR, CODEX_HOME…) go with the command:
without them a scheduled `ingest --all` would archive the default folders, not theirs.
"""
from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from convarch import adapters


def command() -> list[str]:
    """How to run convarch from a scheduler: the installed script, else this interpreter."""
    exe = shutil.which("convarch")
    return [exe] if exe else [sys.executable, "-m", "convarch.cli"]


def store_environment() -> dict[str, str]:
    """The adapters' home overrides set in this environment, which a scheduler would not have."""
    names = sorted({v for a in adapters.ADAPTERS.values() for v in a.ENV_VARS} | {"XDG_CONFIG_HOME", "XDG_DATA_HOME"})
    return {n: os.environ[n] for n in names if os.environ.get(n)}


def cron_line(db: Path, every_minutes: int = 30) -> str:
    env = [f"{k}={shlex.quote(v)}" for k, v in store_environment().items()]
    args = [shlex.quote(a) for a in [*command(), "--db", str(db), "ingest", "--all", "--json"]]
    line = " ".join([*env, *args, ">/dev/null", "2>&1"])
    return f"*/{every_minutes} * * * * " + line.replace("%", "\\%")


def systemd_service(db: Path) -> str:
    env = [f"Environment={_systemd_quote(f'{k}={v}')}" for k, v in store_environment().items()]
    exec_start = " ".join(_systemd_quote(a) for a in [*command(), "--db", str(db), "ingest", "--all"])
    return "\n".join(["[Service]", "Type=oneshot", *env, f"ExecStart={exec_start}"])


def watch_line(db: Path) -> str:
    return " ".join(shlex.quote(a) for a in [*command(), "--db", str(db), "watch"])


def _systemd_quote(arg: str) -> str:
    """One word as systemd reads it: specifiers (%) and variables ($) doubled, and quoted in
    double quotes with backslash escapes when it holds a space, a quote or a backslash."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if arg and not any(c.isspace() or c in "\"'\\;" for c in arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
