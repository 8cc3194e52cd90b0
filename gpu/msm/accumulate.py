"""Bucket accumulation: sum the sorted points of each bucket into XYZZ |buckets| without atomics.

Stage A gives each thread a fixed chunk of K sorted entries (so a huge bucket cannot serialise on one
thread). A run of one bucket that lies wholly inside the chunk is written to its bucket; a run cut by the
chunk's start goes to head[t], one cut by its end to tail[t]. Stage B completes the buckets that span
chunks: tail (or head, if the bucket starts exactly at a chunk start) of the first chunk, plus the heads of
the following ones.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from gpu.cudashim import kernel
from gpu.curves.generic import (
    affine_neg,
    load_affine,
    load_xyzz,
    store_xyzz,
    xyzz_add_affine,
    xyzz_add_cold,
    xyzz_identity_like,
)

U32 = np.uint32
MASK = np.uint32(0x7FFFFFFF)


@kernel
def accumulate_chunks(bases, sorted_idx, sorted_bkt, bstart, m, k, buckets, head, tail):  # type: ignore[no-untyped-def]
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
def fixup_buckets(bstart, nb, k, buckets, head, tail):  # type: ignore[no-untyped-def]
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
    acc = load_xyzz(head, t0) if s == t0 * k else load_xyzz(tail, t0)
    for t in range(t0 + 1, t1 + 1):
        acc = xyzz_add_cold(acc, load_xyzz(head, t))
    store_xyzz(buckets, g, acc)
