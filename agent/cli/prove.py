"""``psagent prove`` / ``psagent verify``: a C1, a market ProofData (PoRep or SnapDeals) or a lotus-bench
``c1out.json`` to a verified proof, and a proof file checked against its input.

Argument parsing and output only: the input becomes an ``agent.proving.work.Work`` (recognised, strictly
checked, public inputs computed once; bad input is one line and exit 2 before any proving), the proof comes
from the one proof pipeline (``agent.proving.pipeline``, also behind ``bench e2e`` and the agent), and the
pairing check is the one host verifier (``agent.proving.verifier``). A live view per partition on a
terminal, quiet otherwise and with --json. The proof file is the raw bytes, 192 per partition.
Parameters are Filecoin's file names (``<param_stem>.params`` / ``.vk``) in ``--params-dir``, default
``$FIL_PROOFS_PARAMETER_CACHE`` or ``/var/tmp/filecoin-proof-parameters``, so official parameters work
unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, Backend, fail, parse_miner, parse_u64

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from agent.proving.pipeline import ProofPipeline, ProofResult, StageEvent
    from agent.proving.work import Work


def load_work(path: Path, miner: str | None, sector: int | None) -> Work:
    """The Work of the file at ``path``; one line and exit 2 on anything that is not provable input."""
    from agent.proving.work import Work, WorkError

    try:
        raw = path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE)
    m = parse_miner(miner) if miner is not None else None
    n = parse_u64(sector, "--sector") if sector is not None else None
    try:
        return Work.from_bytes(raw, miner=m, sector=n)
    except WorkError as exc:
        fail(f"{path}: {exc}", EXIT_USAGE)


def params_dir_or_default(params_dir: Path | None) -> Path:
    from agent.proving.parameters import default_params_dir

    return params_dir if params_dir is not None else default_params_dir()


def require_params(path: Path, work: Work) -> None:
    if not path.exists():
        from agent.paramfiles import fetch_hint

        hint = fetch_hint(work.proof_type.size_label, path.parent, update=work.update is not None)
        fail(f"missing parameter file {path} ({hint})", EXIT_USAGE)


class ProgressView:
    """The live view of one proof on stderr: a setup row (circuit, parameters, key: once per process) and a
    row per partition showing the stage in progress and the times of those done. Fed by the pipeline's
    StageEvents, from the proving and the synthesis threads (rich's Progress takes its own lock)."""

    def __init__(self, partitions: int, console: Console) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
            transient=False,
        )
        self.partitions = partitions
        self._tasks: dict[int, TaskID] = {}
        self._done: dict[int, list[str]] = {}

    def __enter__(self) -> ProgressView:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def _label(self, k: int) -> str:
        return "setup" if k < 0 else f"partition {k + 1}/{self.partitions}"

    def __call__(self, ev: StageEvent) -> None:
        k = ev.partition
        task = self._tasks.get(k)
        if task is None:
            task = self._tasks[k] = self.progress.add_task(self._label(k), total=1)
            self._done[k] = []
        done = self._done[k]
        if ev.seconds is None:
            text = f"{self._label(k)}: {ev.stage}…  " + ", ".join(done)
            self.progress.update(task, description=text)
            return
        done.append(f"{ev.stage} {ev.seconds:.2f}s")
        finished = ev.stage in ("key", "verified", "NOT VERIFIED")
        text = f"{self._label(k)}: " + ", ".join(done)
        self.progress.update(task, description=text, completed=1 if finished else 0)


def make_pipeline(params_dir: Path, backend: Backend) -> ProofPipeline:
    """The proof pipeline on the chosen backend (exit 2 before any work when CUDA is asked for, absent)."""
    from agent.cli.common import announce_compilation, resolve_backend, use_engine_options
    from agent.proving.engine import Groth16Engine
    from agent.proving.pipeline import ProofPipeline

    options = use_engine_options()
    chosen = resolve_backend(backend)
    announce_compilation()
    engine = Groth16Engine(chosen.value, 0 if chosen is Backend.cuda else None, options=options)
    return ProofPipeline(params_dir, engines=[engine], workers=1)


def run_pipeline(pipeline: ProofPipeline, work: Work, *, job_id: str, live: bool) -> ProofResult:
    """One proof through ``pipeline``; a parameter file that does not fit the circuit is one line and
    exit 2."""
    from rich.console import Console

    try:
        if not live:
            return pipeline.prove(work, job_id=job_id)
        with ProgressView(work.partitions, Console(stderr=True)) as view:
            return pipeline.prove(work, job_id=job_id, events=view)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc).splitlines()[0], EXIT_USAGE)


def stage_summary(stages: dict[str, float]) -> str:
    keep = (
        "witness", "a/b/c", "upload", "NTT/H", "msm_h", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "verify"
    )
    return ", ".join(f"{k} {stages[k]:.2f}s" for k in keep if k in stages)


def prove_cmd(
    input: Path, miner: str | None, sector: int | None, out: Path | None, backend: Backend,
    params_dir: Path | None, json_flag: bool = False,
) -> None:
    import json
    import sys

    from agent.admission import new_job_id
    from agent.proving.parameters import params_paths

    work = load_work(input, miner, sector)
    params_path, _ = params_paths(params_dir_or_default(params_dir), work.proof_type)
    require_params(params_path, work)
    target = out if out is not None else input.with_name(input.name + ".proof")
    pipeline = make_pipeline(params_path.parent, backend)
    live = not json_flag and sys.stderr.isatty()
    result = run_pipeline(pipeline, work, job_id=new_job_id("prove"), live=live)
    report = result.report()
    if not report.ok:
        if json_flag:
            typer.echo(json.dumps({**result.as_json(), "out": None}))
        fail(f"{report.diagnosis()}; nothing written", EXIT_FAILURE)
    from gpu.files import atomic_write

    atomic_write(target, result.proof)  # whole or not at all
    if json_flag:
        typer.echo(json.dumps({**result.as_json(), "out": str(target)}))
        return
    typer.echo(
        f"{result.proof_type}: {work.partitions} partition(s) proven and verified in {result.wall_s:.1f}s on "
        f"{result.backend} ({stage_summary(result.stages())}), {len(result.proof)} bytes -> {target}"
    )


def verify_cmd(
    input: Path, proof: Path, miner: str | None, sector: int | None, params_dir: Path | None
) -> None:
    from agent.proving.verifier import HostVerifier

    work = load_work(input, miner, sector)
    verifier = HostVerifier(params_dir_or_default(params_dir))
    require_params(verifier.vk_file(work.proof_type), work)
    try:
        data = proof.read_bytes()
    except OSError as exc:
        fail(f"cannot read {proof}: {exc.strerror or exc}", EXIT_USAGE)
    if len(data) != work.proof_bytes:
        fail(f"{proof}: {len(data)} bytes, a {work.proof_type.name} proof is {work.proof_bytes}", EXIT_USAGE)
    try:
        report = verifier.verify(work, data)
    except (ValueError, OSError) as exc:  # an unreadable verifying key file
        fail(f"{verifier.vk_file(work.proof_type)}: {str(exc).splitlines()[0]}", EXIT_USAGE)
    if not report.ok:
        fail(report.diagnosis(), EXIT_FAILURE)
    typer.echo(f"{work.proof_type.name}: {work.partitions} partition(s) verified")


SIZES = ("2KiB", "8MiB", "512MiB", "32GiB", "64GiB")
