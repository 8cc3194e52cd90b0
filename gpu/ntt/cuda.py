"""CUDA NTT: radix-2 stages grouped into passes that each run in shared memory (sppark's structure, ntt.cuh).

A pass covers S consecutive index bits [b_lo, b_lo + S). One block owns C = 2^c "columns" (C consecutive
values of the bits below b_lo, so a warp's loads hit consecutive 32-byte elements) times 2^S "rows" (the bits
of the pass): C * 2^(S-1) threads, one butterfly each per stage; the first stage of a pass reads global
memory, the last one writes it, the stages between exchange through shared memory (limb-major, so lanes hit
distinct banks).
The forward coset factor g^i is applied as the first pass loads, n^-1 / g^-i n^-1 as the last pass stores.

Pass plan for n = 2^logn: the pass over the low bits [0, S0) has C = 1 and S0 = min(logn, LOW_PASS_BITS); the
rest are split evenly into passes of at most HIGH_PASS_BITS with C = min(COLUMNS, 2^b_lo). 2^27 runs as
10 + 6 + 6 + 5. Twiddles come from one table w^0..w^(n/2-1) per size, kept on the device (gpu.ntt.tables).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numba import cuda, uint32

from gpu.arith.cudashim import jitable, kernel
from gpu.arith.fields import fr_load, fr_mul, fr_store, fr_sub
from gpu.device import Device
from gpu.ntt.cache import BoundedCache
from gpu.ntt.domain import Algorithm, split_passes
from gpu.ntt.kernels_common import apply_scale, brev, dif_butterfly, dit_butterfly, twiddle
from gpu.ntt.tables import NO_SCALE, Scale, twiddles

SHARED_ELEMS = 1024  # elements of the shared tile (8 limbs each: 32 KiB)
LOW_PASS_BITS = 10  # C = 1: 512 threads
HIGH_PASS_BITS = 7  # with COLUMNS = 8: 512 threads
COLUMNS = 8
LIGHT_THREADS = 256
assert SHARED_ELEMS >= (1 << LOW_PASS_BITS) and SHARED_ELEMS >= COLUMNS << HIGH_PASS_BITS
assert COLUMNS & (COLUMNS - 1) == 0


@jitable
def _ld(sh, k):
    return (sh[0, k], sh[1, k], sh[2, k], sh[3, k], sh[4, k], sh[5, k], sh[6, k], sh[7, k])


@jitable
def _st(sh, k, v):
    v0, v1, v2, v3, v4, v5, v6, v7 = v
    sh[0, k] = v0
    sh[1, k] = v1
    sh[2, k] = v2
    sh[3, k] = v3
    sh[4, k] = v4
    sh[5, k] = v5
    sh[6, k] = v6
    sh[7, k] = v7


@kernel(max_registers=64)  # 72 unbounded (ptxas, sm_90): 64 fits two 512-thread blocks per SM, 16 B spill
def _pass(
    a,
    tw,
    logn,
    b_lo,
    nbits,
    cbits,
    inverse,
    dif,
    pre_mode,
    pre_const,
    pre_lo,
    pre_hi,
    pre_lbits,
    post_mode,
    post_const,
    post_lo,
    post_hi,
    post_lbits,
):
    """One pass over bits [b_lo, b_lo + nbits) with 2^cbits columns per block; see the module docstring."""
    sh = cuda.shared.array((8, SHARED_ELEMS), dtype=uint32)
    t = cuda.threadIdx.x
    x = a[cuda.blockIdx.y]
    half = (1 << logn) >> 1
    ncol = 1 << cbits
    col = t & (ncol - 1)
    u = t >> cbits
    q = cuda.blockIdx.x
    groups = 1 << (b_lo - cbits)
    low = ((q & (groups - 1)) << cbits) | col
    base = low | ((q >> (b_lo - cbits)) << (b_lo + nbits))
    first = (b_lo + nbits == logn) if dif else (b_lo == 0)  # this pass sees the input
    last = (b_lo == 0) if dif else (b_lo + nbits == logn)  # this pass writes the output
    for step in range(nbits):
        s = nbits - 1 - step if dif else step
        h = 1 << s
        r = u & (h - 1)
        k0 = ((u >> s) << (s + 1)) | r
        k1 = k0 + h
        b = b_lo + s
        w = twiddle(tw, (low | (r << b_lo)) << (logn - 1 - b), half, inverse)
        if step == 0:
            i0 = base | (k0 << b_lo)
            i1 = base | (k1 << b_lo)
            v0 = fr_load(x, i0)
            v1 = fr_load(x, i1)
            if first and pre_mode != 0:
                j0 = i0 if dif else brev(i0, logn)
                j1 = i1 if dif else brev(i1, logn)
                v0 = apply_scale(v0, j0, pre_mode, pre_const, pre_lo, pre_hi, pre_lbits)
                v1 = apply_scale(v1, j1, pre_mode, pre_const, pre_lo, pre_hi, pre_lbits)
        else:
            cuda.syncthreads()  # type: ignore[call-arg]  # numba's @intrinsic signature
            v0 = _ld(sh, (k0 << cbits) | col)
            v1 = _ld(sh, (k1 << cbits) | col)
        if dif:
            v0, v1 = dif_butterfly(v0, v1, w)
        else:
            v0, v1 = dit_butterfly(v0, v1, w)
        if step == nbits - 1:
            i0 = base | (k0 << b_lo)
            i1 = base | (k1 << b_lo)
            if last and post_mode != 0:
                j0 = brev(i0, logn) if dif else i0
                j1 = brev(i1, logn) if dif else i1
                v0 = apply_scale(v0, j0, post_mode, post_const, post_lo, post_hi, post_lbits)
                v1 = apply_scale(v1, j1, post_mode, post_const, post_lo, post_hi, post_lbits)
            fr_store(x, i0, v0)
            fr_store(x, i1, v1)
        else:
            _st(sh, (k0 << cbits) | col, v0)
            _st(sh, (k1 << cbits) | col, v1)


@kernel
def _scale_kernel(a, logn, reversed_pos, mode, const, lo, hi, lbits):
    p = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    x = a[cuda.blockIdx.y]
    if p < (1 << logn):
        idx = brev(p, logn) if reversed_pos else p
        fr_store(x, p, apply_scale(fr_load(x, p), idx, mode, const, lo, hi, lbits))


@kernel
def _bitrev_kernel(a, logn):
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    x = a[cuda.blockIdx.y]
    if i < (1 << logn):
        j = brev(i, logn)
        if i < j:
            v = fr_load(x, i)
            fr_store(x, i, fr_load(x, j))
            fr_store(x, j, v)


@kernel
def _h_pointwise(a, b, c, zinv):
    """a <- (a * b - c) * zinv[0] (the Groth16 quotient on the coset, where Z is the constant g^n - 1)."""
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    if i < a.shape[0]:
        fr_store(a, i, fr_mul(fr_sub(fr_mul(fr_load(a, i), fr_load(b, i)), fr_load(c, i)), fr_load(zinv, 0)))


def pass_plan(
    logn: int, low: int = LOW_PASS_BITS, high: int = HIGH_PASS_BITS, columns: int = COLUMNS
) -> list[tuple[int, int, int]]:
    """(b_lo, nbits, cbits) per pass, in DIF order (top bits first); DIT runs them reversed. The defaults are
    the production shape; tests pass small values to run several passes and columns on tiny sizes."""
    if logn == 0:
        return []
    if (1 << low) > SHARED_ELEMS or columns << high > SHARED_ELEMS or columns & (columns - 1):
        raise ValueError("pass shape does not fit the shared tile")
    s0 = min(logn, low)
    passes = [(0, s0, 0)]
    b = s0
    for nb in reversed(split_passes(logn - s0, high)):
        c = min(columns.bit_length() - 1, b)
        passes.append((b, nb, c))
        b += nb
    return passes[::-1]


# ---------------------------------------------------------------------------- device-resident tables

# Per device, like the host's: the newest table set is always kept (see gpu.ntt.cache).
DEVICE_TABLE_BYTES = 4 << 30
_cache_lock = threading.Lock()
_dev_tables: dict[int, BoundedCache[Any]] = {}


def _device_copy(dev: Device, key: tuple[Any, ...], host: np.ndarray) -> Any:
    with _cache_lock:
        cache = _dev_tables.setdefault(dev.index, BoundedCache(DEVICE_TABLE_BYTES))
    return cache.get_or_make(
        key, lambda: cuda.to_device(np.ascontiguousarray(host) if host.size else np.zeros((1, 8), np.uint32))
    )


def device_twiddles(dev: Device, logn: int) -> Any:
    """The twiddle table of size 2^logn on ``dev`` (uploaded once, then cached)."""
    return _device_copy(dev, ("tw", logn), twiddles(logn))


def _device_scale(dev: Device, s: Scale) -> tuple[Any, Any, Any]:
    # keyed by what the scale is, not id(s): an id can be reused once the host cache drops a Scale
    return (
        _device_copy(dev, ("sc", s.key, "c"), s.const),
        _device_copy(dev, ("sc", s.key, "l"), s.lo),
        _device_copy(dev, ("sc", s.key, "h"), s.hi),
    )


def h_step_tables(dev: Device, logn: int) -> None:
    """Upload (once) the tables the Groth16 H step reads on ``dev``: the twiddles, the empty scale and the two
    coset scales (``gpu.groth16.plan.ntt_table_bytes`` counts exactly these). The caller holds the device."""
    from gpu.ntt.tables import NO_SCALE, scale

    device_twiddles(dev, logn)
    _device_scale(dev, NO_SCALE)
    if logn:
        _device_scale(dev, scale(logn, "coset_ninv"))
        _device_scale(dev, scale(logn, "inv_coset", canonical=True))


def cached_bytes(dev: Device | None = None) -> int:
    """Device memory held by cached tables (all devices, or one)."""
    with _cache_lock:
        caches = [c for i, c in _dev_tables.items() if dev is None or i == dev.index]
    return sum(c.nbytes() for c in caches)


def clear_cache() -> None:
    with _cache_lock:
        _dev_tables.clear()


# ---------------------------------------------------------------------------- host entry points


def butterflies(
    d_a: Any,
    logn: int,
    algorithm: Algorithm,
    inverse: bool,
    pre: Scale = NO_SCALE,
    post: Scale = NO_SCALE,
    *,
    device: Device,
    plan: list[tuple[int, int, int]] | None = None,
) -> None:
    """All stages on a (batch, n, 8) device array in place, with the pre/post scales fused (the caller holds
    the device; kernels go to the default stream)."""
    dev = device
    batch = d_a.shape[0]
    dif = algorithm is Algorithm.DIF
    if logn == 0:
        for s in (pre, post):
            if s.mode:
                scale(d_a, 0, s, False, device=dev)
        return
    tw = device_twiddles(dev, logn)
    pc, pl, ph = _device_scale(dev, pre)
    qc, ql, qh = _device_scale(dev, post)
    plan = list(plan) if plan is not None else pass_plan(logn)
    if not dif:
        plan = plan[::-1]
    for b_lo, nb, cb in plan:
        threads = (1 << cb) << (nb - 1)
        blocks = (1 << logn) // ((1 << cb) << nb)
        _pass[(blocks, batch), threads](
            d_a,
            tw,
            logn,
            b_lo,
            nb,
            cb,
            inverse,
            dif,
            pre.mode,
            pc,
            pl,
            ph,
            pre.lbits,
            post.mode,
            qc,
            ql,
            qh,
            post.lbits,
        )


def scale(d_a: Any, logn: int, s: Scale, reversed_pos: bool, *, device: Device) -> None:
    if not s.mode:
        return
    c, lo, hi = _device_scale(device, s)
    n = 1 << logn
    _scale_kernel[((n + LIGHT_THREADS - 1) // LIGHT_THREADS, d_a.shape[0]), LIGHT_THREADS](
        d_a, logn, reversed_pos, s.mode, c, lo, hi, s.lbits
    )


def bitrev_permute(d_a: Any, logn: int) -> None:
    if logn:
        n = 1 << logn
        _bitrev_kernel[((n + LIGHT_THREADS - 1) // LIGHT_THREADS, d_a.shape[0]), LIGHT_THREADS](d_a, logn)


def h_pointwise(d_a: Any, d_b: Any, d_c: Any, d_zinv: Any) -> None:
    """a <- (a b - c) z^-1 on (n, 8) device arrays."""
    n = d_a.shape[0]
    _h_pointwise[(n + LIGHT_THREADS - 1) // LIGHT_THREADS, LIGHT_THREADS](d_a, d_b, d_c, d_zinv)
