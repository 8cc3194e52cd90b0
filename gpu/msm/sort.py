# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Counting sort of (window, bucket) keys on the GPU: take |scalars| and return, for every non-zero digit of
every class-2 scalar, the point index (sign in bit 31) grouped by bucket, plus each bucket's start offset.
Several circuits (scalar vectors over the same bases) share one sort: bucket b of window w of circuit slot s
is key (s * W + w) * 2^(c-1) + b, the slot's first key passed to histogram/scatter as |base|.

Three passes instead of a comparison sort: a histogram of bucket sizes (atomics spread over W * 2^(c-1)
counters), an exclusive scan of the counts, and a scatter that claims slots with an atomic cursor per bucket.
The order inside a bucket is whatever the atomics give; the sum does not depend on it.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, uint32

from gpu.arith.cudashim import kernel
from gpu.msm.digits import scalar_class, signed_digit, window_raw

SCAN_THREADS = 256
SCAN_ITEMS = 8  # elements per thread in one scan tile
assert SCAN_THREADS >= 32 and SCAN_THREADS & (SCAN_THREADS - 1) == 0

U32 = np.uint32
U64 = np.uint64
SIGN = np.uint32(1 << 31)


@kernel
def classify(scalars, cls, counters):
    """cls[i] = class of scalar i; counters[class] += 1 (per-block counts in shared memory first: one global
    atomic per block and class; 2^27 global atomics on three addresses took 59 ms on the H200)."""
    sh = cuda.shared.array(3, uint32)
    t = cuda.threadIdx.x
    if t < 3:
        sh[t] = U32(0)
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < scalars.shape[0]:
        k = scalar_class(scalars, i)
        cls[i] = k
        cuda.atomic.add(sh, k, U32(1))
    cuda.syncthreads()
    if t < 3 and sh[t] != U32(0):
        cuda.atomic.add(counters, t, sh[t])


@kernel
def histogram(scalars, cls, c, nwin, nbuckets, base, counts):
    """counts[base + w * nbuckets + |d| - 1] += 1 for every non-zero digit d of window w (base: the first
    bucket of this circuit, when several circuits share one sort)."""
    i = cuda.grid(1)
    if i < scalars.shape[0] and cls[i] == 2:
        carry = U64(0)
        for w in range(nwin):
            raw = window_raw(scalars, i, w * c, c)
            a, neg, carry = signed_digit(raw, carry, c)
            if a != U64(0):
                cuda.atomic.add(counts, base + w * nbuckets + np.int64(a) - 1, U32(1))


@kernel
def scatter(scalars, cls, c, nwin, nbuckets, base, cursor, sorted_idx, sorted_bkt):
    """Place (i | sign << 31, bucket) at a slot claimed from the bucket's cursor (buckets offset by base as
    in histogram; i is the base point's index, which every circuit shares)."""
    i = cuda.grid(1)
    if i < scalars.shape[0] and cls[i] == 2:
        carry = U64(0)
        for w in range(nwin):
            raw = window_raw(scalars, i, w * c, c)
            a, neg, carry = signed_digit(raw, carry, c)
            if a != U64(0):
                g = base + w * nbuckets + np.int64(a) - 1
                pos = cuda.atomic.add(cursor, g, U32(1))
                sorted_idx[pos] = U32(i) | (SIGN if neg else U32(0))
                sorted_bkt[pos] = U32(g)


@kernel
def _scan_tiles(inp, out, tile_sums, n):
    # Exclusive scan of one tile of SCAN_THREADS * SCAN_ITEMS elements per block; tile totals to tile_sums.
    sh = cuda.shared.array(SCAN_THREADS, uint32)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * SCAN_THREADS * SCAN_ITEMS + t * SCAN_ITEMS
    s = U32(0)
    for k in range(SCAN_ITEMS):
        if base + k < n:
            s += inp[base + k]
    sh[t] = s
    cuda.syncthreads()
    off = 1
    while off < SCAN_THREADS:  # Hillis-Steele inclusive scan of the per-thread sums
        v = U32(0)
        if t >= off:
            v = sh[t - off]
        cuda.syncthreads()
        sh[t] += v
        cuda.syncthreads()
        off *= 2
    run = sh[t] - s
    for k in range(SCAN_ITEMS):
        if base + k < n:
            x = inp[base + k]
            out[base + k] = run
            run += x
    if t == SCAN_THREADS - 1:
        tile_sums[cuda.blockIdx.x] = sh[t]


@kernel
def _add_tile_offsets(out, tile_offsets, n):
    i = cuda.grid(1)
    if i < n:
        out[i] += tile_offsets[i // (SCAN_THREADS * SCAN_ITEMS)]


def exclusive_scan(d_in, d_out, n: int) -> None:
    """d_out[0:n] = exclusive prefix sums of d_in[0:n] (uint32), recursively over tiles."""
    tile = SCAN_THREADS * SCAN_ITEMS
    ntiles = (n + tile - 1) // tile
    sums = cuda.device_array(max(ntiles, 1), dtype=np.uint32)
    _scan_tiles[max(ntiles, 1), SCAN_THREADS](d_in, d_out, sums, n)
    if ntiles > 1:
        offs = cuda.device_array(ntiles, dtype=np.uint32)
        exclusive_scan(sums, offs, ntiles)
        _add_tile_offsets[(n + 255) // 256, 256](d_out, offs, n)


@kernel
def fill_u32(arr, value):
    i = cuda.grid(1)
    if i < arr.shape[0]:
        arr[i] = value
