"""zcash encodings: round trips, byte-for-byte agreement with blst, and rejection of invalid encodings,
off-curve points and points outside the order-r subgroup."""

from __future__ import annotations

import random

import numpy as np
import pytest
from _points import random_points  # tests/gpu is on sys.path
from pyblst import BlstP1Element, BlstP2Element

from gpu.arith.fields.constants import P_MODULUS as P
from gpu.curves import G1, G2, EncodingError
from gpu.curves.serialisation import fq2_sqrt, fq_sqrt

GROUPS = {"g1": G1, "g2": G2}
BLST = {"g1": BlstP1Element, "g2": BlstP2Element}


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_round_trips_and_blst_interop(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G = GROUPS[name]
    a, pts = random_points(name, 8, rnd)
    a = np.concatenate([a, G.encode([None])])
    pts = pts + [BLST[name]()]
    comp = G.to_bytes(a, compressed=True)
    k = G.compressed_size
    assert comp == b"".join(p.compress() for p in pts), seed  # byte-identical to blst
    assert [BLST[name].uncompress(comp[i * k : (i + 1) * k]) for i in range(len(pts))] == pts
    np.testing.assert_array_equal(G.from_bytes(comp), a)
    unc = G.to_bytes(a, compressed=False)
    assert len(unc) == 2 * k * len(pts)
    np.testing.assert_array_equal(G.from_bytes(unc, compressed=False), a)
    np.testing.assert_array_equal(G.from_blst(pts), a)
    # uncompressed = x || y with x identical to the compressed x (flags aside), identity = 0x40 then zeros
    u0, c0 = unc[: 2 * k], comp[:k]
    assert u0[0] & 0xE0 == 0 and u0[1:k] == c0[1:] and (u0[0] | (c0[0] & 0xE0)) == c0[0]
    assert unc[-2 * k :] == bytes([0x40]) + bytes(2 * k - 1)
    assert comp[-k:] == bytes([0xC0]) + bytes(k - 1)


def test_uncompressed_g2_layout(seed: int) -> None:
    """x = c1 || c0, y = c1 || c0, big-endian (zcash), checked against the integers."""
    a, _ = random_points("g2", 1, random.Random(seed))
    ((x0, x1), (y0, y1)) = G2.decode(a)[0]
    want = b"".join(v.to_bytes(48, "big") for v in (x1, x0, y1, y0))
    assert G2.to_bytes(a, compressed=False) == want


def _flip(b: bytes, i: int, mask: int) -> bytes:
    x = bytearray(b)
    x[i] ^= mask
    return bytes(x)


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_invalid_encodings_rejected(name: str, seed: int) -> None:
    rnd = random.Random(seed)
    G = GROUPS[name]
    a, _ = random_points(name, 1, rnd)
    comp = G.to_bytes(a)
    unc = G.to_bytes(a, compressed=False)
    k = G.compressed_size
    bad = [
        (comp[:-1], True),  # wrong length
        (_flip(comp, 0, 0x80), True),  # compression flag missing
        (_flip(unc, 0, 0x80), False),  # compression flag on uncompressed data
        (_flip(unc, 0, 0x20), False),  # sign flag on uncompressed data
        (bytes([0xC0]) + bytes(k - 2) + b"\x01", True),  # infinity with non-zero bits
        (bytes([0xE0]) + bytes(k - 1), True),  # infinity with the sign flag
        (bytes([0x40]) + bytes(2 * k - 2) + b"\x01", False),
        (bytes([0x80 | 0x1F]) + b"\xff" * (k - 1), True),  # x >= p
    ]
    for data, compressed in bad:
        with pytest.raises(EncodingError):
            G.from_bytes(data, compressed=compressed)
    # uncompressed point off the curve: perturb the last byte of y
    with pytest.raises(EncodingError, match="not on"):
        G.from_bytes(_flip(unc, 2 * k - 1, 0x01), compressed=False)
    # blst rejects what we reject
    with pytest.raises(ValueError):
        BLST[name].uncompress(_flip(comp, 0, 0x80))


def _off_subgroup_g1(rnd: random.Random) -> tuple[int, int]:
    while True:
        x = rnd.randrange(P)
        y = fq_sqrt((x**3 + 4) % P)
        if y is not None:
            return x, y


def _off_subgroup_g2(rnd: random.Random) -> tuple[tuple[int, int], tuple[int, int]]:
    def m2(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)

    while True:
        x = (rnd.randrange(P), rnd.randrange(P))
        x3 = m2(m2(x, x), x)
        y = fq2_sqrt(((x3[0] + 4) % P, (x3[1] + 4) % P))
        if y is not None:
            return x, y


@pytest.mark.parametrize("name", ["g1", "g2"])
def test_points_outside_subgroup_rejected(name: str, seed: int) -> None:
    """Random curve points (cofactor not cleared) are on the curve but, with overwhelming probability,
    not in the order-r subgroup: we reject them, as blst does."""
    rnd = random.Random(seed)
    G = GROUPS[name]
    q = _off_subgroup_g1(rnd) if name == "g1" else _off_subgroup_g2(rnd)
    arr = G.encode([q])
    assert G.check(arr, subgroup=False)[0] == 0
    assert G.check(arr)[0] == 2
    for compressed in (True, False):
        data = G.to_bytes(arr, compressed=compressed)
        with pytest.raises(EncodingError, match="subgroup"):
            G.from_bytes(data, compressed=compressed)
        np.testing.assert_array_equal(G.from_bytes(data, compressed=compressed, subgroup_check=False), arr)
    with pytest.raises(ValueError):
        BLST[name].uncompress(G.to_bytes(arr))
