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
def c1_parse(
    file: str | None = typer.Option(None, "--file", help="A C1 JSON file to parse."),  # noqa: B008
    generate: str | None = typer.Option(None, "--generate", help="A size (32GiB) or type to synthesise."),  # noqa: B008
    order: str = typer.Option("go", "--order", help="Generated key order: go (Curio's) or rust."),  # noqa: B008
    seed: int = typer.Option(0, "--seed", help="Seed of a generated C1."),  # noqa: B008
    repeat: int = typer.Option(5, "--repeat", min=1, help="Warm runs after the cold one."),  # noqa: B008
    json_out: str | None = typer.Option(None, "--json", help="Also write the result as JSON here."),  # noqa: B008
) -> None:
    """Parse + validate + re-serialise a C1 (P7); exit 1 unless the output is byte-identical."""
    import json
    from pathlib import Path

    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail
    from porep.c1 import C1FormatError
    from porep.c1.benchmark import format_report, measure
    from porep.c1_synth import synth_c1_json
    from porep.prooftypes import proof_type

    if (file is None) == (generate is None):
        fail("give exactly one of --file or --generate", EXIT_USAGE)
    if file is not None:
        try:
            raw = Path(file).read_bytes()
        except OSError as exc:
            fail(f"cannot read {file}: {exc}", EXIT_USAGE)
    else:
        assert generate is not None
        name = generate if generate.startswith("StackedDrg") else f"StackedDrg{generate}V1_1"
        try:
            pt = proof_type(name)
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)
        if order not in ("go", "rust"):
            fail("--order must be go or rust", EXIT_USAGE)
        raw = synth_c1_json(pt, seed=seed, order=order)
    try:
        result = measure(raw, repeat=repeat)
    except C1FormatError as exc:
        fail(f"not a valid C1: {exc}", EXIT_FAILURE)
    result["input"] = file if file is not None else f"generated {result['proof']} seed {seed}"
    typer.echo(format_report(result))
    if json_out is not None:
        Path(json_out).write_text(json.dumps(result, indent=2) + "\n")
    if not result["identical"]:
        fail("re-serialised C1 differs from the input", EXIT_FAILURE)
