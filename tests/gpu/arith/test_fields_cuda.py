"""The same field code inside CUDA kernels (simulator in CI, the real GPU with PSAGENT_REAL_CUDA=1) gives the
CPU path's results, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import gpu.arith.fields as F
from gpu.arith.cudashim import kernel


@kernel
def _fr_kernel(a, b, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = F.fr_load(a, i)
        y = F.fr_load(b, i)
        F.fr_store(out, 3 * i, F.fr_mul(x, y))
        F.fr_store(out, 3 * i + 1, F.fr_sub(F.fr_add(x, y), F.fr_sqr(y)))
        F.fr_store(out, 3 * i + 2, F.fr_neg(x))


@kernel
def _fq_kernel(a, b, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = F.fq_load(a, i)
        y = F.fq_load(b, i)
        F.fq_store(out, 3 * i, F.fq_mul(x, y))
        F.fq_store(out, 3 * i + 1, F.fq_sub(F.fq_add(x, y), F.fq_sqr(y)))
        F.fq_store(out, 3 * i + 2, F.fq_neg(x))


@kernel
def _fq_inv_kernel(a, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < a.shape[0]:
        F.fq_store(out, i, F.fq_inv(F.fq_load(a, i)))


@pytest.mark.parametrize("name", ["fr", "fq"])
def test_kernel_matches_cpu(name: str, rng: np.random.Generator, seed: int) -> None:
    g = {
        k: getattr(F, f"{name}_{k}")
        for k in ("random", "to_mont", "mul_batch", "add_batch", "sub_batch", "sqr_batch", "neg_batch")
    }
    n = 24
    a = g["to_mont"](g["random"](n, rng))
    b = g["to_mont"](g["random"](n, rng))
    a[0] = 0  # an edge case among the random ones
    out = np.full((3 * n, a.shape[1]), 0xDEADBEEF, dtype=np.uint32)  # poisoned: every row must be written
    k = _fr_kernel if name == "fr" else _fq_kernel
    k[(n + 31) // 32, 32](a, b, out)
    want = np.empty_like(out)
    want[0::3] = g["mul_batch"](a, b)
    want[1::3] = g["sub_batch"](g["add_batch"](a, b), g["sqr_batch"](b))
    want[2::3] = g["neg_batch"](a)
    np.testing.assert_array_equal(out, want, err_msg=f"seed {seed}")


def test_inverse_kernel(rng: np.random.Generator) -> None:
    n = 2  # an exponentiation is ~800 multiplications: slow in the simulator
    a = F.fq_to_mont(F.fq_random(n, rng))
    out = np.zeros_like(a)
    _fq_inv_kernel[1, 32](a, out)
    np.testing.assert_array_equal(out, F.fq_inv_batch(a, method="fermat"))
