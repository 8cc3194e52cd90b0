# mypy: ignore-errors
# (Numba kernel code: typed by Numba, not meaningfully by mypy)
"""Fixed-base scalar multiplication k_i * G for millions of scalars and one base (the setup's bulk work).

Signed-digit comb: a scalar is cut into ``nwin = ceil(256 / w)`` windows of w bits, recoded to digits in
[-2^(w-1), 2^(w-1)], and table[k][d - 1] = d * 2^(w k) * G (affine), so k * G is a sum of ``nwin`` table
points (negated for negative digits): no doublings. The sum is a pairwise tree of *affine* additions, batched
over a chunk of outputs: every level of the tree shares one field inversion (Montgomery's trick), so an
addition costs ~6 field multiplications instead of ~10 for a mixed XYZZ addition, and the results come out
affine with no normalisation step. w is picked from how many multiplications the table will serve (16 for
millions: 16 windows of 32,768 points, 50 MB for G1); the table itself is built with the same batched
addition, in doubling rounds. Every case of the addition (identity operands, P == Q, P == -Q) is handled, so
results are exact for any scalar, not just for random ones.

One kernel source serves G1 and G2: the field operations below dispatch on their argument types (Fq: a
12-limb tuple; Fq2: a pair of them) when compiled, as gpu.curves.generic does for points.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit
from numba.core import types

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled, dispatching, jitable
from gpu.arith.fields.fq import (
    fq_add,
    fq_dbl,
    fq_eq,
    fq_inv,
    fq_is_zero,
    fq_load2,
    fq_mul,
    fq_neg,
    fq_one,
    fq_sqr,
    fq_store2,
    fq_sub,
    fq_zero,
)
from gpu.arith.fields.fq2 import (
    fq2_add,
    fq2_dbl,
    fq2_eq,
    fq2_inv,
    fq2_is_zero,
    fq2_load2,
    fq2_mul,
    fq2_neg,
    fq2_one,
    fq2_sqr,
    fq2_store2,
    fq2_sub,
    fq2_zero,
)
from gpu.curves._host import Group

MAX_WINDOW = 16
CHUNK = 1024  # outputs per batch inversion (~570 multiplications each: < 3 per output)
SLICE = 1 << 16  # outputs between progress reports


# ------------------------------------------------------------------------------------------ field dispatch


def _is_fq(t) -> bool:
    return isinstance(t, types.UniTuple) and isinstance(t.dtype, types.Integer)


def _by_value(fq_impl, fq2_impl):
    def choose(a, *rest):
        return fq_impl if _is_fq(a) else fq2_impl

    def decorate(fn):
        def py(a, *rest):
            return (fq_impl if len(a) == 12 else fq2_impl)(a, *rest)

        py.__name__ = py.__qualname__ = "fb_" + fn.__name__
        return dispatching(choose)(py)

    return decorate


def _by_array(fq_impl, fq2_impl):
    """(n, k, 12) arrays hold Fq values, (n, k, 2, 12) arrays Fq2 values."""

    def choose(arr, *rest):
        return fq_impl if arr.ndim == 3 else fq2_impl

    def decorate(fn):
        def py(arr, *rest):
            return (fq_impl if arr.ndim == 3 else fq2_impl)(arr, *rest)

        py.__name__ = py.__qualname__ = "fb_" + fn.__name__
        return dispatching(choose)(py)

    return decorate


@jitable
def _fq_one_like(a):
    return fq_one()


@jitable
def _fq2_one_like(a):
    return fq2_one()


@jitable
def _fq_zero_like(a):
    return fq_zero()


@jitable
def _fq2_zero_like(a):
    return fq2_zero()


@_by_value(fq_mul, fq2_mul)
def f_mul(a, b):
    """a * b."""


@_by_value(fq_sqr, fq2_sqr)
def f_sqr(a):
    """a^2."""


@_by_value(fq_add, fq2_add)
def f_add(a, b):
    """a + b."""


@_by_value(fq_sub, fq2_sub)
def f_sub(a, b):
    """a - b."""


@_by_value(fq_dbl, fq2_dbl)
def f_dbl(a):
    """2a."""


@_by_value(fq_neg, fq2_neg)
def f_neg(a):
    """-a."""


@_by_value(fq_inv, fq2_inv)
def f_inv(a):
    """a^-1."""


@_by_value(fq_is_zero, fq2_is_zero)
def f_is_zero(a):
    """a == 0."""


@_by_value(fq_eq, fq2_eq)
def f_eq(a, b):
    """a == b."""


@_by_value(_fq_one_like, _fq2_one_like)
def f_one_like(a):
    """1 of a's field."""


@_by_value(_fq_zero_like, _fq2_zero_like)
def f_zero_like(a):
    """0 of a's field."""


@_by_array(fq_load2, fq2_load2)
def f_load(arr, i, k):
    """arr[i, k] as a field element."""


@_by_array(fq_store2, fq2_store2)
def f_store(arr, i, k, v):
    """arr[i, k] = v."""


