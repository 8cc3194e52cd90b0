"""params generate / params info (Groth16 parameters in bellperson's layout)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agent.cli.common import not_implemented

app = typer.Typer(help="Groth16 parameters (bellperson .params/.vk layout).", no_args_is_help=True)


@app.command()
def generate(
    sector_size: Annotated[str, typer.Option(help="2KiB or 8MiB.")] = "2KiB",
    out: Annotated[Path | None, typer.Option(help="Output directory.")] = None,
) -> None:
    """Development parameters (known toxic waste, marked as such)."""
    not_implemented("params generate", "P6 Groth16 engine")


@app.command()
def info(directory: Annotated[Path, typer.Argument()]) -> None:
    """Describe the parameter files in a directory."""
    not_implemented("params info", "P6 Groth16 engine")
