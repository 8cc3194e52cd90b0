"""``psagent prove`` / ``psagent verify``: a C1 or a market ProofData (PoRep C1 or SnapDeals update) to a
verified proof (PoRep C2, or the update proof: the update circuit behind the same pipeline).

``prove`` runs the one proving pipeline (agent.proving.ProofPipeline, also behind ``bench e2e`` and the
agent): per partition the circuit's assignment (porep.circuit.partition), the Groth16 engine, and the pairing
check against public inputs derived WITHOUT the circuit (porep.public_inputs) before anything is written; a
live view per partition on a terminal, quiet otherwise and with --json. The proof file is the raw bytes, 192
per partition.
Parameters are Filecoin's file names (``<param_stem>.params`` / ``.vk``) in ``--params-dir``, default
``$FIL_PROOFS_PARAMETER_CACHE`` or ``/var/tmp/filecoin-proof-parameters``, so official parameters work
unchanged.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from agent.cli.common import EXIT_FAILURE, EXIT_USAGE, Backend, fail, parse_miner, parse_u64

DEFAULT_PARAMS_DIR = Path("/var/tmp/filecoin-proof-parameters")


def default_params_dir() -> Path:
    env = os.environ.get("FIL_PROOFS_PARAMETER_CACHE")
    return Path(env) if env else DEFAULT_PARAMS_DIR


@dataclass
class Work:
    """A C1 and, when known, its sector (miner actor id, sector number); or a Snap request (``snap``, then
    ``c1`` is its ``porep.snap.partition.UpdateWork``: proof type and one vanilla proof per partition)."""

    c1: Any
    miner: int | None
    sector: int | None
    snap: Any = None


def load_work(path: Path, miner: str | None, sector: int | None) -> Work:
    """C1 JSON or ProofData JSON; one line and exit 2 on anything else."""
    from market.errors import ProtocolError
    from market.proofdata import ProofData
    from porep.c1 import SealCommitPhase1Output

    try:
        raw = path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE)
    m = parse_miner(miner) if miner is not None else None
    n = parse_u64(sector, "--sector") if sector is not None else None
    c1 = None
    try:
        c1 = SealCommitPhase1Output.from_json(raw)
    except ValueError as c1_error:
        try:
            pd = ProofData.parse(raw)
        except (ValueError, ProtocolError):
            why = str(c1_error).splitlines()[0][:200]
            fail(f"{path}: neither a C1 JSON nor a ProofData ({why})", EXIT_USAGE)
        if pd.snap is not None:
            return _snap_work(path, pd, m, n)
        c1 = pd.porep
        if m is None and n is None:
            m, n = int(pd.sector_id.miner), int(pd.sector_id.number)
    if (m is None) != (n is None):
        fail("give both --miner and --sector, or neither", EXIT_USAGE)
    return Work(c1, m, n)


def _snap_work(path: Path, pd: Any, miner: int | None, sector: int | None) -> Work:
    """A Snap request, strictly checked before any work (the update's public inputs come from its
    commitments, so --miner/--sector have nothing to say)."""
    from porep.snap.partition import UpdateWork
    from porep.snap.verify import check_request

    if miner is not None or sector is not None:
        fail("--miner/--sector are for a bare PoRep C1, not a Snap request", EXIT_USAGE)
    try:
        check_request(pd.snap)
        item = UpdateWork(pd.snap)
    except ValueError as exc:
        why = str(exc).splitlines()[0][:300]
        fail(f"{path}: the Snap request failed the strict check: {why}", EXIT_USAGE)
    return Work(item, int(pd.sector_id.miner), int(pd.sector_id.number), snap=pd.snap)


def param_files(c1: Any, params_dir: Path | None) -> tuple[Path, Path]:
    from agent.proving import params_paths

    return params_paths(params_dir if params_dir is not None else default_params_dir(), c1.proof_type)


def require_params(path: Path, work: Work) -> None:
    if not path.exists():
        from agent.paramfiles import fetch_hint

        hint = fetch_hint(work.c1.proof_type.size_label, path.parent, update=work.snap is not None)
        fail(f"missing parameter file {path} ({hint})", EXIT_USAGE)


def public_inputs(work: Work) -> list[list[int]]:
    """Every partition's vector, derived without the circuit: from the sector (miner/sector given: replica_id
    re-derived from prover, sector, ticket, comm_d, porep_id) or from the C1's header."""
    from porep import ids
    from porep import public_inputs as pi

    if work.snap is not None:
        from porep.snap.partition import update_public_inputs

        return update_public_inputs(work.snap)
    c1 = work.c1
    if work.miner is not None and work.sector is not None:
        return pi.record_inputs(
            c1.proof_type, prover_id=ids.prover_id(work.miner), sector_id=work.sector, ticket=c1.ticket,
            seed=c1.seed, comm_d=c1.comm_d, comm_r=c1.comm_r,
        )
    return pi.from_c1(c1)


def _say(msg: str) -> None:
    typer.echo(msg, err=True)


