"""Small CUDA kernels of the prover: padding the quotient's input buffers, gathering the A/B scalars on the
device."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda, uint32

from gpu.arith.cudashim import kernel

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


def gather(d_src: Any, d_idx: Any) -> Any:
    """dst[i] = src[idx[i]] for (n, 8) device arrays: the A/B scalar vectors from the resident witness."""
    n = d_idx.shape[0]
    dst = cuda.device_array((max(n, 1), 8), dtype=np.uint32)
    if n:
        _gather_kernel[(n + THREADS - 1) // THREADS, THREADS](d_src, d_idx, dst)
    return dst[:n]


def ptx_signatures(arr: Any) -> list[tuple[str, object, tuple[Any, ...]]]:
    """(name, kernel, numba signature) for benchmarks/ptx_check_ntt.py."""
    from numba import types

    return [
        ("zero_rows", _zero_rows_kernel, (arr(2), types.int64)),
        ("gather", _gather_kernel, (arr(2), arr(1), arr(2))),
    ]
