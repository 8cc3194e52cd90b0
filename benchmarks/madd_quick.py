"""Quick G1 madd throughput check (XYZZ += affine) on random field elements, verified against Python integers:
the shortest device run that measures the madd kernel (no CPU compilation, gpu.md §6's method).
Usage: python benchmarks/madd_quick.py [log2_threads] [iters]"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.config import engine_options  # noqa: E402
from gpu.options import configure  # noqa: E402

configure(engine_options())  # PSAGENT_PROVER__PTX, PSAGENT_NUMBA_CACHE, ...: before anything compiles

from numba import cuda  # noqa: E402

from gpu.arith.fields import P_MODULUS as P  # noqa: E402
from gpu.arith.fields import fq_random  # noqa: E402
from gpu.bench import chains as bk  # noqa: E402

R = 1 << 384


def mm(a: int, b: int) -> int:
    return a * b * pow(R, -1, P) % P


def ref_madd(X1: int, Y1: int, ZZ1: int, ZZZ1: int, x2: int, y2: int) -> tuple[int, int, int, int]:
    U2, S2 = mm(x2, ZZ1), mm(y2, ZZZ1)
    Pp, Rr = (U2 - X1) % P, (S2 - Y1) % P
    PP = mm(Pp, Pp)
    PPP, Q = mm(Pp, PP), mm(X1, PP)
    X3 = (mm(Rr, Rr) - PPP - 2 * Q) % P
    Y3 = (mm(Rr, (Q - X3) % P) - mm(Y1, PPP)) % P
    return X3, Y3, mm(ZZ1, PP), mm(ZZZ1, PPP)


def val(a: np.ndarray) -> int:
    return int.from_bytes(a.astype("<u4").tobytes(), "little")


def main() -> None:
    lg = int(sys.argv[1]) if len(sys.argv) > 1 else 19
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    n, npts = 1 << lg, 1024
    rng = np.random.default_rng()
    start = fq_random(2 * n, rng).reshape(n, 2, 12)
    table = fq_random(2 * npts, rng).reshape(npts, 2, 12)
    ds, dt = cuda.to_device(start), cuda.to_device(table)
    do = cuda.device_array((n, 4, 12), dtype=np.uint32)
    t0 = time.perf_counter()
    bk.madd_chain[(n + 127) // 128, 128](ds, dt, do, iters)
    cuda.synchronize()
    print(f"first call (compile) {time.perf_counter() - t0:.1f} s", flush=True)
    ts = []
    for _ in range(7):
        a, b = cuda.event(), cuda.event()
        a.record()
        bk.madd_chain[(n + 127) // 128, 128](ds, dt, do, iters)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    out = do.copy_to_host()
    one = R % P
    ok = True
    for i in range(2):
        st = (val(start[i, 0]), val(start[i, 1]), one, one)
        for k in range(iters):
            j = (i * 7 + k * 131) % npts
            st = ref_madd(*st, val(table[j, 0]), val(table[j, 1]))
        ok &= tuple(val(out[i, c]) for c in range(4)) == st
    ms = statistics.median(ts)
    ov = next(iter(bk.madd_chain.overloads.values()), None)
    regs = getattr(ov, "regs_per_thread", "?")
    rate = n * iters / (ms * 1e-3) / 1e9
    runs = [round(t, 3) for t in ts]
    print(f"madd: {rate:.3f} G/s median {ms:.3f} ms runs {runs} verified={ok} regs={regs}", flush=True)


if __name__ == "__main__":
    main()
