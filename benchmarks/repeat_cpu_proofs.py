"""The same 2KiB C1 proven N times on the CPU backend with fresh r, s; every proof checked with the pairing
against public inputs computed without the circuit (P11: the reference CPU prover was seen failing 30-40 %).

    python benchmarks/repeat_cpu_proofs.py C1_JSON PARAMS_FILE MINER SECTOR N [--backend cpu|cuda]

The parameters are read without the per-point subgroup check only when ``--trusted`` is given (files made by
``psagent params generate`` on this machine). One line per proof, then ``verified X of N``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("c1", type=Path)
    ap.add_argument("params", type=Path)
    ap.add_argument("miner")
    ap.add_argument("sector", type=int)
    ap.add_argument("n", type=int)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--trusted", action="store_true")
    a = ap.parse_args()

    from agent.cli.prove import load_work
    from gpu.groth16.params import Parameters
    from gpu.groth16.prover import Assignment, ProvingKey, prove
    from gpu.groth16.verifier import verify
    from porep.circuit.stacked import synthesize_c1

    t = time.perf_counter()
    work = load_work(a.c1, a.miner, a.sector)
    params = Parameters.read(a.params, subgroup_check=not a.trusted)
    inputs = [list(v) for v in work.public_inputs]
    assert work.c1 is not None, "a PoRep C1"
    print(f"params + inputs {time.perf_counter() - t:.1f} s", flush=True)
    parts = []
    for k in range(len(work.c1.vanilla_proofs)):
        t = time.perf_counter()
        cs = synthesize_c1(work.c1, k)
        r1cs, w = cs.to_r1cs(), cs.witness_array()
        parts.append((r1cs, w))
        print(f"partition {k} synthesis {time.perf_counter() - t:.1f} s", flush=True)
    device = 0 if a.backend == "cuda" else None
    pk = ProvingKey(params, parts[0][0].density(), backend=a.backend, device=device)
    asgs = [Assignment.from_r1cs(r1cs, w) for r1cs, w in parts]
    good = 0
    seen: set[bytes] = set()
    for i in range(a.n):
        t = time.perf_counter()
        ok = True
        for k, asg in enumerate(asgs):
            (proof,) = prove(pk, asg)
            raw = proof.to_bytes()
            ok &= raw not in seen and bool(verify(params.vk, raw, inputs[k]))
            seen.add(raw)
        good += ok
        print(f"proof {i + 1}/{a.n}: {'verified' if ok else 'NOT VERIFIED'} {time.perf_counter() - t:.1f} s",
              flush=True)
    print(f"verified {good} of {a.n} ({a.backend})", flush=True)
    return 0 if good == a.n else 1


if __name__ == "__main__":
    sys.exit(main())
