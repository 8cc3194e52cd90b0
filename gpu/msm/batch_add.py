# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Sum of the bases whose scalar is one (the Groth16 split's boolean part): no windows, one mixed addition
per such point. Each thread sums one chunk of |bases| for one circuit into a partial sum; integrate.tree_sum
finishes each circuit's partials.

Several circuits over the same bases go in one launch: thread t takes chunk t // K of circuit t % K, so the K
threads reading one chunk are neighbours in a block and the chunk comes from DRAM about once (then L1/L2).

max_registers=168: the madd needs ~198 registers, which allows 2 blocks of 128 threads per SM; at 168
ptxas spills 44 bytes outside the hot path and 3 blocks fit (+50 % warps)."""

from __future__ import annotations

from numba import cuda

from gpu.arith.cudashim import kernel
from gpu.curves.generic import load_affine, store_xyzz, xyzz_add_affine, xyzz_identity_like


@kernel(max_registers=168)
def sum_ones(bases, cls, per_thread, partial):
    """cls: (K, n) scalar classes of K circuits; partial: K * T rows, circuit k's T chunk sums from row k * T
    (chunk j covers bases [j * per_thread, (j + 1) * per_thread))."""
    t = cuda.grid(1)
    if t >= partial.shape[0]:
        return
    ncirc = cls.shape[0]
    n = cls.shape[1]
    chunk = t // ncirc
    k = t - chunk * ncirc
    lo = chunk * per_thread
    hi = min(lo + per_thread, n)
    acc = xyzz_identity_like(bases)
    j = lo
    while j < hi:
        # skip to this thread's next one, so that the warp's lanes meet at the addition
        while j < hi and cls[k, j] != 1:
            j += 1
        if j < hi:
            acc = xyzz_add_affine(acc, load_affine(bases, j))
            j += 1
    store_xyzz(partial, k * (partial.shape[0] // ncirc) + chunk, acc)
