# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Bucket reduction: per window, sum_j (j + 1) * bucket_j, in parallel segments, then a tree over segments.

A thread owns L consecutive buckets [sL, (s+1)L) of one window and runs the two running sums from the top
(run += bucket; acc += run), giving acc = sum (j - sL + 1) * b_j and run = sum b_j; its share is then
acc + (sL) * run (a short double-and-add, doubling as p + p). tree_sum adds the S segment results of
every window pairwise in log2(S) launches. Empty buckets (count 0, never written) are skipped via the
bucket offsets.
"""

from __future__ import annotations

from numba import cuda

from gpu.arith.cudashim import kernel
from gpu.curves.generic import load_xyzz, store_xyzz, xyzz_add, xyzz_identity_like


@kernel
def integrate_segments(buckets, bstart, nbuckets, seg_len, nseg, nwin, out):
    t = cuda.grid(1)
    if t >= nwin * nseg:
        return
    w = t // nseg
    s = t - w * nseg
    base = w * nbuckets
    ident = xyzz_identity_like(buckets)
    run = ident
    acc = ident
    tmp = ident
    k = s * seg_len  # acc += k * run at the end (double-and-add on tmp)
    nbits = 0
    while (k >> nbits) > 0:
        nbits += 1
    n_a = 2 * seg_len
    n_b = n_a + 2 * nbits
    # One addition per step and a single call site: the formula is inlined once (PTX 4x smaller than
    # writing the running sums and the double-and-add as separate loops).
    for step in range(n_b + 1):
        if step < n_a:
            if step & 1 == 0:
                g = base + (s + 1) * seg_len - 1 - (step >> 1)
                x = run
                y = load_xyzz(buckets, g) if bstart[g + 1] != bstart[g] else ident
            else:
                x = acc
                y = run
        elif step < n_b:
            q = step - n_a
            x = tmp
            if q & 1 == 0:
                y = tmp
            else:
                y = run if (k >> (nbits - 1 - (q >> 1))) & 1 else ident
        else:
            x = acc
            y = tmp
        z = xyzz_add(x, y)
        if step < n_a:
            if step & 1 == 0:
                run = z
            else:
                acc = z
        elif step < n_b:
            tmp = z
        else:
            acc = z
    store_xyzz(out, t, acc)


@kernel
def tree_step(pts, nseg, half, nwin):
    """pts[w*nseg + i] += pts[w*nseg + i + half] for i < half, every window w."""
    t = cuda.grid(1)
    if t >= nwin * half:
        return
    w = t // half
    i = t - w * half
    a = w * nseg + i
    store_xyzz(pts, a, xyzz_add(load_xyzz(pts, a), load_xyzz(pts, a + half)))


def tree_sum(d_pts, nseg: int, nwin: int, threads: int = 128) -> None:
    """Reduce each window's nseg (a power of two) points into its first slot."""
    half = nseg // 2
    while half >= 1:
        total = nwin * half
        tree_step[(total + threads - 1) // threads, threads](d_pts, nseg, half, nwin)
        half //= 2


@kernel
def gather_rows(src, stride, dst):
    """dst[w, :] = src[w * stride, :] (2-D views)."""
    t = cuda.grid(1)
    width = dst.shape[1]
    if t < dst.shape[0] * width:
        w = t // width
        j = t - w * width
        dst[w, j] = src[w * stride, j]
