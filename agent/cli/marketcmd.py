"""wallet new|import|show and market-mock serve."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import EXIT_USAGE, ConfigOption, fail, not_implemented, settings_or_exit
from market.errors import KeyFileError
from market.wallet import Wallet, read_key_file, write_key_file

wallet_app = typer.Typer(help="Provider keys (lotus export format).", no_args_is_help=True)
mock_app = typer.Typer(help="The mock ProofShare market.", no_args_is_help=True)


class Network(StrEnum):
    f = "f"  # mainnet
    t = "t"  # testnet


KeyFileOption = Annotated[
    Path | None,
    typer.Option(help="Key file (mode 0600, lotus export format); default: market.key_file of the config."),
]
NetworkOption = Annotated[Network, typer.Option(help="Address prefix: f (mainnet) or t (testnet).")]


def _key_file(key_file: Path | None, config: Path | None) -> Path:
    """--key-file wins; otherwise the configuration's market.key_file."""
    if key_file is not None:
        return key_file
    configured = settings_or_exit(config).market.key_file
    if configured is None:
        fail("no key file: pass --key-file or set market.key_file in the configuration", EXIT_USAGE)
    return configured


def _store(wallet: Wallet, path: Path, network: Network, imported: bool = False) -> None:
    try:
        write_key_file(path, wallet)
    except KeyFileError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write key file {path}: {exc.strerror}")
    if imported:
        typer.echo(f"wrote {path} (mode 0600); keep the exported key you imported from safe too", err=True)
    else:
        typer.echo(f"wrote {path} (mode 0600); back it up: it is the only copy of this new key", err=True)
    typer.echo(wallet.address.encode(network.value))


@wallet_app.command("new")
def wallet_new(
    key_file: KeyFileOption = None, network: NetworkOption = Network.f, config: ConfigOption = None
) -> None:
    """Create a secp256k1 (f1) wallet; prints its address."""
    _store(Wallet.generate(), _key_file(key_file, config), network)


@wallet_app.command("import")
def wallet_import(
    key_file: KeyFileOption = None,
    input: Annotated[
        str, typer.Option("--input", "-i", help="File holding `lotus wallet export` output; '-' reads stdin.")
    ] = "-",
    network: NetworkOption = Network.f,
    config: ConfigOption = None,
) -> None:
    """Import a `lotus wallet export` key (hex KeyInfo JSON) from stdin or a file; prints its address."""
    path = _key_file(key_file, config)
    if input == "-" and sys.stdin.isatty():
        typer.echo("paste the `lotus wallet export` output, then press Ctrl-D", err=True)
    try:
        text = sys.stdin.read() if input == "-" else Path(input).read_text()
    except OSError as exc:
        fail(f"cannot read {input}: {exc.strerror}", EXIT_USAGE)
    except UnicodeDecodeError:
        fail(f"{input} is not a text file", EXIT_USAGE)
    try:
        wallet = Wallet.from_lotus_export(text)
    except KeyFileError as exc:
        fail(f"cannot import the key: {exc}")
    _store(wallet, path, network, imported=True)


@wallet_app.command("show")
def wallet_show(
    key_file: KeyFileOption = None, network: NetworkOption = Network.f, config: ConfigOption = None
) -> None:
    """Print the wallet's address (never the key)."""
    path = _key_file(key_file, config)
    try:
        wallet = read_key_file(path)
    except KeyFileError as exc:
        fail(str(exc))
    typer.echo(wallet.address.encode(network.value))


@mock_app.command("serve")
def mock_serve(listen: Annotated[str, typer.Option(help="HOST:PORT")] = "127.0.0.1:0") -> None:
    """Serve the mock market."""
    not_implemented("market-mock serve", "the mock market issue")


def register(app: typer.Typer) -> None:
    app.add_typer(wallet_app, name="wallet")
    app.add_typer(mock_app, name="market-mock")