# ------------------------------------------------------------------------------------------ kernels


@njit(nogil=True, cache=cache_enabled())
def _reduce_rows(W, rows, stride, m, code, den, pref):
    """Sum entries 0..m-1 of each row (row r = W[r*stride : r*stride + m], affine points, identity = (0, 0))
    into entry 0, one level of pairs at a time, each level with one inversion for all rows.

    code/den/pref: scratch for rows * (m // 2) pairs. Pair codes: 0 general (den = x2 - x1), 1 p is the
    identity (result q), 2 q is the identity (result p), 3 doubling (den = 2 y), 4 result is the identity."""
    while m > 1:
        half = m // 2
        one = f_one_like(f_load(W, 0, 0))
        acc = one
        c = 0
        for r in range(rows):
            i1 = r * stride
            for _j in range(half):
                x1 = f_load(W, i1, 0)
                y1 = f_load(W, i1, 1)
                x2 = f_load(W, i1 + 1, 0)
                y2 = f_load(W, i1 + 1, 1)
                if f_is_zero(x1) and f_is_zero(y1):
                    code[c] = 1
                elif f_is_zero(x2) and f_is_zero(y2):
                    code[c] = 2
                elif not f_eq(x1, x2):
                    code[c] = 0
                    d = f_sub(x2, x1)
                    f_store(den, c, 0, d)
                    f_store(pref, c, 0, acc)
                    acc = f_mul(acc, d)
                elif f_eq(y1, y2) and not f_is_zero(y1):
                    code[c] = 3
                    d = f_dbl(y1)
                    f_store(den, c, 0, d)
                    f_store(pref, c, 0, acc)
                    acc = f_mul(acc, d)
                else:
                    code[c] = 4
                c += 1
                i1 += 2
        inv = f_inv(acc)
        for c in range(rows * half - 1, -1, -1):
            if code[c] == 0 or code[c] == 3:
                d = f_load(den, c, 0)
                f_store(den, c, 0, f_mul(inv, f_load(pref, c, 0)))
                inv = f_mul(inv, d)
        c = 0
        for r in range(rows):
            base = r * stride
            for j in range(half):
                i1 = base + 2 * j
                k = code[c]
                if k == 0 or k == 3:
                    x1 = f_load(W, i1, 0)
                    y1 = f_load(W, i1, 1)
                    x2 = f_load(W, i1 + 1, 0)
                    if k == 0:
                        lam = f_mul(f_sub(f_load(W, i1 + 1, 1), y1), f_load(den, c, 0))
                    else:
                        x1s = f_sqr(x1)
                        lam = f_mul(f_add(f_dbl(x1s), x1s), f_load(den, c, 0))
                    x3 = f_sub(f_sub(f_sqr(lam), x1), x2)
                    y3 = f_sub(f_mul(lam, f_sub(x1, x3)), y1)
                    f_store(W, base + j, 0, x3)
                    f_store(W, base + j, 1, y3)
                elif k == 1:
                    f_store(W, base + j, 0, f_load(W, i1 + 1, 0))
                    f_store(W, base + j, 1, f_load(W, i1 + 1, 1))
                elif k == 2:
                    f_store(W, base + j, 0, f_load(W, i1, 0))
                    f_store(W, base + j, 1, f_load(W, i1, 1))
                else:
                    z = f_zero_like(one)
                    f_store(W, base + j, 0, z)
                    f_store(W, base + j, 1, z)
                c += 1
            if m & 1:
                f_store(W, base + half, 0, f_load(W, base + m - 1, 0))
                f_store(W, base + half, 1, f_load(W, base + m - 1, 1))
        m = half + (m & 1)


@njit(nogil=True, cache=cache_enabled())
def _add_pairs_n(lo, hi, P, Q, out):
    """out[i] = P[i] + Q[i] (affine, any case)."""
    n = min(CHUNK, hi - lo)
    W = np.empty((2 * n,) + P.shape[1:], dtype=np.uint32)
    code = np.empty(n, dtype=np.uint8)
    den = np.empty((n, 1) + P.shape[2:], dtype=np.uint32)
    pref = np.empty_like(den)
    for s in range(lo, hi, CHUNK):
        rows = min(CHUNK, hi - s)
        for i in range(rows):
            for t in range(2):
                f_store(W, 2 * i, t, f_load(P, s + i, t))
                f_store(W, 2 * i + 1, t, f_load(Q, s + i, t))
        _reduce_rows(W, rows, 2, 2, code, den, pref)
        for i in range(rows):
            for t in range(2):
                f_store(out, s + i, t, f_load(W, 2 * i, t))


