"""zcash/IETF encodings of G1 and G2 points (the format of blst, bellperson and Filecoin's parameter files).

Layout: coordinates big-endian, 48 bytes per Fq element, Fq2 written c1 || c0. The three top bits of the first
byte are flags: 0x80 compressed, 0x40 point at infinity, 0x20 (compressed only) "y is the larger root"
(y > (p-1)/2; for Fq2, decided by c1 unless c1 == 0, then by c0). Compressed: x only (48 / 96 bytes);
uncompressed: x || y (96 / 192 bytes). The identity is 0x40 (uncompressed) or 0xc0 (compressed), then zeros.

Bulk paths are vectorised with numpy; recovering y from a compressed x (a square root) uses Python integers.
Decoding rejects: wrong length or compression flag, flags on the identity, coordinates >= p, a sign flag on
uncompressed data, points off the curve and (by default) points outside the order-r subgroup.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpu.arith.fields import fq_from_mont, fq_is_canonical, fq_to_mont
from gpu.arith.fields.constants import P_MODULUS

P = P_MODULUS
HALF = (P - 1) // 2
FLAG_COMPRESSED = 0x80
FLAG_INFINITY = 0x40
FLAG_SIGN = 0x20


class EncodingError(ValueError):
    """Bytes that are not a valid encoding of a point of the expected group."""


# ---------------------------------------------------------------- integer helpers (square roots)


def fq_sqrt(a: int) -> int | None:
    """A square root of a mod p (p = 3 mod 4), or None."""
    r = pow(a, (P + 1) // 4, P)
    return r if r * r % P == a % P else None


def _m2(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return ((a[0] * b[0] - a[1] * b[1]) % P, (a[0] * b[1] + a[1] * b[0]) % P)


def _pow2(a: tuple[int, int], e: int) -> tuple[int, int]:
    r = (1, 0)
    for bit in bin(e)[2:]:
        r = _m2(r, r)
        if bit == "1":
            r = _m2(r, a)
    return r


def fq2_sqrt(a: tuple[int, int]) -> tuple[int, int] | None:
    """A square root in Fq2 (Adj & Rodriguez-Henriquez, algorithm 9 for p = 3 mod 4), or None."""
    if a == (0, 0):
        return (0, 0)
    a1 = _pow2(a, (P - 3) // 4)
    alpha = _m2(_m2(a1, a1), a)
    x0 = _m2(a1, a)
    if alpha == (P - 1, 0):
        x = (-x0[1] % P, x0[0])  # u * x0
    else:
        b = _pow2(((1 + alpha[0]) % P, alpha[1]), (P - 1) // 2)
        x = _m2(b, x0)
    return x if _m2(x, x) == (a[0] % P, a[1] % P) else None


def fq2_is_larger(y: tuple[int, int]) -> bool:
    """The zcash sign of an Fq2 element: c1 > (p-1)/2, or c1 == 0 and c0 > (p-1)/2."""
    return y[1] > HALF if y[1] else y[0] > HALF


# ---------------------------------------------------------------- limb arrays <-> big-endian bytes

_HALF_LIMBS = np.array([(HALF >> (32 * j)) & 0xFFFFFFFF for j in range(12)], dtype=np.uint32)


def _gt_half(a: np.ndarray) -> np.ndarray:
    """Rows of canonical (n, 12) limbs that are > (p-1)/2."""
    gt = np.zeros(a.shape[0], dtype=bool)
    eq = np.ones(a.shape[0], dtype=bool)
    for j in range(11, -1, -1):
        gt |= eq & (a[:, j] > _HALF_LIMBS[j])
        eq &= a[:, j] == _HALF_LIMBS[j]
    return gt


def _limbs_to_be(a: np.ndarray) -> np.ndarray:
    """(n, 12) canonical limbs -> (n, 48) big-endian bytes."""
    return np.ascontiguousarray(a.astype("<u4").view(np.uint8).reshape(-1, 48)[:, ::-1])


def _be_to_limbs(b: np.ndarray) -> np.ndarray:
    """(n, 48) big-endian bytes -> (n, 12) limbs."""
    return np.ascontiguousarray(b[:, ::-1]).view("<u4").astype(np.uint32).reshape(-1, 12)


def _coords_canonical(points: np.ndarray, fq2: bool) -> np.ndarray:
    """(n, 2, [2,] 12) Montgomery -> canonical limbs, same shape."""
    flat = np.ascontiguousarray(points).reshape(-1, 12)
    return fq_from_mont(flat).reshape(points.shape)


def encode_points(points: np.ndarray, *, fq2: bool, compressed: bool) -> bytes:
    """Affine Montgomery points ((n, 2, 12) for G1, (n, 2, 2, 12) for G2) -> zcash bytes."""
    n = points.shape[0]
    ident = ~np.any(points.reshape(n, -1), axis=1)
    can = _coords_canonical(points, fq2)
    if fq2:
        # (n, 2 coords, 2 comps, 12) -> per coordinate c1 || c0
        x = np.concatenate([_limbs_to_be(can[:, 0, 1]), _limbs_to_be(can[:, 0, 0])], axis=1)
        y = np.concatenate([_limbs_to_be(can[:, 1, 1]), _limbs_to_be(can[:, 1, 0])], axis=1)
        y1_zero = ~np.any(can[:, 1, 1], axis=1)
        sign = np.where(y1_zero, _gt_half(can[:, 1, 0]), _gt_half(can[:, 1, 1]))
    else:
        x = _limbs_to_be(can[:, 0])
        y = _limbs_to_be(can[:, 1])
        sign = _gt_half(can[:, 1])
    out = x.copy() if compressed else np.concatenate([x, y], axis=1)
    if compressed:
        out[:, 0] |= np.where(sign, FLAG_COMPRESSED | FLAG_SIGN, FLAG_COMPRESSED).astype(np.uint8)
    if ident.any():
        out[ident] = 0
        out[ident, 0] = FLAG_INFINITY | (FLAG_COMPRESSED if compressed else 0)
    return out.tobytes()


def decode_points(data: bytes, *, fq2: bool, compressed: bool) -> np.ndarray:
    """zcash bytes -> affine Montgomery points. Checks flags, canonical coordinates and (compressed) that x
    has a y; the caller checks the curve equation (uncompressed) and the subgroup."""
    size = (96 if fq2 else 48) * (1 if compressed else 2)
    data = bytes(data)
    if len(data) % size:
        raise EncodingError(f"length {len(data)} is not a multiple of {size}")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, size).copy()
    n = raw.shape[0]
    flags = raw[:, 0] & 0xE0
    if compressed and not np.all(flags & FLAG_COMPRESSED):
        raise EncodingError("compression flag missing on compressed data")
    if not compressed and np.any(flags & FLAG_COMPRESSED):
        raise EncodingError("compression flag set on uncompressed data")
    inf = (flags & FLAG_INFINITY) != 0
    sign = (flags & FLAG_SIGN) != 0
    if not compressed and sign.any():
        raise EncodingError("sign flag set on uncompressed data")
    raw[:, 0] &= 0x1F
    if inf.any():
        if np.any(raw[inf]) or np.any(sign[inf]):
            raise EncodingError("point at infinity with non-zero bits")
    ncoord = (2 if fq2 else 1) * (1 if compressed else 2)
    limbs = _be_to_limbs(raw.reshape(n * ncoord, 48))
    if not fq_is_canonical(limbs).all():
        raise EncodingError("coordinate not below p")
    # reorder to (n, coords, [c0, c1], 12) canonical
    if fq2:
        limbs = limbs.reshape(n, ncoord // 2, 2, 12)[:, :, ::-1, :]
    else:
        limbs = limbs.reshape(n, ncoord, 12)
    if compressed:
        full = np.zeros((n, 2) + limbs.shape[2:], dtype=np.uint32)
        full[:, 0] = limbs[:, 0]
        xs = _ints(limbs[:, 0], fq2)
        for i in range(n):
            if inf[i]:
                continue
            y = _recover_y(xs[i], bool(sign[i]), fq2)
            full[i, 1] = _limbs_of(y, fq2)
        limbs = full
    else:
        limbs = np.ascontiguousarray(limbs)
    mont = fq_to_mont(np.ascontiguousarray(limbs).reshape(-1, 12)).reshape(limbs.shape)
    mont[inf] = 0
    return mont


def _ints(a: np.ndarray, fq2: bool) -> list[int] | list[tuple[int, int]]:
    raw = np.ascontiguousarray(a).astype("<u4").tobytes()
    vals = [int.from_bytes(raw[i * 48 : (i + 1) * 48], "little") for i in range(len(raw) // 48)]
    if fq2:
        return [(vals[2 * i], vals[2 * i + 1]) for i in range(len(vals) // 2)]
    return vals


def _limbs_of(v: int | tuple[int, int], fq2: bool) -> np.ndarray:
    vals: Sequence[int] = v if isinstance(v, tuple) else (v,)
    raw = b"".join(c.to_bytes(48, "little") for c in vals)
    arr = np.frombuffer(raw, dtype="<u4").astype(np.uint32)
    return arr.reshape(2, 12) if fq2 else arr


def _recover_y(x: int | tuple[int, int], larger: bool, fq2: bool) -> int | tuple[int, int]:
    if fq2:
        assert isinstance(x, tuple)
        x3 = _m2(_m2(x, x), x)
        y2 = ((x3[0] + 4) % P, (x3[1] + 4) % P)
        y = fq2_sqrt(y2)
        if y is None:
            raise EncodingError("x is not the abscissa of a G2 curve point")
        if fq2_is_larger(y) != larger:
            y = (-y[0] % P, -y[1] % P)
        return y
    assert isinstance(x, int)
    yy = fq_sqrt((x * x * x + 4) % P)
    if yy is None:
        raise EncodingError("x is not the abscissa of a G1 curve point")
    if (yy > HALF) != larger:
        yy = P - yy
    return yy
