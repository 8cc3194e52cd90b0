"""Throughput kernels for `psagent bench field` and `bench curve` (and the device suite).

Each thread loads its operands once, then chains ``iters`` dependent operations in registers, so the timing
is arithmetic, not memory: Fr / Fq Montgomery multiplication, and G1 XYZZ += affine mixed addition
(the MSM's inner operation) over a small table of points, as in gpu.md §6.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from gpu.arith.cudashim import kernel
from gpu.arith.fields import fq_load, fq_mul, fq_store, fr_load, fr_mul, fr_store
from gpu.curves.generic import load_affine, store_xyzz, xyzz_add_affine, xyzz_from_affine


@kernel
def fr_mul_chain(a, b, out, iters):
    i = cuda.grid(1)  # type: ignore[call-arg,var-annotated]
    if i < a.shape[0]:
        x = fr_load(a, i)
        y = fr_load(b, i)
        for _ in range(iters):
            x = fr_mul(x, y)
        fr_store(out, i, x)


@kernel
def fq_mul_chain(a, b, out, iters):
    i = cuda.grid(1)  # type: ignore[call-arg,var-annotated]
    if i < a.shape[0]:
        x = fq_load(a, i)
        y = fq_load(b, i)
        for _ in range(iters):
            x = fq_mul(x, y)
        fq_store(out, i, x)


@kernel(max_registers=168)
def madd_chain(start, table, out, iters):
    """out[i] = start[i] + sum_k table[(7i + 131k) mod len(table)] (XYZZ += affine)."""
    i = cuda.grid(1)  # type: ignore[call-arg,var-annotated]
    if i < start.shape[0]:
        acc = xyzz_from_affine(load_affine(start, i))
        npts = table.shape[0]
        for k in range(iters):
            acc = xyzz_add_affine(acc, load_affine(table, (i * 7 + k * 131) % npts))
        store_xyzz(out, i, acc)


def madd_chain_reference(start: np.ndarray, table: np.ndarray, iters: int, rows: list[int]) -> np.ndarray:
    """The same sums on the CPU (for the given rows), affine."""
    from gpu.curves import G1

    pts = []
    for i in rows:
        idx = [(i * 7 + k * 131) % table.shape[0] for k in range(iters)]
        sel = np.concatenate([start[i : i + 1], table[idx]])
        ones = np.zeros((sel.shape[0], 8), dtype=np.uint32)
        ones[:, 0] = 1
        from gpu.msm import msm_g1

        pts.append(msm_g1(sel, ones, backend="cpu"))
    _ = G1
    return np.stack(pts)
