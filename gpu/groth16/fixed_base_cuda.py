# mypy: ignore-errors
# (Numba kernel code: typed by Numba, not meaningfully by mypy)
"""Fixed-base multiplication k_i * G on the GPU, straight to bellperson's uncompressed bytes (the setup's
bulk work).

Same signed-digit comb as gpu.groth16.fixed_base (its table, built once on the CPU, is uploaded: table[k *
2^(w-1) + d - 1] = d * 2^(w k) * G), but one scalar per thread: a thread recodes its scalar window by window
(gpu.msm.digits, the MSM's recoding) and adds the nwin table points (negated for negative digits) into an
XYZZ accumulator, 8M + 2S per addition and no inversion. Batched affine additions, which pay on the CPU, would
need per-level inversions across threads; with one scalar per thread the only inversion is the final
normalisation.

A second kernel makes the results affine and encodes them: each thread takes a run of RUN consecutive results,
inverts the product of their ZZZ once (Montgomery's trick, prefix products in a scratch array), and writes x,
y out of Montgomery form as big-endian words (zcash layout: G1 x || y, G2 x.c1 || x.c0 || y.c1 || y.c0; the
identity is the 0x40 flag then zeros), so the host only copies bytes to the file. Work goes in chunks of
CHUNK scalars whose buffers are reused: device memory is bounded by the chunk, host memory by the bytes in
flight (a few chunks), never by the section.

Affine points are unique, so the bytes equal the CPU path's (gpu.groth16.fixed_base + the zcash encoder)
exactly; tests compare them under the simulator, the device script on the GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from numba import cuda

from gpu.arith.cudashim import dispatching, jitable, kernel
from gpu.arith.fields.fq import fq_mul, fq_raw_one
from gpu.curves._host import Group
from gpu.curves.generic import (
    affine_neg,
    load_affine,
    load_xyzz,
    store_xyzz,
    xyzz_add_affine,
    xyzz_identity_like,
)
from gpu.device import Device
from gpu.groth16.fixed_base import FixedBase, f_inv, f_is_zero, f_load, f_mul, f_one_like, f_sqr, f_store
from gpu.msm.digits import signed_digit, window_raw

U32 = np.uint32
U64 = np.uint64
CHUNK = 1 << 22  # scalars per launch pair: G1 ~2 GB, G2 ~4 GB of device buffers
RUN = 32  # results per thread in the normalisation (one field inversion each)
THREADS = 128  # threads per block for point arithmetic (~170 registers each)
INFINITY_WORD = U32(0x40)  # first big-endian word of the identity (bytes 40 00 00 00) read little-endian


# ------------------------------------------------------------------------------------------ device code


@jitable
def bswap32(v):
    """Byte order of a 32-bit word reversed (zcash's big-endian point words <-> our little-endian limbs)."""
    return U32(
        ((v & U32(0xFF)) << U32(24))
        | ((v & U32(0xFF00)) << U32(8))
        | ((v >> U32(8)) & U32(0xFF00))
        | (v >> U32(24))
    )


@jitable
def _put_fq(out, i, base, a):
    """Montgomery Fq a -> 12 big-endian words at out[i, base:base + 12] (most significant limb first)."""
    c = fq_mul(a, fq_raw_one())
    out[i, base + 0] = bswap32(c[11])
    out[i, base + 1] = bswap32(c[10])
    out[i, base + 2] = bswap32(c[9])
    out[i, base + 3] = bswap32(c[8])
    out[i, base + 4] = bswap32(c[7])
    out[i, base + 5] = bswap32(c[6])
    out[i, base + 6] = bswap32(c[5])
    out[i, base + 7] = bswap32(c[4])
    out[i, base + 8] = bswap32(c[3])
    out[i, base + 9] = bswap32(c[2])
    out[i, base + 10] = bswap32(c[1])
    out[i, base + 11] = bswap32(c[0])


@jitable
def _put_fq_coord(out, i, slot, a):
    _put_fq(out, i, slot * 12, a)


@jitable
def _put_fq2_coord(out, i, slot, a):
    _put_fq(out, i, slot * 24, a[1])  # c1 first
    _put_fq(out, i, slot * 24 + 12, a[0])


def _is_fq_type(t) -> bool:
    from numba.core import types

    return isinstance(t, types.UniTuple) and isinstance(t.dtype, types.Integer)


def _choose_put(out, i, slot, a):
    return _put_fq_coord if _is_fq_type(a) else _put_fq2_coord


@dispatching(_choose_put)
def put_coord(out, i, slot, a):
    """Coordinate ``slot`` (0 = x, 1 = y) of point i, big-endian words (Fq2: c1 then c0)."""
    (_put_fq_coord if len(a) == 12 else _put_fq2_coord)(out, i, slot, a)


@kernel(max_registers=168)
def comb_xyzz(table, half, w, nwin, scalars, n, out):
    """out[i] = scalars[i] * G (XYZZ) from the signed-digit table."""
    i = cuda.grid(1)
    if i >= n:
        return
    acc = xyzz_identity_like(table)
    carry = U64(0)
    for k in range(nwin):
        raw = window_raw(scalars, i, k * w, w)
        a, neg, carry = signed_digit(raw, carry, w)
        if a != U64(0):
            q = load_affine(table, k * half + np.int64(a) - 1)
            if neg:
                q = affine_neg(q)
            acc = xyzz_add_affine(acc, q)
    store_xyzz(out, i, acc)


@kernel
def xyzz_to_zcash(xyzz, n, run, pref, out):
    """out[i] = zcash uncompressed words of xyzz[i]; thread t normalises [t * run, (t + 1) * run) with one
    inversion (pref: scratch for the prefix products)."""
    t = cuda.grid(1)
    lo = t * run
    if lo >= n:
        return
    hi = min(lo + run, n)
    acc = f_one_like(load_xyzz(xyzz, lo)[0])
    for i in range(lo, hi):
        p = load_xyzz(xyzz, i)
        f_store(pref, i, 0, acc)
        if not f_is_zero(p[2]):
            acc = f_mul(acc, p[3])
    inv = f_inv(acc)
    for j in range(hi - lo):
        i = hi - 1 - j
        p = load_xyzz(xyzz, i)
        if f_is_zero(p[2]):
            for k in range(out.shape[1]):
                out[i, k] = U32(0)
            out[i, 0] = INFINITY_WORD
        else:
            i3 = f_mul(f_load(pref, i, 0), inv)  # 1 / ZZZ
            inv = f_mul(inv, p[3])
            zi = f_mul(p[2], i3)  # 1 / Z = ZZ / ZZZ
            put_coord(out, i, 0, f_mul(p[0], f_sqr(zi)))
            put_coord(out, i, 1, f_mul(p[1], i3))


# ------------------------------------------------------------------------------------------ host side


def _blocks(n: int, threads: int) -> int:
    return max(1, (n + threads - 1) // threads)


class CudaFixedBase:
    """A FixedBase's table resident on ``device``; :meth:`zcash_chunks` yields the uncompressed encodings of
    k_i * G, a chunk at a time."""

    def __init__(self, fb: FixedBase, device: Device, chunk: int = CHUNK) -> None:
        self.group: Group = fb.group
        self.window, self.nwin = fb.window, fb.nwin
        self.device, self.chunk = device, int(chunk)
        self.point_bytes = 192 if self.group.fq2 else 96
        coord = self.group.coord_shape
        with device.use():
            self.d_table = cuda.to_device(np.ascontiguousarray(fb.table))
            c = self.chunk
            self.d_xyzz = cuda.device_array((c, 4) + coord, dtype=np.uint32)
            self.d_pref = cuda.device_array((c, 1) + coord, dtype=np.uint32)
            # two of each per-chunk buffer: chunk i + 1 is computed while chunk i's bytes are copied back
            self.d_scalars = [cuda.device_array((c, 8), dtype=np.uint32) for _ in range(2)]
            self.d_out = [cuda.device_array((c, self.point_bytes // 4), dtype=np.uint32) for _ in range(2)]
            self.s_compute, self.s_copy = cuda.stream(), cuda.stream()

    def zcash_chunks(
        self, scalars: np.ndarray, progress: Callable[[int], None] | None = None
    ) -> Iterator[np.ndarray]:
        """(n, 8) canonical scalars -> uint8 arrays of consecutive points' zcash uncompressed bytes.

        The kernels of chunk i + 1 run on one stream while chunk i's bytes come back on the other (the copy
        into pageable memory holds the host thread; the GPU keeps computing)."""
        s = np.ascontiguousarray(scalars, dtype=np.uint32)
        if s.ndim != 2 or s.shape[1] != 8:
            raise ValueError(f"scalars must be (n, 8) uint32, got {s.shape}")
        half = 1 << (self.window - 1)
        starts = list(range(0, s.shape[0], self.chunk))
        pending: tuple[int, int, object] | None = None  # (slot, count, event after its kernels)
        for j in range(len(starts) + 1):
            launched = None
            if j < len(starts):
                lo = starts[j]
                m = min(s.shape[0], lo + self.chunk) - lo
                slot = j % 2
                with self.device.use():
                    st = self.s_compute
                    d_s = self.d_scalars[slot][:m]
                    d_s.copy_to_device(s[lo : lo + m], stream=st)
                    comb_xyzz[_blocks(m, THREADS), THREADS, st](
                        self.d_table, half, self.window, self.nwin, d_s, m, self.d_xyzz
                    )
                    nthr = _blocks(m, RUN)
                    xyzz_to_zcash[_blocks(nthr, THREADS), THREADS, st](
                        self.d_xyzz, m, RUN, self.d_pref, self.d_out[slot]
                    )
                    done = cuda.event()
                    done.record(stream=st)
                launched = (slot, m, done)
            if pending is not None:
                pslot, pm, pdone = pending
                with self.device.use():
                    pdone.wait(stream=self.s_copy)
                    words = self.d_out[pslot][:pm].copy_to_host(stream=self.s_copy)
                    self.s_copy.synchronize()
                if progress is not None:
                    progress(pm)
                yield words.view(np.uint8).reshape(-1)
            pending = launched

    def mul_bytes(self, scalars: np.ndarray) -> bytes:
        """All of k_i * G as one bytes object (tests and small sections)."""
        return b"".join(c.tobytes() for c in self.zcash_chunks(scalars))
