"""wallet new|import|show and market-mock serve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import not_implemented

wallet_app = typer.Typer(help="Provider keys (lotus export format).", no_args_is_help=True)
mock_app = typer.Typer(help="The mock ProofShare market.", no_args_is_help=True)


@wallet_app.command("new")
def wallet_new(key_file: Annotated[Path, typer.Option(help="Where to write the key (mode 0600).")]) -> None:
    """Create a secp256k1 (f1) wallet."""
    not_implemented("wallet new", "P3 market client and wallet")


@wallet_app.command("import")
def wallet_import(key_file: Annotated[Path, typer.Option(help="Where to write the key (mode 0600).")]) -> None:
    """Import a `lotus wallet export` key from stdin."""
    not_implemented("wallet import", "P3 market client and wallet")


@wallet_app.command("show")
def wallet_show(key_file: Annotated[Path, typer.Option(help="Key file.")]) -> None:
    """Print the wallet address."""
    not_implemented("wallet show", "P3 market client and wallet")


@mock_app.command("serve")
def mock_serve(listen: Annotated[str, typer.Option(help="HOST:PORT")] = "127.0.0.1:0") -> None:
    """Serve the mock market."""
    not_implemented("market-mock serve", "the mock market issue")


def register(app: typer.Typer) -> None:
    app.add_typer(wallet_app, name="wallet")
    app.add_typer(mock_app, name="market-mock")
