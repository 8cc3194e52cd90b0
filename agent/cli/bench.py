"""bench field|curve|ntt|msm|prove|e2e|c1-parse — the one entry point for measurements
(docs/performance.md)."""

from __future__ import annotations

from typing import Any

import typer

from agent.cli.common import not_implemented

app = typer.Typer(help="Benchmarks (field, curve, ntt, msm, prove, e2e, c1-parse).", no_args_is_help=True)


def _gpu_bench() -> Any:
    """benchmarks/gpu_bench.py (field/curve/MSM measurements) from the repository checkout."""
    import importlib.util
    from pathlib import Path

    from agent.cli.common import EXIT_USAGE, fail

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_bench.py"
    if not path.exists():
        fail(f"{path} not found: run the GPU benchmarks from a source checkout", EXIT_USAGE)
    spec = importlib.util.spec_from_file_location("psagent_gpu_bench", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _finish(result: dict[str, Any], json_out: str | None) -> None:
    """Write JSON if asked; exit 1 if any benchmarked result failed its check."""
    import json
    from pathlib import Path

    from agent.cli.common import EXIT_FAILURE, fail

    if json_out:
        Path(json_out).write_text(json.dumps(result, indent=1))
    text = json.dumps(result)
    if '"verified": false' in text or '"cpu_equals_gpu": false' in text:
        fail("a benchmarked result did not match its check", EXIT_FAILURE)


@app.command()
def field(
    backend: str = typer.Option("cuda", "--backend", help="cuda or cpu."),  # noqa: B008
    log2n: int = typer.Option(20, "--log2n", help="2^k elements (threads)."),  # noqa: B008
    reps: int = typer.Option(7, "--reps", min=5, help="Timed runs after the warm-up (median reported)."),  # noqa: B008
    json_out: str | None = typer.Option(None, "--json", help="Also write the result as JSON here."),  # noqa: B008
) -> None:
    """Fr / Fq Montgomery multiplication throughput (verified against Python integers)."""
    gb = _gpu_bench()
    res = {"env": gb.environment(), "field": gb.bench_field(backend, log2n, reps)}
    for name, r in res["field"].items():
        rate, ms, ok = r["G_mul_per_s"], r["median_ms"], r["verified"]
        typer.echo(f"{name}: {rate:.2f} G mul/s  median {ms:.3f} ms  verified={ok}")
    _finish(res, json_out)


@app.command()
def curve(
    log2n: int = typer.Option(19, "--log2n", help="2^k threads."),  # noqa: B008
    reps: int = typer.Option(7, "--reps", min=5, help="Timed runs after the warm-up (median reported)."),  # noqa: B008
    json_out: str | None = typer.Option(None, "--json", help="Also write the result as JSON here."),  # noqa: B008
) -> None:
    """G1 XYZZ += affine mixed-addition throughput on the GPU (verified against the CPU)."""
    gb = _gpu_bench()
    res = {"env": gb.environment(), "curve": gb.bench_curve("cuda", log2n, reps=reps)}
    r = res["curve"]["g1_madd"]
    rate, ms, ok = r["G_madd_per_s"], r["median_ms"], r["verified"]
    typer.echo(f"g1 madd: {rate:.3f} G/s  median {ms:.3f} ms  verified={ok}")
    _finish(res, json_out)


@app.command()
def ntt(
    sizes: str = typer.Option("10,14,18", "--sizes", help="Comma-separated log2 sizes."),  # noqa: B008
    backend: str = typer.Option("cpu", "--backend", help="cpu or cuda."),  # noqa: B008
    reps: int = typer.Option(5, "--reps", min=1, help="Timed repetitions (median reported)."),  # noqa: B008
    warmup: int = typer.Option(1, "--warmup", min=0, help="Untimed runs first (compilation, caches)."),  # noqa: B008
    order: str = typer.Option("NR", "--order", help="NN, NR, RN or RR."),  # noqa: B008
    coset: bool = typer.Option(False, "--coset", help="Coset transform."),  # noqa: B008
    batch: int = typer.Option(1, "--batch", min=1, help="Transforms per call."),  # noqa: B008
    h_step: bool = typer.Option(False, "--h-step", help="Also time the Groth16 H step per size."),  # noqa: B008
    check_max: int = typer.Option(20, "--check-max", help="Check against the CPU path up to this log size."),  # noqa: B008
    device: int | None = typer.Option(None, "--device", help="CUDA device index."),  # noqa: B008
    json_out: str | None = typer.Option(None, "--json", help="Also write the rows as JSON here."),  # noqa: B008
) -> None:
    """NTT over Fr (and the Groth16 H step): median of --reps after --warmup; exit 1 if a check fails."""
    import json
    from pathlib import Path

    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail

    try:
        logs = [int(s) for s in sizes.split(",") if s.strip()]
        from gpu.ntt import Kind, Order

        order_e = Order(order.upper())
    except ValueError as exc:
        fail(f"bad --sizes or --order: {exc}", EXIT_USAGE)
    if backend not in ("cpu", "cuda"):
        fail("--backend must be cpu or cuda", EXIT_USAGE)
    from gpu.ntt.bench import bench_h_step, bench_ntt, format_rows

    rows = []
    for logn in logs:
        rows.append(bench_ntt(logn, backend=backend, reps=reps, warmup=warmup, order=order_e,
                              kind=Kind.COSET if coset else Kind.STANDARD, batch=batch,
                              check_max_log=check_max, device=device))
        if h_step:
            rows.append(bench_h_step(logn, backend=backend, reps=reps, warmup=warmup, check_max_log=check_max,
                                     device=device))
        typer.echo(format_rows(rows[-2 if h_step else -1 :]))
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=1) + "\n")
    if any("MISMATCH" in r["check"] for r in rows):
        fail("a result check failed", EXIT_FAILURE)


