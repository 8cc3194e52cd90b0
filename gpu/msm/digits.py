# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Break canonical Fr |scalars| ((n, 8) uint32) into signed |c|-bit window digits, and classify them.

Window w holds bits [w*c, (w+1)*c) plus the carry from window w-1. A digit above 2^(c-1) becomes d - 2^c and
carries 1 into the next window (Booth-like recoding), so every digit lies in [-(2^(c-1) - 1), 2^(c-1)] and a
window needs only 2^(c-1) buckets; the sign is applied to the point when it is added. With 255-bit scalars,
ceil(255 / c) windows suffice (the top one has at most c - 1 bits, so its digit plus carry never exceeds
2^(c-1)), except when c divides 255: then one more window takes the final carry. (A window holding only that
carry would put half of all points into a single bucket.)

Groth16 split (SupraSeal): class 0 = zero scalar (dropped), 1 = scalar one (summed directly, no windows),
2 = everything else (bucket method).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from gpu.arith.cudashim import cache_enabled, jitable

SCALAR_BITS = 255
MAX_WINDOW_BITS = 24
U32 = np.uint32
U64 = np.uint64


def num_windows(c: int) -> int:
    """Windows of c bits needed for 255-bit scalars with signed digits."""
    return -(-SCALAR_BITS // c) + (1 if SCALAR_BITS % c == 0 else 0)


@functools.lru_cache(maxsize=8192)
def window_bits(n: int, backend: str = "cuda") -> int:
    """Window size for n (non-trivial) scalars, minimising the cost model of gpu.md §5: n*W mixed additions
    for the accumulation plus about 2*W*2^(c-1) full additions (weighted x1.5 on the GPU, where the
    reduction is less parallel) for the bucket reduction. Gives 16 for 2^20 and 20 for 2^24."""
    if n <= 1:
        return 2
    weight = 3.0 if backend == "cuda" else 2.0
    top = MAX_WINDOW_BITS if backend == "cuda" else 20
    best = min(range(2, top + 1), key=lambda c: n * num_windows(c) + weight * num_windows(c) * (1 << (c - 1)))
    return best


@jitable
def scalar_class(scalars, i):
    """0 if scalars[i] == 0, 1 if it is one, else 2."""
    hi = scalars[i, 1] | scalars[i, 2] | scalars[i, 3] | scalars[i, 4] | scalars[i, 5] | scalars[i, 6]
    hi = hi | scalars[i, 7]
    lo = scalars[i, 0]
    if hi == U32(0):
        if lo == U32(0):
            return 0
        if lo == U32(1):
            return 1
    return 2


@jitable
def window_raw(scalars, i, lo, c):
    """Bits [lo, lo + c) of scalar i (c <= 24, so at most two limbs)."""
    j = lo >> 5
    off = lo & 31
    v = U64(scalars[i, j])
    if j < 7:
        v = v | (U64(scalars[i, j + 1]) << U64(32))
    return (v >> U64(off)) & ((U64(1) << U64(c)) - U64(1))


@jitable
def signed_digit(raw, carry, c):
    """(|digit|, negative, carry out) for a window's raw bits plus the incoming carry."""
    d = raw + carry
    half = U64(1) << U64(c - 1)
    if d > half:
        return (U64(U64(1) << U64(c)) - d, 1, U64(1))
    return (d, 0, U64(0))


@njit(nogil=True, cache=cache_enabled())
def _digits_n(lo, hi, scalars, c, nwin, digits, cls):
    # digits[i, w] = signed digit (int32) for class-2 scalars, 0 otherwise; cls[i] = class.
    for i in range(lo, hi):
        k = scalar_class(scalars, i)
        cls[i] = k
        carry = U64(0)
        for w in range(nwin):
            if k != 2:
                digits[i, w] = 0
                continue
            raw = window_raw(scalars, i, w * c, c)
            a, neg, carry = signed_digit(raw, carry, c)
            digits[i, w] = -np.int32(a) if neg else np.int32(a)
