"""bench field|curve|ntt|msm|prove|e2e|c1-parse — the one entry point for measurements (docs/performance.md)."""

from __future__ import annotations

import typer

from agent.cli.common import not_implemented

app = typer.Typer(help="Benchmarks (field, curve, ntt, msm, prove, e2e, c1-parse).", no_args_is_help=True)


@app.command()
def field() -> None:
    """Fr / Fq multiplication throughput."""
    not_implemented("bench field", "P4 GPU engine I")


@app.command()
def curve() -> None:
    """G1 mixed-addition throughput."""
    not_implemented("bench curve", "P4 GPU engine I")


@app.command()
def ntt() -> None:
    """NTT over Fr."""
    not_implemented("bench ntt", "P5 GPU engine II")


@app.command()
def msm() -> None:
    """G1/G2 MSM."""
    not_implemented("bench msm", "P5 GPU engine II")


@app.command()
def prove() -> None:
    """Groth16 on a synthetic circuit."""
    not_implemented("bench prove", "P6 GPU engine III")


@app.command()
def e2e() -> None:
    """C1 JSON to verified proof."""
    not_implemented("bench e2e", "the circuit issue")


@app.command("c1-parse")
def c1_parse() -> None:
    """Parse + validate + re-serialise a C1."""
    not_implemented("bench c1-parse", "P2 PoRep primitives")