@app.command()
def msm(
    sizes: list[int] = typer.Option([16], "--log2n", help="Sizes 2^k (repeat the option)."),  # noqa: B008
    group: str = typer.Option("g1", "--group", help="g1 or g2."),  # noqa: B008
    backend: str = typer.Option("cuda", "--backend", help="cuda or cpu."),  # noqa: B008
    kind: str = typer.Option("random", "--kind", help="random scalars, or bits (0/1, the Groth16 split)."),  # noqa: B008
    reps: int = typer.Option(5, "--reps", min=5, help="Timed runs after the warm-up (median reported)."),  # noqa: B008
    windows: list[int] = typer.Option([], "--window", help="Window sizes to compare (default: auto)."),  # noqa: B008
    cpu_check: bool = typer.Option(False, "--cpu-check", help="Also require CPU == GPU on the same input."),  # noqa: B008
    period_log2: int = typer.Option(24, "--period-log2", help="2^k distinct bases, then repeated."),  # noqa: B008
    json_out: str | None = typer.Option(None, "--json", help="Also write the result as JSON here."),  # noqa: B008
) -> None:
    """G1/G2 MSM: median of warm runs, every result checked (blst; optionally CPU == GPU)."""
    from agent.cli.common import EXIT_USAGE, fail

    if group not in ("g1", "g2") or backend not in ("cuda", "cpu") or kind not in ("random", "bits"):
        fail("--group g1|g2, --backend cuda|cpu, --kind random|bits", EXIT_USAGE)
    gb = _gpu_bench()
    runs = [
        gb.bench_msm(group, k, backend, reps, kind, windows or None, cpu_check, period_log2) for k in sizes
    ]
    _finish({"env": gb.environment(), "msm": runs}, json_out)


@app.command()
def prove(
    synthetic_constraints: int = typer.Option(..., "--synthetic-constraints", help="Constraints N."),  # noqa: B008
    backend: str = typer.Option("cpu", "--backend", help="cpu or cuda."),  # noqa: B008
    reps: int = typer.Option(3, "--reps", min=1),  # noqa: B008
    warmup: int = typer.Option(1, "--warmup", min=0),  # noqa: B008
    public_inputs: int = typer.Option(4, "--public-inputs", min=1),  # noqa: B008
    seed: int = typer.Option(0, "--seed"),  # noqa: B008
    pseudo_random_bases: bool | None = typer.Option(  # noqa: B008
        None, "--pseudo-random-bases/--real-setup",
        help="Default: real setup up to 2^21 constraints, pseudo-random bases (timing only) above."),
    export: str | None = typer.Option(None, "--export", help="Write DIR/vk, DIR/inputs.json, DIR/proof."),  # noqa: B008
    device: int | None = typer.Option(None, "--device", help="CUDA device index."),  # noqa: B008
    json_out: str | None = typer.Option(None, "--json", help="Also write the result as JSON here."),  # noqa: B008
    circuits: int = typer.Option(1, "--circuits", min=1,  # noqa: B008
                                 help="Prove K circuits of one shape per rep, as one batch."),
    host_memory: str = typer.Option("pinned", "--host-memory",  # noqa: B008
                                    help="cuda: assignment in pinned (page-locked) or pageable host memory."),
) -> None:
    """Groth16 on the synthetic Filecoin-like circuit: per-stage medians; exit 1 unless every proof
    verified."""
    import json
    from pathlib import Path

    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail

    if backend not in ("cpu", "cuda"):
        fail("--backend must be cpu or cuda", EXIT_USAGE)
    if host_memory not in ("pinned", "pageable"):
        fail("--host-memory must be pinned or pageable", EXIT_USAGE)
    from gpu.groth16.bench import bench_prove, format_row

    try:
        row = bench_prove(synthetic_constraints, backend=backend, reps=reps, warmup=warmup,
                          public_inputs=public_inputs, seed=seed, pseudo_random=pseudo_random_bases,
                          export=Path(export) if export else None, device=device,
                          progress=lambda msg: typer.echo(f"bench prove: {msg}", err=True),
                          circuits=circuits, host_memory=host_memory)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    typer.echo(format_row(row))
    if json_out:
        Path(json_out).write_text(json.dumps(row, indent=1) + "\n")
    v = row["verified"]
    if "/" in v and (v.split("/")[0] != v.split("/")[1] or not row.get("wrong_input_rejected")):
        fail("a proof did not verify (or a wrong input was accepted)", EXIT_FAILURE)


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
