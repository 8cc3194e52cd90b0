"""Host -> device copies through pinned staging buffers.

A copy from ordinary (pageable) host memory runs at ~7 GB/s on the H200 host (measured 2026-12-03: 1.9 s for
a, b, c at 2^27, 3 x 4.3 GB), because the driver stages it through its own small pinned buffer, one piece at a
time. Here a few chunk-sized page-locked buffers are filled by CPU threads (cpupool) while the copy engine
drains the previous chunk asynchronously: the transfer then runs at about min(host memcpy, PCIe) instead.
The buffers are allocated once per Staging (a ProvingKey keeps one) and reused, so nothing large is pinned.

Measured 2026-12-03 on the H200 host: with threaded numpy copies for the fill, staging reaches ~26 GB/s
(warm); page-locked source memory reaches ~53 GB/s, so the fast path is to have the data produced there in the
first place (cuzk's pinned pool for the synthesised a/b/c): ``pinned_empty`` allocates such arrays and
remembers them, and ``Staging.upload`` copies them straight to the device with no staging memcpy.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from gpu.arith.cpupool import chunked, cpu_threads, parallel_map

CHUNK_BYTES = 64 << 20
BUFFERS = 3


def _copy_parallel(src: np.ndarray, dst: np.ndarray) -> None:
    """dst[:] = src for flat uint8 arrays, in 4 MB pieces on the CPU pool (numpy releases the GIL while it
    copies, so the pieces run concurrently: one thread reaches ~10 GB/s on the H200 host)."""
    n = src.shape[0]
    parts = max(1, min(cpu_threads(), n >> 22))
    if parts == 1:
        np.copyto(dst, src)
        return
    parallel_map(lambda r: np.copyto(dst[r[0] : r[1]], src[r[0] : r[1]]), chunked(n, parts))


_pinned_lock = threading.Lock()
_pinned: list[tuple[int, int, weakref.ref[np.ndarray]]] = []


def pinned_empty(
    shape: int | tuple[int, ...], dtype: Any = np.uint32, *, portable: bool = False
) -> np.ndarray:
    """An uninitialised page-locked host array (plain memory under the CUDA simulator). Uploads from it (or
    from a contiguous view into it) skip the staging copy. ``portable``: page-locked for every CUDA context
    of the process, not only the current device's (a key streamed to several GPUs from one host copy).
    Pinned memory is scarce: allocate once, reuse."""
    from numba import cuda

    from gpu.arith.cudashim import simulator

    dt = np.dtype(dtype)
    if int(np.prod(shape)) == 0:
        return np.empty(shape, dtype=dt)  # nothing to pin (the driver refuses 0-byte allocations)
    if portable and not simulator():
        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        nbytes = int(np.prod(dims)) * dt.itemsize
        buf = cuda.current_context().memhostalloc(nbytes, portable=True)
        arr = np.ndarray(dims, dtype=dt, buffer=buf)
    else:
        arr = cuda.pinned_array(shape, dtype=dt)
    lo = arr.__array_interface__["data"][0]
    with _pinned_lock:
        _pinned[:] = [e for e in _pinned if e[2]() is not None]
        _pinned.append((lo, lo + arr.nbytes, weakref.ref(arr)))
    return arr


def pinned_copy(host: np.ndarray) -> np.ndarray:
    """A page-locked copy of ``host`` (filled by CPU threads)."""
    out = pinned_empty(host.shape, host.dtype)
    src = np.ascontiguousarray(host)
    if src.nbytes:
        _copy_parallel(src.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8))
    return out


def is_pinned(host: np.ndarray) -> bool:
    """Whether ``host`` is C-contiguous and lies inside an array from pinned_empty that is still alive."""
    if not host.flags.c_contiguous:
        return False
    lo = host.__array_interface__["data"][0]
    hi = lo + host.nbytes
    with _pinned_lock:
        return any(a <= lo and hi <= b and r() is not None for a, b, r in _pinned)


class PinnedPool:
    """Page-locked host arrays kept for reuse: allocating pinned memory runs at ~1.4 GB/s on the H200 host
    (17 GB for one 2^27 assignment: ~12 s), so a proving loop takes its per-proof buffers (witness, a, b, c)
    from here and gives them back when the upload is done. ``take`` hands out a free array of the same shape
    and dtype or allocates one; ``held_bytes`` is all the memory the pool owns, in use or free."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[tuple[tuple[int, ...], str], list[np.ndarray]] = {}
        self._owned: dict[int, np.ndarray] = {}
        self.held_bytes = 0

    def take(self, shape: int | tuple[int, ...], dtype: Any = np.uint32) -> np.ndarray:
        key = ((shape,) if isinstance(shape, int) else tuple(shape), np.dtype(dtype).str)
        with self._lock:
            free = self._free.get(key)
            if free:
                return free.pop()
        arr = pinned_empty(key[0], dtype)
        with self._lock:
            self._owned[id(arr)] = arr
            self.held_bytes += arr.nbytes
        return arr

    def give(self, *arrays: np.ndarray) -> None:
        """Return arrays that came from take (each once; anything else is an error, not silently kept)."""
        with self._lock:
            for arr in arrays:
                if self._owned.get(id(arr)) is not arr:
                    raise ValueError("this array was not taken from this pool")
                free = self._free.setdefault((tuple(arr.shape), arr.dtype.str), [])
                if any(f is arr for f in free):
                    raise ValueError("array given back twice")
                free.append(arr)

    def clear(self) -> None:
        """Drop the free arrays (the pinned memory goes back when nothing else refers to them)."""
        with self._lock:
            for free in self._free.values():
                for arr in free:
                    self.held_bytes -= arr.nbytes
                    del self._owned[id(arr)]
            self._free.clear()


