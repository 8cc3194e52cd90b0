"""wallet new|import|show and market-mock serve."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import EXIT_USAGE, ConfigOption, fail, sector_size_or_exit, settings_or_exit
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
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        fail(f"cannot write key file {path}: {exc.strerror}", EXIT_USAGE)
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
        fail(f"cannot import the key: {exc}", EXIT_USAGE)
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
        fail(str(exc), EXIT_USAGE)
    typer.echo(wallet.address.encode(network.value))


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        fail(f"--listen must be HOST:PORT (e.g. 127.0.0.1:8080 or 127.0.0.1:0), got {text!r}", EXIT_USAGE)
    return host, int(port)


MOCK_SIZES = ("2KiB", "8MiB")  # challenge sectors the mock seals (larger ones take hours on a CPU)


@mock_app.command("serve")
def mock_serve(
    listen: Annotated[
        str, typer.Option(help="HOST:PORT to listen on (port 0: any free port).")
    ] = "127.0.0.1:0",
    state: Annotated[
        Path | None,
        typer.Option(help="SQLite file keeping the market's books across restarts (default: memory)."),
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            help="Fault rules, e.g. 'ask:429@0.3; complete:drop-after#1; *:skew=30/0-60' "
            "(grammar: market.mock.faults)."
        ),
    ] = None,
    pool: Annotated[
        Path | None,
        typer.Option(
            help="Challenge pool directory (sealed sectors; sealed on first use). Default: a cache dir."
        ),
    ] = None,
    sector_size: Annotated[
        str, typer.Option(help="Sector size of the challenges: 2KiB or 8MiB (2K, 8M, … too).")
    ] = "2KiB",
    verifying_key: Annotated[
        Path | None,
        typer.Option(
            help="Groth16 verifying key: proofs are checked by pairing. Without it: a stand-in check."
        ),
    ] = None,
    slot_divisor: Annotated[int, typer.Option(min=1, help="Challenge proofs per work slot.")] = 50,
    initial_challenges: Annotated[
        int, typer.Option(min=0, help="Challenge balance a new wallet starts with (0: earn every slot).")
    ] = 0,
    deadline: Annotated[float, typer.Option(min=0.1, help="Seconds to submit assigned work.")] = 45 * 60.0,
    demand: Annotated[int, typer.Option(min=0, help="Paid requests kept open.")] = 4,
    demand_price: Annotated[int, typer.Option(min=1, help="Their price, attoFIL.")] = 5 * 10**15,
    rng_seed: Annotated[
        int | None, typer.Option("--rng-seed", help="Seed of the fault coin flips (repeatable runs).")
    ] = None,
) -> None:
    """Serve the mock market; prints its base URL and a throwaway demo wallet. Stops on SIGINT/SIGTERM."""

    from market.mock.app import MockMarketApp
    from market.mock.checker import DigestStandInChecker, PairingChecker, ProofChecker
    from market.mock.faults import FaultPlan, FaultSpecError
    from market.mock.pool import ChallengePool
    from market.mock.server import base_url, bind, serve_forever
    from market.mock.state import MarketRules, MarketState

    size = sector_size_or_exit(sector_size)
    if size not in MOCK_SIZES:
        fail(f"--sector-size {size}: the mock market seals {' or '.join(MOCK_SIZES)} sectors", EXIT_USAGE)
    host, port = _listen(listen)
    try:
        plan = FaultPlan.parse(faults, seed=rng_seed)
    except FaultSpecError as exc:
        fail(str(exc), EXIT_USAGE)
    if verifying_key is not None and not verifying_key.is_file():
        fail(f"--verifying-key {verifying_key} is not a file", EXIT_USAGE)
    if state is not None and not state.parent.is_dir():
        fail(f"--state {state}: directory {state.parent} does not exist", EXIT_USAGE)
    if pool is None:
        from agent.config import cache_dir

        pool = cache_dir() / f"mock-pool-{size}"
    if pool.exists() and not pool.is_dir():
        fail(f"--pool {pool} is not a directory", EXIT_USAGE)
    try:
        sock = bind(host, port)
    except OSError as exc:
        fail(f"cannot listen on {listen}: {exc.strerror}", EXIT_USAGE)
    checker: ProofChecker
    if verifying_key is not None:
        try:
            checker = PairingChecker(verifying_key)
        except (RuntimeError, OSError, ValueError) as exc:
            fail(f"cannot use the verifying key: {exc}", EXIT_USAGE)
    else:
        checker = DigestStandInChecker()
        typer.echo(
            "proofs are checked by a stand-in (no --verifying-key): not a cryptographic check", err=True
        )
    proof = f"StackedDrg{size}V1_1"
    if not any(pool.glob("sector-*")):
        typer.echo(f"sealing a {size} challenge sector into {pool} (once)…", err=True)
    try:
        challenges = ChallengePool.open(pool, proof_type=proof)
    except OSError as exc:
        fail(f"cannot use the challenge pool {pool}: {exc.strerror or exc}", EXIT_USAGE)
    rules = MarketRules(
        slot_divisor=slot_divisor,
        deadline_s=deadline,
        demand_open=demand,
        demand_price=demand_price,
        initial_challenges=initial_challenges,
    )
    books = MarketState(state, rules, challenge_source=challenges.take)
    demo = Wallet.generate()
    typer.echo(f"mock market: {base_url(sock)}")
    typer.echo(f"demo wallet: {demo.address.encode('f')}")
    typer.echo(f"demo wallet key (lotus export, throwaway): {demo.export_lotus()}")
    typer.echo(f"inspect: {base_url(sock).removesuffix('/v0/proofs')}/_mock/state", err=True)
    sys.stdout.flush()
    try:
        serve_forever(MockMarketApp(books, checker, plan), sock)
    finally:
        books.close()
        sock.close()


def register(app: typer.Typer) -> None:
    app.add_typer(wallet_app, name="wallet")
    app.add_typer(mock_app, name="market-mock")
