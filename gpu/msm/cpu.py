# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""CPU MSM (Numba, threads): Pippenger with signed windows, the Groth16 split, XYZZ buckets.

Takes affine |bases| ((n, 2, 12) G1 or (n, 2, 2, 12) G2, Montgomery) and canonical |scalars| ((n, 8)) and
returns the sum as XYZZ. Windows run in parallel (one thread each); the points with scalar one are summed in
parallel chunks; the window sums are combined by Horner's rule (c doublings per window).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpu.arith.cpupool import chunked, cpu_threads, parallel_for, parallel_map
from gpu.arith.cudashim import cache_enabled
from gpu.curves.generic import (
    affine_neg,
    load_affine,
    load_xyzz,
    store_xyzz,
    xyzz_add,
    xyzz_add_affine,
    xyzz_dbl,
    xyzz_identity_like,
    xyzz_is_identity,
)
from gpu.msm.digits import _digits_n, num_windows


@njit(nogil=True, cache=cache_enabled())
def _window_sum(w, bases, digits, buckets, out):
    # buckets: (B, 4, ...) scratch; bucket j holds the points whose digit is ±(j + 1).
    nb = buckets.shape[0]
    for j in range(nb):
        store_xyzz(buckets, j, xyzz_identity_like(bases))
    for i in range(bases.shape[0]):
        d = digits[i, w]
        if d == 0:
            continue
        q = load_affine(bases, i)
        if d < 0:
            q = affine_neg(q)
            d = -d
        store_xyzz(buckets, d - 1, xyzz_add_affine(load_xyzz(buckets, d - 1), q))
    # sum_j (j + 1) * bucket_j with two running sums, from the top bucket down
    run = xyzz_identity_like(bases)
    acc = xyzz_identity_like(bases)
    for j in range(nb - 1, -1, -1):
        b = load_xyzz(buckets, j)
        if not xyzz_is_identity(b):
            run = xyzz_add(run, b)
        acc = xyzz_add(acc, run)
    store_xyzz(out, w, acc)


@njit(nogil=True, cache=cache_enabled())
def _sum_ones_n(lo, hi, bases, cls, partial, slot):
    acc = xyzz_identity_like(bases)
    for i in range(lo, hi):
        if cls[i] == 1:
            acc = xyzz_add_affine(acc, load_affine(bases, i))
    store_xyzz(partial, slot, acc)


@njit(nogil=True, cache=cache_enabled())
def combine_windows(wins, c, extra, out):
    """out[0] = sum_w 2^(c*w) * wins[w] + sum(extra) (Horner: c doublings per window, top down)."""
    nwin = wins.shape[0]
    acc = load_xyzz(wins, nwin - 1)
    for w in range(nwin - 2, -1, -1):
        for _ in range(c):
            acc = xyzz_dbl(acc)
        acc = xyzz_add(acc, load_xyzz(wins, w))
    for k in range(extra.shape[0]):
        acc = xyzz_add(acc, load_xyzz(extra, k))
    store_xyzz(out, 0, acc)


def msm_cpu(bases: np.ndarray, scalars: np.ndarray, c: int) -> np.ndarray:
    """Sum of scalars[i] * bases[i] as a (1, 4, ...) XYZZ array (window size c)."""
    n = bases.shape[0]
    coord = bases.shape[2:]
    nwin = num_windows(c)
    digits = np.empty((n, nwin), dtype=np.int32)
    cls = np.empty(n, dtype=np.uint8)
    parallel_for(_digits_n, n, scalars, c, nwin, digits, cls, min_chunk=256)
    wins = np.empty((nwin, 4) + coord, dtype=np.uint32)
    nbuckets = 1 << (c - 1)
    # one scratch bucket array per concurrently running window
    nscratch = min(nwin, cpu_threads())
    scratch = [np.empty((nbuckets, 4) + coord, dtype=np.uint32) for _ in range(nscratch)]

    def run(group: list[int]) -> None:
        buf = scratch[group[0] % nscratch]
        for w in group:
            _window_sum(w, bases, digits, buf, wins)

    parallel_map(run, [list(range(s, nwin, nscratch)) for s in range(nscratch)])
    parts = max(1, min(cpu_threads() * 2, n // 1024))
    ones = np.empty((parts, 4) + coord, dtype=np.uint32)
    parallel_map(
        lambda lh: _sum_ones_n(lh[1][0], lh[1][1], bases, cls, ones, lh[0]),
        list(enumerate(chunked(n, parts))),
    )
    out = np.empty((1, 4) + coord, dtype=np.uint32)
    combine_windows(wins, c, ones, out)
    return out
