# mypy: ignore-errors
# (Numba kernel code: typed by Numba, not meaningfully by mypy)
"""A .params file loaded straight to the device: the sections' raw bytes go from a memory map to the GPU a
chunk at a time and are decoded there (big-endian words -> limbs, canonical check, Montgomery form, on-curve
check), so the host neither decodes ~430 M points of a 32GiB file nor holds them (~47 GB).

The subgroup check is not made here: a file is trusted by its BLAKE2b digest, checked once (agent.proving's
record); the on-curve and canonical checks cost a few multiplications per point and stay, as in the host
reader with ``subgroup_check=False``. Points at infinity are rejected as there. The H query can be placed in
bit-reversed slots as it is decoded (``h_bitrev``: the layout gpu.groth16.prover.permuted_h_bases makes on
the host), so the prover's resident bases need no host copy at all.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import cuda

import gpu.curves._generated.g1 as _g1
import gpu.curves._generated.g2 as _g2
from gpu.arith.cudashim import dispatching, jitable, kernel
from gpu.arith.fields.constants import P_MODULUS
from gpu.arith.fields.fq import fq_mul, fq_r2
from gpu.curves import G1, G2, EncodingError
from gpu.curves._host import Group
from gpu.device import Device
from gpu.groth16.fixed_base import f_store
from gpu.groth16.fixed_base_cuda import bswap32
from gpu.groth16.params import G1_UNC, G2_UNC, Parameters, VerifyingKey, _read_u32, _read_vk

U32 = np.uint32
CHUNK_POINTS = 1 << 22  # points per upload (G1 400 MB, G2 800 MB of raw bytes)
THREADS = 128
P_LIMBS = np.array([(P_MODULUS >> (32 * j)) & 0xFFFFFFFF for j in range(12)], dtype=np.uint32)


@jitable
def _get_fq(words, i, base):
    """12 big-endian words at words[i, base:] -> (limbs, canonical?) with the limbs in Montgomery form."""
    c = (
        bswap32(words[i, base + 11]),
        bswap32(words[i, base + 10]),
        bswap32(words[i, base + 9]),
        bswap32(words[i, base + 8]),
        bswap32(words[i, base + 7]),
        bswap32(words[i, base + 6]),
        bswap32(words[i, base + 5]),
        bswap32(words[i, base + 4]),
        bswap32(words[i, base + 3]),
        bswap32(words[i, base + 2]),
        bswap32(words[i, base + 1]),
        bswap32(words[i, base + 0]),
    )
    lt = False
    eq = True
    for j in range(11, -1, -1):  # c < p, from the top limb down
        if eq:
            if c[j] < P_LIMBS[j]:
                lt = True
                eq = False
            elif c[j] > P_LIMBS[j]:
                eq = False
    return fq_mul(c, fq_r2()), lt


@jitable
def _g1_point(out, words, i):
    x, okx = _get_fq(words, i, 0)
    y, oky = _get_fq(words, i, 12)
    return (x, y), okx and oky


@jitable
def _g2_point(out, words, i):
    x1, ok1 = _get_fq(words, i, 0)  # c1 first
    x0, ok0 = _get_fq(words, i, 12)
    y1, ok3 = _get_fq(words, i, 24)
    y0, ok2 = _get_fq(words, i, 36)
    return ((x0, x1), (y0, y1)), ok0 and ok1 and ok2 and ok3


@dispatching(lambda out, words, i: _g1_point if out.ndim == 3 else _g2_point)
def decode_point(out, words, i):
    """(affine Montgomery point, all coordinates canonical) from the zcash words of point i; ``out`` (the
    destination array) selects the group."""
    return (_g1_point if out.ndim == 3 else _g2_point)(out, words, i)


def _on_curve_choose(q):
    from numba.core import types

    coord = q.dtype if isinstance(q, types.UniTuple) else q.types[0]
    g1 = isinstance(coord, types.UniTuple) and coord.count == 12 and isinstance(coord.dtype, types.Integer)
    return _g1.g1_is_on_curve if g1 else _g2.g2_is_on_curve


@dispatching(_on_curve_choose)
def on_curve(q):
    """y^2 = x^3 + b in the point's group."""
    return (_g1.g1_is_on_curve if len(q[0]) == 12 else _g2.g2_is_on_curve)(q)


