"""The ``psagent`` command line (typer). The command tree is a contract: see docs/architecture.md.

Each command group lives in its own module so that it can grow without touching the others:
``core`` (run, prove, verify, status), ``params``, ``porep`` (seal, c1), ``snap``, ``marketcmd`` (wallet,
market-mock) and ``bench``. Results go to stdout, progress and logs to stderr; ``--json`` asks for one JSON
object where a command has a result.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agent.cli import bench, core, marketcmd, params, porep, snap
from agent.cli.common import EXIT_NOT_IMPLEMENTED, EXIT_USAGE, enable_kernel_cache

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
app.add_typer(params.app, name="params")
porep.register(app)
marketcmd.register(app)
app.add_typer(bench.app, name="bench")
app.add_typer(snap.app, name="snap")

__all__ = ["EXIT_NOT_IMPLEMENTED", "EXIT_USAGE", "app", "main"]


def main() -> None:
    """The console script: the kernel cache is switched on here (before numba loads), not at import, so
    that tests and library users keep their own Numba settings."""
    enable_kernel_cache()
    app()
