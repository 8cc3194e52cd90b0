"""The MSM orchestrator: owns the (resident) bases and the device buffers, runs the stages in order.

CUDA pipeline for sum_i k_i * P_i (the Groth16 split of SupraSeal, then Pippenger as in sppark):
  classify    scalars -> class 0 (dropped) / 1 (summed by batch_add) / 2 (bucket method); host reads counts
  histogram   bucket sizes of every signed c-bit digit (window size chosen from the class-2 count)
  scan        bucket start offsets
  scatter     point indices grouped by bucket (sign in bit 31)
  accumulate  XYZZ bucket sums, K sorted entries per thread + fix-up of buckets that span threads
  integrate   per-window weighted bucket sums in segments, tree over segments
  combine     2^(c*w) weights (Horner) + the ones' sum, on the host (a few hundred point operations)
The CPU backend (gpu.msm.cpu) computes the same sum; results are returned in affine form, so both backends
give identical arrays.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numba import cuda

from gpu.curves import G1, G2
from gpu.curves._host import Group
from gpu.device import Device, get_device
from gpu.msm import accumulate, batch_add, integrate, sort
from gpu.msm.cpu import combine_windows, msm_cpu
from gpu.msm.digits import num_windows, window_bits

POINT_THREADS = 128  # threads per block for kernels doing point arithmetic (~170 registers each)
LIGHT_THREADS = 256
ONES_PER_THREAD = 256  # bases per thread in the batch addition of scalar-one points
SEG_LEN = 32  # buckets per thread in the bucket reduction
assert POINT_THREADS >= 32 and POINT_THREADS & (POINT_THREADS - 1) == 0


def group_of(bases: np.ndarray) -> Group:
    """G1 for (n, 2, 12) arrays, G2 for (n, 2, 2, 12)."""
    if bases.ndim == 3 and bases.shape[1:] == (2, 12):
        return G1
    if bases.ndim == 4 and bases.shape[1:] == (2, 2, 12):
        return G2
    raise ValueError(f"bases must be (n, 2, 12) (G1) or (n, 2, 2, 12) (G2) uint32 arrays, got {bases.shape}")


def _is_device_array(x: Any) -> bool:
    """A numba device array (real or simulated), as opposed to a host numpy array."""
    return not isinstance(x, np.ndarray) and hasattr(x, "copy_to_host")


def _blocks(n: int, threads: int) -> int:
    return max(1, (n + threads - 1) // threads)


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


class MSMContext:
    """Bases for repeated MSMs: uploaded once to the device (backend="cuda") or kept on the host ("cpu").

    ``ctx.msm(scalars)`` returns sum_i scalars[i] * bases[i] as one affine point ((2, 12) for G1,
    (2, 2, 12) for G2; the identity is all zeros). Scalars are canonical Fr, (m, 8) uint32 with m <= n (the
    first m bases are used); with the CUDA backend they may also be a numba device array.
    """

    def __init__(
        self, bases: np.ndarray, *, backend: str = "cpu", device: Device | int | None = None
    ) -> None:
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend must be 'cpu' or 'cuda', not {backend!r}")
        self.backend = backend
        if _is_device_array(bases):
            if backend != "cuda":
                raise ValueError("device-array bases need backend='cuda'")
            self.group = group_of(np.empty((0,) + tuple(bases.shape[1:]), dtype=np.uint32))
            self.n = bases.shape[0]
            self.device: Device | None = get_device(device)
            self._bases: Any = bases
            return
        bases = np.ascontiguousarray(bases)
        self.group = group_of(bases)
        self.group.check_array(bases, 2, "bases")
        self.n = bases.shape[0]
        self.device = None
        if backend == "cuda":
            self.device = get_device(device)
            with self.device.use():
                self._bases = cuda.to_device(bases)
        else:
            self._bases = bases

    # ------------------------------------------------------------------ public

    def msm(
        self, scalars: Any, *, window: int | None = None, timings: dict[str, float] | None = None
    ) -> np.ndarray:
        """sum_i scalars[i] * bases[i] in affine form. ``window`` overrides the window size;
        ``timings`` (a dict) receives per-stage milliseconds (CUDA: event timings, synchronising)."""
        xyzz = self.msm_xyzz(scalars, window=window, timings=timings)
        return self.group.xyzz_to_affine(xyzz)[0]

    def msm_xyzz(
        self, scalars: Any, *, window: int | None = None, timings: dict[str, float] | None = None
    ) -> Any:
        """Like msm() but returns the (1, 4, ...) XYZZ sum (no inversion)."""
        m = scalars.shape[0]
        if m > self.n:
            raise ValueError(f"{m} scalars for {self.n} bases")
        if scalars.shape[1:] != (8,) or scalars.dtype != np.uint32:
            raise ValueError(
                f"scalars must be an (m, 8) uint32 array of canonical Fr, got {scalars.dtype} {scalars.shape}"
            )
        if self.backend == "cpu":
            s = np.ascontiguousarray(scalars)
            t0 = time.perf_counter()
            bases = self._bases[:m]
            c = window or window_bits(m, "cpu")
            out = msm_cpu(bases, s, c)
            if timings is not None:
                timings["total_ms"] = (time.perf_counter() - t0) * 1e3
            return out
        assert self.device is not None
        with self.device.use():
            return self._msm_cuda(scalars, m, window, timings)

    # ------------------------------------------------------------------ CUDA

    def _msm_cuda(
        self, scalars: Any, m: int, window: int | None, timings: dict[str, float] | None
    ) -> np.ndarray:
        coord = self.group.coord_shape
        marks: list[tuple[str, Any]] = []

        def mark(name: str) -> None:
            if timings is not None:
                ev = cuda.event()
                ev.record()
                marks.append((name, ev))

        mark("start")
        d_s = scalars if _is_device_array(scalars) else cuda.to_device(np.ascontiguousarray(scalars))
        bases = self._bases if m == self.n else self._bases[:m]
        mark("upload")
        cls = cuda.device_array(max(m, 1), dtype=np.uint8)
        d_counters = cuda.to_device(np.zeros(3, dtype=np.uint32))
        sort.classify[_blocks(m, LIGHT_THREADS), LIGHT_THREADS](d_s, cls, d_counters)
        counters = d_counters.copy_to_host()
        mark("classify")
        extras = []
        n_one, n_other = int(counters[1]), int(counters[2])
        if n_one:
            nthr = _next_pow2(_blocks(m, ONES_PER_THREAD))
            partial = cuda.device_array((nthr, 4) + coord, dtype=np.uint32)
            batch_add.sum_ones[_blocks(nthr, POINT_THREADS), POINT_THREADS](
                bases, cls, ONES_PER_THREAD, partial
            )
            integrate.tree_sum(partial, nthr, 1, POINT_THREADS)
            extras.append(partial[0:1].copy_to_host())
        mark("ones")
        c = window or window_bits(max(n_other, 1), "cuda")
        nwin = num_windows(c)
        wins = None
        if n_other:
            nb = 1 << (c - 1)
            total = nwin * nb
            counts = cuda.device_array(total + 1, dtype=np.uint32)
            sort.fill_u32[_blocks(total + 1, LIGHT_THREADS), LIGHT_THREADS](counts, 0)
            sort.histogram[_blocks(m, LIGHT_THREADS), LIGHT_THREADS](d_s, cls, c, nwin, nb, counts)
            bstart = cuda.device_array(total + 1, dtype=np.uint32)
            sort.exclusive_scan(counts, bstart, total + 1)
            nent = int(bstart[total : total + 1].copy_to_host()[0])
            cursor = cuda.device_array(total + 1, dtype=np.uint32)
            cursor.copy_to_device(bstart)
            sorted_idx = cuda.device_array(max(nent, 1), dtype=np.uint32)
            sorted_bkt = cuda.device_array(max(nent, 1), dtype=np.uint32)
            sort.scatter[_blocks(m, LIGHT_THREADS), LIGHT_THREADS](
                d_s, cls, c, nwin, nb, cursor, sorted_idx, sorted_bkt
            )
            mark("sort")
            k = _chunk(nent)
            nchunks = max(1, (nent + k - 1) // k)
            buckets = cuda.device_array((total, 4) + coord, dtype=np.uint32)
            head = cuda.device_array((nchunks, 4) + coord, dtype=np.uint32)
            tail = cuda.device_array((nchunks, 4) + coord, dtype=np.uint32)
            accumulate.accumulate_chunks[_blocks(nchunks, POINT_THREADS), POINT_THREADS](
                bases, sorted_idx, sorted_bkt, bstart, nent, k, buckets, head, tail
            )
            stride = 1
            while stride < nchunks:  # log2 levels; a bucket spanning many chunks is folded in parallel
                accumulate.reduce_heads[_blocks(nchunks, POINT_THREADS), POINT_THREADS](
                    sorted_bkt, bstart, nent, k, nchunks, stride, head
                )
                stride *= 2
            accumulate.fixup_buckets[_blocks(total, POINT_THREADS), POINT_THREADS](
                bstart, total, k, buckets, head, tail
            )
            mark("accumulate")
            seg = min(SEG_LEN, nb)
            nseg = nb // seg
            segs = cuda.device_array((nwin * nseg, 4) + coord, dtype=np.uint32)
            integrate.integrate_segments[_blocks(nwin * nseg, POINT_THREADS), POINT_THREADS](
                buckets, bstart, nb, seg, nseg, nwin, segs
            )
            integrate.tree_sum(segs, nseg, nwin, POINT_THREADS)
            d_wins = cuda.device_array((nwin, 4) + coord, dtype=np.uint32)
            integrate.gather_rows[
                _blocks(nwin * 4 * 12 * (2 if len(coord) == 2 else 1), LIGHT_THREADS), LIGHT_THREADS
            ](segs.reshape(nwin * nseg, -1), nseg, d_wins.reshape(nwin, -1))
            wins = d_wins.copy_to_host()
            mark("integrate")
        out = np.empty((1, 4) + coord, dtype=np.uint32)
        extra = np.concatenate(extras) if extras else np.empty((0, 4) + coord, dtype=np.uint32)
        if wins is None:
            wins = np.zeros((1, 4) + coord, dtype=np.uint32)  # ZZ = 0: the identity
            c = 1
        combine_windows(wins, c, extra, out)
        mark("combine")
        if timings is not None:
            marks[-1][1].synchronize()
            for (_, a), (name, b) in zip(marks, marks[1:], strict=False):
                timings[name + "_ms"] = a.elapsed_time(b)
            timings["total_ms"] = marks[0][1].elapsed_time(marks[-1][1])
            timings["window_bits"] = float(c)
            timings["n_one"] = float(n_one)
            timings["n_other"] = float(n_other)
        return out


def _chunk(nent: int) -> int:
    """Sorted entries per accumulation thread: 16 for small inputs, up to 256 when there are many (enough
    threads to fill the GPU either way, fewer head/tail partial sums to fix up)."""
    k = 16
    while k < 256 and nent // k > (1 << 20):
        k *= 2
    return k


def msm(
    bases: np.ndarray,
    scalars: np.ndarray,
    *,
    backend: str = "cpu",
    device: Device | int | None = None,
    window: int | None = None,
) -> np.ndarray:
    """One-shot MSM (uploads the bases; use MSMContext to keep them resident)."""
    return MSMContext(bases, backend=backend, device=device).msm(scalars, window=window)
