"""SQL lives in .sql files so a reader finds every table, view and extraction in one place.

Python only reads them by name and runs them in the order declared here: DuckDB binds a view
when it is created, so the build order must be explicit.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from importlib.resources import files

#: Public and internal views, in build order (each file is one view named by its stem).
VIEWS: tuple[str, ...] = (
    "views/int_current_files",
    "views/int_current_lines",
    "views/stg_records",
    "views/stg_blocks",
    "views/int_session_parts",
    "views/int_session_metadata",
    "views/messages",
    "views/tool_calls",
    "views/sessions",
    "views/usage",
    "views/unique_messages",
    "views/quarantine",
    "views/search_docs",
    "views/search_postings",
    "views/int_chain_nodes",
    "views/int_chain_relinked",
    "views/int_chain_leaves",
    "views/int_chain_runs",
    "views/int_chain_depths",
    "views/branches",
    "views/int_chain_positions",
    "views/int_chain_paths",
    "views/chain_messages",
    "views/resume_messages",
    "views/session_state",
    "views/chain_issues",
)

#: Views a user is meant to query; the rest are layers beneath them.
PUBLIC_VIEWS: tuple[str, ...] = (
    "usage",
    "unique_messages",
    "sessions",
    "messages",
    "tool_calls",
    "quarantine",
    "branches",
    "chain_messages",
    "resume_messages",
    "session_state",
    "chain_issues",
)


#: Table macros that queries of one session call; each is made on the reading connection
#: (`session_macros`), since as a view it would be computed for every session first.
SESSION_MACROS: tuple[str, ...] = ("macros/live_path",)


def session_macros(con) -> None:
    """Make the session macros on `con` (temporary: a read-only connection can hold them).

    A macro binds to the views it reads when it is made; a database without them (one made
    by hand, as some tests do) opens without the macro rather than not at all."""
    import duckdb

    for name in SESSION_MACROS:
        try:
            con.execute(read(name))
        except duckdb.CatalogException:
            pass


def read(name: str) -> str:
    """Return the text of `sql/<name>.sql`."""
    return _read(name)


@functools.lru_cache(maxsize=None)
def _read(name: str) -> str:
    # read once a process: a pick-up under `watch` read some 90 files again, 20 ms of it
    return files(__name__).joinpath(f"{name}.sql").read_text("utf-8")


def view_name(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def grain(sql_text: str) -> str:
    """The first `-- grain:` comment of a view file, used as the view's comment."""
    m = re.search(r"^--\s*grain:\s*(.+)$", sql_text, re.MULTILINE)
    return m.group(1).strip() if m else ""


@dataclass(frozen=True)
class Migration:
    version: int
    filename: str
    text: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def migrations() -> list[Migration]:
    """Every `migrations/NNNN_*.sql`, ordered; duplicate numbers are a packaging error."""
    found: dict[int, Migration] = {}
    for entry in files(__name__).joinpath("migrations").iterdir():
        m = re.match(r"^(\d{4})_[a-z0-9_]+\.sql$", entry.name)
        if not m:
            continue
        version = int(m.group(1))
        if version in found:
            raise RuntimeError(f"two migrations claim number {version:04d}: renumber one")
        found[version] = Migration(version, entry.name, entry.read_text("utf-8"))
    return [found[v] for v in sorted(found)]