@kernel
def decode_zcash(words, n, dest, use_dest, offset, out, bad):
    """out[dest[i] if use_dest else offset + i] = point i of ``words`` (uncompressed zcash, read as
    little-endian uint32); bad[0] counts flags set (compression, infinity), non-canonical coordinates and
    points off the curve."""
    i = cuda.grid(1)
    if i >= n:
        return
    o = np.int64(dest[i]) if use_dest else offset + i
    q, ok = decode_point(out, words, i)
    if (words[i, 0] & U32(0xE0)) != U32(0) or not ok or not on_curve(q):
        cuda.atomic.add(bad, 0, U32(1))
    f_store(out, o, 0, q[0])
    f_store(out, o, 1, q[1])


def _blocks(n: int) -> int:
    return max(1, (n + THREADS - 1) // THREADS)


def _bitrev(logn: int) -> np.ndarray:
    i = np.arange(1 << logn, dtype=np.uint64)
    r = np.zeros_like(i)
    for b in range(logn):
        r |= ((i >> np.uint64(b)) & np.uint64(1)) << np.uint64(logn - 1 - b)
    return r.astype(np.uint32)


@dataclass
class DeviceParameters:
    """A proving key's bases resident on one device, affine Montgomery device arrays (h in bit-reversed slots,
    with the identity in the one slot no point fills, when loaded with ``h_bitrev``)."""

    vk: VerifyingKey
    h: Any
    l: Any  # noqa: E741 - the query's name
    a: Any
    b_g1: Any
    b_g2: Any
    domain_log: int
    h_bitrev: bool

    def nbytes(self) -> int:
        return int(sum(x.nbytes for x in (self.h, self.l, self.a, self.b_g1, self.b_g2)))


def _decode_file(
    path: str | os.PathLike[str],
    device: Device,
    section: Callable[[memoryview, int, int, Group, Any, str, int], tuple[Any, int]],
    timings: dict[str, float] | None,
) -> tuple[VerifyingKey, list[Any], int]:
    """(vk, the five sections, logn) of ``path`` read by memory map: the vk decoded on the host (with its
    subgroup checks: a few hundred points), each section by ``section(view, pos, n, group, bad, name, logn)``
    on ``device`` (it returns the array and the position after it; every view of the file it makes must die
    with the call, so the map can close). EncodingError on a bad layout, flag, coordinate or point off the
    curve."""
    import time

    t0 = time.perf_counter()
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise EncodingError(f"{path}: empty parameter file")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            try:
                vk, pos = _read_vk(view, 0, True)
                out: list[Any] = []
                logn = 0
                with device.use():
                    bad = cuda.to_device(np.zeros(1, dtype=np.uint32))
                    for name, group in (("h", G1), ("l", G1), ("a", G1), ("b_g1", G1), ("b_g2", G2)):
                        n, pos = _read_u32(view, pos)
                        if name == "h":
                            logn = (n + 1).bit_length() - 1
                            if n + 1 != 1 << logn:
                                raise EncodingError(f"H query has {n} points, not 2^k - 1")
                        arr, pos = section(view, pos, n, group, bad, name, logn)
                        out.append(arr)
                    nbad = int(bad.copy_to_host()[0])
                    cuda.synchronize()
            finally:
                view.release()
    if nbad:
        raise EncodingError(f"{path}: {nbad} point(s) with flags set, non-canonical or off the curve")
    if timings is not None:
        timings["load_s"] = time.perf_counter() - t0
    return vk, out, logn


def load_to_device(
    path: str | os.PathLike[str],
    device: Device,
    *,
    h_bitrev: bool = False,
    chunk_points: int = CHUNK_POINTS,
    timings: dict[str, float] | None = None,
) -> DeviceParameters:
    """Read ``path`` (bellperson layout) by memory map onto ``device``: the five sections decoded on the
    device (``_decode_file``), H in bit-reversed slots with ``h_bitrev``."""

    def section(
        view: memoryview, pos: int, n: int, group: Group, bad: Any, name: str, logn: int
    ) -> tuple[Any, int]:
        return _section(view, pos, n, group, bad, chunk_points, name == "h" and h_bitrev, logn)

    vk, out, logn = _decode_file(path, device, section, timings)
    return DeviceParameters(vk, *out, domain_log=logn, h_bitrev=h_bitrev)


def load_to_host(
    path: str | os.PathLike[str],
    device: Device,
    *,
    chunk_points: int = CHUNK_POINTS,
    timings: dict[str, float] | None = None,
) -> Parameters:
    """Read ``path`` as :func:`load_to_device` does, decoding on ``device`` a chunk at a time, but keep the
    decoded bases in page-locked host memory (natural order): the key of a streamed layout
    (``gpu.groth16.plan``), which a card smaller than the key streams from. The device holds one chunk's raw
    words and decoded points at a time."""

    def section(
        view: memoryview, pos: int, n: int, group: Group, bad: Any, name: str, logn: int
    ) -> tuple[Any, int]:
        return _host_section(view, pos, n, group, bad, chunk_points)

    vk, out, _ = _decode_file(path, device, section, timings)
    return Parameters(vk, *out)


def _host_section(
    view: memoryview, pos: int, n: int, group: Group, bad: Any, chunk: int
) -> tuple[np.ndarray, int]:
    """One section decoded on the device a chunk at a time into a page-locked host array (natural order);
    every view of the file dies with this call (the map can then be closed)."""
    from gpu.transfer import pinned_empty

    size = G2_UNC if group.fq2 else G1_UNC
    end = pos + n * size
    if end > len(view):
        raise EncodingError(f"truncated: {n} {group.name} points need {n * size} bytes")
    host = pinned_empty((n,) + group.affine_shape, np.uint32, portable=True)  # for every GPU of the process
    step = max(1, min(chunk, n))
    d_pts = cuda.device_array((step,) + group.affine_shape, dtype=np.uint32)
    none = cuda.to_device(np.zeros(1, dtype=np.uint32))
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        words = np.frombuffer(view, dtype=np.uint32, count=(hi - lo) * size // 4, offset=pos + lo * size)
        d_words = cuda.to_device(words.reshape(hi - lo, size // 4))
        decode_zcash[_blocks(hi - lo), THREADS](d_words, hi - lo, none, False, 0, d_pts, bad)
        d_pts[: hi - lo].copy_to_host(host[lo:hi])
    return host, end


def _section(
    view: memoryview, pos: int, n: int, group: Group, bad: Any, chunk: int, bitrev: bool, logn: int
) -> tuple[Any, int]:
    size = G2_UNC if group.fq2 else G1_UNC
    end = pos + n * size
    if end > len(view):
        raise EncodingError(f"truncated: {n} {group.name} points need {n * size} bytes")
    rows = (n + 1) if bitrev else n
    d_out = cuda.device_array((max(rows, 1),) + group.affine_shape, dtype=np.uint32)
    none = cuda.to_device(np.zeros(1, dtype=np.uint32))
    rev = _bitrev(logn) if bitrev else None
    if bitrev:
        slot = int(rev[n])  # the slot that index n (= 2^k - 1, no point) maps to: the identity
        d_out[slot : slot + 1] = np.zeros((1,) + group.affine_shape, dtype=np.uint32)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        words = np.frombuffer(view, dtype=np.uint32, count=(hi - lo) * size // 4, offset=pos + lo * size)
        d_words = cuda.to_device(words.reshape(hi - lo, size // 4))
        dest = cuda.to_device(rev[lo:hi]) if rev is not None else none
        decode_zcash[_blocks(hi - lo), THREADS](d_words, hi - lo, dest, rev is not None, lo, d_out, bad)
    return (d_out if rows else d_out[:0]), end
