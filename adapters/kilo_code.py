"""Kilo Code (Kilo-Org/kilocode): the Kilo CLI database ``kilo.db`` (an OpenCode fork, 2026)
and the task folders of the Roo-based VS Code extension and legacy CLI (2025).

Evidence followed (formats.md §11, confidence R H: no public sample, and Kilo's repository
could not be fetched whole; the fixtures under fixtures/kilo_code are written from the
evidence below):
- Database: ``$XDG_DATA_HOME/kilo/kilo.db`` (``~/.local/share/kilo``, the same on macOS as
  OpenCode's ``xdg-basedir``); ``KILO_DB`` names another file (absolute, or a name inside the
  data folder; ``:memory:`` is ignored); dev channels write ``kilo-<channel>.db``; a
  pre-rename install left ``opencode*.db`` in the same folder, which Kilo reads only while no
  ``kilo*.db`` exists, and so does this adapter (search-index excerpts of Kilo's storage/db
  module and of third-party readers: ccusage ``adapter/kilo``, agentsview-style scanners).
  Its tables are OpenCode's (``session``, ``message``, ``part`` with JSON ``data``), so the
  rows are read by adapters/opencode.py's database reader, imported, not copied. Kilo adds
  ``event``/``event_sequence`` tables (an event log whose authority is an open question in
  formats.md §25); they are not read, as the message/part projection is what Kilo's own
  readers and ccusage use.
- Task folders: the VS Code extension ``kilocode.kilo-code`` (Roo Code's layout under
  ``<user data>/User/globalStorage/``, every VS Code build) and the legacy ``kilocode`` CLI
  0.x, ``~/.kilocode/cli/global/tasks/<taskId>/`` (R: third-party stats readers). Read as
  Roo Code's (adapters/roo_code.py).

Parsing is shared with Cline and Roo Code (``sql/extract/cline_family__*.sql``), which also
reads the OpenCode rows: a session row is a metadata record (title, directory, parent),
a message row with its parts is one message (a tool part yields a tool_use and a tool_result
block, linked by ``callID``), orphan parts and ``session_message`` rows are bookkeeping.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from convarch.adapters import _cline_tasks as tasks
from convarch.adapters import opencode
from convarch.adapters.base import Extract, RootError, SourceFile

NAME = "kilo_code"
TITLE = "Kilo Code"
ENV_VARS = ("KILO_DB",)
EXTRACT = Extract(records="extract/cline_family__records", blocks="extract/cline_family__blocks")
# its SQL reads every line on its own: a rewrite loads only the lines it did not give before
LINES_STAND_ALONE = True
EXTENSION_ID = "kilocode.kilo-code"
KILO_DB = re.compile(r"^kilo(-[A-Za-z0-9._-]+)?\.db$")
LEGACY_DB = re.compile(r"^opencode(-[A-Za-z0-9._-]+)?\.db$")
SIDECARS = ("-wal", "-shm", "-journal")


def _data_dir(env: Mapping[str, str], home: Path) -> Path:
    xdg = env.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "share") / "kilo"


def default_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    """``$KILO_DB`` when it names a file, Kilo's data folder, the legacy CLI's global folder,
    then the extension's storage in every VS Code build."""
    data = _data_dir(env, home)
    roots: list[Path] = []
    db = env.get("KILO_DB")
    if db and db != ":memory:":
        roots.append(Path(db) if Path(db).is_absolute() else data / db)
    roots.append(data)
    roots.append(home / ".local" / "share" / "kilo")
    roots.append(home / ".kilocode" / "cli" / "global")
    roots.extend(tasks.vscode_storage_dirs(env, home, EXTENSION_ID))
    return list(dict.fromkeys(roots))


def databases(folder: Path) -> list[Path]:
    """The Kilo databases in a data folder, ``kilo.db`` first; a pre-rename ``opencode*.db``
    only when no Kilo-named one exists. Symlinks are listed (ingest reports them skipped)."""
    try:
        names = sorted(e.name for e in os.scandir(folder) if not e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    kilo = sorted((n for n in names if KILO_DB.match(n)), key=lambda n: (n != "kilo.db", n))
    return [folder / n for n in (kilo or [n for n in names if LEGACY_DB.match(n)])]


def resolve_root(path: Path) -> Path:
    """Accept Kilo's data folder or a database in it, ``~/.kilocode`` or its
    ``cli/global`` folder, the extension's storage folder (or a VS Code user-data, ``User``
    or ``globalStorage`` folder above it), a ``tasks`` or task folder, or one task JSON file."""
    if path.is_file():
        if path.suffix == ".db" and not path.name.endswith(SIDECARS):
            return path
        if path.suffix == ".json":
            return path
        raise RootError(f"{path} is neither a Kilo database nor a JSON file of a task")
    if path.is_dir() and databases(path):
        return path
    try:
        return tasks.resolve_store(path, (EXTENSION_ID,), data_dirs=("cli/global",))
    except RootError:
        raise RootError(f"{path} holds no kilo.db and no task files") from None


def discover(root: Path) -> Iterator[SourceFile]:
    """The databases of a data folder, else every task file under ``root``; by path only,
    symlinks are not followed."""
    if root.is_file():
        if root.suffix == ".db":
            yield SourceFile(NAME, root, root.parent, container="sqlite")
        else:
            yield tasks.single(root, NAME)
        return
    dbs = databases(root)
    for db in dbs:
        yield SourceFile(NAME, db, root, container="sqlite")
    if not dbs:
        yield from tasks.walk(root, NAME)


def to_lines(copy: Path, file: SourceFile) -> Iterator[bytes]:
    """kilo.db rows as OpenCode's reader serializes them; task files as Roo Code's."""
    if file.container == "sqlite":
        return opencode.db_lines(copy)
    return tasks.json_lines(copy, file)
