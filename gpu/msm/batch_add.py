# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Sum of the bases whose scalar is one (the Groth16 split's boolean part): no windows, one mixed addition
per such point. Thread t sums its range of |bases| into partial[t]; integrate.tree_sum finishes.

max_registers=168: the madd needs ~198 registers, which allows 2 blocks of 128 threads per SM; at 168
ptxas spills 44 bytes outside the hot path and 3 blocks fit (+50 % warps)."""

from __future__ import annotations

from numba import cuda

from gpu.cudashim import kernel
from gpu.curves.generic import load_affine, store_xyzz, xyzz_add_affine, xyzz_identity_like


@kernel(max_registers=168)
def sum_ones(bases, cls, per_thread, partial):
    t = cuda.grid(1)
    if t >= partial.shape[0]:
        return
    n = bases.shape[0]
    lo = t * per_thread
    hi = min(lo + per_thread, n)
    acc = xyzz_identity_like(bases)
    j = lo
    while j < hi:
        # skip to this thread's next one, so that the warp's lanes meet at the addition
        while j < hi and cls[j] != 1:
            j += 1
        if j < hi:
            acc = xyzz_add_affine(acc, load_affine(bases, j))
            j += 1
    store_xyzz(partial, t, acc)
