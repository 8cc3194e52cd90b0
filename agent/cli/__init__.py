"""The ``psagent`` command line (typer). The command tree is a contract: see docs/architecture.md.

Each command group lives in its own module so that it can grow without touching the others:
``core`` (run, prove, verify, status), ``params``, ``porep`` (seal, c1), ``marketcmd`` (wallet,
market-mock) and ``bench``.
"""

from __future__ import annotations

import typer

from agent.cli import bench, core, marketcmd, params, porep
from agent.cli.common import EXIT_NOT_IMPLEMENTED, EXIT_USAGE

app = typer.Typer(
    name="psagent",
    help="ProofShare provider agent: sells Filecoin PoRep proving on the ProofShare market.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

core.register(app)
app.add_typer(params.app, name="params")
porep.register(app)
marketcmd.register(app)
app.add_typer(bench.app, name="bench")

__all__ = ["EXIT_NOT_IMPLEMENTED", "EXIT_USAGE", "app", "main"]


def main() -> None:
    app()