@njit(nogil=True, cache=cache_enabled())
def _comb_n(lo, hi, table, w, nwin, scalars, out):
    """out[i] = scalars[i] * G from table[k * 2^(w-1) + d - 1] = d * 2^(w k) * G (signed digits)."""
    half = np.int64(1) << (w - 1)
    full = np.int64(1) << w
    mask = full - 1
    n = min(CHUNK, hi - lo)
    W = np.empty((n * nwin,) + table.shape[1:], dtype=np.uint32)
    code = np.empty(n * (nwin // 2), dtype=np.uint8)
    den = np.empty((n * (nwin // 2), 1) + table.shape[2:], dtype=np.uint32)
    pref = np.empty_like(den)
    for s in range(lo, hi, CHUNK):
        rows = min(CHUNK, hi - s)
        for i in range(rows):
            o = s + i
            carry = np.int64(0)
            for k in range(nwin):
                bit = k * w
                li = bit >> 5
                sh = bit & 31
                v = np.int64(scalars[o, li]) >> sh
                if sh + w > 32 and li + 1 < 8:
                    v |= np.int64(scalars[o, li + 1]) << (32 - sh)
                v = (v & mask) + carry
                if v > half:
                    v -= full
                    carry = 1
                else:
                    carry = 0
                dst = i * nwin + k
                if v == 0:
                    z = f_zero_like(f_load(table, 0, 0))
                    f_store(W, dst, 0, z)
                    f_store(W, dst, 1, z)
                elif v > 0:
                    src = k * half + v - 1
                    f_store(W, dst, 0, f_load(table, src, 0))
                    f_store(W, dst, 1, f_load(table, src, 1))
                else:
                    src = k * half - v - 1
                    f_store(W, dst, 0, f_load(table, src, 0))
                    f_store(W, dst, 1, f_neg(f_load(table, src, 1)))
        _reduce_rows(W, rows, nwin, nwin, code, den, pref)
        for i in range(rows):
            f_store(out, s + i, 0, f_load(W, i * nwin, 0))
            f_store(out, s + i, 1, f_load(W, i * nwin, 1))


# ------------------------------------------------------------------------------------------ host side


def windows(w: int) -> int:
    """Windows of w bits that hold a signed-digit recoding of any scalar < 2^255."""
    return -(-256 // w)


def best_window(expected: int) -> int:
    """The window minimising additions: expected * (windows - 1) for the products plus the table's size."""
    costs = {w: expected * (windows(w) - 1) + windows(w) * (1 << (w - 1)) for w in range(2, MAX_WINDOW + 1)}
    return min(costs, key=lambda w: (costs[w], w))


def add(group: Group, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Element-wise p + q of affine arrays with the batched affine addition (every case handled)."""
    p, q = group.check_array(p, 2), group.check_array(q, 2, "b")
    out = np.empty_like(p)
    parallel_for(_add_pairs_n, p.shape[0], p, q, out, min_chunk=CHUNK)
    return out


class FixedBase:
    """k -> k * base for one fixed affine base (a (1, 2, ...) array of ``group``); ``expected`` (how many
    multiplications it will serve) picks the window, or ``window`` sets it."""

    def __init__(self, group: Group, base: np.ndarray, expected: int = 1 << 10, window: int | None = None):
        self.group = group
        w = best_window(max(1, expected)) if window is None else int(window)
        if not 2 <= w <= MAX_WINDOW:
            raise ValueError(f"window {w} outside [2, {MAX_WINDOW}]")
        self.window, self.nwin = w, windows(w)
        half = 1 << (w - 1)
        base = group.check_array(np.asarray(base), 2).reshape((1,) + group.affine_shape)
        table = np.empty((self.nwin, half) + group.affine_shape, dtype=np.uint32)
        cur = np.ascontiguousarray(base)
        for k in range(self.nwin):  # 2^(w k) * B by doublings (the same addition, P == Q case)
            table[k, 0] = cur[0]
            for _ in range(w if k + 1 < self.nwin else 0):
                cur = add(group, cur, cur)
        m = 1
        while m < half:  # doubling rounds: (j + 1 + m) * B = (j + 1) * B + m * B
            cnt = min(m, half - m)
            p = np.ascontiguousarray(table[:, :cnt]).reshape((-1,) + group.affine_shape)
            q = np.ascontiguousarray(np.repeat(table[:, m - 1 : m], cnt, axis=1)).reshape(p.shape)
            table[:, m : m + cnt] = add(group, p, q).reshape((self.nwin, cnt) + group.affine_shape)
            m += cnt
        self.table = table.reshape((-1,) + group.affine_shape)

    def mul(self, scalars: np.ndarray, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """(n, 8) canonical scalars -> (n, 2, ...) affine points; ``progress(k)`` after each k more."""
        s = np.ascontiguousarray(scalars, dtype=np.uint32)
        if s.ndim != 2 or s.shape[1] != 8:
            raise ValueError(f"scalars must be (n, 8) uint32, got {s.shape}")
        out = np.empty((s.shape[0],) + self.group.affine_shape, dtype=np.uint32)
        for lo in range(0, s.shape[0], SLICE):
            hi = min(s.shape[0], lo + SLICE)
            parallel_for(
                _comb_n, hi - lo, self.table, self.window, self.nwin, s[lo:hi], out[lo:hi], min_chunk=256
            )
            if progress is not None:
                progress(hi - lo)
        return out
