"""Fr and Fq arithmetic against Python integers, on fresh random inputs every run plus edge cases."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpu.arith.fields as F
from gpu.arith.fields.constants import FQ_R, FR_R, P_MODULUS, R_MODULUS


def _field(name: str) -> SimpleNamespace:
    ns = {k[len(name) + 1 :]: getattr(F, k) for k in dir(F) if k.startswith(name + "_")}
    m, n, R = (R_MODULUS, 8, FR_R) if name == "fr" else (P_MODULUS, 12, FQ_R)
    return SimpleNamespace(name=name, m=m, n=n, R=R, **ns)


FIELDS = [_field("fr"), _field("fq")]
ids = [f.name for f in FIELDS]


def _sample(f: SimpleNamespace, rnd: random.Random, k: int) -> list[int]:
    edge = [0, 1, 2, f.m - 1, f.m - 2, (f.m - 1) // 2, (1 << 32) - 1, 1 << 32, f.R % f.m]
    return edge + [rnd.randrange(f.m) for _ in range(k)]


@pytest.mark.slow  # mostly first-use compilation (> 5 s cold on the 2-core CI machine)
@pytest.mark.parametrize("f", FIELDS, ids=ids)
def test_batch_ops_match_python_ints(f: SimpleNamespace, seed: int) -> None:
    rnd = random.Random(seed)
    xs = _sample(f, rnd, 300)
    ys = _sample(f, rnd, 300)
    rnd.shuffle(ys)
    a, b = f.encode(xs), f.encode(ys)
    m = f.m
    assert f.decode(f.mul_batch(a, b)) == [x * y % m for x, y in zip(xs, ys, strict=False)], seed
    assert f.decode(f.sqr_batch(a)) == [x * x % m for x in xs], seed
    assert f.decode(f.add_batch(a, b)) == [(x + y) % m for x, y in zip(xs, ys, strict=False)], seed
    assert f.decode(f.sub_batch(a, b)) == [(x - y) % m for x, y in zip(xs, ys, strict=False)], seed
    assert f.decode(f.neg_batch(a)) == [(-x) % m for x in xs], seed
    one_row = f.encode([ys[5]])
    assert f.decode(f.mul_batch(a, one_row)) == [x * ys[5] % m for x in xs], seed
    # every output limb array is fully reduced
    assert f.is_canonical(f.mul_batch(a, b)).all()


@pytest.mark.parametrize("f", FIELDS, ids=ids)
def test_inverse_and_pow(f: SimpleNamespace, seed: int) -> None:
    rnd = random.Random(seed)
    xs = _sample(f, rnd, 150)
    a = f.encode(xs)
    want = [pow(x, -1, f.m) if x else 0 for x in xs]
    assert f.decode(f.inv_batch(a)) == want, seed
    assert f.decode(f.inv_batch(a, method="fermat")) == want, seed
    e = rnd.randrange(1 << 70)
    assert f.decode(f.pow_batch(a, e)) == [pow(x, e, f.m) for x in xs], seed
    assert f.decode(f.pow_batch(a, 0)) == [1] * len(xs)
    # empty and odd sizes for the chunked Montgomery trick
    assert f.inv_batch(a[:0]).shape == (0, f.n)
    assert f.decode(f.inv_batch(a[:3])) == want[:3]


@pytest.mark.parametrize("f", FIELDS, ids=ids)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_device_level_ops_from_python(f: SimpleNamespace, data: st.DataObject) -> None:
    """The jitable ops run as plain Python too (the simulator path): same results as integers."""
    x = data.draw(st.integers(0, f.m - 1) | st.sampled_from([0, 1, f.m - 1]))
    y = data.draw(st.integers(0, f.m - 1) | st.sampled_from([0, 1, f.m - 1]))
    a = tuple(f.encode([x])[0])
    b = tuple(f.encode([y])[0])

    def val(t: tuple) -> int:
        return f.decode(np.array([t], dtype=np.uint32))[0]

    assert val(f.mul(a, b)) == x * y % f.m
    assert val(f.add(a, b)) == (x + y) % f.m
    assert val(f.sub(a, b)) == (x - y) % f.m
    assert val(f.neg(a)) == (-x) % f.m
    assert val(f.dbl(a)) == 2 * x % f.m
    assert f.is_zero(a) == (x == 0)
    assert f.eq(a, b) == (x == y)


@pytest.mark.parametrize("f", FIELDS, ids=ids)
def test_conversions(f: SimpleNamespace, seed: int) -> None:
    rnd = random.Random(seed)
    xs = _sample(f, rnd, 50)
    limbs = f.from_ints(xs)
    assert limbs.dtype == np.uint32 and limbs.shape == (len(xs), f.n) and limbs.flags.c_contiguous
    assert f.to_ints(limbs) == xs
    assert int(limbs[3, 0]) == xs[3] & 0xFFFFFFFF  # little-endian limbs
    mont = f.to_mont(limbs)
    assert f.to_ints(mont) == [x * f.R % f.m for x in xs]
    assert f.to_ints(f.from_mont(mont)) == xs
    nb = f.n * 4
    for order in ("little", "big"):
        raw = f.to_bytes(limbs, order)
        assert raw == b"".join(x.to_bytes(nb, order) for x in xs)
        assert f.to_ints(f.from_bytes(raw, order)) == xs
    with pytest.raises(ValueError):
        f.from_ints([f.m])
    with pytest.raises(ValueError):
        f.from_ints([-1])
    bad = (f.m + 5).to_bytes(nb, "little")
    with pytest.raises(ValueError):
        f.from_bytes(bad)
    assert f.to_ints(f.from_bytes(bad, reduce=True)) == [5]
    with pytest.raises(ValueError):
        f.from_bytes(b"\x00" * (nb + 1))
    with pytest.raises(ValueError):
        f.mul_batch(np.zeros((3, f.n), np.uint64), np.zeros((3, f.n), np.uint32))
    r = f.random(1000, np.random.default_rng(seed))
    assert r.shape == (1000, f.n) and f.is_canonical(r).all()
    assert len(set(f.to_ints(r[:50]))) == 50


def test_fq2_against_python(seed: int) -> None:
    rnd = random.Random(seed)
    p = P_MODULUS

    def m2(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return ((a[0] * b[0] - a[1] * b[1]) % p, (a[0] * b[1] + a[1] * b[0]) % p)

    xs = [(rnd.randrange(p), rnd.randrange(p)) for _ in range(40)] + [(0, 0), (1, 0), (0, 1), (p - 1, p - 1)]
    ys = [(rnd.randrange(p), rnd.randrange(p)) for _ in range(len(xs))]
    a, b = F.fq2_encode(xs), F.fq2_encode(ys)
    assert F.fq2_decode(a) == xs
    assert F.fq2_decode(F.fq2_mul_batch(a, b)) == [m2(x, y) for x, y in zip(xs, ys, strict=False)]
    assert F.fq2_decode(F.fq2_sqr_batch(a)) == [m2(x, x) for x in xs]
    inv = F.fq2_decode(F.fq2_inv_batch(a))
    for x, ix in zip(xs, inv, strict=False):
        assert m2(x, ix) == ((1, 0) if x != (0, 0) else (0, 0))
    # tuple-level ops from Python
    t = (tuple(a[0, 0]), tuple(a[0, 1]))
    u = (tuple(b[0, 0]), tuple(b[0, 1]))
    s = F.fq2_sub(F.fq2_add(t, u), u)
    assert F.fq2_eq(s, t)
    assert F.fq2_is_zero(F.fq2_add(t, F.fq2_neg(t)))
