"""Host-side (numpy / Python) API shared by G1 and G2; gpu.curves.g1 and gpu.curves.g2 bind it to a group."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from gpu.arith.cpupool import parallel_for
from gpu.arith.fields import fq_decode, fq_encode, fr_from_ints
from gpu.curves import serialisation as ser


@dataclass(frozen=True)
class Group:
    """One of G1/G2: its generated device code and array shapes."""

    name: str
    gen: ModuleType  # gpu.curves._generated.g1 / g2
    fq2: bool
    blst_cls: Any
    generator_ints: Any

    @property
    def coord_shape(self) -> tuple[int, ...]:
        return (2, 12) if self.fq2 else (12,)

    @property
    def affine_shape(self) -> tuple[int, ...]:
        return (2,) + self.coord_shape

    @property
    def compressed_size(self) -> int:
        return 96 if self.fq2 else 48

    # ------------------------------------------------------------ validation of arrays

    def check_array(self, a: np.ndarray, ncoords: int, name: str = "points") -> np.ndarray:
        a = np.ascontiguousarray(a)
        want = (ncoords,) + self.coord_shape
        if a.dtype != np.uint32 or a.ndim != 1 + len(want) or a.shape[1:] != want:
            raise ValueError(
                f"{name} must be a (n, {', '.join(map(str, want))}) uint32 array, got {a.dtype} {a.shape}"
            )
        return a

    # ------------------------------------------------------------ integers <-> arrays

    def encode(self, points: Iterable[Any]) -> np.ndarray:
        """Affine points as integers ((x, y) for G1, ((x0, x1), (y0, y1)) for G2; None = identity) ->
        (n, 2, ...) Montgomery array. No curve check (use check())."""
        pts = list(points)
        flat: list[int] = []
        for p in pts:
            if p is None:
                flat.extend([0] * (4 if self.fq2 else 2))
            elif self.fq2:
                flat.extend([p[0][0], p[0][1], p[1][0], p[1][1]])
            else:
                flat.extend([p[0], p[1]])
        return fq_encode(flat).reshape((len(pts),) + self.affine_shape)

    def decode(self, a: np.ndarray) -> list[Any]:
        """Inverse of encode (identity -> None)."""
        a = self.check_array(a, 2)
        vals = fq_decode(a.reshape(-1, 12))
        out: list[Any] = []
        k = 4 if self.fq2 else 2
        for i in range(a.shape[0]):
            v = vals[k * i : k * (i + 1)]
            if not any(v):
                out.append(None)
            elif self.fq2:
                out.append(((v[0], v[1]), (v[2], v[3])))
            else:
                out.append((v[0], v[1]))
        return out

    def generator(self) -> np.ndarray:
        """The standard generator as a (1, 2, ...) Montgomery array."""
        return self.encode([self.generator_ints])

    # ------------------------------------------------------------ bytes and pyblst

    def to_bytes(self, a: np.ndarray, compressed: bool = True) -> bytes:
        """zcash encoding of every point, concatenated."""
        return ser.encode_points(self.check_array(a, 2), fq2=self.fq2, compressed=compressed)

    def from_bytes(self, data: bytes, compressed: bool = True, subgroup_check: bool = True) -> np.ndarray:
        """Decode zcash bytes, rejecting invalid encodings, points off the curve and (unless disabled)
        points outside the prime-order subgroup, with EncodingError."""
        pts = ser.decode_points(data, fq2=self.fq2, compressed=compressed)
        status = self.check(pts, subgroup=subgroup_check)
        if np.any(status == 1):
            raise ser.EncodingError(f"{int(np.sum(status == 1))} point(s) not on the {self.name} curve")
        if np.any(status == 2):
            raise ser.EncodingError(f"{int(np.sum(status == 2))} point(s) not in the {self.name} subgroup")
        return pts

    def to_blst(self, a: np.ndarray) -> list[Any]:
        """pyblst elements (decoded by blst, which checks the subgroup)."""
        raw = self.to_bytes(a, compressed=True)
        k = self.compressed_size
        return [self.blst_cls.uncompress(raw[i * k : (i + 1) * k]) for i in range(len(raw) // k)]

    def from_blst(self, points: Sequence[Any]) -> np.ndarray:
        """pyblst elements -> (n, 2, ...) Montgomery array."""
        data = b"".join(p.compress() for p in points)
        return ser.decode_points(data, fq2=self.fq2, compressed=True)

    # ------------------------------------------------------------ CPU batch arithmetic

    def check(self, a: np.ndarray, subgroup: bool = True) -> np.ndarray:
        """Per point: 0 valid, 1 not on the curve, 2 on the curve but not in the order-r subgroup.
        The identity is valid."""
        a = self.check_array(a, 2)
        out = np.empty(a.shape[0], dtype=np.uint8)
        parallel_for(getattr(self.gen, f"_{self.name}_check_n"), a.shape[0], a, subgroup, out, min_chunk=1)
        return out

    def xyzz_to_affine(self, a: np.ndarray) -> np.ndarray:
        """Batch normalisation of (n, 4, ...) XYZZ points (one inversion per chunk)."""
        a = self.check_array(a, 4)
        out = np.empty((a.shape[0],) + self.affine_shape, dtype=np.uint32)
        parallel_for(getattr(self.gen, f"_{self.name}_xyzz_to_affine_n"), a.shape[0], a, out, min_chunk=64)
        return out

    def jac_to_affine(self, a: np.ndarray) -> np.ndarray:
        """Batch normalisation of (n, 3, ...) Jacobian points."""
        a = self.check_array(a, 3)
        x = np.empty((a.shape[0], 4) + self.coord_shape, dtype=np.uint32)
        parallel_for(getattr(self.gen, f"_{self.name}_jac_to_xyzz_n"), a.shape[0], a, x)
        return self.xyzz_to_affine(x)

    def mul(self, points: np.ndarray, scalars: np.ndarray) -> np.ndarray:
        """k_i * P_i for affine points and canonical (n, 8) Fr scalars; affine result."""
        points = self.check_array(points, 2)
        scalars = _scalars(scalars, points.shape[0])
        x = np.empty((points.shape[0], 4) + self.coord_shape, dtype=np.uint32)
        parallel_for(
            getattr(self.gen, f"_{self.name}_mul_n"), points.shape[0], points, scalars, x, min_chunk=1
        )
        return self.xyzz_to_affine(x)

    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Element-wise a_i + b_i of affine arrays (the identity and a == ±b included)."""
        a, b = self.check_array(a, 2), self.check_array(b, 2, "b")
        x = np.empty((a.shape[0], 4) + self.coord_shape, dtype=np.uint32)
        parallel_for(getattr(self.gen, f"_{self.name}_add_affine_n"), a.shape[0], a, b, x)
        return self.xyzz_to_affine(x)

    def double(self, a: np.ndarray) -> np.ndarray:
        a = self.check_array(a, 2)
        x = np.empty((a.shape[0], 4) + self.coord_shape, dtype=np.uint32)
        parallel_for(getattr(self.gen, f"_{self.name}_dbl_affine_n"), a.shape[0], a, x)
        return self.xyzz_to_affine(x)

    def neg(self, a: np.ndarray) -> np.ndarray:
        a = self.check_array(a, 2)
        out = a.copy()
        flat_y = np.ascontiguousarray(a[:, 1]).reshape(-1, 12)
        from gpu.arith.fields import fq_neg_batch

        out[:, 1] = fq_neg_batch(flat_y).reshape(out[:, 1].shape)
        return out

    def sum_xyzz(self, a: np.ndarray) -> np.ndarray:
        """Sum of (n, 4, ...) XYZZ points as a (1, 4, ...) XYZZ array (sequential, for small n)."""
        a = self.check_array(a, 4)
        p = getattr(self.gen, f"_{self.name}_sum_xyzz")(a)
        out = np.empty((1, 4) + self.coord_shape, dtype=np.uint32)
        getattr(self.gen, f"{self.name}_store_xyzz")(out, 0, p)
        return out


def _scalars(scalars: Any, n: int) -> np.ndarray:
    if isinstance(scalars, np.ndarray):
        s = np.ascontiguousarray(scalars)
        if s.dtype != np.uint32 or s.shape != (n, 8):
            raise ValueError(
                f"scalars must be a ({n}, 8) uint32 array of canonical Fr, got {s.dtype} {s.shape}"
            )
        return s
    return fr_from_ints([int(k) for k in scalars])
