# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Bucket accumulation: sum the sorted points of each bucket into XYZZ |buckets| without atomics.

Stage A gives each thread a fixed chunk of K sorted entries (so a huge bucket cannot serialise on one
thread). A run of one bucket that lies wholly inside the chunk is written to its bucket; a run cut by the
chunk's start goes to head[t], one cut by its end to tail[t]. The heads of the chunks t0+1..t1 that a
bucket spans are contiguous: reduce_heads folds them pairwise in log2(span) launches (a bucket holding half
of all points must not become one thread's serial loop), and fixup adds the first chunk's part.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from gpu.arith.cudashim import kernel
from gpu.curves.generic import (
    affine_neg,
    load_affine,
    load_xyzz,
    store_xyzz,
    xyzz_add,
    xyzz_add_affine,
    xyzz_identity_like,
)

U32 = np.uint32
MASK = np.uint32(0x7FFFFFFF)


@kernel(max_registers=168)
def accumulate_chunks(bases, sorted_idx, sorted_bkt, bstart, m, k, buckets, head, tail):
    t = cuda.grid(1)
    lo = t * k
    if lo >= m:
        return
    hi = min(lo + k, m)
    acc = xyzz_identity_like(bases)
    cur = sorted_bkt[lo]
    start = lo
    for e in range(lo, hi + 1):
        g = sorted_bkt[e] if e < hi else U32(0xFFFFFFFF)
        if e == hi or g != cur:
            # flush the run [start, e) of bucket cur
            if bstart[cur] >= lo and bstart[cur + 1] <= hi:
                store_xyzz(buckets, cur, acc)
            elif start == lo:
                store_xyzz(head, t, acc)
            else:
                store_xyzz(tail, t, acc)
            if e == hi:
                break
            acc = xyzz_identity_like(bases)
            cur = g
            start = e
        v = sorted_idx[e]
        q = load_affine(bases, v & MASK)
        if v >> U32(31):
            q = affine_neg(q)
        acc = xyzz_add_affine(acc, q)


@kernel
def reduce_heads(sorted_bkt, bstart, m, k, nchunks, stride, head):
    """One tree level over the heads of each bucket's chunks t0+1..t1: head[t] += head[t + stride] for
    t - (t0+1) a multiple of 2*stride."""
    t = cuda.grid(1)
    if t >= nchunks or t * k >= m:
        return
    g = sorted_bkt[t * k]
    s = bstart[g]
    e = bstart[g + 1]
    t0 = s // k
    t1 = (e - 1) // k
    j = t - (t0 + 1)
    if j < 0 or j % (2 * stride) != 0 or t + stride > t1:
        return
    store_xyzz(head, t, xyzz_add(load_xyzz(head, t), load_xyzz(head, t + stride)))


@kernel
def fixup_buckets(bstart, nb, k, buckets, head, tail):
    """Bucket g spanning chunks t0 < t1: its first part (tail[t0], or head[t0] if it starts the chunk) plus
    head[t0 + 1], which reduce_heads made the sum of the heads t0+1..t1."""
    g = cuda.grid(1)
    if g >= nb:
        return
    s = bstart[g]
    e = bstart[g + 1]
    if e == s:
        return
    t0 = s // k
    t1 = (e - 1) // k
    if t0 == t1:
        return
    first = load_xyzz(head, t0) if s == t0 * k else load_xyzz(tail, t0)
    store_xyzz(buckets, g, xyzz_add(first, load_xyzz(head, t0 + 1)))
