"""bench field|curve|ntt|msm|prove|e2e|c1-parse — the one entry point for measurements
(docs/performance.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agent.cli.common import Backend, BackendOption, MinerOption, SectorOption

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.proving.pipeline import ProofResult
    from agent.proving.prover import AdmittedProver
    from agent.proving.work import Work

app = typer.Typer(
    help="Benchmarks (field, curve, ntt, msm, prove, e2e, c1-parse): warm-up, median, every result checked. "
    "Human-readable rows on stdout, or one JSON object with --json; progress on stderr.",
    no_args_is_help=True,
)


def _gpu_bench() -> Any:
    """gpu.bench.primitives (field/curve/MSM measurements), imported when a command needs it."""
    from gpu.bench import primitives

    return primitives


JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print the result as one JSON object on stdout instead of the table.")
]
JsonOut = Annotated[
    Path | None, typer.Option("--json-out", help="Also write the result as JSON to this file.")
]
Reps = Annotated[int, typer.Option("--reps", min=1, help="Timed runs after the warm-up (median reported).")]


def _emit(result: Any, human: str, json_flag: bool, json_out: Path | None) -> None:
    """Results on stdout: the human rows, or the JSON object with --json; --json-out writes a copy."""
    import json

    if json_out is not None:
        json_out.write_text(json.dumps(result, indent=1) + "\n")
    typer.echo(json.dumps(result) if json_flag else human)


def _check_json_out(json_out: Path | None) -> None:
    if json_out is not None:
        from agent.cli.common import check_output_file

        check_output_file(json_out, force=True, what="--json-out")


def _finish(result: dict[str, Any]) -> None:
    """Exit 1 if any benchmarked result failed its check."""
    import json

    from agent.cli.common import EXIT_FAILURE, fail

    text = json.dumps(result)
    if '"verified": false' in text or '"cpu_equals_gpu": false' in text:
        fail("a benchmarked result did not match its check", EXIT_FAILURE)


def _backend(backend: Backend) -> str:
    """auto/cuda/cpu to the engine's name, exiting 2 before any work when CUDA is asked for and absent."""
    from agent.cli.common import announce_compilation, resolve_backend

    chosen = resolve_backend(backend).value
    announce_compilation()
    return chosen


