"""The MSM orchestrator: owns the (resident) bases and the device buffers, runs the stages in order.

CUDA pipeline for sum_i k_i * P_i (the Groth16 split of SupraSeal, then Pippenger as in sppark), for K >= 1
scalar vectors ("circuits") over the same resident bases in one pass (msm() is the K = 1 case):
  classify    scalars -> class 0 (dropped) / 1 (summed by batch_add) / 2 (bucket method); per-circuit counts
              (K x 3), read by the host once
  plan        window size from the largest class-2 count; circuits grouped into consecutive sub-batches whose
              buffers fit in max_bytes (default: a fraction of the free device memory); each runs the rest
  ones        one launch for all circuits of the sub-batch, neighbouring threads on the same chunk of bases
  histogram   bucket sizes of every signed c-bit digit; bucket b of window w of the s-th circuit that has
              class-2 scalars is key (s*W + w)*2^(c-1) + b
  scan        bucket start offsets (all circuits at once)
  scatter     point indices grouped by bucket (sign in bit 31)
  accumulate  XYZZ bucket sums, a chunk of sorted entries per thread + fix-up of buckets that span chunks
              (one run over the entries of all circuits, reading the shared bases)
  integrate   per-window weighted bucket sums in segments, tree over segments (all windows in one launch)
  combine     per circuit: 2^(c*w) weights (Horner) + the ones' sum, on the host (a few hundred point
              operations)
The CPU backend (gpu.msm.cpu) computes the same sum; results are returned in affine form, so both backends
give identical arrays.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numba import cuda

from gpu import memory
from gpu.curves import G1, G2
from gpu.curves._host import Group
from gpu.device import Device, place
from gpu.msm import accumulate, batch_add, integrate, sort
from gpu.msm.cpu import combine_windows, msm_cpu
from gpu.msm.digits import num_windows, window_bits
from gpu.placement import Backend

POINT_THREADS = 128  # threads per block for kernels doing point arithmetic (~170 registers each)
LIGHT_THREADS = 256
ONES_PER_THREAD = 256  # bases per thread in the batch addition of scalar-one points
SEG_LEN = 32  # buckets per thread in the bucket reduction
U32_LIMIT = 1 << 32  # sort keys and bucket offsets are uint32
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
    ``ctx.msm_batch([s_0, ..., s_{K-1}])`` returns the K sums over the same bases, on the GPU in one pass
    (batched Groth16 proving: several circuits of one shape).
    """

    def __init__(
        self, bases: np.ndarray, *, backend: Backend | str = Backend.cpu, device: Device | int | None = None
    ) -> None:
        self.backend, self.device = place(backend, device)
        if _is_device_array(bases):
            if self.backend is not Backend.cuda:
                raise ValueError("device-array bases need backend='cuda'")
            if np.dtype(bases.dtype) != np.uint32:
                raise ValueError(f"device-array bases must be uint32 Montgomery limbs, not {bases.dtype}")
            self.group = group_of(np.empty((0,) + tuple(bases.shape[1:]), dtype=np.uint32))
            self.n = bases.shape[0]
            self._bases: Any = bases
            return
        bases = np.ascontiguousarray(bases)
        self.group = group_of(bases)
        self.group.check_array(bases, 2, "bases")
        self.n = bases.shape[0]
        if self.device is not None:
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
        return self.msm_batch([scalars], window=window, timings=timings)[0]

    def msm_xyzz(
        self, scalars: Any, *, window: int | None = None, timings: dict[str, float] | None = None
    ) -> Any:
        """Like msm() but returns the (1, 4, ...) XYZZ sum (no inversion)."""
        return self.msm_batch_xyzz([scalars], window=window, timings=timings)

    def msm_batch(
        self,
        scalars_list: Sequence[Any],
        *,
        window: int | None = None,
        timings: dict[str, float] | None = None,
        max_bytes: int | None = None,
    ) -> np.ndarray:
        """The K sums sum_i s[i] * bases[i], one per scalar vector s (all of one length m <= n), as a
        (K,) + affine shape array. CUDA: one pass for all of them; ``max_bytes`` caps the working buffers of a
        pass (sort entries, buckets, partial sums; not the scalars), beyond which the batch is split into
        consecutive sub-batches (default: what the device's budget leaves, ``gpu.memory``; no limit without
        one).
        A single circuit whose pass does not fit is a ``gpu.memory.BudgetExceeded`` before anything is
        allocated for it."""
        xyzz = self.msm_batch_xyzz(scalars_list, window=window, timings=timings, max_bytes=max_bytes)
        return self.group.xyzz_to_affine(xyzz)

    def msm_batch_xyzz(
        self,
        scalars_list: Sequence[Any],
        *,
        window: int | None = None,
        timings: dict[str, float] | None = None,
        max_bytes: int | None = None,
    ) -> np.ndarray:
        """Like msm_batch() but returns the (K, 4, ...) XYZZ sums (no inversion)."""
        scalars_list, m = self._check_scalars(scalars_list)
        if self.backend == "cpu":
            t0 = time.perf_counter()
            c = window or window_bits(m, "cpu")
            bases = self._bases[:m]
            out = np.concatenate(
                [msm_cpu(bases, np.ascontiguousarray(_to_host(s)), c) for s in scalars_list]
            )
            if timings is not None:
                timings["total_ms"] = (time.perf_counter() - t0) * 1e3
            return out
        assert self.device is not None
        with self.device.use():
            return self._msm_cuda(scalars_list, m, window, timings, max_bytes)

    def _check_scalars(self, scalars_list: Any) -> tuple[list[Any], int]:
        """The scalar vectors as a list and their common length m; ValueError unless K >= 1 arrays, all
        (m, 8) uint32 with the same m <= n."""
        if (isinstance(scalars_list, np.ndarray) or _is_device_array(scalars_list)) and len(
            scalars_list.shape
        ) == 3:
            out = [scalars_list[k] for k in range(scalars_list.shape[0])]  # a (K, m, 8) stack
        elif isinstance(scalars_list, Sequence):
            out = list(scalars_list)
        else:
            raise ValueError(f"scalars_list must be a sequence of arrays, not {type(scalars_list).__name__}")
        if not out:
            raise ValueError("msm_batch needs at least one scalar vector (K = 0)")
        for k, s in enumerate(out):
            if not (isinstance(s, np.ndarray) or _is_device_array(s)):
                raise ValueError(f"scalars[{k}] is a {type(s).__name__}, not a numpy or device array")
            if len(s.shape) != 2 or s.shape[1] != 8 or s.dtype != np.uint32:
                raise ValueError(
                    f"scalars must be (m, 8) uint32 arrays of canonical Fr, got {s.dtype} {s.shape}"
                    + (f" for circuit {k}" if len(out) > 1 else "")
                )
        m = out[0].shape[0]
        lengths = sorted({s.shape[0] for s in out})
        if len(lengths) > 1:
            raise ValueError(f"the scalar vectors of a batch must have one length, got lengths {lengths}")
        if m > self.n:
            raise ValueError(f"{m} scalars for {self.n} bases")
        return out, m

    # ------------------------------------------------------------------ CUDA

    def _msm_cuda(
        self,
        scalars_list: list[Any],
        m: int,
        window: int | None,
        timings: dict[str, float] | None,
        max_bytes: int | None,
    ) -> np.ndarray:
        coord = self.group.coord_shape
        nc = len(scalars_list)
        marks: list[tuple[str, Any]] = []

        def mark(name: str) -> None:
            if timings is not None:
                ev = cuda.event()
                ev.record()
                marks.append((name, ev))

        mark("start")
        d_s = [s if _is_device_array(s) else cuda.to_device(np.ascontiguousarray(s)) for s in scalars_list]
        bases = self._bases if m == self.n else self._bases[:m]
        mark("upload")
        cls = cuda.device_array((nc, max(m, 1)), dtype=np.uint8)
        d_counters = cuda.to_device(np.zeros((nc, 3), dtype=np.uint32))
        for k in range(nc):
            sort.classify[_blocks(m, LIGHT_THREADS), LIGHT_THREADS](d_s[k], cls[k], d_counters[k])
        counters = d_counters.copy_to_host().astype(np.int64)
        mark("classify")
        n_one, n_other = counters[:, 1], counters[:, 2]
        c = window or window_bits(max(int(n_other.max()), 1), "cuda")
        budget = max_bytes if max_bytes is not None else self._room()
        plan = plan_batches(n_one, n_other, m, c, _xyzz_bytes(coord), budget)
        if budget is not None:
            for k0, k1 in plan:
                need = pass_bytes(n_one[k0:k1], n_other[k0:k1], m, c, _xyzz_bytes(coord))[0]
                if need > budget:
                    led = memory.ledger(self.device.index if self.device is not None else 0)
                    raise memory.BudgetExceeded(
                        f"phase {led.current!r}: an MSM pass over {m:,} scalars ({int(n_other[k0]):,} in the "
                        f"bucket method, {c}-bit windows) needs {need:,} device bytes; {budget:,} are left",
                        phase=led.current, need=need, budget=budget, device=led.index,
                    )
        out = np.empty((nc, 4) + coord, dtype=np.uint32)
        for k0, k1 in plan:
            self._pass(bases, d_s[k0:k1], cls[k0:k1], n_one[k0:k1], n_other[k0:k1], c, out[k0:k1], mark)
        if timings is not None:
            marks[-1][1].synchronize()
            stages: dict[str, float] = {}
            for (_, a), (name, b) in zip(marks, marks[1:], strict=False):
                stages[name + "_ms"] = stages.get(name + "_ms", 0.0) + a.elapsed_time(b)
            timings.update(stages)
            timings["total_ms"] = marks[0][1].elapsed_time(marks[-1][1])
            timings["window_bits"] = float(c)
            timings["n_one"] = float(n_one.sum())
            timings["n_other"] = float(n_other.sum())
            timings["sub_batches"] = float(len(plan))
        return out

    def _room(self) -> int | None:
        """What the device's budget leaves now (``gpu.memory``'s ledger: its cap less the live bytes); None
        without a cap (the simulator's default, or no budget set)."""
        led = memory.ledger(self.device.index if self.device is not None else 0)
        if led.cap is None:
            return None
        return max(0, led.cap - led.live)

    def _pass(
        self,
        bases: Any,
        d_s: list[Any],
        cls: Any,
        n_one: np.ndarray,
        n_other: np.ndarray,
        c: int,
        out: np.ndarray,
        mark: Callable[[str], None],
    ) -> None:
        """One pass of the pipeline over the B circuits of a sub-batch: out[j] = circuit j's XYZZ sum."""
        coord = self.group.coord_shape
        nbat, m = len(d_s), cls.shape[1]
        ones = None
        if n_one.any():
            nthr = _next_pow2(_blocks(m, ONES_PER_THREAD))
            partial = cuda.device_array((nbat * nthr, 4) + coord, dtype=np.uint32)
            batch_add.sum_ones[_blocks(nbat * nthr, POINT_THREADS), POINT_THREADS](
                bases, cls, ONES_PER_THREAD, partial
            )
            integrate.tree_sum(partial, nthr, nbat, POINT_THREADS)
            ones = _rows_to_host(partial, nthr, nbat)
        mark("ones")
        nwin = num_windows(c)
        wins = None
        if n_other.any():
            # bucket slots only for the circuits with class-2 scalars (an all-0/1 vector needs none)
            todo = [int(j) for j in np.flatnonzero(n_other)]
            nb = 1 << (c - 1)
            nwins = len(todo) * nwin
            total = nwins * nb
            counts = cuda.device_array(total + 1, dtype=np.uint32)
            sort.fill_u32[_blocks(total + 1, LIGHT_THREADS), LIGHT_THREADS](counts, 0)
            for slot, j in enumerate(todo):
                sort.histogram[_blocks(m, LIGHT_THREADS), LIGHT_THREADS](
                    d_s[j], cls[j], c, nwin, nb, slot * nwin * nb, counts
                )
            bstart = cuda.device_array(total + 1, dtype=np.uint32)
            sort.exclusive_scan(counts, bstart, total + 1)
            nent = int(bstart[total : total + 1].copy_to_host()[0])
            cursor = cuda.device_array(total + 1, dtype=np.uint32)
            cursor.copy_to_device(bstart)
            sorted_idx = cuda.device_array(max(nent, 1), dtype=np.uint32)
            sorted_bkt = cuda.device_array(max(nent, 1), dtype=np.uint32)
            for slot, j in enumerate(todo):
                sort.scatter[_blocks(m, LIGHT_THREADS), LIGHT_THREADS](
                    d_s[j], cls[j], c, nwin, nb, slot * nwin * nb, cursor, sorted_idx, sorted_bkt
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
            segs = cuda.device_array((nwins * nseg, 4) + coord, dtype=np.uint32)
            integrate.integrate_segments[_blocks(nwins * nseg, POINT_THREADS), POINT_THREADS](
                buckets, bstart, nb, seg, nseg, nwins, segs
            )
            integrate.tree_sum(segs, nseg, nwins, POINT_THREADS)
            wins = _rows_to_host(segs, nseg, nwins)
            slot_of = {j: slot for slot, j in enumerate(todo)}
            mark("integrate")
        no_extra = np.empty((0, 4) + coord, dtype=np.uint32)
        identity = np.zeros((1, 4) + coord, dtype=np.uint32)  # ZZ = 0: the identity
        for j in range(nbat):
            extra = ones[j : j + 1] if ones is not None and n_one[j] else no_extra
            if wins is not None and n_other[j]:
                w0 = slot_of[j] * nwin
                combine_windows(wins[w0 : w0 + nwin], c, extra, out[j : j + 1])
            else:
                combine_windows(identity, 1, extra, out[j : j + 1])
        mark("combine")


def _to_host(x: Any) -> np.ndarray:
    return x.copy_to_host() if _is_device_array(x) else np.asarray(x)


def _xyzz_bytes(coord: tuple[int, ...]) -> int:
    """Bytes of one XYZZ point (4 coordinates of uint32 limbs)."""
    return 4 * 4 * math.prod(coord)


def _rows_to_host(pts: Any, stride: int, rows: int) -> np.ndarray:
    """Rows 0, stride, 2*stride, ... of the device points pts (where tree_sum leaves each group's total),
    gathered on the device and copied to the host as (rows, 4, ...)."""
    if stride == 1 or rows == 1:
        return pts[0 : (rows - 1) * stride + 1].copy_to_host()
    dst = cuda.device_array((rows,) + tuple(pts.shape[1:]), dtype=np.uint32)
    width = math.prod(pts.shape[1:])
    integrate.gather_rows[_blocks(rows * width, LIGHT_THREADS), LIGHT_THREADS](
        pts.reshape(pts.shape[0], width), stride, dst.reshape(rows, width)
    )
    return dst.copy_to_host()


def _chunk(nent: int) -> int:
    """Sorted entries per accumulation thread: 16 for small inputs, up to 256 when there are many (enough
    threads to fill the GPU either way, fewer head/tail partial sums to fix up)."""
    k = 16
    while k < 256 and nent // k > (1 << 20):
        k *= 2
    return k


def _scan_bytes(n: int) -> int:
    """Device bytes sort.exclusive_scan allocates for n elements (tile sums, recursively)."""
    tile = sort.SCAN_THREADS * sort.SCAN_ITEMS
    ntiles = (n + tile - 1) // tile
    out = 4 * max(ntiles, 1)
    if ntiles > 1:
        out += 4 * ntiles + _scan_bytes(ntiles)
    return out


def pass_buffers(
    n_one: np.ndarray, n_other: np.ndarray, m: int, c: int, point_bytes: int, nent: int | None = None
) -> dict[str, int]:
    """Every device buffer one pipeline pass allocates (``_pass``), by name: the circuits' class counts are
    n_one / n_other (m scalars each), window c, XYZZ points of point_bytes. ``nent``: the sort entries the
    histogram really found (default: the bound, one per window of every class-2 scalar; a zero digit makes
    none)."""
    out: dict[str, int] = {}
    nbat = len(n_other)
    if np.any(n_one):
        nthr = _next_pow2(_blocks(m, ONES_PER_THREAD))
        out["ones partial sums"] = nbat * nthr * point_bytes
        if nthr > 1 and nbat > 1:
            out["ones rows"] = nbat * point_bytes
    nwin = num_windows(c)
    bound = int(np.sum(n_other)) * nwin
    if not bound:
        return out
    nent = bound if nent is None else nent
    nb = 1 << (c - 1)
    nwins = int(np.count_nonzero(n_other)) * nwin
    total = nwins * nb
    nchunks = max(1, -(-nent // _chunk(nent)))
    nseg = nb // min(SEG_LEN, nb)
    out["bucket counts, offsets, cursors"] = 3 * 4 * (total + 1)
    out["scan tiles"] = _scan_bytes(total + 1)
    out["sorted (index, bucket)"] = 8 * max(nent, 1)
    out["buckets"] = total * point_bytes
    out["chunk head/tail sums"] = 2 * nchunks * point_bytes
    out["segment sums"] = nwins * nseg * point_bytes
    if nseg > 1 and nwins > 1:
        out["window rows"] = nwins * point_bytes
    return out


def pass_bytes(
    n_one: np.ndarray, n_other: np.ndarray, m: int, c: int, point_bytes: int
) -> tuple[int, int, int]:
    """(device bytes, sort entries at most, bucket keys) of one pipeline pass over the circuits whose class
    counts are n_one / n_other (m scalars each, window c, XYZZ points of point_bytes)."""
    nbytes = sum(pass_buffers(n_one, n_other, m, c, point_bytes).values())
    nwin = num_windows(c)
    nent = int(np.sum(n_other)) * nwin
    if not nent:
        return nbytes, 0, 0
    return nbytes, nent, int(np.count_nonzero(n_other)) * nwin * (1 << (c - 1)) + 1


def msm_bytes(n_one: np.ndarray, n_other: np.ndarray, m: int, c: int, point_bytes: int) -> int:
    """Device bytes one single-pass MSM call allocates: the classes (one byte a scalar), the class counters
    and its pass."""
    nc = len(n_other)
    return nc * max(m, 1) + nc * 3 * 4 + pass_bytes(n_one, n_other, m, c, point_bytes)[0]


@functools.lru_cache(maxsize=4096)
def msm_bound(m: int, point_bytes: int) -> int:
    """The most device bytes ``MSMContext.msm`` of m scalars can allocate, whatever their classes: the window
    follows the class-2 count k (``window_bits(k)``), so the bound is the largest over k <= m, taken at the
    largest k of each window size (the bytes grow with k for a fixed window), with at least one scalar one."""
    if m <= 0:
        return msm_bytes(np.zeros(1, np.int64), np.zeros(1, np.int64), 0, 2, point_bytes)
    best = 0
    k = m
    while k >= 1:
        c = window_bits(k, "cuda")
        lo, hi = 1, k  # the smallest k' with the same window: window_bits does not decrease with k
        while lo < hi:
            mid = (lo + hi) // 2
            if window_bits(mid, "cuda") >= c:
                hi = mid
            else:
                lo = mid + 1
        best = max(best, msm_bytes(np.ones(1, np.int64), np.array([k], np.int64), m, c, point_bytes))
        k = lo - 1
    return best


def plan_batches(
    n_one: np.ndarray, n_other: np.ndarray, m: int, c: int, point_bytes: int, max_bytes: int | None
) -> list[tuple[int, int]]:
    """Consecutive circuit ranges [k0, k1), one pipeline pass each: as many circuits as fit in max_bytes
    (None: no limit) and in the uint32 sort keys, at least one per pass."""
    nc = len(n_other)

    def fits(k0: int, k1: int) -> bool:
        nbytes, nent, keys = pass_bytes(n_one[k0:k1], n_other[k0:k1], m, c, point_bytes)
        return nent < U32_LIMIT and keys < U32_LIMIT and (max_bytes is None or nbytes <= max_bytes)

    plan = []
    k0 = 0
    for k in range(nc):
        _, nent, keys = pass_bytes(n_one[k : k + 1], n_other[k : k + 1], m, c, point_bytes)
        if nent >= U32_LIMIT or keys >= U32_LIMIT:
            raise ValueError(f"{m} scalars with {c}-bit windows exceed the uint32 sort keys of one pass")
        if k > k0 and not fits(k0, k + 1):
            plan.append((k0, k))
            k0 = k
    plan.append((k0, nc))
    return plan


def msm(
    bases: np.ndarray,
    scalars: np.ndarray,
    *,
    backend: Backend | str = Backend.cpu,
    device: Device | int | None = None,
    window: int | None = None,
) -> np.ndarray:
    """One-shot MSM (uploads the bases; use MSMContext to keep them resident)."""
    return MSMContext(bases, backend=backend, device=device).msm(scalars, window=window)