class ProgressView:
    """The live view of one proof on stderr: a setup row (circuit, parameters, key: once per process) and a
    row per partition showing the stage in progress and the times of those done. Fed by the pipeline's
    StageEvents, from the proving and the synthesis threads (rich's Progress takes its own lock)."""

    def __init__(self, partitions: int, console: Any) -> None:
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
            transient=False,
        )
        self.partitions = partitions
        self._tasks: dict[int, Any] = {}
        self._done: dict[int, list[str]] = {}

    def __enter__(self) -> ProgressView:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def _label(self, k: int) -> str:
        return "setup" if k < 0 else f"partition {k + 1}/{self.partitions}"

    def __call__(self, ev: Any) -> None:
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


def make_pipeline(params_dir: Path, backend: Backend, *, update: bool = False) -> Any:
    """The proving pipeline on the chosen backend (exit 2 before any work when CUDA is asked for, absent);
    ``update``: the SnapDeals update circuit behind its circuit seam."""
    from agent.cli.common import announce_compilation, resolve_backend
    from agent.proving import Groth16Engine, ProofPipeline

    chosen = resolve_backend(backend)
    announce_compilation()
    engine = Groth16Engine(chosen.value, 0 if chosen is Backend.cuda else None)
    if not update:
        return ProofPipeline(params_dir, engine=engine)
    from agent.config import cache_dir
    from porep.snap.partition import UpdateCircuit

    return ProofPipeline(params_dir, engine=engine, circuit=UpdateCircuit(cache_dir()))


def run_pipeline(pipeline: Any, work: Work, *, job_id: str, live: bool) -> Any:
    """One proof through ``pipeline`` (a ProofResult); a parameter file that does not fit the circuit is one
    line and exit 2."""
    from rich.console import Console

    inputs = public_inputs(work)
    n = len(work.c1.vanilla_proofs)
    try:
        if not live:
            return pipeline.prove(work.c1, inputs, job_id=job_id)
        with ProgressView(n, Console(stderr=True)) as view:
            return pipeline.prove(work.c1, inputs, job_id=job_id, events=view)
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

    work = load_work(input, miner, sector)
    params_path, _ = param_files(work.c1, params_dir)
    require_params(params_path, work)
    target = out if out is not None else input.with_name(input.name + ".proof")
    pipeline = make_pipeline(params_path.parent, backend, update=work.snap is not None)
    live = not json_flag and sys.stderr.isatty()
    result = run_pipeline(pipeline, work, job_id=new_job_id("prove"), live=live)
    ok = list(result.verified)
    if not result.ok:
        bad = [k for k, good in enumerate(ok) if not good]
        if json_flag:
            typer.echo(json.dumps({**result.as_json(), "out": None}))
        fail(f"partitions {bad} of {len(ok)} did not verify; nothing written", EXIT_FAILURE)
    target.write_bytes(result.proof)
    if json_flag:
        typer.echo(json.dumps({**result.as_json(), "out": str(target)}))
        return
    typer.echo(
        f"{result.proof_type}: {len(ok)} partition(s) proven and verified in {result.wall_s:.1f}s on "
        f"{result.backend} ({stage_summary(result.stages())}), {len(result.proof)} bytes -> {target}"
    )


def verify_cmd(
    input: Path, proof: Path, miner: str | None, sector: int | None, params_dir: Path | None
) -> None:
    from gpu.groth16.params import VerifyingKey
    from gpu.groth16.verifier import verify

    work = load_work(input, miner, sector)
    _, vk_path = param_files(work.c1, params_dir)
    require_params(vk_path, work)
    try:
        data = proof.read_bytes()
    except OSError as exc:
        fail(f"cannot read {proof}: {exc.strerror or exc}", EXIT_USAGE)
    parts = len(work.c1.vanilla_proofs)
    if len(data) != 192 * parts:
        fail(f"{proof}: {len(data)} bytes, a {work.c1.proof_type.name} proof is {192 * parts}", EXIT_USAGE)
    vk = VerifyingKey.read(vk_path)
    inputs = public_inputs(work)
    ok = [verify(vk, data[192 * k : 192 * (k + 1)], inputs[k]) for k in range(parts)]
    if not all(ok):
        fail(f"partitions {[k for k, g in enumerate(ok) if not g]} of {parts} did not verify", EXIT_FAILURE)
    typer.echo(f"{work.c1.proof_type.name}: {parts} partition(s) verified")


SIZES = ("2KiB", "8MiB", "512MiB", "32GiB", "64GiB")


def blank_r1cs(sector_size: str) -> tuple[Any, str]:
    """The blank PoRep circuit of one partition of ``sector_size`` as an R1CS, and Filecoin's parameter file
    stem for it (all flavours of a size share parameters)."""
    from porep.circuit.stacked import blank_system
    from porep.prooftypes import proof_type

    size = next((s for s in SIZES if s.lower() == sector_size.strip().lower()), None)
    if size is None:
        fail(f"--sector-size must be one of {', '.join(SIZES)}, got {sector_size[:40]!r}", EXIT_USAGE)
    pt = proof_type(f"StackedDrg{size}V1_1")
    t = time.perf_counter()
    cs = blank_system(pt)
    _say(f"synthesised the {size} circuit: {cs.num_constraints:,} constraints, {cs.num_aux:,} aux, "
         f"{cs.num_inputs} inputs ({time.perf_counter() - t:.1f}s)")
    return cs.to_r1cs(), pt.param_stem