class Staging:
    """``upload(host, dst)``: copy a C-contiguous host array into a device array of the same shape and dtype
    through ``buffers`` pinned buffers of ``chunk_bytes`` each, or directly when ``host`` is already
    page-locked (is_pinned). Use from the thread that holds the device. ``direct_bytes`` / ``staged_bytes``
    count both."""

    def __init__(self, chunk_bytes: int = CHUNK_BYTES, buffers: int = BUFFERS) -> None:
        if chunk_bytes < 1 or buffers < 2:
            raise ValueError("staging needs chunk_bytes >= 1 and at least two buffers")
        self.chunk_bytes = chunk_bytes
        self.nbuf = buffers
        self._bufs: list[np.ndarray] = []
        self._stream: Any = None
        self.direct_bytes = 0
        self.staged_bytes = 0

    def _ready(self) -> None:
        from numba import cuda

        if not self._bufs:
            self._bufs = [cuda.pinned_array(self.chunk_bytes, dtype=np.uint8) for _ in range(self.nbuf)]
            self._stream = cuda.stream()

    def upload(self, host: np.ndarray, dst: Any) -> None:
        """dst[...] = host, returning when the copy is complete."""
        from numba import cuda

        if tuple(dst.shape) != tuple(host.shape) or np.dtype(dst.dtype) != host.dtype:
            raise ValueError(f"cannot copy {host.dtype} {host.shape} into {dst.dtype} {tuple(dst.shape)}")
        total = host.nbytes
        if total == 0:
            return
        self._ready()
        if is_pinned(host):  # already page-locked: one DMA, no staging memcpy
            dst.reshape(-1).copy_to_device(host.reshape(-1), stream=self._stream)
            self._stream.synchronize()
            self.direct_bytes += total
            return
        src = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        flat = dst.reshape(-1)
        item = host.dtype.itemsize
        step = max(item, self.chunk_bytes // item * item)
        pending: list[Any] = [None] * self.nbuf
        for k, lo in enumerate(range(0, total, step)):
            hi = min(lo + step, total)
            j = k % self.nbuf
            if pending[j] is not None:
                pending[j].synchronize()  # the copy engine is done with this buffer
            buf = self._bufs[j]
            _copy_parallel(src[lo:hi], buf[: hi - lo])
            flat[lo // item : hi // item].copy_to_device(buf[: hi - lo].view(host.dtype), stream=self._stream)
            ev = cuda.event()
            ev.record(self._stream)
            pending[j] = ev
        self._stream.synchronize()
        self.staged_bytes += total


def pin_in_place(host: np.ndarray) -> np.ndarray:
    """Page-lock an existing C-contiguous array where it lies (``cuMemHostRegister``), for as long as it
    lives: no copy, so the 47 GB of a 32GiB key read on the host become DMA-able without a second copy. The
    caller holds a device (a context must exist); under the simulator nothing is done. Returns ``host``."""
    from numba import cuda

    from gpu.arith.cudashim import simulator

    if simulator() or host.nbytes == 0 or is_pinned(host):
        return host
    if not host.flags.c_contiguous:
        raise ValueError("only a C-contiguous array can be pinned in place")
    lo = host.__array_interface__["data"][0]
    handle = cuda.current_context().mempin(host, lo, host.nbytes)
    _registered[id(host)] = (weakref.ref(host), handle)
    with _pinned_lock:
        _pinned[:] = [e for e in _pinned if e[2]() is not None]
        _pinned.append((lo, lo + host.nbytes, weakref.ref(host)))
    weakref.finalize(host, _registered.pop, id(host), None)
    return host


_registered: dict[int, tuple[weakref.ref[np.ndarray], Any]] = {}
_copy_streams: dict[int, Any] = {}


def copy_stream(device_index: int) -> Any:
    """The device's stream for host -> device copies that run beside the kernels: non-blocking, so it does not
    wait for (nor hold up) the legacy default stream the kernels are launched on. One per device, kept for
    the process. None under the simulator (copies there are synchronous)."""
    from gpu.arith.cudashim import simulator

    if simulator():
        return None
    got = _copy_streams.get(device_index)
    if got is None:
        from numba import cuda
        from numba.cuda.cudadrv.driver import binding, driver

        handle = driver.cuStreamCreate(binding.CUstream_flags.CU_STREAM_NON_BLOCKING.value)
        got = _copy_streams[device_index] = (handle, cuda.external_stream(int(handle)))
    return got[1]


class BaseRing:
    """Chunks of a page-locked host array, each copied into one of ``slots`` device buffers on the copy stream
    while the compute (the default stream) works on the chunk before it: ``chunks(host, step)`` yields
    (lo, hi, device view) once the view's copy is complete as far as the default stream is concerned, and
    copies the chunk ``slots`` ahead into a buffer only after the default stream is done with it."""

    def __init__(self, device_index: int, slot_shape: tuple[int, ...], slots: int = 2) -> None:
        from numba import cuda

        if slots < 1:
            raise ValueError("a ring needs at least one slot")
        self.bufs = [cuda.device_array(slot_shape, dtype=np.uint32) for _ in range(slots)]
        self.stream = copy_stream(device_index)
        self.copied_bytes = 0

    def chunks(self, host: np.ndarray, step: int) -> Iterator[tuple[int, int, Any]]:
        from numba import cuda

        if step > self.bufs[0].shape[0]:
            raise ValueError(f"chunks of {step} points do not fit slots of {self.bufs[0].shape[0]}")
        if self.stream is not None and not is_pinned(host):
            raise ValueError("streamed bases must be page-locked (pinned_empty / pin_in_place)")
        m = host.shape[0]
        spans = [(lo, min(m, lo + step)) for lo in range(0, m, step)]
        slots = len(self.bufs)
        ready: list[Any] = [None] * slots
        done: list[Any] = [None] * slots

        def issue(k: int) -> None:
            lo, hi = spans[k]
            j = k % slots
            dst = self.bufs[j][: hi - lo]
            if self.stream is None:  # the simulator: a plain copy
                dst.copy_to_device(host[lo:hi])
            else:
                if done[j] is not None:
                    done[j].wait(self.stream)  # the kernels that read this buffer last have finished
                dst.copy_to_device(host[lo:hi], stream=self.stream)
                ev = cuda.event()
                ev.record(self.stream)
                ready[j] = ev
            self.copied_bytes += int(host[lo:hi].nbytes)

        for k in range(min(slots, len(spans))):
            issue(k)
        for k, (lo, hi) in enumerate(spans):
            j = k % slots
            if ready[j] is not None:
                ready[j].wait(0)  # the default stream waits for the copy, the host does not
            yield lo, hi, self.bufs[j][: hi - lo]
            if self.stream is not None:
                ev = cuda.event()
                ev.record(0)
                done[j] = ev
            if k + slots < len(spans):
                issue(k + slots)
