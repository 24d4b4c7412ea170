"""The `convarch` command group: one clear line and a stable exit code for every error.

Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 nothing matched.
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import click

from convarch import __version__
from convarch.etl.errors import ConvarchError
from convarch.etl.warehouse import layout_for


class Context:
    def __init__(self, db: str | None, debug: bool):
        self.db = db
        self.debug = debug

    @property
    def layout(self):
        return layout_for(self.db)


class _Failure(click.ClickException):
    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


# command -> (module under convarch.cli, attribute). A command's module, and what it pulls in
# (Arrow and the whole load machinery for `ingest`), is imported only when that command runs,
# so `convarch search` or `convarch sql` start in about a third of the time.
COMMANDS = {name: (name, name) for name in (
    "doctor", "export", "handoff", "ingest", "quarantine", "schema", "search", "sessions", "show",
    "sources", "watch")} | {"sql": ("query", "sql_command")}


def _interrupted(exc: Exception) -> bool:
    """Ctrl-C that reached DuckDB mid-query: it stops the query and raises its own error in
    place of KeyboardInterrupt (by name, so that --version need not import duckdb)."""
    return type(exc).__name__ == "InterruptException" or (
        isinstance(exc, RuntimeError) and str(exc) == "Query interrupted")


class ConvarchGroup(click.Group):
    """Turns every error below it into one line on stderr and a stable exit code; loads each
    command's module when the command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and name not in self.commands:
            module, attr = COMMANDS[name]
            self.add_command(getattr(importlib.import_module(f"convarch.cli.{module}"), attr), name)
        return super().get_command(ctx, name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """`--version` and `--help` print while the arguments are parsed, before `invoke`: a
        reader gone by then (`convarch --version | head -0`) is not an error either."""
        try:
            return super().parse_args(ctx, args)
        except BrokenPipeError:
            _drop_stdout()
            raise click.exceptions.Exit(0) from None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except ConvarchError as exc:
            if ctx.obj and ctx.obj.debug:
                raise
            raise _Failure(str(exc), exc.exit_code) from exc
        except KeyboardInterrupt:
            raise click.exceptions.Abort() from None
        except BrokenPipeError:
            _drop_stdout()
            raise click.exceptions.Exit(0) from None
        except Exception as exc:  # the one boundary where anything unexpected becomes one line
            if _interrupted(exc):
                raise click.exceptions.Abort() from None
            if ctx.obj and ctx.obj.debug:
                raise
            raise _Failure(f"{type(exc).__name__}: {exc} (run with --debug for details)", 1) from exc


@click.group(cls=ConvarchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", type=click.Path(dir_okay=False, path_type=Path), envvar="CONVARCH_DB",
              help="Warehouse file (default: $CONVARCH_DB, else $XDG_DATA_HOME/convarch/convarch.duckdb).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@click.version_option(__version__, prog_name="convarch")
@click.pass_context
def cli(ctx: click.Context, db: Path | None, debug: bool) -> None:
    """Archive every coding agent's sessions into one DuckDB warehouse."""
    ctx.obj = Context(str(db) if db else None, debug)


def _drop_stdout() -> None:
    """The reader of our output went away (`convarch sessions | head`): that is not an error,
    and what is still buffered must not raise again when the interpreter flushes at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main() -> None:
    try:
        cli(prog_name="convarch")
    finally:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _drop_stdout()
