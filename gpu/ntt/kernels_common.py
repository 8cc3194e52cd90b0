"""Device-level helpers shared by the CPU (@njit) and CUDA NTT kernels: twiddle lookup, index bit reversal,
the two butterflies and the element-wise scale. All take Fr tuples (Montgomery) from gpu.arith.fields."""

from __future__ import annotations

import numpy as np

from gpu.arith.cudashim import jitable
from gpu.arith.fields import fr_add, fr_load, fr_mul, fr_neg, fr_one, fr_sub

MODE_CONST = 1
MODE_TABLE = 2


@jitable
def twiddle(tw, e, half, inverse):
    """w^e (forward) or w^-e (inverse) from the table w^0..w^(half-1): w^-e = -w^(half - e) for e > 0."""
    if not inverse:
        return fr_load(tw, e)
    if e == 0:
        return fr_one()
    return fr_neg(fr_load(tw, half - e))


@jitable
def brev(i, logn):
    """The low logn bits of i reversed (portable: the simulator has no brev intrinsic)."""
    out = 0
    for _ in range(logn):
        out = (out << 1) | (i & 1)
        i >>= 1
    return out


@jitable
def dif_butterfly(u, v, w):
    """Gentleman-Sande: (u + v, (u - v) w)."""
    return fr_add(u, v), fr_mul(fr_sub(u, v), w)


@jitable
def dit_butterfly(u, v, w):
    """Cooley-Tukey: (u + v w, u - v w)."""
    t = fr_mul(v, w)
    return fr_add(u, t), fr_sub(u, t)


@jitable
def apply_scale(x, idx, mode, const, lo, hi, lbits):
    """x * f(idx) for the scale of gpu.ntt.tables (mode 1: const[0];
    mode 2: lo[idx & mask] * hi[idx >> L])."""
    if mode == MODE_CONST:
        return fr_mul(x, fr_load(const, 0))
    if mode == MODE_TABLE:
        mask = (1 << lbits) - 1
        return fr_mul(fr_mul(x, fr_load(lo, idx & mask)), fr_load(hi, idx >> lbits))
    return x


_ = np  # numpy is needed by the generated field code's globals when numba compiles these
