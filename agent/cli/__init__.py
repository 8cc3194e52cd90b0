"""The ``psagent`` command line (typer). The command tree is a contract: see docs/architecture.md.

Each command group lives in its own module so that it can grow without touching the others:
``core`` (run, prove, verify, status), ``doctor``, ``params``, ``porep`` (seal, c1), ``snap``, ``marketcmd``
(wallet, market-mock), ``cuzk`` (the ``engine`` group: ``engine serve`` runs the cuzk server, Curio's
proving engine) and ``bench``. Results go to stdout, progress and logs to stderr; ``--json`` asks for one
JSON object where a command has a result.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli import bench, core, cuzk, doctor, marketcmd, params, porep, snap
from agent.cli.common import EXIT_NOT_IMPLEMENTED, EXIT_USAGE, use_engine_options

CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="psagent",
    help="ProofShare provider agent: sells Filecoin PoRep proving on the ProofShare market.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"psagent {version('psagent')}")
        except PackageNotFoundError:
            typer.echo("psagent (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """ProofShare provider agent: sells Filecoin PoRep proving on the ProofShare market."""


core.register(app)
doctor.register(app)
app.add_typer(params.app, name="params")
porep.register(app)
marketcmd.register(app)
app.add_typer(bench.app, name="bench")
app.add_typer(snap.app, name="snap")
app.add_typer(cuzk.app, name="engine")  # the cuzk server keeps Curio's word for the command

__all__ = ["EXIT_NOT_IMPLEMENTED", "EXIT_USAGE", "app", "main"]


def main() -> None:
    """The console script: the kernel cache is switched on here (before numba loads), not at import, so
    that tests and library users keep their own Numba settings. A usage error (unknown option, missing
    argument, bad value) is one line and exit 2 like every other bad input, not click's boxed usage text."""
    import sys

    try:  # typer >= 0.20 carries its own copy of click
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover - older typer on click itself
        from click import exceptions as click_errors  # type: ignore[no-redef]

    use_engine_options()
    try:
        rv = app(prog_name="psagent", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as e:  # `psagent`, `psagent snap`: the help, as before
        e.show()
        sys.exit(e.exit_code)
    except click_errors.UsageError as e:
        where = e.ctx.command_path if e.ctx is not None else "psagent"
        typer.echo(f"psagent: {e.format_message()} (see: {where} -h)", err=True)
        sys.exit(EXIT_USAGE)
    except click_errors.ClickException as e:
        typer.echo(f"psagent: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("psagent: aborted", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)
