"""G1/G2 arithmetic (XYZZ and Jacobian, identity and P == ±Q cases) against blst (pyblst) and py_ecc."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _points import random_points  # tests/gpu is on sys.path (pytest rootdir-relative imports)
from numba import njit
from py_ecc import optimized_bls12_381 as ecc
from pyblst import BlstP1Element, BlstP2Element

import gpu.curves._generated.g1 as G1c
import gpu.curves._generated.g2 as G2c
from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import G1, G2

GROUPS = {"g1": G1, "g2": G2}
IDENT = {"g1": BlstP1Element, "g2": BlstP2Element}


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
@pytest.mark.parametrize("name", ["g1", "g2"])
def test_add_double_neg_mul_vs_blst(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G = GROUPS[name]
    a, pa = random_points(name, 6, rnd)
    b, pb = random_points(name, 6, rnd)
    ident = G.encode([None])
    # edge rows: P + P, P + (-P), P + O, O + P, O + O
    A = np.concatenate([a, a[:1], a[:1], a[:1], ident, ident])
    B = np.concatenate([b, a[:1], G.neg(a[:1]), ident, a[:1], ident])
    PA = pa + [pa[0]] * 3 + [IDENT[name]()] * 2
    PB = pb + [pa[0], -pa[0], IDENT[name](), pa[0], IDENT[name]()]
    got = G.to_blst(G.add(A, B))
    assert got == [x + y for x, y in zip(PA, PB, strict=True)], seed
    assert G.to_blst(G.double(A)) == [x + x for x in PA], seed
    assert G.to_blst(G.neg(A)) == [-x for x in PA], seed
    ks = [rnd.randrange(R_MODULUS) for _ in range(len(PA) - 4)] + [0, 1, R_MODULUS - 1, 2]
    assert G.to_blst(G.mul(A, ks)) == [p.scalar_mul(k) for p, k in zip(PA, ks, strict=True)], seed
    assert (G.check(A) == 0).all()


def test_g1_vs_py_ecc(seed: int) -> None:
    """A second, pure-Python oracle (affine coordinates compared directly)."""
    rnd = random.Random(seed)
    k1, k2 = rnd.randrange(1, R_MODULUS), rnd.randrange(1, R_MODULUS)
    p1, p2 = ecc.multiply(ecc.G1, k1), ecc.multiply(ecc.G1, k2)

    def aff(p: tuple) -> tuple[int, int]:
        x, y = ecc.normalize(p)
        return (int(x.n), int(y.n))

    arr = G1.encode([aff(p1), aff(p2)])
    assert G1.decode(G1.add(arr[:1], arr[1:])) == [aff(ecc.add(p1, p2))]
    assert G1.decode(G1.double(arr[:1])) == [aff(ecc.double(p1))]
    k = rnd.randrange(R_MODULUS)
    assert G1.decode(G1.mul(arr[:1], [k])) == [aff(ecc.multiply(p1, k))]


def test_g2_vs_py_ecc(seed: int) -> None:
    rnd = random.Random(seed)
    k1 = rnd.randrange(1, R_MODULUS)
    p1 = ecc.multiply(ecc.G2, k1)
    p2 = ecc.double(p1)

    def aff(p: tuple) -> tuple:
        x, y = ecc.normalize(p)
        return ((int(x.coeffs[0]), int(x.coeffs[1])), (int(y.coeffs[0]), int(y.coeffs[1])))

    arr = G2.encode([aff(p1), aff(p2)])
    assert G2.decode(G2.add(arr[:1], arr[1:])) == [aff(ecc.add(p1, p2))]


def _jac_kernel(group: str):  # type: ignore[no-untyped-def]
    m = G1c if group == "g1" else G2c
    p_ = f"{group}_"
    jfa, jaa, jd, ja, jm, jx, xj = (
        getattr(m, p_ + s)
        for s in (
            "jac_from_affine",
            "jac_add_affine",
            "jac_dbl",
            "jac_add",
            "jac_mul",
            "jac_to_xyzz",
            "xyzz_to_jac",
        )
    )
    la, sj, ls, xfa = (
        getattr(m, p_ + s) for s in ("load_affine", "store_jac", "load_scalar", "xyzz_from_affine")
    )

    @njit
    def run(a, b, k, out):  # out: (n, 5, 3, ...) Jacobian results
        for i in range(a.shape[0]):
            p = la(a, i)
            q = la(b, i)
            jp = jfa(p)
            r0 = jaa(jp, q)  # P + Q (mixed)
            r1 = jd(jp)  # 2P
            r2 = ja(r0, jfa(q))  # P + 2Q
            r3 = jm(p, ls(k, i))  # kP
            r4 = xj(jx(ja(r1, r0)))  # 3P + Q through XYZZ and back
            for j, r in enumerate((r0, r1, r2, r3, r4)):
                sj(out[i], j, r)
            _ = xfa(q)

    return run


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
@pytest.mark.parametrize("name", ["g1", "g2"])
def test_jacobian_forms(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G = GROUPS[name]
    a, pa = random_points(name, 3, rnd)
    b, pb = random_points(name, 3, rnd)
    ident = G.encode([None])
    a = np.concatenate([a, a[:1], ident, a[:1]])
    b = np.concatenate([b, a[:1], a[:1], G.neg(a[:1])])
    pa = pa + [pa[0], IDENT[name](), pa[0]]
    pb = pb + [pa[0], pa[0], -pa[0]]
    ks = [rnd.randrange(R_MODULUS) for _ in range(len(pa))]
    from gpu.arith.fields import fr_from_ints

    out = np.zeros((len(pa), 5, 3) + G.coord_shape, dtype=np.uint32)
    _jac_kernel(name)(a, b, fr_from_ints(ks), out)
    res = G.to_blst(G.jac_to_affine(out.reshape((-1, 3) + G.coord_shape)))
    for i, (p, q, k) in enumerate(zip(pa, pb, ks, strict=True)):
        want = [p + q, p + p, p + q + q, p.scalar_mul(k), p + p + p + q]
        assert res[5 * i : 5 * i + 5] == want, (seed, i)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_batch_normalisation_with_identities(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G = GROUPS[name]
    a, pa = random_points(name, 70, rnd)
    m = G1c if name == "g1" else G2c
    xyzz = np.zeros((a.shape[0], 4) + G.coord_shape, dtype=np.uint32)

    @njit
    def lift(a, out):  # P -> 2P - P: a non-trivial Z
        for i in range(a.shape[0]):
            q = getattr_la(a, i)
            getattr_sx(out, i, getattr_add(getattr_dbl(q), getattr_neg(q)))

    getattr_la, getattr_sx = m.__dict__[f"{name}_load_affine"], m.__dict__[f"{name}_store_xyzz"]
    getattr_add, getattr_dbl = m.__dict__[f"{name}_xyzz_add_affine"], m.__dict__[f"{name}_xyzz_dbl_affine"]
    getattr_neg = m.__dict__[f"{name}_affine_neg"]
    lift(a, xyzz)
    xyzz[[3, 40, 69]] = 0  # identities (ZZ = 0) inside chunks
    res = G.to_blst(G.xyzz_to_affine(xyzz))
    want = list(pa)
    for i in (3, 40, 69):
        want[i] = IDENT[name]()
    assert res == want, seed