@app.command()
def field(
    backend: BackendOption = Backend.auto,
    log2n: Annotated[int, typer.Option("--log2n", help="2^k elements (threads).")] = 20,
    reps: Reps = 7,
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """Fr / Fq Montgomery multiplication throughput (verified against Python integers)."""
    _check_json_out(json_out)
    chosen = _backend(backend)
    gb = _gpu_bench()
    res = {"env": gb.environment(), "field": gb.bench_field(chosen, log2n, reps)}
    rows = [
        f"{name}: {r['G_mul_per_s']:.2f} G mul/s  median {r['median_ms']:.3f} ms  verified={r['verified']}"
        for name, r in res["field"].items()
    ]
    _emit(res, "\n".join(rows), json_flag, json_out)
    _finish(res)


@app.command()
def curve(
    backend: Annotated[
        Backend, typer.Option("--backend", help="auto or cuda: this measures the CUDA kernel only.")
    ] = Backend.auto,
    log2n: Annotated[int, typer.Option("--log2n", help="2^k threads.")] = 19,
    reps: Reps = 7,
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """G1 XYZZ += affine mixed-addition throughput on the GPU (verified against the CPU)."""
    from agent.cli.common import EXIT_USAGE, fail

    if backend is Backend.cpu:
        fail("bench curve measures the CUDA kernel; use bench msm --backend cpu for the CPU path", EXIT_USAGE)
    _check_json_out(json_out)
    if _backend(Backend.cuda) != "cuda":  # auto without a GPU: nothing to measure
        fail("bench curve needs a CUDA GPU", EXIT_USAGE)
    gb = _gpu_bench()
    res = {"env": gb.environment(), "curve": gb.bench_curve("cuda", log2n, reps=reps)}
    r = res["curve"]["g1_madd"]
    human = f"g1 madd: {r['G_madd_per_s']:.3f} G/s  median {r['median_ms']:.3f} ms  verified={r['verified']}"
    _emit(res, human, json_flag, json_out)
    _finish(res)


@app.command()
def ntt(
    sizes: Annotated[str, typer.Option("--sizes", help="Comma-separated log2 sizes.")] = "10,14,18",
    backend: BackendOption = Backend.auto,
    reps: Reps = 5,
    warmup: Annotated[
        int, typer.Option("--warmup", min=0, help="Untimed runs first (compilation, caches).")
    ] = 1,
    order: Annotated[
        str, typer.Option("--order", help="Input/output order: NN, NR, RN or RR (N natural, R bit-reversed).")
    ] = "NR",
    coset: Annotated[bool, typer.Option("--coset", help="Coset transform.")] = False,
    batch: Annotated[int, typer.Option("--batch", min=1, help="Transforms per call.")] = 1,
    h_step: Annotated[bool, typer.Option("--h-step", help="Also time the Groth16 H step per size.")] = False,
    check_max: Annotated[
        int, typer.Option("--check-max", help="Check against the CPU path up to this log size.")
    ] = 20,
    device: Annotated[int | None, typer.Option("--device", min=0, help="CUDA device index.")] = None,
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """NTT over Fr (and the Groth16 H step): median of --reps after --warmup; exit 1 if a check fails."""
    import json

    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail

    try:
        logs = [int(s) for s in sizes.split(",") if s.strip()]
        from gpu.ntt import Kind, Order

        order_e = Order(order.upper())
    except ValueError:
        fail(f"--sizes must be comma-separated integers and --order one of NN, NR, RN, RR "
             f"(got {sizes[:40]!r}, {order[:10]!r})", EXIT_USAGE)
    _check_json_out(json_out)
    chosen = _backend(backend)
    from gpu.bench.ntt import bench_h_step, bench_ntt, format_rows

    rows = []
    for logn in logs:
        rows.append(bench_ntt(logn, backend=chosen, reps=reps, warmup=warmup, order=order_e,
                              kind=Kind.COSET if coset else Kind.STANDARD, batch=batch,
                              check_max_log=check_max, device=device))
        if h_step:
            rows.append(bench_h_step(logn, backend=chosen, reps=reps, warmup=warmup, check_max_log=check_max,
                                     device=device))
        if not json_flag:
            typer.echo(format_rows(rows[-2 if h_step else -1 :]))
    if json_flag:
        _emit(rows, "", json_flag, json_out)
    elif json_out is not None:
        json_out.write_text(json.dumps(rows, indent=1) + "\n")
    if any("MISMATCH" in r["check"] for r in rows):
        fail("a result check failed", EXIT_FAILURE)


@app.command()
def msm(
    sizes: Annotated[list[int], typer.Option("--log2n", help="Sizes 2^k (repeat the option).")] = [16],  # noqa: B006
    group: Annotated[str, typer.Option("--group", help="g1 or g2.")] = "g1",
    backend: BackendOption = Backend.auto,
    kind: Annotated[
        str, typer.Option("--kind", help="random scalars, or bits (0/1, the Groth16 split).")
    ] = "random",
    reps: Reps = 5,
    windows: Annotated[
        list[int], typer.Option("--window", help="Window sizes to compare (repeat the option; default auto).")
    ] = [],  # noqa: B006
    cpu_check: Annotated[
        bool, typer.Option("--cpu-check", help="Also require CPU == GPU on the same input.")
    ] = False,
    period_log2: Annotated[
        int, typer.Option("--period-log2", help="2^k distinct bases, then repeated.")
    ] = 24,
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """G1/G2 MSM: median of warm runs, every result checked (blst; optionally CPU == GPU)."""
    import json

    from agent.cli.common import EXIT_USAGE, fail

    if group not in ("g1", "g2") or kind not in ("random", "bits"):
        fail("--group must be g1 or g2 and --kind random or bits", EXIT_USAGE)
    _check_json_out(json_out)
    chosen = _backend(backend)
    gb = _gpu_bench()
    runs = [
        gb.bench_msm(group, k, chosen, reps, kind, windows or None, cpu_check, period_log2) for k in sizes
    ]
    res = {"env": gb.environment(), "msm": runs}
    _emit(res, "\n".join(json.dumps(r) for r in runs), json_flag, json_out)
    _finish(res)


@app.command()
def prove(
    synthetic_constraints: Annotated[
        int, typer.Option("--synthetic-constraints", help="Constraints N of the synthetic circuit.")
    ],
    backend: BackendOption = Backend.auto,
    reps: Reps = 3,
    warmup: Annotated[int, typer.Option("--warmup", min=0, help="Untimed proofs first (compilation).")] = 1,
    public_inputs: Annotated[
        int, typer.Option("--public-inputs", min=1, help="Public inputs of the synthetic circuit.")
    ] = 4,
    rng_seed: Annotated[
        int, typer.Option("--rng-seed", help="Seed of the random witness (and of a test-mode setup).")
    ] = 0,
    pseudo_random_bases: Annotated[
        bool | None,
        typer.Option(
            "--pseudo-random-bases/--real-setup",
            help="Default: real setup up to 2^21 constraints, pseudo-random bases (timing only) above.",
        ),
    ] = None,
    export: Annotated[
        Path | None, typer.Option("--export", help="Write DIR/vk, DIR/inputs.json, DIR/proof.")
    ] = None,
    device: Annotated[int | None, typer.Option("--device", min=0, help="CUDA device index.")] = None,
    circuits: Annotated[
        int, typer.Option("--circuits", min=1, help="Prove K circuits of one shape per rep, as one batch.")
    ] = 1,
    host_memory: Annotated[
        str,
        typer.Option("--host-memory", help="cuda: the assignment in pinned (page-locked) or pageable memory"),
    ] = "pinned",
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """Groth16 on the synthetic Filecoin-like circuit: per-stage medians; exit 1 unless every proof
    verified."""
    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail

    if host_memory not in ("pinned", "pageable"):
        fail("--host-memory must be pinned or pageable", EXIT_USAGE)
    _check_json_out(json_out)
    chosen = _backend(backend)
    from gpu.bench.groth16 import bench_prove, format_row

    try:
        row = bench_prove(synthetic_constraints, backend=chosen, reps=reps, warmup=warmup,
                          public_inputs=public_inputs, seed=rng_seed, pseudo_random=pseudo_random_bases,
                          export=export, device=device,
                          progress=lambda msg: typer.echo(f"bench prove: {msg}", err=True),
                          circuits=circuits, host_memory=host_memory)
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    _emit(row, format_row(row), json_flag, json_out)
    v = row["verified"]
    if "/" in v and (v.split("/")[0] != v.split("/")[1] or not row.get("wrong_input_rejected")):
        fail("a proof did not verify (or a wrong input was accepted)", EXIT_FAILURE)


@app.command()
def e2e(
    c1: Annotated[Path, typer.Option("--c1", help="C1 JSON (or ProofData) file.")],
    backend: BackendOption = Backend.auto,
    params_dir: Annotated[
        Path | None, typer.Option(help="Parameters directory (default $FIL_PROOFS_PARAMETER_CACHE).")
    ] = None,
    miner: MinerOption = None,
    sector: SectorOption = None,
    warm_runs: Annotated[
        int, typer.Option("--warm-runs", min=0, help="Further proofs of the same C1 after the cold one.")
    ] = 0,
    in_flight: Annotated[
        int, typer.Option("--in-flight", min=1, help="Proofs in flight at once in the steady-state runs.")
    ] = 2,
    steady: Annotated[
        int,
        typer.Option(
            "--steady", min=0, help="Steady state: this many more proofs, --in-flight at a time (throughput)."
        ),
    ] = 0,
    plan: Annotated[
        bool, typer.Option("--plan", help="Print the memory plan (host and device bytes per stage) first.")
    ] = False,
    plan_only: Annotated[bool, typer.Option("--plan-only", help="Print the memory plan and stop.")] = False,
    export: Annotated[
        Path | None,
        typer.Option("--export", help="Write the vk, the public inputs and every verified proof here."),
    ] = None,
    jsonl: Annotated[
        Path | None, typer.Option("--jsonl", help="Append each run's result as a JSON line when it ends.")
    ] = None,
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """C1 (or ProofData) to verified proof through the same path as psagent prove and the agent: per-stage
    seconds summed over the partitions, host RSS peak and device-memory peak, cold (parameters, circuit and
    key loaded by this run) then warm, then a steady state with proofs in flight; fails unless every
    partition of every run verified."""
    import json

    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, check_output_file, fail, settings_or_exit
    from agent.cli.prove import load_work, make_prover, require_params
    from agent.proving.parameters import params_paths
    from gpu.memory import BudgetExceeded

    _check_json_out(json_out)
    if jsonl is not None:
        check_output_file(jsonl, force=True, what="--jsonl")
    if export is not None and export.exists() and not export.is_dir():
        fail(f"--export {export} exists and is not a directory", EXIT_USAGE)
    settings = settings_or_exit(None)  # [prover] of /etc/psagent/config.toml when present, PSAGENT_PROVER__*
    work = load_work(c1, miner, sector)
    params_path, vk_path = params_paths(params_dir or settings.prover.params_dir, work.proof_type)
    if plan or plan_only:
        _print_plan(work, params_path, backend, settings)
        if plan_only:
            return
    require_params(params_path, work)
    prover = make_prover(settings, params_path.parent, backend, jobs_per_device=in_flight if steady else 1)
    if export is not None:
        _export_start(export, vk_path, work)
    try:
        rows, verified = run_e2e(
            prover, work, warm_runs=warm_runs, steady=steady, in_flight=in_flight, export=export,
            jsonl=jsonl, echo=None if json_flag else typer.echo,
        )
    except (ValueError, FileNotFoundError, BudgetExceeded) as exc:
        fail(str(exc).splitlines()[0], EXIT_USAGE)
    out = {"c1": str(c1), "runs": rows}
    if json_out is not None:
        json_out.write_text(json.dumps(out, indent=1) + "\n")
    if json_flag:
        typer.echo(json.dumps(out))
    if not verified:
        fail("a partition did not verify", EXIT_FAILURE)


def run_e2e(
    prover: AdmittedProver,
    work: Work,
    *,
    warm_runs: int = 0,
    steady: int = 0,
    in_flight: int = 2,
    export: Path | None = None,
    jsonl: Path | None = None,
    echo: Callable[[str], object] | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """The runs of ``bench e2e`` through ``prover`` (the agent's admitted path: its device budget, layout and
    admission): cold, ``warm_runs`` warm, then ``steady`` more with ``in_flight`` at a time (the prover must
    admit that many jobs to a device) and a throughput row. Each run's row goes to ``jsonl`` (with its
    per-partition
    stages) as soon as it ends, and its proof to ``export`` when every partition verified. Returns the rows
    and whether every proof verified."""
    import json

    from agent.proving.work import JobId

    rows: list[dict[str, Any]] = []
    verified = [True]

    def record(row: dict[str, Any], result: ProofResult | None) -> None:
        if jsonl is not None:  # per-partition stages kept here, left out of the summary
            with open(jsonl, "a") as f:
                f.write(json.dumps(row) + "\n")
        row.pop("per_partition", None)
        rows.append(row)
        if result is not None:
            verified[0] = verified[0] and result.ok
            if export is not None and result.ok:
                (export / f"proof-{row['run']}.bin").write_bytes(result.proof)
        if echo is not None:
            echo(_e2e_human(row) if "proof_type" in row else json.dumps(row))

    for i in range(1 + warm_runs):
        result = prover.prove_now(work, JobId.fresh("bench-e2e"))
        record({"run": "cold" if i == 0 else f"warm{i}", **result.as_json()}, result)
    if steady:
        _steady(prover, work, in_flight, steady, record)
    return rows, verified[0]


def _steady(
    prover: AdmittedProver,
    work: Work,
    k: int,
    count: int,
    record: Callable[[dict[str, Any], ProofResult | None], None],
) -> None:
    """``count`` proofs of the same work, ``k`` at a time through the prover (the device work takes turns;
    the synthesis of one proof overlaps the device work of another): throughput and per-proof wall."""
    import time

    import anyio

    from agent.proving.work import JobId

    results: list[ProofResult | None] = [None] * count

    async def run() -> None:
        limiter = anyio.CapacityLimiter(k)

        async def one(i: int) -> None:
            async with limiter:
                proven = await prover.prove(work, JobId.fresh("bench-steady"))
                results[i] = proven.result

        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(one, i)

    t0 = time.perf_counter()
    anyio.run(run)
    wall = time.perf_counter() - t0
    for i, res in enumerate(results):
        assert res is not None
        record({"run": f"steady{i + 1}", "in_flight": k, **res.as_json()}, res)
    ok = sum(r is not None and r.ok for r in results)
    summary = {
        "run": "steady",
        "in_flight": k,
        "proofs": count,
        "verified_proofs": ok,
        "wall_s": round(wall, 3),
        "s_per_proof": round(wall / count, 3),
        "proofs_per_hour": round(3600 * count / wall, 1),
    }
    record(summary, None)


def _export_start(export: Path, vk_path: Path, work: Work) -> None:
    """The verifying key (bytes as on disk), every partition's public inputs (decimal strings, computed
    without the circuit) and what they are for: enough for an independent check
    (benchmarks/verify_export.py)."""
    import json
    import shutil

    from agent.proving.work import WorkKind

    export.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(vk_path, export / "vk")
    meta = {
        "proof_type": work.proof_type.name,
        "partitions": work.partitions,
        "miner": work.miner,
        "sector": work.sector,
        "snap": work.kind is WorkKind.SNAP,
    }
    inputs = [[str(x) for x in xs] for xs in work.public_inputs]
    (export / "inputs.json").write_text(json.dumps(inputs) + "\n")
    (export / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _print_plan(work: Work, params_path: Path, backend: Backend, settings: Settings) -> None:
    """The memory plan of one proof of ``work`` as the engine would decide it (``gpu.groth16.plan``: the
    layout, its resident bytes and every phase's buffers), from the circuit's template counts (nothing large
    allocated), checked against the parameter file's sections when the file exists; on a GPU the budget is
    the engine's (``prover.device_memory_gib``, else the free memory once the kernels have run), and the
    verdict is against it."""

    from agent.cli.common import EXIT_USAGE, fail, resolve_backend, use_engine_options
    from agent.host import mem_total
    from agent.proving.plan import memory_plan_of
    from gpu.groth16.plan import LayoutError, overheads, plan_totals

    options = use_engine_options(settings)
    chosen = resolve_backend(backend)
    cuda = chosen is Backend.cuda
    budget = None
    device = None
    if cuda:
        from gpu import memory
        from gpu.device import devices

        memory.install()
        device = devices()[0]
        if options.device_memory:
            budget = options.device_memory
        elif not device.simulated:
            from gpu.groth16.budget import default_budget

            budget = default_budget(device)
    try:
        sizes, lay, stages = memory_plan_of(
            work.proof_type, cuda=cuda, device_spmv=options.device_spmv,
            params_to_device=options.params_to_device, budget=budget, layout=options.layout,
        )
    except LayoutError as exc:
        fail(f"{work.proof_type.name}: {exc}", EXIT_USAGE)
    if params_path.is_file():
        from agent.cli.params import _scan

        info = _scan(params_path)
        want = {"h": sizes.n - 1, "l": sizes.num_aux, "a": sizes.n_a, "b_g1": sizes.n_b, "b_g2": sizes.n_b}
        got = {k: info.get(k) for k in want}
        if got != want:
            fail(f"{params_path.name}: sections {got} do not fit the circuit's {want}", EXIT_USAGE)
    gb = 1e9
    typer.echo(
        f"memory plan: {work.proof_type.name}, {work.partitions} partition(s), "
        f"domain 2^{sizes.logn}, "
        f"{sizes.num_inputs} inputs, {sizes.num_aux:,} aux, A {sizes.n_a:,} / B {sizes.n_b:,} query points, "
        f"backend {chosen.value}, parameters "
        f"{'decoded on the device' if options.params_to_device else 'read on the host'}"
        + (" (parameter file sections match)" if params_path.is_file() else "")
    )
    if lay is not None:
        typer.echo(f"  {lay.describe()}")
    typer.echo(f"  {'stage':<40} {'host GB':>9} {'device GB':>10}  note")
    for st in stages:
        typer.echo(f"  {st.name:<40} {st.host / gb:9.2f} {st.device / gb:10.2f}  {st.note}")
    host, dev = plan_totals(stages)
    typer.echo(f"  {'peak (all held at once)':<40} {host / gb:9.2f} {dev / gb:10.2f}")
    if lay is not None:
        base = sum(lay.resident().values())
        typer.echo("  device bytes by phase (resident + the phase's buffers):")
        for ph in lay.phases():
            parts = ", ".join(f"{k} {v / gb:.2f}" for k, v in ph.buffers.items())
            typer.echo(f"    {ph.name:<10} {(base + ph.bytes) / gb:7.2f} GB  ({parts})")
    mem = mem_total()
    if mem is not None:
        typer.echo(f"  host memory here: {mem / gb:.1f} GB")
    if lay is not None and device is not None:
        where = f"device {device.index} ({device.name})"
        if budget is None:
            typer.echo(f"  {where}: no device budget (simulator)")
        else:
            told = "prover.device_memory_gib"
            if not options.device_memory:
                told = "free once the kernels ran, less the reserve"
            verdict = "fits" if lay.peak() <= budget else "DOES NOT FIT"
            typer.echo(
                f"  {where}: budget {budget / gb:.2f} GB ({told}); the plan's peak {lay.peak() / gb:.2f} GB "
                f"{verdict}, {max(0, budget - lay.peak()) / gb:.2f} GB to spare"
            )
            o = overheads()
            typer.echo(
                f"  outside the budget (not allocations): CUDA context ~{o.context / gb:.2f} GB, kernels' "
                "local "
                f"memory ~{o.local / gb:.2f} GB (132 SMs)"
            )


def _e2e_human(row: dict[str, Any]) -> str:
    def gib(n: int | None) -> str:
        return "n/a" if n is None else f"{n / 2**30:.2f} GiB"

    setup = "  ".join(f"{k}={v}" for k, v in row["setup_s"].items())
    stages = "  ".join(f"{k}={v}" for k, v in row["stages_s"].items())
    return (
        f"{row['run']}: {row['proof_type']} {row['partitions']} partition(s) verified {row['verified']} "
        f"on {row['backend']} in {row['wall_s']} s\n"
        f"  setup: {setup or '(loaded before)'}\n  stages: {stages}\n"
        f"  host RSS peak {gib(row['rss_peak_bytes'])}, device memory peak {gib(row['device_peak_bytes'])}, "
        f"host reserved peak {gib(row['host_reserved_peak_bytes'])}"
    )


@app.command("c1-parse")
def c1_parse(
    file: Annotated[
        str | None, typer.Argument(help="A C1 JSON file to parse; - reads stdin. Or use --generate.")
    ] = None,
    generate: Annotated[
        str | None, typer.Option("--generate", help="Synthesise a C1 of this size (32GiB) or proof type.")
    ] = None,
    key_order: Annotated[
        str, typer.Option("--key-order", help="Key order of a generated C1: go (Curio's) or rust.")
    ] = "go",
    rng_seed: Annotated[int, typer.Option("--rng-seed", help="Seed of a generated C1's random values.")] = 0,
    reps: Annotated[int, typer.Option("--reps", min=1, help="Warm runs after the cold one.")] = 5,
    json_flag: JsonFlag = False,
    json_out: JsonOut = None,
) -> None:
    """Parse + validate + re-serialise a C1; exit 1 unless the output is byte-identical."""
    import sys

    from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, fail
    from porep.c1 import C1FormatError
    from porep.c1.benchmark import format_report, measure
    from porep.c1.synth import synth_c1_json
    from porep.prooftypes import proof_type

    if (file is None) == (generate is None):
        fail("give exactly one of FILE or --generate", EXIT_USAGE)
    _check_json_out(json_out)
    if file is not None:
        try:
            raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
        except OSError as exc:
            fail(f"cannot read {file}: {exc.strerror or exc}", EXIT_USAGE)
    else:
        assert generate is not None
        name = generate if generate.startswith("StackedDrg") else f"StackedDrg{generate}V1_1"
        try:
            pt = proof_type(name)
        except ValueError as exc:
            fail(str(exc), EXIT_USAGE)
        if key_order not in ("go", "rust"):
            fail("--key-order must be go or rust", EXIT_USAGE)
        raw = synth_c1_json(pt, seed=rng_seed, order=key_order)
    try:
        result = measure(raw, repeat=reps)
    except C1FormatError as exc:
        fail(f"not a valid C1: {exc}", EXIT_USAGE)
    result["input"] = file if file is not None else f"generated {result['proof']} seed {rng_seed}"
    _emit(result, format_report(result), json_flag, json_out)
    if not result["identical"]:
        fail("re-serialised C1 differs from the input", EXIT_FAILURE)
