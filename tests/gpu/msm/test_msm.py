"""MSM (CPU backend) against blst: sum of scalar multiplications, sizes 1..2^12, and the edge cases of the
Groth16 split (zero scalars, scalar one, r - 1, repeated points, identity bases)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _points import random_points  # tests/gpu is on sys.path
from pyblst import BlstP1Element, BlstP2Element

from gpu.arith.fields import fr_from_ints
from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import G1, G2
from gpu.msm import MSMContext, msm_g1, msm_g2, num_windows

R = R_MODULUS
GROUPS = {"g1": (G1, BlstP1Element, msm_g1), "g2": (G2, BlstP2Element, msm_g2)}


def _oracle(pts: list, ks: list[int], ident):  # type: ignore[no-untyped-def]
    acc = ident()
    for p, k in zip(pts, ks, strict=True):
        if k % R:
            acc = acc + p.scalar_mul(k)
    return acc


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 333, 1024, 4096])
def test_g1_random_sizes(n: int, seed: int) -> None:
    rnd = random.Random(seed)
    a, pts = random_points("g1", n, rnd)
    ks = [rnd.randrange(R) for _ in range(n)]
    res = msm_g1(a, fr_from_ints(ks))
    assert G1.to_blst(res[None])[0] == _oracle(pts, ks, BlstP1Element), (seed, n)


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
@pytest.mark.parametrize("n", [1, 7, 200])
def test_g2_random_sizes(n: int, seed: int) -> None:
    rnd = random.Random(seed)
    a, pts = random_points("g2", n, rnd)
    ks = [rnd.randrange(R) for _ in range(n)]
    res = msm_g2(a, fr_from_ints(ks))
    assert G2.to_blst(res[None])[0] == _oracle(pts, ks, BlstP2Element), (seed, n)


def _edge_case_inputs(name: str, rnd: random.Random) -> tuple[np.ndarray, list, list[int]]:
    G, ident, _ = GROUPS[name]
    a, pts = random_points(name, 12, rnd)
    # repeated points, an identity base, and a point next to its negation
    a = np.concatenate([a, a[:3], G.encode([None]), G.neg(a[4:5])])
    pts = pts + pts[:3] + [ident(), -pts[4]]
    ks = [0, 1, R - 1, 1, 0, 2, R - 2, rnd.randrange(R), 1, (1 << 254) + 12345, 3, rnd.randrange(R)]
    ks += [1, R - 1, rnd.randrange(R), rnd.randrange(R), rnd.randrange(R)]
    return a, pts, ks


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_edge_cases(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G, ident, f = GROUPS[name]
    a, pts, ks = _edge_case_inputs(name, rnd)
    assert G.to_blst(f(a, fr_from_ints(ks))[None])[0] == _oracle(pts, ks, ident), seed
    # all zero -> identity (all-zero affine array); all one -> plain sum; only r-1 -> minus the sum
    n = len(ks)
    assert not f(a, fr_from_ints([0] * n)).any()
    assert G.to_blst(f(a, fr_from_ints([1] * n))[None])[0] == _oracle(pts, [1] * n, ident)
    assert G.to_blst(f(a, fr_from_ints([R - 1] * n))[None])[0] == _oracle(pts, [R - 1] * n, ident)
    # the same point repeated with equal scalars: one bucket holds everything
    rep = np.repeat(a[:1], 40, axis=0)
    k = rnd.randrange(R)
    assert G.to_blst(f(rep, fr_from_ints([k] * 40))[None])[0] == pts[0].scalar_mul(40 * k % R)


@pytest.mark.parametrize("c", [2, 3, 5, 8, 11, 16])
def test_window_sizes(c: int, seed: int) -> None:
    rnd = random.Random(seed)
    a, pts = random_points("g1", 50, rnd)
    ks = [rnd.randrange(R) for _ in range(50)]
    ctx = MSMContext(a, backend="cpu")
    assert G1.to_blst(ctx.msm(fr_from_ints(ks), window=c)[None])[0] == _oracle(pts, ks, BlstP1Element)
    assert num_windows(c) * c >= 256


def test_context_reuse_and_prefix(seed: int) -> None:
    rnd = random.Random(seed)
    a, pts = random_points("g1", 30, rnd)
    ctx = MSMContext(a, backend="cpu")
    for m in (30, 11):
        ks = [rnd.randrange(R) for _ in range(m)]
        assert G1.to_blst(ctx.msm(fr_from_ints(ks))[None])[0] == _oracle(pts[:m], ks, BlstP1Element)
    with pytest.raises(ValueError):
        ctx.msm(fr_from_ints([1] * 31))
    with pytest.raises(ValueError):
        msm_g2(a, fr_from_ints([1] * 30))
