"""Small CUDA kernels of the prover: padding the quotient's input buffers, gathering the A/B scalars of an MSM
pass from the resident witness, the H scalars of a pass in natural order from h's bit-reversed one, and the
two pointwise steps of the two-buffer H step."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda, uint32

from gpu.arith.cudashim import kernel
from gpu.arith.fields import fr_load, fr_mul, fr_store, fr_sub

THREADS = 256


@kernel
def _zero_rows_kernel(a, start):
    i = cuda.grid(1) + start  # type: ignore[call-arg]  # numba's @intrinsic signature
    if i < a.shape[0]:
        for j in range(8):
            a[i, j] = uint32(0)


def zero_rows(d2: Any, start: int) -> None:
    """d2[start:, :] = 0 for an (n, 8) device array."""
    n = d2.shape[0] - start
    if n > 0:
        _zero_rows_kernel[(n + THREADS - 1) // THREADS, THREADS](d2, start)


@kernel
def _gather_kernel(src, idx, dst):
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    if i < dst.shape[0]:
        k = idx[i]
        for j in range(8):
            dst[i, j] = src[k, j]


def gather(d_src: Any, d_idx: Any, out: Any = None) -> Any:
    """dst[i] = src[idx[i]] for (n, 8) device arrays: the A/B scalars from the resident witness, into
    ``out[:n]`` (a buffer reused pass after pass) or a new array."""
    n = d_idx.shape[0]
    dst = (cuda.device_array((max(n, 1), 8), dtype=np.uint32) if out is None else out)[:n]
    if n:
        _gather_kernel[(n + THREADS - 1) // THREADS, THREADS](d_src, d_idx, dst)
    return dst


@kernel
def _gather_bitrev_kernel(src, lo, logn, dst):
    """dst[i] = src[bitrev(lo + i)]: h's coefficient lo + i from its bit-reversed position."""
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    if i < dst.shape[0]:
        x = np.int64(lo + i)
        r = np.int64(0)
        for _ in range(logn):
            r = (r << np.int64(1)) | (x & np.int64(1))
            x >>= np.int64(1)
        for j in range(8):
            dst[i, j] = src[r, j]


def gather_bitrev(d_h: Any, lo: int, hi: int, logn: int, out: Any) -> Any:
    """h's coefficients lo..hi-1 in natural order (h is held bit-reversed: position p holds h_bitrev(p)),
    into ``out[:hi - lo]``: the scalars of an H MSM pass over bases in natural order."""
    n = hi - lo
    dst = out[:n]
    if n:
        _gather_bitrev_kernel[(n + THREADS - 1) // THREADS, THREADS](d_h, lo, logn, dst)
    return dst


@kernel
def _mul_kernel(a, b):
    """a <- a b (Montgomery, (n, 8))."""
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    if i < a.shape[0]:
        fr_store(a, i, fr_mul(fr_load(a, i), fr_load(b, i)))


@kernel
def _sub_scale_kernel(a, c, zinv):
    """a <- (a - c) zinv[0]: with a = a b from _mul_kernel, the quotient (a b - c) / Z on the coset."""
    i = cuda.grid(1)  # type: ignore[call-arg, var-annotated]  # numba's @intrinsic signature
    if i < a.shape[0]:
        fr_store(a, i, fr_mul(fr_sub(fr_load(a, i), fr_load(c, i)), fr_load(zinv, 0)))


def mul_into(d_a: Any, d_b: Any) -> None:
    """a <- a b on (n, 8) device arrays."""
    n = d_a.shape[0]
    _mul_kernel[(n + THREADS - 1) // THREADS, THREADS](d_a, d_b)


def sub_scale(d_a: Any, d_c: Any, d_zinv: Any) -> None:
    """a <- (a - c) z^-1 on (n, 8) device arrays."""
    n = d_a.shape[0]
    _sub_scale_kernel[(n + THREADS - 1) // THREADS, THREADS](d_a, d_c, d_zinv)


def ptx_signatures(arr: Any) -> list[tuple[str, object, tuple[Any, ...]]]:
    """(name, kernel, numba signature) for benchmarks/ptx_check_ntt.py."""
    from numba import types

    return [
        ("zero_rows", _zero_rows_kernel, (arr(2), types.int64)),
        ("gather", _gather_kernel, (arr(2), arr(1), arr(2))),
        ("gather_bitrev", _gather_bitrev_kernel, (arr(2), types.int64, types.int64, arr(2))),
        ("mul", _mul_kernel, (arr(2), arr(2))),
        ("sub_scale", _sub_scale_kernel, (arr(2), arr(2), arr(2))),
    ]
