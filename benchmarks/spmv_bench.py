"""A.w, B.w, C.w on the device (gpu.groth16.spmv_cuda) against the CPU's R1CS.evaluate: time and equality.

Cases: a real PoRep partition R1CS (``--porep 2KiB``: porep.circuit.partition.partition_r1cs; larger sizes
record their PCE under --cache-dir first) and synthetic compact systems of ``--rows`` rows with the row
lengths of a 32GiB PoRep partition (cuzk.md §1.3: A 309 M / B 130 M / C 283 M entries per 130.28 M rows; 0.5 %
of the A and C rows long, 32..287 entries, like packing rows), 1,500 distinct coefficients of which index 0 is
1 and carries 70 % of the entries (uint16 indices), columns uniform over the variables (worse locality than a
real circuit: a pessimistic gather). The witness is random (94 % bits, the rest full-size): equality of the
products does not need a satisfying one.

Per case, one JSON line: nnz, the matrices' device bytes, the upload time, the first evaluation (includes the
kernels' compilation), the best and median of --reps evaluations (witness already on the device, result left
in the (3, n, 8) quotient buffer), the CPU's R1CS.evaluate time and cpu threads, and ``equal`` (the device
rows copied back == the CPU's arrays). Exit 1 if any case differs.

  PSAGENT_REAL_CUDA=1 python3 benchmarks/spmv_bench.py --porep 2KiB --rows 16777216,134217728 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import _kernel_cache  # noqa: F401  (PSAGENT_NUMBA_CACHE as an engine option, before gpu compiles)
import numpy as np

if TYPE_CHECKING:
    from gpu.groth16.r1cs import R1CS

ROWS_32G = 130_278_869
NNZ_32G = {"a": 309_000_000, "b": 130_000_000, "c": 283_000_000}
LONG_FRACTION = {"a": 0.005, "b": 0.0, "c": 0.005}
TABLE = 1500


def _lengths(rng: np.random.Generator, rows: int, mean: float, long_fraction: float) -> np.ndarray:
    """Row lengths with the given mean: a few long rows (32..287 entries), the rest base + Poisson."""
    long_rows = rng.random(rows) < long_fraction
    long_mean = 159.5
    base = 1 if mean >= 1.5 else 0
    rest = (mean - long_fraction * long_mean) / (1 - long_fraction) - base
    out = base + rng.poisson(max(rest, 0.0), size=rows)
    out[long_rows] = rng.integers(32, 288, size=int(long_rows.sum()))
    return out.astype(np.int64)


def synthetic_r1cs(rows: int, seed: int) -> R1CS:
    """A compact R1CS of ``rows`` constraints, 32GiB-like row lengths (see the module docstring)."""
    from gpu.arith.fields import fr_from_ints
    from gpu.arith.fields.constants import R_MODULUS
    from gpu.groth16.r1cs import R1CS, CompactCSR

    rng = np.random.default_rng(seed)
    num_inputs = 328
    nvars = max(rows, 2 * num_inputs)  # a PoRep partition has about as many aux variables as constraints
    ints = [1] + [int.from_bytes(rng.bytes(32), "little") % R_MODULUS for _ in range(TABLE - 1)]
    table = fr_from_ints(ints)
    mats = []
    for name in ("a", "b", "c"):
        lengths = _lengths(rng, rows, NNZ_32G[name] / ROWS_32G, LONG_FRACTION[name])
        ptr = np.zeros(rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        nnz = int(ptr[-1])
        cols = rng.integers(0, nvars, size=nnz, dtype=np.uint32)
        coeff = rng.integers(1, TABLE, size=nnz, dtype=np.uint16)
        coeff[rng.random(nnz) < 0.7] = 0
        mats.append(CompactCSR(ptr, cols, coeff, table))
    return R1CS(num_inputs, nvars - num_inputs, *mats)


def random_witness(nvars: int, seed: int) -> np.ndarray:
    """Canonical (nvars, 8) limbs, ONE first, 94 % bits and the rest below the modulus (top limb < r's)."""
    rng = np.random.default_rng(seed)
    w = np.zeros((nvars, 8), dtype=np.uint32)
    w[:, 0] = rng.integers(0, 2, size=nvars, dtype=np.uint32)
    full = np.flatnonzero(rng.random(nvars) < 0.06)
    w[full] = rng.integers(0, 1 << 32, size=(len(full), 8), dtype=np.uint64).astype(np.uint32)
    w[full, 7] %= np.uint32(0x73EDA753)
    w[0] = 0
    w[0, 0] = 1
    return w


def bench_case(name: str, rc: R1CS, witness: np.ndarray, reps: int, device: int) -> dict[str, object]:
    from numba import cuda

    from gpu.arith.cpupool import cpu_threads
    from gpu.device import get_device
    from gpu.groth16.spmv_cuda import DeviceR1CS

    dev = get_device(device)
    nnz = {"a": rc.a.nnz, "b": rc.b.nnz, "c": rc.c.nnz}
    t0 = time.perf_counter()
    cpu = rc.evaluate(witness)
    cpu_s = time.perf_counter() - t0
    with dev.use():
        t0 = time.perf_counter()
        dr = DeviceR1CS.upload(rc, dev)
        cuda.synchronize()
        upload_s = time.perf_counter() - t0
        d_w = cuda.to_device(witness)
        out = cuda.device_array((3, 1 << dr.domain_log, 8), dtype=np.uint32)
        t0 = time.perf_counter()
        dr.evaluate(d_w, out=out)
        cuda.synchronize()
        first_s = time.perf_counter() - t0
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            dr.evaluate(d_w, out=out)
            cuda.synchronize()
            times.append(time.perf_counter() - t0)
        rows = dr.num_constraints_total
        got = out.copy_to_host()
    equal = all(np.array_equal(got[j, :rows], cpu[j]) for j in range(3)) and not got[:, rows:].any()
    return {
        "case": name, "rows": rc.num_constraints, "vars": rc.num_vars, "nnz": nnz,
        "device_bytes": dr.nbytes, "upload_s": upload_s, "first_s": first_s,
        "device_best_s": min(times), "device_median_s": statistics.median(times),
        "device_entries_per_s": sum(nnz.values()) / max(min(times), 1e-12),
        "cpu_s": cpu_s, "cpu_threads": cpu_threads(), "equal": equal,
    }


def porep_r1cs(size: str, cache_dir: Path) -> R1CS:
    """A real PoRep partition's R1CS (its PCE recorded under ``cache_dir`` on the first run)."""
    from porep.circuit.partition import partition_r1cs
    from porep.prooftypes import proof_type

    return partition_r1cs(proof_type(f"StackedDrg{size}V1_1"), cache_dir)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--porep", default="", help="comma-separated sector sizes of real partitions, e.g. 2KiB")
    ap.add_argument("--rows", default="", help="comma-separated row counts of synthetic 32GiB-like systems")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/psagent-spmv-bench"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--rng-seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    try:
        sizes = [s for s in a.porep.split(",") if s]
        rows = [int(x) for x in a.rows.split(",") if x]
    except ValueError:
        print("spmv_bench: --rows takes comma-separated integers", file=sys.stderr)
        return 2
    if not sizes and not rows or any(r < 1 for r in rows) or a.reps < 1:
        print("spmv_bench: give --porep and/or --rows (positive), --reps >= 1", file=sys.stderr)
        return 2
    results: list[dict[str, object]] = []
    cases = [("porep", x) for x in sizes] + [("synthetic", str(n)) for n in rows]
    for kind, arg in cases:
        name = f"{kind}-{arg}"
        try:  # one failing case (an import missing on the GPU host, memory) does not hide the others
            t0 = time.perf_counter()
            r1cs = porep_r1cs(arg, a.cache_dir) if kind == "porep" else synthetic_r1cs(int(arg), a.rng_seed)
            build = time.perf_counter() - t0
            res = bench_case(name, r1cs, random_witness(r1cs.num_vars, a.rng_seed), a.reps, a.device)
            res["r1cs_s"] = build
            del r1cs
        except Exception as exc:  # noqa: BLE001 - reported in the case's line, counted as a failure
            res = {"case": name, "error": f"{type(exc).__name__}: {exc}", "equal": False}
        results.append(res)
        print(json.dumps(res), flush=True)
    if a.json:
        a.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["equal"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
