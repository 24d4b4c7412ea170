"""The `convarch` command group: one clear line and a stable exit code for every error.

Exit codes: 0 ok, 1 runtime error, 2 usage error, 3 nothing matched.
"""
from __future__ import annotations

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


class ConvarchGroup(click.Group):
    """Turns every error below it into one line on stderr and a stable exit code."""

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
        except Exception as exc:  # the one boundary where anything unexpected becomes one line
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


from convarch.cli import export as _export  # noqa: E402
from convarch.cli import handoff as _handoff  # noqa: E402
from convarch.cli import ingest as _ingest  # noqa: E402
from convarch.cli import quarantine as _quarantine  # noqa: E402
from convarch.cli import query as _query  # noqa: E402
from convarch.cli import schema as _schema  # noqa: E402
from convarch.cli import doctor as _doctor  # noqa: E402
from convarch.cli import search as _search  # noqa: E402
from convarch.cli import watch as _watch  # noqa: E402
from convarch.cli import show as _show  # noqa: E402
from convarch.cli import sessions as _sessions  # noqa: E402
from convarch.cli import sources as _sources  # noqa: E402

cli.add_command(_ingest.ingest)
cli.add_command(_sources.sources)
cli.add_command(_sessions.sessions)
cli.add_command(_query.sql_command)
cli.add_command(_handoff.handoff)
cli.add_command(_search.search)
cli.add_command(_show.show)
cli.add_command(_schema.schema)
cli.add_command(_export.export)
cli.add_command(_quarantine.quarantine)
cli.add_command(_watch.watch)
cli.add_command(_doctor.doctor)


def main() -> None:
    cli(prog_name="convarch")
