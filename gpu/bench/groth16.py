"""`psagent bench prove`: Groth16 on the synthetic Filecoin-like circuit, per-stage timings, every proof
verified.

Two modes:
* real setup (default up to ``real_setup_max`` constraints): development parameters from gpu.groth16.setup
  (test seed, insecure, fine for timing), every proof verified with pyblst;
* PSEUDO-RANDOM BASES (above that, or forced): the queries are tiles of a pool of random points, so the MSMs
  do the same work but the proof is NOT valid and is not claimed to be: the row says so.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import G1, G2
from gpu.device import Device
from gpu.groth16.params import Parameters, VerifyingKey
from gpu.groth16.prover import Assignment, ProvingKey, prove
from gpu.groth16.synthetic import SyntheticCircuit
from gpu.groth16.verifier import prepare_verifying_key, verify

REAL_SETUP_MAX = 1 << 21
POOL_G1 = 1 << 14
POOL_G2 = 1 << 12


def _pool(group: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    from gpu.bench.ntt import random_fr

    gen = np.ascontiguousarray(np.broadcast_to(group.generator(), (size,) + group.affine_shape))
    return group.mul(gen, random_fr((size, 8), rng))


def _tile(pool: np.ndarray, n: int) -> np.ndarray:
    reps = -(-n // pool.shape[0]) if n else 0
    return np.ascontiguousarray(np.tile(pool, (reps,) + (1,) * (pool.ndim - 1))[:n])


def pseudo_random_params(sc: SyntheticCircuit, seed: int) -> Parameters:
    """Parameters of the right shapes whose points are tiled random points (NOT a trusted setup)."""
    rng = np.random.default_rng(seed)
    p1, p2 = _pool(G1, POOL_G1, rng), _pool(G2, POOL_G2, rng)
    d = sc.density()
    n = 1 << max(0, (sc.num_constraints + sc.num_inputs - 1).bit_length())
    nb = int(d.b_input.sum() + d.b_aux.sum())
    vk = VerifyingKey(p1[0:1], p1[1:2], p2[0:1], p2[1:2], p1[2:3], p2[2:3], p1[3 : 3 + sc.num_inputs])
    return Parameters(
        vk,
        _tile(p1, n - 1),
        _tile(p1, sc.num_aux),
        _tile(p1, sc.num_inputs + int(d.a_aux.sum())),
        _tile(p1, nb),
        _tile(p2, nb),
    )


def bench_prove(
    constraints: int,
    *,
    backend: str = "cpu",
    reps: int = 3,
    warmup: int = 1,
    public_inputs: int = 4,
    seed: int = 0,
    pseudo_random: bool | None = None,
    export: Path | None = None,
    device: Device | int | None = None,
    progress: Callable[[str], None] | None = None,
    circuits: int = 1,
    host_memory: str = "pinned",
) -> dict[str, Any]:
    """Prove ``reps`` times after ``warmup`` proofs; ``progress`` hears each phase as it starts (long at
    2^27). With ``circuits`` = K > 1, each rep proves K circuits of the same shape (seeds seed..seed+K-1) as
    one batch; the stage medians are then per circuit and ``batch_s`` is the wall time of a whole batch.
    ``host_memory`` (CUDA): "pinned" holds the assignments in page-locked memory, as a synthesiser writing
    into the prover's pinned pool would leave them (the copy there is not timed, like the witness); "pageable"
    leaves them in ordinary memory, so the upload goes through the staging buffers."""
    say = progress or (lambda _msg: None)
    if circuits < 1:
        raise ValueError("circuits must be at least 1")
    if host_memory not in ("pinned", "pageable"):
        raise ValueError("host_memory must be 'pinned' or 'pageable'")
    row: dict[str, Any] = {
        "what": "prove",
        "constraints": constraints,
        "backend": backend,
        "reps": reps,
        "circuits": circuits,
    }
    t0 = time.perf_counter()
    say(f"setup: synthetic circuit of {constraints} constraints")
    sc = SyntheticCircuit(constraints, public_inputs, seed)
    fake = constraints > REAL_SETUP_MAX if pseudo_random is None else pseudo_random
    if fake:
        params = pseudo_random_params(sc, seed)
        density = sc.density()
        row["bases"] = "PSEUDO-RANDOM BASES (timing only; the proof is NOT valid and not checked)"
    else:
        from gpu.groth16.setup import generate

        r1cs = sc.r1cs()
        density = r1cs.density()
        params = generate(r1cs, test_seed=seed)
        row["bases"] = "development setup (test seed); every proof verified with pyblst"
    row["setup_s"] = time.perf_counter() - t0
    row["domain_log"] = params.domain_log
    t0 = time.perf_counter()
    say(f"witness (setup took {row['setup_s']:.1f} s)")
    insts = [sc] + [SyntheticCircuit(constraints, public_inputs, seed + k) for k in range(1, circuits)]
    asgs = [Assignment(*inst.evaluations(), sc.num_inputs) for inst in insts]
    row["witness_s"] = time.perf_counter() - t0
    if backend == "cuda":
        row["host_memory"] = host_memory
        if host_memory == "pinned":
            t0 = time.perf_counter()
            asgs = [asg.pinned() for asg in asgs]
            row["pin_s"] = time.perf_counter() - t0
    w = asgs[0].witness
    row["boolean_aux_fraction"] = float(
        np.mean(~w[sc.num_inputs :, 1:].any(axis=1) & (w[sc.num_inputs :, 0] < 2))
    )
    vk = params.vk
    t0 = time.perf_counter()
    say(f"key load (witness took {row['witness_s']:.1f} s)")
    dev = 0 if device is None else device  # a measurement's default: device 0
    pk = ProvingKey(params, density, backend=backend, device=dev, keep_host=not fake)
    del params
    row["key_load_s"] = time.perf_counter() - t0
    if backend == "cuda":
        assert pk.device is not None
        row["device"] = pk.device.name
    pvk = prepare_verifying_key(vk) if not fake else None
    inputs = [inst.public_inputs() for inst in insts]
    xs = inputs[0]
    timings: list[dict[str, float]] = []
    batch_s = []
    verified = []
    proof = b""
    what = "proof" if circuits == 1 else f"batch of {circuits}"
    for k in range(warmup + reps):
        t = [] if k < warmup else timings
        say(f"{what} {k + 1}/{warmup + reps}" + (" (warm-up)" if k < warmup else ""))
        t0 = time.perf_counter()
        proofs = [p.to_bytes() for p in prove(pk, asgs, timings=t)]
        if k == 0:
            row["first_prove_s"] = time.perf_counter() - t0  # includes compilation in a fresh process
        else:
            batch_s.append(time.perf_counter() - t0)
        proof = proofs[0]
        if pvk is not None:
            verified += [verify(pvk, p, x) for p, x in zip(proofs, inputs, strict=True)]
    stages = sorted({key for t in timings for key in t})
    row["median_s"] = {s: statistics.median(t[s] for t in timings) for s in stages}
    if circuits > 1 and batch_s:
        row["batch_s"] = statistics.median(batch_s)
    if pvk is not None:
        row["verified"] = f"{sum(verified)}/{len(verified)}"
        row["wrong_input_rejected"] = not verify(pvk, proof, [(xs[0] + 1) % R_MODULUS] + xs[1:])
    else:
        row["verified"] = "not applicable (pseudo-random bases)"
    if export is not None:
        if fake:
            raise ValueError("--export needs a real setup (the pseudo-random-bases proof is not valid)")
        export.mkdir(parents=True, exist_ok=True)
        vk.write(export / "vk")
        (export / "inputs.json").write_text(json.dumps([int(x) for x in xs]) + "\n")
        (export / "proof").write_bytes(proof)
        row["exported"] = str(export)
    return row


def format_row(row: dict[str, Any]) -> str:
    lines = [
        f"prove {row['constraints']} constraints (domain 2^{row['domain_log']}), backend {row['backend']}"
        f"{', ' + row['device'] if 'device' in row else ''}: {row['bases']}"
        + (f"; assignment in {row['host_memory']} host memory" if "host_memory" in row else ""),
        f"  setup {row['setup_s']:.2f} s, witness {row['witness_s']:.2f} s, "
        f"key load {row['key_load_s']:.2f} s, "
        f"first prove {row['first_prove_s']:.2f} s, boolean aux {row['boolean_aux_fraction']:.1%}",
        f"  verified {row['verified']}"
        + (f", wrong input rejected: {row['wrong_input_rejected']}" if "wrong_input_rejected" in row else ""),
    ]
    k = row.get("circuits", 1)
    if k > 1:
        lines.append(
            f"  batches of {k} circuits: stage medians per circuit"
            + (f"; whole batch {row['batch_s']:.3f} s (median)" if "batch_s" in row else "")
        )
    for stage, v in row["median_s"].items():
        if stage != "batch":
            lines.append(f"  {stage:10s} {v * 1e3:10.1f} ms (median of {row['reps'] * k})")
    return "\n".join(lines)
