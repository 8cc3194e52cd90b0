# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Fq2 = Fq[u]/(u^2 + 1), the field of G2 coordinates.

An element is a pair (c0, c1) of Fq 12-limb tuples meaning c0 + c1*u; arrays hold it as (..., 2, 12) with c0
first (the zcash byte encoding puts c1 first; gpu.curves.serialisation handles that). Multiplication is
Karatsuba (3 Fq multiplications), squaring uses (a0 + a1)(a0 - a1) and 2*a0*a1 (2 multiplications).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numba import njit

from gpu.arith._generated.fq import (
    fq_add,
    fq_dbl,
    fq_decode,
    fq_encode,
    fq_eq,
    fq_inv,
    fq_is_zero,
    fq_load3,
    fq_mul,
    fq_neg,
    fq_one,
    fq_sqr,
    fq_store3,
    fq_sub,
    fq_zero,
)
from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled, jitable, jitable_noinline


@jitable
def fq2_zero():
    return (fq_zero(), fq_zero())


@jitable
def fq2_one():
    return (fq_one(), fq_zero())


@jitable
def fq2_is_zero(a):
    return fq_is_zero(a[0]) and fq_is_zero(a[1])


@jitable
def fq2_eq(a, b):
    return fq_eq(a[0], b[0]) and fq_eq(a[1], b[1])


@jitable
def fq2_add(a, b):
    return (fq_add(a[0], b[0]), fq_add(a[1], b[1]))


@jitable
def fq2_dbl(a):
    return (fq_dbl(a[0]), fq_dbl(a[1]))


@jitable
def fq2_sub(a, b):
    return (fq_sub(a[0], b[0]), fq_sub(a[1], b[1]))


@jitable
def fq2_neg(a):
    return (fq_neg(a[0]), fq_neg(a[1]))


@jitable
def fq2_conj(a):
    """c0 - c1*u (the Frobenius map on Fq2)."""
    return (a[0], fq_neg(a[1]))


@jitable_noinline
def fq2_mul(a, b):
    """Karatsuba: v0 = a0*b0, v1 = a1*b1, c0 = v0 - v1, c1 = (a0 + a1)(b0 + b1) - v0 - v1."""
    v0 = fq_mul(a[0], b[0])
    v1 = fq_mul(a[1], b[1])
    s = fq_mul(fq_add(a[0], a[1]), fq_add(b[0], b[1]))
    return (fq_sub(v0, v1), fq_sub(fq_sub(s, v0), v1))


@jitable_noinline
def fq2_sqr(a):
    """c0 = (a0 + a1)(a0 - a1), c1 = 2*a0*a1."""
    return (fq_mul(fq_add(a[0], a[1]), fq_sub(a[0], a[1])), fq_dbl(fq_mul(a[0], a[1])))


@jitable
def fq2_mul_fq(a, s):
    """a * s for s in Fq."""
    return (fq_mul(a[0], s), fq_mul(a[1], s))


@jitable
def fq2_inv(a):
    """1/a = conj(a) / (a0^2 + a1^2); the inverse of 0 is reported as 0."""
    t = fq_inv(fq_add(fq_sqr(a[0]), fq_sqr(a[1])))
    return (fq_mul(a[0], t), fq_neg(fq_mul(a[1], t)))


@jitable
def fq2_load2(arr, i, k):
    """arr[i, k, :, :] of a (n, m, 2, 12) array."""
    return (fq_load3(arr, i, k, 0), fq_load3(arr, i, k, 1))


@jitable
def fq2_store2(arr, i, k, v):
    fq_store3(arr, i, k, 0, v[0])
    fq_store3(arr, i, k, 1, v[1])


@njit(nogil=True, cache=cache_enabled())
def _fq2_mul_n(lo, hi, a, b, out):
    for i in range(lo, hi):
        fq2_store2(out, i, 0, fq2_mul(fq2_load2(a, i, 0), fq2_load2(b, i, 0)))


@njit(nogil=True, cache=cache_enabled())
def _fq2_sqr_n(lo, hi, a, out):
    for i in range(lo, hi):
        fq2_store2(out, i, 0, fq2_sqr(fq2_load2(a, i, 0)))


@njit(nogil=True, cache=cache_enabled())
def _fq2_inv_n(lo, hi, a, out):
    for i in range(lo, hi):
        fq2_store2(out, i, 0, fq2_inv(fq2_load2(a, i, 0)))


def _arr(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype != np.uint32 or a.ndim != 3 or a.shape[1:] != (2, 12):
        raise ValueError(f"expected a (n, 2, 12) uint32 array, got {a.dtype} {a.shape}")
    return a


def fq2_mul_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise product of two (n, 2, 12) Montgomery arrays."""
    a, b = _arr(a), _arr(b)
    out = np.empty_like(a)
    parallel_for(
        _fq2_mul_n, a.shape[0], a.reshape(-1, 1, 2, 12), b.reshape(-1, 1, 2, 12), out.reshape(-1, 1, 2, 12)
    )
    return out


def fq2_sqr_batch(a: np.ndarray) -> np.ndarray:
    a = _arr(a)
    out = np.empty_like(a)
    parallel_for(_fq2_sqr_n, a.shape[0], a.reshape(-1, 1, 2, 12), out.reshape(-1, 1, 2, 12))
    return out


def fq2_inv_batch(a: np.ndarray) -> np.ndarray:
    a = _arr(a)
    out = np.empty_like(a)
    parallel_for(_fq2_inv_n, a.shape[0], a.reshape(-1, 1, 2, 12), out.reshape(-1, 1, 2, 12))
    return out


def fq2_encode(values: Iterable[Sequence[int]]) -> np.ndarray:
    """[(c0, c1), ...] integers -> (n, 2, 12) Montgomery array."""
    vals = list(values)
    flat = fq_encode([c for v in vals for c in (v[0], v[1])])
    return flat.reshape(len(vals), 2, 12)


def fq2_decode(a: np.ndarray) -> list[tuple[int, int]]:
    """(n, 2, 12) Montgomery array -> [(c0, c1), ...] integers."""
    a = _arr(a)
    flat = fq_decode(a.reshape(-1, 12))
    return [(flat[2 * i], flat[2 * i + 1]) for i in range(a.shape[0])]
