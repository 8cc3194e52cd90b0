"""CPU NTT (Numba @njit on the shared thread pool): the same DIF/DIT butterflies, twiddles and scales as the
CUDA kernels, so both backends give identical arrays.

Layout: |a| is (batch, n, 8) uint32, Montgomery, transformed in place. Stages whose butterflies span more than
BLOCK elements run one parallel sweep each over batch * n/2 butterflies; the remaining stages run block by
block (2^BLOCK_LOG elements, 128 KiB, cache-resident), one block per task.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_load, fr_store
from gpu.ntt.domain import Algorithm
from gpu.ntt.kernels_common import apply_scale, brev, dif_butterfly, dit_butterfly, twiddle
from gpu.ntt.tables import Scale

BLOCK_LOG = 12


@njit(nogil=True, cache=cache_enabled())
def _stage_n(lo, hi, a, tw, logn, b, inverse, dif):
    # one radix-2 stage on bit b for butterflies [lo, hi) of batch * n/2
    half = (1 << logn) >> 1
    h = 1 << b
    sh = logn - 1 - b
    for t in range(lo, hi):
        bi = t // half
        tt = t - bi * half
        r = tt & (h - 1)
        i = ((tt >> b) << (b + 1)) | r
        j = i + h
        x = a[bi]
        w = twiddle(tw, r << sh, half, inverse)
        if dif:
            u, v = dif_butterfly(fr_load(x, i), fr_load(x, j), w)
        else:
            u, v = dit_butterfly(fr_load(x, i), fr_load(x, j), w)
        fr_store(x, i, u)
        fr_store(x, j, v)


@njit(nogil=True, cache=cache_enabled())
def _blocks_n(lo, hi, a, tw, logn, btop, inverse, dif):
    # stages on bits 0..btop inside aligned blocks of 2^(btop+1) elements; blocks [lo, hi) of batch * nblocks
    half = (1 << logn) >> 1
    bsize = 1 << (btop + 1)
    nblk = (1 << logn) // bsize
    for q in range(lo, hi):
        bi = q // nblk
        base = (q - bi * nblk) * bsize
        x = a[bi]
        for s in range(btop + 1):
            b = btop - s if dif else s
            h = 1 << b
            sh = logn - 1 - b
            for tt in range(bsize >> 1):
                r = tt & (h - 1)
                i = base + (((tt >> b) << (b + 1)) | r)
                j = i + h
                w = twiddle(tw, r << sh, half, inverse)
                if dif:
                    u, v = dif_butterfly(fr_load(x, i), fr_load(x, j), w)
                else:
                    u, v = dit_butterfly(fr_load(x, i), fr_load(x, j), w)
                fr_store(x, i, u)
                fr_store(x, j, v)


@njit(nogil=True, cache=cache_enabled())
def _scale_n(lo, hi, a, logn, reversed_pos, mode, const, slo, shi, lbits):
    n = 1 << logn
    for t in range(lo, hi):
        bi = t // n
        p = t - bi * n
        idx = brev(p, logn) if reversed_pos else p
        x = a[bi]
        fr_store(x, p, apply_scale(fr_load(x, p), idx, mode, const, slo, shi, lbits))


@njit(nogil=True, cache=cache_enabled())
def _bitrev_n(lo, hi, a, logn):
    n = 1 << logn
    for t in range(lo, hi):
        bi = t // n
        i = t - bi * n
        j = brev(i, logn)
        if i < j:
            x = a[bi]
            u = fr_load(x, i)
            fr_store(x, i, fr_load(x, j))
            fr_store(x, j, u)


def bitrev_permute(a: np.ndarray, logn: int) -> None:
    """In-place bit-reversal permutation of every row of a (batch, n, 8) array."""
    if logn:
        parallel_for(_bitrev_n, a.shape[0] << logn, a, logn, min_chunk=4096)


def apply(a: np.ndarray, logn: int, s: Scale, reversed_pos: bool) -> None:
    """a[p] *= f(i) with i = p, or bitrev(p) when the array holds bit-reversed positions."""
    if s.mode:
        parallel_for(
            _scale_n,
            a.shape[0] << logn,
            a,
            logn,
            reversed_pos,
            s.mode,
            s.const,
            s.lo,
            s.hi,
            s.lbits,
            min_chunk=4096,
        )


def butterflies(a: np.ndarray, logn: int, tw: np.ndarray, algorithm: Algorithm, inverse: bool) -> None:
    """All logn radix-2 stages, in place (DIF: natural -> bit-reversed; DIT: bit-reversed -> natural)."""
    if logn == 0:
        return
    batch = a.shape[0]
    dif = algorithm is Algorithm.DIF
    btop = min(logn, BLOCK_LOG) - 1
    nblk = batch * ((1 << logn) >> (btop + 1))
    big = list(range(logn - 1, btop, -1))  # bits handled stage by stage, top first
    if dif:
        for b in big:
            parallel_for(_stage_n, batch << (logn - 1), a, tw, logn, b, inverse, True, min_chunk=4096)
        parallel_for(_blocks_n, nblk, a, tw, logn, btop, inverse, True, min_chunk=1)
    else:
        parallel_for(_blocks_n, nblk, a, tw, logn, btop, inverse, False, min_chunk=1)
        for b in reversed(big):
            parallel_for(_stage_n, batch << (logn - 1), a, tw, logn, b, inverse, False, min_chunk=4096)
