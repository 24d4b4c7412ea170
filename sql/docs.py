"""Documentation of the public views, read from the comments of their own SQL files.

Two kinds of comment carry it, so the SQL and its description live side by side:

* the view's grain: the ``-- grain: …`` line at the top of the file, plus the ``--`` lines
  that continue it up to the first empty ``--`` line or line of code;
* a column's description: a trailing ``-- …`` comment on the line of a select list that ends
  with the column's name (its alias, or the bare column), for instance
  ``paths.position as seq,  -- 1..n along the branch``.

``describe`` joins these to the column names and types DuckDB reports for an open warehouse;
``schema_markdown`` renders them for `convarch schema` and for exports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from convarch import sql

_IDENT = re.compile(r'("?)([A-Za-z_][A-Za-z0-9_]*)\1$')
_GRAIN = re.compile(r"^--\s*grain:\s*(.*)$")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class View:
    name: str
    grain: str
    columns: tuple[Column, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict:
        return {
            "view": self.name,
            "grain": self.grain,
            "columns": [{"name": c.name, "type": c.type, "description": c.description} for c in self.columns],
        }


def split_comment(line: str) -> tuple[str, str | None]:
    """Split one line of SQL into its code and its trailing `--` comment (None if it has none);
    a `--` inside a quoted string or identifier is not a comment."""
    quote = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif line.startswith("--", i):
            return line[:i], line[i + 2:].strip()
        i += 1
    return line, None


def grain(sql_text: str) -> str:
    """The view's grain: the `-- grain:` line and the comment lines that continue it."""
    lines = sql_text.splitlines()
    for i, line in enumerate(lines):
        m = _GRAIN.match(line.strip())
        if not m:
            continue
        parts = [m.group(1).strip()]
        for more in lines[i + 1:]:
            more = more.strip()
            if not more.startswith("--"):
                break
            text = more[2:].strip()
            if not text:
                break
            parts.append(text)
        return " ".join(p for p in parts if p)
    return ""


def column_comments(sql_text: str) -> dict[str, str]:
    """Column name -> description, from the trailing comments of select-list lines.

    If a name is described on more than one line, the last one wins (the final select comes
    last in a view file)."""
    found: dict[str, str] = {}
    for line in sql_text.splitlines():
        code, comment = split_comment(line)
        code = code.strip().rstrip(",").rstrip()
        if not comment or not code:
            continue
        m = _IDENT.search(code)
        if m:
            found[m.group(2)] = comment
    return found


def view_docs(view: str) -> tuple[str, dict[str, str]]:
    """The grain and column descriptions of one view, from its SQL file."""
    text = sql.read(f"views/{view}")
    return grain(text), column_comments(text)


def apply_comments(con: duckdb.DuckDBPyConnection, view: str, sql_text: str | None = None) -> None:
    """Store a view's column descriptions in the catalog, where any DuckDB client sees them
    (`duckdb_columns().comment`). Columns the view no longer has are skipped."""
    text = sql.read(f"views/{view}") if sql_text is None else sql_text
    present = {r[0] for r in con.execute(
        "select column_name from duckdb_columns() where table_name = ? and schema_name = 'main'", [view]
    ).fetchall()}
    statements = [f'comment on column {view}."{name}" is {_literal(desc)}'
                  for name, desc in column_comments(text).items() if name in present]
    if statements:
        con.execute(";\n".join(statements))


def describe(con: duckdb.DuckDBPyConnection, views: tuple[str, ...] | None = None) -> list[View]:
    """Every public view of an open warehouse with its columns, types and descriptions.

    Descriptions come from the SQL files of this package. Where a view's file does not
    describe a column (one the catalog adds, or a warehouse published by another version), the
    comment stored in the catalog fills in, else the description of the same column in another
    public view."""
    names = sql.PUBLIC_VIEWS if views is None else views
    catalog_views = dict(con.execute(
        "select view_name, comment from duckdb_views() where schema_name = 'main' and not internal "
        "union all select table_name, comment from duckdb_tables() where schema_name = 'main'"
    ).fetchall())
    documented = {}
    for name in sql.PUBLIC_VIEWS:
        try:
            documented[name] = view_docs(name)
        except FileNotFoundError:
            documented[name] = ("", {})
    shared: dict[str, str] = {}
    for _grain, cols in documented.values():
        for col, desc in cols.items():
            shared.setdefault(col, desc)
    out = []
    for name in names:
        if name not in catalog_views:
            continue
        file_grain, file_cols = documented.get(name, ("", {}))
        cols = tuple(
            Column(col, typ, file_cols.get(col) or comment or shared.get(col, ""))
            for col, typ, comment in con.execute(
                "select column_name, data_type, comment from duckdb_columns() "
                "where table_name = ? and schema_name = 'main' order by column_index",
                [name],
            ).fetchall()
        )
        out.append(View(name, file_grain or (catalog_views[name] or ""), cols))
    return out


def schema_markdown(views: list[View], *, heading: str = "##", types: dict[str, dict[str, str]] | None = None) -> str:
    """The views as Markdown: a section per view with its grain and a table of columns.

    `types` overrides the type shown per view and column (an export shows its Parquet types)."""
    parts = []
    for v in views:
        parts.append(f"{heading} `{v.name}`\n\n{_md(v.grain) or '(no description)'}\n")
        parts.append("| column | type | description |\n|---|---|---|")
        shown = (types or {}).get(v.name, {})
        for c in v.columns:
            parts.append(f"| `{c.name}` | {shown.get(c.name, c.type)} | {_md(c.description)} |")
        parts.append("")
    return "\n".join(parts)


def _md(text: str) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def _literal(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
