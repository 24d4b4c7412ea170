"""How listing commands print: an aligned table for people, JSON or CSV for programs.

stdout carries only data; progress and messages go to stderr.
"""
from __future__ import annotations

import csv
import datetime as dt
import decimal
import json
import sys
import uuid
from collections.abc import Sequence
from typing import Any

import click


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (uuid.UUID,)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(_plain(obj), ensure_ascii=False, indent=2))


def rows_as_dicts(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(columns, r)) for r in rows]


def emit_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, *, max_width: int = 60) -> None:
    if fmt == "json":
        emit_json(rows_as_dicts(columns, rows))
    elif fmt == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow(["" if v is None else _cell(v, None) for v in r])
    else:
        emit_table(columns, rows, max_width=max_width)


def _cell(value: Any, width: int | None) -> str:
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
    elif isinstance(value, (dict, list)):
        text = json.dumps(_plain(value), ensure_ascii=False)
    else:
        text = str(value)
    text = " ".join(text.split()) if width is not None else text
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def emit_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], *, max_width: int = 60) -> None:
    cells = [[_cell(v, max_width) for v in r] for r in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(widths[i]) for i, c in enumerate(columns)).rstrip())
    click.echo("  ".join("-" * w for w in widths))
    for r in cells:
        click.echo("  ".join(v.ljust(widths[i]) for i, v in enumerate(r)).rstrip())


def format_option(f):
    """--json / --csv switches shared by every listing command."""
    f = click.option("--csv", "fmt", flag_value="csv", help="Print CSV.")(f)
    f = click.option("--json", "fmt", flag_value="json", help="Print JSON.")(f)
    return f
