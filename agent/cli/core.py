"""run / prove / verify / status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import Backend, BackendOption, ConfigOption, not_implemented, settings_or_exit

ParamsDirOption = Annotated[
    Path | None,
    typer.Option(
        help="Groth16 parameters directory (default: prover.params_dir, or $FIL_PROOFS_PARAMETER_CACHE)."
    ),
]
MinerOption = Annotated[str | None, typer.Option(help="Miner actor id, 1000 or f01000 (for a bare C1).")]
SectorOption = Annotated[int | None, typer.Option(help="Sector number (for a bare C1).")]


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        config: ConfigOption = None,
        dry_run: Annotated[
            bool, typer.Option("--dry-run", help="Embedded mock market on loopback, throwaway wallet.")
        ] = False,
        max_proofs: Annotated[int | None, typer.Option(help="Stop after this many proofs.")] = None,
    ) -> None:
        """The long-running agent (systemd service)."""
        settings_or_exit(config)
        not_implemented("run", "the agent runtime and mock market issues")

    @app.command()
    def prove(
        input: Annotated[Path, typer.Argument(help="C1 JSON or ProofData JSON.")],
        miner: MinerOption = None,
        sector: SectorOption = None,
        out: Annotated[Path | None, typer.Option(help="Where to write the proof bytes.")] = None,
        backend: BackendOption = Backend.auto,
        params_dir: ParamsDirOption = None,
    ) -> None:
        """One-shot proof of a C1; exit 0 only if the proof verified."""
        not_implemented("prove", "needs the StackedDRG circuit issue")

    @app.command()
    def verify(
        input: Annotated[Path, typer.Argument(help="C1 JSON or ProofData JSON.")],
        proof: Annotated[Path, typer.Option(help="Proof bytes (192 per partition).")],
        miner: MinerOption = None,
        sector: SectorOption = None,
        params_dir: ParamsDirOption = None,
    ) -> None:
        """Verify a proof for a C1/ProofData."""
        not_implemented("verify", "needs the StackedDRG circuit issue")

    @app.command()
    def status(config: ConfigOption = None) -> None:
        """Queue, asks, payments, devices."""
        settings_or_exit(config)
        not_implemented("status", "the agent runtime issue")
