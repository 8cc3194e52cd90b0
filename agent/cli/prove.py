"""``psagent prove`` / ``psagent verify``: a C1 (or a market ProofData) to a verified PoRep C2 proof.

Per partition: synthesise the StackedDRG circuit with the C1's witness (porep.circuit), prove with the
Groth16 engine, and verify with the pairing against public inputs derived WITHOUT the circuit
(porep.public_inputs) before anything is written. The proof file is the raw bytes, 192 per partition.
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
    """A C1 and, when known, its sector (miner actor id, sector number)."""

    c1: Any
    miner: int | None
    sector: int | None


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
        if pd.porep is None:
            fail(f"{path}: a ProofData without a PoRep C1 (SnapDeals is not supported)", EXIT_USAGE)
        c1 = pd.porep
        if m is None and n is None:
            m, n = int(pd.sector_id.miner), int(pd.sector_id.number)
    if (m is None) != (n is None):
        fail("give both --miner and --sector, or neither", EXIT_USAGE)
    return Work(c1, m, n)


def param_files(c1: Any, params_dir: Path | None) -> tuple[Path, Path]:
    from agent.proving import params_paths

    return params_paths(params_dir if params_dir is not None else default_params_dir(), c1.proof_type)


def require_params(path: Path, c1: Any) -> None:
    if not path.exists():
        fail(
            f"missing parameter file {path} (make a development one with: psagent params generate "
            f"--sector-size {c1.proof_type.size_label} --out {path.parent})",
            EXIT_USAGE,
        )


def public_inputs(work: Work) -> list[list[int]]:
    """Every partition's vector, derived without the circuit: from the sector (miner/sector given: replica_id
    re-derived from prover, sector, ticket, comm_d, porep_id) or from the C1's header."""
    from porep import ids
    from porep import public_inputs as pi

    c1 = work.c1
    if work.miner is not None and work.sector is not None:
        return pi.record_inputs(
            c1.proof_type, prover_id=ids.prover_id(work.miner), sector_id=work.sector, ticket=c1.ticket,
            seed=c1.seed, comm_d=c1.comm_d, comm_r=c1.comm_r,
        )
    return pi.from_c1(c1)


def _say(msg: str) -> None:
    typer.echo(msg, err=True)


def prove_work(work: Work, params_path: Path, backend: Backend) -> tuple[bytes, list[bool], dict[str, float]]:
    """(proof bytes, verified per partition, summed stage times)."""
    from agent.cli.common import resolve_backend
    from gpu.groth16.params import Parameters
    from gpu.groth16.prover import Assignment, ProvingKey, prove
    from gpu.groth16.verifier import verify
    from porep.circuit.stacked import synthesize_c1

    chosen = resolve_backend(backend)
    t0 = time.perf_counter()
    params = Parameters.read(params_path)
    totals: dict[str, float] = {"params": time.perf_counter() - t0}
    inputs = public_inputs(work)
    pk = None
    proofs: list[bytes] = []
    ok: list[bool] = []
    for k in range(len(work.c1.vanilla_proofs)):
        t = time.perf_counter()
        cs = synthesize_c1(work.c1, k)
        synth = time.perf_counter() - t
        t = time.perf_counter()
        r1cs = cs.to_r1cs()
        witness = cs.witness_array()
        del cs
        matrices = time.perf_counter() - t
        if pk is None:
            if params.vk.num_inputs != r1cs.num_inputs or params.l.shape[0] != r1cs.num_aux:
                fail(
                    f"{params_path.name}: parameters for {params.vk.num_inputs} inputs / {params.l.shape[0]} "
                    f"aux, the circuit has {r1cs.num_inputs} / {r1cs.num_aux}", EXIT_USAGE
                )
            device = 0 if chosen is Backend.cuda else None
            pk = ProvingKey(params, r1cs.density(), backend=chosen.value, device=device)
        t = time.perf_counter()
        asg = Assignment.from_r1cs(r1cs, witness)
        witness_t = time.perf_counter() - t
        timings: list[dict[str, float]] = []
        (proof,) = prove(pk, asg, timings=timings)
        t = time.perf_counter()
        good = verify(params.vk, proof.to_bytes(), inputs[k])
        ver = time.perf_counter() - t
        stages = {"synthesis": synth, "r1cs": matrices, "a/b/c": witness_t, **timings[0], "verify": ver}
        for key, v in stages.items():
            if isinstance(v, float) and "." not in key:
                totals[key] = totals.get(key, 0.0) + v
        _say(
            f"partition {k}: " + ", ".join(f"{key} {v:.2f}s" for key, v in stages.items() if "." not in key)
            + f" -> {'verified' if good else 'NOT VERIFIED'}"
        )
        proofs.append(proof.to_bytes())
        ok.append(bool(good))
    return b"".join(proofs), ok, totals


def prove_cmd(
    input: Path, miner: str | None, sector: int | None, out: Path | None, backend: Backend,
    params_dir: Path | None,
) -> None:
    work = load_work(input, miner, sector)
    params_path, _ = param_files(work.c1, params_dir)
    require_params(params_path, work.c1)
    target = out if out is not None else input.with_name(input.name + ".proof")
    t0 = time.perf_counter()
    data, ok, _ = prove_work(work, params_path, backend)
    total = time.perf_counter() - t0
    if not all(ok):
        bad = [k for k, good in enumerate(ok) if not good]
        fail(f"partitions {bad} of {len(ok)} did not verify; nothing written", EXIT_FAILURE)
    target.write_bytes(data)
    typer.echo(
        f"{work.c1.proof_type.name}: {len(ok)} partition(s) proven and verified in {total:.1f}s, "
        f"{len(data)} bytes -> {target}"
    )


def verify_cmd(
    input: Path, proof: Path, miner: str | None, sector: int | None, params_dir: Path | None
) -> None:
    from gpu.groth16.params import VerifyingKey
    from gpu.groth16.verifier import verify

    work = load_work(input, miner, sector)
    _, vk_path = param_files(work.c1, params_dir)
    require_params(vk_path, work.c1)
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
