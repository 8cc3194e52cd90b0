"""Development-parameter setup (gpu.groth16.setup) timings: wall and process CPU seconds per stage.

    python benchmarks/setup_bench.py 16 18 20      # synthetic circuits of domain 2^k (compile run first)
    python benchmarks/setup_bench.py 2KiB [--out DIR]  # the blank PoRep circuit of one 2KiB partition

CPU seconds are reported next to wall time because the 2-core development machine is shared: the wall
time of a loaded run says little, its CPU time is close to what an idle machine needs (divided by the
cores for the parallel stages). Parameters come from a public test seed (insecure, benchmarks only).
"""

from __future__ import annotations

import sys
import time


def _synthetic(logn: int):  # type: ignore[no-untyped-def]
    from gpu.groth16.synthetic import SyntheticCircuit

    return SyntheticCircuit((1 << logn) - 16 - 3, num_public=2, seed=1).r1cs()


def _porep(size: str):  # type: ignore[no-untyped-def]
    from porep.circuit.cs import ConstraintSystem
    from porep.circuit.stacked import CircuitShape, synthesize
    from porep.prooftypes import proof_type

    pt = proof_type(f"StackedDrg{size}V1_1")
    cs = ConstraintSystem(witness=False, record=True)
    synthesize(cs, CircuitShape.for_proof_type(pt))
    return cs.to_r1cs(), pt.param_stem


def _run(r1cs, label: str, verbose: bool):  # type: ignore[no-untyped-def]
    from gpu.groth16 import setup

    t0, c0 = time.perf_counter(), time.process_time()
    last = [0.0]

    def progress(stage: str, done: float, total: float) -> None:
        if verbose and (done - last[0] >= total / 20 or done == total):
            last[0] = done
            print(
                f"  {stage:<8} {100 * done / total:5.1f}%  wall {time.perf_counter() - t0:6.0f} s", flush=True
            )

    timings: dict[str, float] = {}
    params = setup.generate(r1cs, test_seed=7, progress=progress, timings=timings)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    stages = ", ".join(f"{k} {v:.1f}" for k, v in timings.items())
    print(f"{label}: wall {wall:.1f} s, CPU {cpu:.1f} s; stages (wall s): {stages}; {setup.describe(params)}")
    return params


def main(argv: list[str]) -> None:
    t, c = time.perf_counter(), time.process_time()
    _run(_synthetic(8), "2^8 (first call: Numba compilation)", False)
    print(f"  compile + 2^8: wall {time.perf_counter() - t:.1f} s, CPU {time.process_time() - c:.1f} s")
    out = None
    if "--out" in argv:
        i = argv.index("--out")
        out, argv = argv[i + 1], argv[:i] + argv[i + 2 :]
    for arg in argv:
        if arg.isdigit():
            _run(_synthetic(int(arg)), f"2^{arg}", False)
            continue
        t, c = time.perf_counter(), time.process_time()
        r1cs, stem = _porep(arg)
        print(
            f"{arg} blank circuit: {r1cs.num_constraints_total:,} constraints, {r1cs.num_aux:,} aux, "
            f"domain 2^{r1cs.domain_log}; wall {time.perf_counter() - t:.1f} s, "
            f"CPU {time.process_time() - c:.1f} s"
        )
        params = _run(r1cs, arg, True)
        if out is not None:
            t = time.perf_counter()
            params.write(f"{out}/{stem}.params")
            params.vk.write(f"{out}/{stem}.vk")
            print(f"  wrote {out}/{stem}.params/.vk in {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
