"""Development-parameter setup (gpu.groth16.setup) timings: wall and process CPU seconds per stage.

    python benchmarks/setup_bench.py 16 18 20      # synthetic circuits of domain 2^k (compile run first)
    python benchmarks/setup_bench.py 2KiB [--out DIR]  # the blank PoRep circuit of one 2KiB partition
    python benchmarks/setup_bench.py kernel --g1 20,24,27 --g2 22 [--check 48] [--json F]
        # the GPU fixed-base kernel alone (gpu.groth16.fixed_base_cuda): random scalars, 16-bit table, bytes
        # produced chunk by chunk and dropped (no disk); sampled products checked against pyblst
    python benchmarks/setup_bench.py read FILE.params [--device-load]   # read times (host, digest, device)

CPU seconds are reported next to wall time because the 2-core development machine is shared: the wall
time of a loaded run says little, its CPU time is close to what an idle machine needs (divided by the
cores for the parallel stages). Parameters come from a public test seed (insecure, benchmarks only).
"""

from __future__ import annotations

import sys
import time

import _kernel_cache  # noqa: F401  (PSAGENT_NUMBA_CACHE as an engine option, before gpu compiles)


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


def _random_scalars(n: int, seed: int):  # type: ignore[no-untyped-def]
    import numpy as np

    s = np.random.default_rng(seed).integers(0, 1 << 32, size=(n, 8), dtype=np.uint32)
    s[:, 7] &= 0x3FFFFFFF  # < 2^254 < r: canonical
    return s


def kernel_bench(argv: list[str]) -> dict[str, object]:
    """Times CudaFixedBase.zcash_chunks (kernels + device-to-host copies) per size; checks samples."""
    import argparse
    import json

    import numpy as np
    from numba import cuda

    from gpu.curves import G1, G2
    from gpu.device import devices
    from gpu.groth16.fixed_base import FixedBase
    from gpu.groth16.fixed_base_cuda import CudaFixedBase

    ap = argparse.ArgumentParser(prog="setup_bench.py kernel")
    ap.add_argument("--g1", default="20,24,27")
    ap.add_argument("--g2", default="22")
    ap.add_argument("--check", type=int, default=48, help="sampled products checked against pyblst per size")
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    dev = devices()[0]
    results: dict[str, object] = {"device": dev.name, "window": args.window, "runs": []}
    for group, sizes in ((G1, args.g1), (G2, args.g2)):
        if not sizes:
            continue
        t = time.perf_counter()
        fb = FixedBase(group, group.generator(), window=args.window)
        t_table = time.perf_counter() - t
        t = time.perf_counter()
        cfb = CudaFixedBase(fb, dev)
        warm = cfb.mul_bytes(_random_scalars(1024, 0))  # compiles the kernels (or loads them from the cache)
        t_warm = time.perf_counter() - t
        print(
            f"{group.name}: table w={args.window} {t_table:.1f} s (CPU), upload + first launch {t_warm:.1f} s"
        )
        assert len(warm) == 1024 * cfb.point_bytes
        for logn in (int(x) for x in sizes.split(",")):
            n = 1 << logn
            scalars = _random_scalars(n, logn)
            rng = np.random.default_rng(logn + 1)
            picks = np.sort(rng.choice(n, size=min(args.check, n), replace=False))
            sample: dict[int, bytes] = {}
            size = cfb.point_bytes
            pos = 0
            with dev.use():
                cuda.synchronize()
            t0 = time.perf_counter()
            for chunk in cfb.zcash_chunks(scalars):
                m = chunk.shape[0] // size
                for i in picks[(picks >= pos) & (picks < pos + m)]:
                    sample[int(i)] = chunk[(i - pos) * size : (i - pos + 1) * size].tobytes()
                pos += m
            wall = time.perf_counter() - t0
            from gpu.arith.fields import fr_to_ints

            ks = fr_to_ints(scalars[picks])
            want = group.to_bytes(group.from_blst(_blst(group.name, ks)), compressed=False)
            bad = sum(sample[int(i)] != want[j * size : (j + 1) * size] for j, i in enumerate(picks))
            row = {
                "group": group.name,
                "log2_n": logn,
                "seconds": round(wall, 3),
                "products_per_s": round(n / wall),
                "checked": len(picks),
                "mismatches": int(bad),
            }
            results["runs"].append(row)  # type: ignore[attr-defined]
            print(json.dumps(row), flush=True)
            del scalars
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return results


def read_bench(argv: list[str]) -> int:
    """Read one .params file: host decode (Parameters.read, no subgroup checks), the file's BLAKE2b digest,
    and with --device-load the device decoder (gpu.groth16.params_device), checked equal to the host's."""
    import hashlib

    import numpy as np

    from gpu.groth16.params import Parameters

    path = argv[0]
    t = time.perf_counter()
    params = Parameters.read(path, subgroup_check=False)
    print(f"Parameters.read(subgroup_check=False): {time.perf_counter() - t:.2f} s", flush=True)
    t = time.perf_counter()
    h = hashlib.blake2b()
    with open(path, "rb") as f:
        while block := f.read(1 << 24):
            h.update(block)
    print(f"BLAKE2b of the file: {time.perf_counter() - t:.2f} s ({h.hexdigest()[:32]})", flush=True)
    if "--device-load" not in argv:
        return 0
    from gpu.device import devices
    from gpu.groth16.params_device import load_to_device
    from gpu.groth16.prover import permuted_h_bases

    dev = devices()[0]
    for attempt in ("first (compiles the decoder)", "second"):
        t = time.perf_counter()
        d = load_to_device(path, dev, h_bitrev=True)
        print(
            f"load_to_device {attempt}: {time.perf_counter() - t:.2f} s, {d.nbytes() / 1e9:.2f} GB",
            flush=True,
        )
    same = np.array_equal(d.h.copy_to_host(), permuted_h_bases(params.h, params.domain_log)) and all(
        np.array_equal(getattr(d, k).copy_to_host(), getattr(params, k)) for k in ("l", "a", "b_g1", "b_g2")
    )
    print(f"device arrays == host arrays: {same}", flush=True)
    return 0 if same else 1


def _blst(group: str, ks: list[int]) -> list[object]:
    from gpu.curves import G1, G2

    gen = (G1 if group == "g1" else G2).to_blst((G1 if group == "g1" else G2).generator())[0]
    return [gen.scalar_mul(k) for k in ks]


def main(argv: list[str]) -> None:
    if argv[:1] == ["read"]:
        raise SystemExit(read_bench(argv[1:]))
    if argv[:1] == ["kernel"]:
        res = kernel_bench(argv[1:])
        bad = sum(r["mismatches"] for r in res["runs"])  # type: ignore[attr-defined]
        raise SystemExit(1 if bad else 0)
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
