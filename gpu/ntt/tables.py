"""Precomputed tables of an NTT size, made once per size and cached (host side; gpu.ntt.cuda keeps device
copies).

* twiddles(logn): w_n^e for e in [0, n/2), Montgomery, (n/2, 8). The inverse transform reads the same table:
  w^-e = w^(n - e) = -w^(n/2 - e) for 0 < e < n/2 (w^(n/2) = -1), so one table serves both directions.
* Scale: the element-wise factors applied before (forward coset: g^i) or after (inverse: n^-1,
  coset: g^-i n^-1) the butterflies, as a constant or a two-level table f(i) = lo[i & (2^L - 1)] * hi[i >> L]
  (2 * 2^(logn/2) entries instead of n, one extra multiplication). ``canonical`` tables leave the factor of R
  out of ``lo`` so the result comes out of Montgomery form (x R * f / R = x f) for free: the H step feeds the
  MSM that way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_encode, fr_from_ints, fr_load, fr_mul, fr_pow, fr_store
from gpu.arith.fields.constants import R_MODULUS
from gpu.ntt.cache import BoundedCache
from gpu.ntt.domain import GENERATOR, check_log, root_of_unity

MODE_NONE = 0
MODE_CONST = 1
MODE_TABLE = 2


@njit(nogil=True, cache=cache_enabled())
def _powers_n(lo, hi, base, out):
    # out[i] = base^i * out[0] for i in [lo, hi); out[0] holds the scale factor on entry and is rewritten.
    e = np.empty(2, dtype=np.uint32)
    e[0] = np.uint32(lo & 0xFFFFFFFF)
    e[1] = np.uint32(lo >> 32)
    b = fr_load(base, 0)
    acc = fr_mul(fr_pow(b, e), fr_load(base, 1))
    for i in range(lo, hi):
        fr_store(out, i, acc)
        acc = fr_mul(acc, b)


def powers(base: int, count: int, scale: int = 1, *, montgomery: bool = True) -> np.ndarray:
    """[scale * base^i for i < count] as (count, 8) uint32, Montgomery unless montgomery=False (then the
    canonical integers' limbs)."""
    bs = fr_encode([base % R_MODULUS, scale % R_MODULUS])
    out = np.empty((count, 8), dtype=np.uint32)
    parallel_for(_powers_n, count, bs, out, min_chunk=4096)
    if not montgomery:
        from gpu.arith.fields import fr_from_mont

        out = fr_from_mont(out)
    return out


# Host tables of a few sizes at most: 4 GiB holds one 2^27 transform's twiddles (2 GiB) and its scales.
HOST_TABLE_BYTES = 4 << 30
_twiddles: BoundedCache[np.ndarray] = BoundedCache(HOST_TABLE_BYTES)
_scales: BoundedCache[Scale] = BoundedCache(HOST_TABLE_BYTES)


def twiddles(logn: int) -> np.ndarray:
    """w_n^e for e < n/2 (Montgomery), cached per size."""
    check_log(logn)

    def make() -> np.ndarray:
        t = powers(root_of_unity(logn), max(1, (1 << logn) >> 1)) if logn else np.empty((0, 8), np.uint32)
        t.setflags(write=False)
        return t

    return _twiddles.get_or_make(logn, make)


@dataclass(frozen=True)
class Scale:
    """An element-wise factor f(i) of the coefficient index i: none, a constant, or a two-level table."""

    mode: int
    const: np.ndarray  # (1, 8)
    lo: np.ndarray  # (2^L, 8)
    hi: np.ndarray  # (2^(logn-L), 8)
    lbits: int
    key: tuple[int, str, bool]  # (logn, which, canonical): names the device copies


_EMPTY = np.zeros((1, 8), dtype=np.uint32)
NO_SCALE = Scale(MODE_NONE, _EMPTY, _EMPTY, _EMPTY, 0, (0, "none", False))


def scale(logn: int, which: str, canonical: bool = False) -> Scale:
    """The factor table of one transform step, cached. which: "coset" (g^i), "inv" (n^-1), "inv_coset"
    (g^-i n^-1), "coset_ninv" (g^i n^-1: an unscaled inverse followed by a coset forward, the H step), or
    "one" (1: only useful with canonical=True, to leave Montgomery form)."""
    check_log(logn)
    if which not in ("inv", "one", "coset", "inv_coset", "coset_ninv"):
        raise ValueError(f"unknown scale {which!r}")
    return _scales.get_or_make((logn, which, canonical), lambda: _make_scale(logn, which, canonical))


def _make_scale(logn: int, which: str, canonical: bool) -> Scale:
    key = (logn, which, canonical)
    n = 1 << logn
    ninv = pow(n, R_MODULUS - 2, R_MODULUS)
    if which in ("inv", "one"):
        c = ninv if which == "inv" else 1
        const = fr_from_ints([c]) if canonical else fr_encode([c])
        return Scale(MODE_CONST, const, _EMPTY, _EMPTY, 0, key)
    elif which in ("coset", "inv_coset", "coset_ninv"):
        g = pow(GENERATOR, R_MODULUS - 2, R_MODULUS) if which == "inv_coset" else GENERATOR
        c = 1 if which == "coset" else ninv
        lbits = (logn + 1) // 2
        lo = powers(g, 1 << lbits, c, montgomery=not canonical)
        hi = powers(pow(g, 1 << lbits, R_MODULUS), max(1, 1 << (logn - lbits)))
        return Scale(MODE_TABLE, _EMPTY, lo, hi, lbits, key)
    raise ValueError(f"unknown scale {which!r}")


def clear_cache() -> None:
    """Drop the cached host tables (tests; memory)."""
    _twiddles.clear()
    _scales.clear()
