"""Curve formulas inside CUDA kernels (simulator in CI, real GPU with PSAGENT_REAL_CUDA=1) == CPU path."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _points import random_points  # tests/gpu is on sys.path
from numba import cuda

import gpu.curves._generated.g1 as C1
import gpu.curves._generated.g2 as C2
from gpu.arith.cudashim import kernel
from gpu.curves import G1, G2


@kernel
def _g1_kernel(a, b, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < a.shape[0]:
        p = C1.g1_xyzz_from_affine(C1.g1_load_affine(a, i))
        q = C1.g1_load_affine(b, i)
        s = C1.g1_xyzz_add_affine(p, q)  # P + Q
        d = C1.g1_xyzz_dbl(s)  # 2(P + Q)
        C1.g1_store_xyzz(out, 2 * i, C1.g1_xyzz_add(d, C1.g1_xyzz_neg(p)))  # P + 2Q
        C1.g1_store_xyzz(out, 2 * i + 1, C1.g1_xyzz_add_affine(s, C1.g1_affine_neg(q)))  # P


@kernel
def _g2_kernel(a, b, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < a.shape[0]:
        p = C2.g2_xyzz_from_affine(C2.g2_load_affine(a, i))
        q = C2.g2_load_affine(b, i)
        s = C2.g2_xyzz_add_affine(p, q)
        d = C2.g2_xyzz_dbl(s)
        C2.g2_store_xyzz(out, 2 * i, C2.g2_xyzz_add(d, C2.g2_xyzz_neg(p)))
        C2.g2_store_xyzz(out, 2 * i + 1, C2.g2_xyzz_add_affine(s, C2.g2_affine_neg(q)))


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_kernel_formulas(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G = G1 if name == "g1" else G2
    n = 4
    a, pa = random_points(name, n, rnd)
    b, pb = random_points(name, n, rnd)
    b[1] = a[1]  # P + P through the madd special case
    pb[1] = pa[1]
    a[2] = 0  # identity
    pa[2] = type(pa[2])()
    out = np.zeros((2 * n, 4) + G.coord_shape, dtype=np.uint32)
    (_g1_kernel if name == "g1" else _g2_kernel)[1, 32](a, b, out)
    res = G.to_blst(G.xyzz_to_affine(out))
    want = []
    for p, q in zip(pa, pb, strict=True):
        want += [p + q + q, p]
    assert res == want, seed
