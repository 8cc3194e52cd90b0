"""seal / c1 make / c1 check (test sectors, C1 generation, strict vanilla verification)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import not_implemented

c1_app = typer.Typer(help="C1 (commit phase 1) outputs: make and strictly check.", no_args_is_help=True)


@c1_app.command("make")
def c1_make(
    directory: Annotated[Path, typer.Argument(help="A sealed test sector directory (psagent seal --out).")],
    seed: Annotated[str, typer.Option(help="Interactive seed, 32 bytes hex.")],
    out: Annotated[Path | None, typer.Option(help="Output file (default stdout).")] = None,
    proofdata: Annotated[bool, typer.Option("--proofdata", help="Write the ProofData envelope.")] = False,
) -> None:
    """Write the C1 JSON of a sealed test sector."""
    not_implemented("c1 make", "P7 sealing and C1 generation")


@c1_app.command("check")
def c1_check(
    file: Annotated[Path, typer.Argument(help="C1 JSON or ProofData JSON.")],
    miner: Annotated[int | None, typer.Option()] = None,
    sector: Annotated[int | None, typer.Option()] = None,
) -> None:
    """Strict vanilla verification; exit 0 only if it passes."""
    not_implemented("c1 check", "P7 strict vanilla verification")


def register(app: typer.Typer) -> None:
    @app.command()
    def seal(
        registered_proof: Annotated[str, typer.Option(help="e.g. StackedDrg2KiBV1_1")],
        sector: Annotated[int, typer.Option(help="Sector number.")],
        ticket: Annotated[str, typer.Option(help="32 bytes hex.")],
        out: Annotated[Path, typer.Option(help="Output directory.")],
        miner: Annotated[int | None, typer.Option(help="Miner actor id.")] = None,
        prover_id: Annotated[str | None, typer.Option(help="32 bytes hex (overrides --miner).")] = None,
        porep_id: Annotated[str | None, typer.Option(help="32 bytes hex (overrides the derived id).")] = None,
        piece: Annotated[Path | None, typer.Option(help="Unpadded piece file.")] = None,
        random_piece: Annotated[bool, typer.Option("--random-piece")] = False,
    ) -> None:
        """Seal a test sector (2KiB, 8MiB)."""
        not_implemented("seal", "P7 sealing")

    app.add_typer(c1_app, name="c1")
