"""Bucket reduction: per window, sum_j (j + 1) * bucket_j, in parallel segments, then a tree over segments.

A thread owns L consecutive buckets [sL, (s+1)L) of one window and runs the two running sums from the top
(run += bucket; acc += run), giving acc = sum (j - sL + 1) * b_j and run = sum b_j; its share is then
acc + (sL) * run (a short double-and-add). tree_sum adds the S segment results of every window pairwise in
log2(S) launches. Empty buckets (count 0, never written) are skipped via the bucket offsets.
"""

from __future__ import annotations

from numba import cuda

from gpu.cudashim import kernel
from gpu.curves.generic import load_xyzz, store_xyzz, xyzz_add_cold, xyzz_identity_like, xyzz_mul_small_cold


@kernel
def integrate_segments(buckets, bstart, nbuckets, seg_len, nseg, nwin, out):  # type: ignore[no-untyped-def]
    t = cuda.grid(1)
    if t >= nwin * nseg:
        return
    w = t // nseg
    s = t - w * nseg
    run = xyzz_identity_like(buckets)
    acc = xyzz_identity_like(buckets)
    base = w * nbuckets
    for jj in range(seg_len):
        j = (s + 1) * seg_len - 1 - jj
        g = base + j
        if bstart[g + 1] != bstart[g]:
            run = xyzz_add_cold(run, load_xyzz(buckets, g))
        acc = xyzz_add_cold(acc, run)
    if s > 0:
        acc = xyzz_add_cold(acc, xyzz_mul_small_cold(run, s * seg_len))
    store_xyzz(out, t, acc)


@kernel
def tree_step(pts, nseg, half, nwin):  # type: ignore[no-untyped-def]
    """pts[w*nseg + i] += pts[w*nseg + i + half] for i < half, every window w."""
    t = cuda.grid(1)
    if t >= nwin * half:
        return
    w = t // half
    i = t - w * half
    a = w * nseg + i
    store_xyzz(pts, a, xyzz_add_cold(load_xyzz(pts, a), load_xyzz(pts, a + half)))


def tree_sum(d_pts, nseg: int, nwin: int, threads: int = 128) -> None:  # type: ignore[no-untyped-def]
    """Reduce each window's nseg (a power of two) points into its first slot."""
    half = nseg // 2
    while half >= 1:
        total = nwin * half
        tree_step[(total + threads - 1) // threads, threads](d_pts, nseg, half, nwin)
        half //= 2
