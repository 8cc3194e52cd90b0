"""Device memory as the engine sees it: one ledger per device that counts every allocation, names the phase
that made it, and refuses one that would pass the device budget before the driver is asked.

Why: a 32GiB partition's buffers are tens of GB each, and the one run without this ran out of memory deep
inside an MSM with a plan that had left 7.8 GB out. With the ledger the plan (``gpu.groth16.plan``) is checked
by what really happens: each phase's peak of live bytes is recorded beside the plan's figure, and an
allocation beyond the budget is a :class:`BudgetExceeded` naming the phase, never
``CUDA_ERROR_OUT_OF_MEMORY``.

Where the bytes are counted:
* on a GPU, by an External Memory Management plugin (:class:`CountingMemoryManager`, numba's own manager with
  a count around ``memalloc``), installed by :func:`install` before the first context exists; every
  ``device_array`` / ``to_device`` of the process goes through it;
* under the CUDA simulator, by wrapping ``numba.cuda``'s allocating functions (the simulator has no memory
  manager); a simulated array is freed when its numpy buffer dies.

numba frees device memory lazily: a dropped array's ``cuMemFree`` waits in the memory manager's queue
(``memory_manager.deallocations``, not ``Context.deallocations``, which holds events, streams and modules).
:func:`flush_frees` empties that queue; the ledger flushes before refusing, and the prover at phase
boundaries, so "live" here is what Python still holds.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from gpu.arith.cudashim import simulator
from gpu.placement import GpuError

__all__ = [
    "BudgetExceeded",
    "Ledger",
    "PhaseFigure",
    "counting",
    "flush_frees",
    "install",
    "ledger",
]


class BudgetExceeded(GpuError):
    """Device bytes beyond the budget: a phase (or a whole job) that cannot fit. ``phase`` names it."""

    def __init__(
        self,
        message: str,
        *,
        phase: str = "",
        need: int = 0,
        budget: int = 0,
        device: int | None = None,
    ) -> None:
        super().__init__(message, device=device, out_of_memory=True)
        self.phase = phase
        self.need = need
        self.budget = budget


@dataclass
class PhaseFigure:
    """One phase of the last proof: the plan's bytes and the peak of live bytes measured while it ran."""

    planned: int = 0
    peak: int = 0


@dataclass
class Ledger:
    """Live device bytes of this process on one device: ``cap`` (None: no limit), the phase now running and
    each phase's figures. Thread-safe: frees arrive from the garbage collector on any thread."""

    index: int
    cap: int | None = None
    live: int = 0
    peak: int = 0
    allocations: int = 0
    allocated_bytes: int = 0  # every allocation's bytes, summed (what a block allocated is a difference)
    current: str = "idle"
    phases: dict[str, PhaseFigure] = field(default_factory=dict)
    flush: Callable[[], None] | None = None  # the manager's pending-free queue, when counting on a GPU
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def admit(self, nbytes: int) -> None:
        """Before an allocation of ``nbytes``: BudgetExceeded when it would pass the cap (the pending frees
        are flushed first: what Python dropped is not in use)."""
        if self.cap is None or self.live + nbytes <= self.cap:
            return
        if self.flush is not None:
            self.flush()
        if self.live + nbytes > self.cap:
            raise BudgetExceeded(
                f"device {self.index}: phase {self.current!r} needs {nbytes:,} more bytes with {self.live:,} "
                f"held; the budget is {self.cap:,}",
                phase=self.current,
                need=self.live + nbytes,
                budget=self.cap,
                device=self.index,
            )

    def allocated(self, nbytes: int) -> None:
        with self._lock:
            self.live += nbytes
            self.allocations += 1
            self.allocated_bytes += nbytes
            self.peak = max(self.peak, self.live)
            fig = self.phases.get(self.current)
            if fig is not None:
                fig.peak = max(fig.peak, self.live)

    def dropped(self, nbytes: int) -> None:
        with self._lock:
            self.live -= nbytes

    @contextmanager
    def phase(self, name: str, planned: int = 0) -> Iterator[PhaseFigure]:
        """Run a block as phase ``name``: its peak is recorded from the live bytes at entry on; ``planned``
        (the plan's bytes for it, resident included) is kept beside it. Phases nest; the outer one resumes."""
        with self._lock:
            outer = self.current
            fig = self.phases[name] = PhaseFigure(planned, self.live)
            self.current = name
        try:
            yield fig
        finally:
            with self._lock:
                self.current = outer
                up = self.phases.get(outer)
                if up is not None:
                    up.peak = max(up.peak, fig.peak)

    def reset_phases(self) -> None:
        with self._lock:
            self.phases = {}
            self.peak = self.live

    @contextmanager
    def capped(self, cap: int | None) -> Iterator[Ledger]:
        """The block under ``cap`` (None: none), the earlier cap restored after."""
        old = self.cap
        self.cap = cap
        try:
            yield self
        finally:
            self.cap = old


_ledgers: dict[int, Ledger] = {}
_ledgers_lock = threading.Lock()
_installed = False
_install_lock = threading.Lock()


def ledger(index: int = 0) -> Ledger:
    """The ledger of device ``index`` (the simulator's device is 0)."""
    with _ledgers_lock:
        got = _ledgers.get(index)
        if got is None:
            got = _ledgers[index] = Ledger(index)
        return got


def install() -> bool:
    """Count this process's device allocations from now on (idempotent). On a GPU it must run before the
    first CUDA context exists; a context made earlier keeps numba's own manager (then :func:`counting` is
    False for it and only the plan's checks apply). Returns whether counting is installed."""
    global _installed
    with _install_lock:
        if _installed:
            return True
        try:
            from numba import cuda

            if simulator():
                _wrap_simulator(cuda)
            else:
                cuda.set_memory_manager(_counting_manager_class())
        except (ImportError, AttributeError):  # no numba-cuda (the plain install): nothing to count
            return False
        _installed = True
        return True


def counting(index: int = 0) -> bool:
    """Whether device ``index``'s allocations are counted (its context uses the counting manager)."""
    if not _installed:
        return False
    if simulator():
        return True
    from numba import cuda

    try:
        with cuda.gpus[index]:
            return isinstance(cuda.current_context().memory_manager, _counting_manager_class())
    except Exception:  # noqa: BLE001 - no context can be had: not counted
        return False


def flush_frees() -> None:
    """Return the device memory of arrays Python has dropped to the driver now (the memory manager's queue
    of pending ``cuMemFree``; the context's own queue holds no memory). No-op in the simulator."""
    if simulator():
        return
    from numba import cuda

    ctx = cuda.current_context()
    manager = getattr(ctx, "memory_manager", None)
    pending = getattr(manager, "deallocations", None)
    if pending is not None:
        cuda.synchronize()
        pending.clear()


# ------------------------------------------------------------------------------------------------- GPU


_manager_class: Any = None


def _counting_manager_class() -> Any:
    """numba's memory manager with every device allocation counted in the device's ledger (built on first
    use: numba-cuda is imported only where a GPU is used)."""
    global _manager_class
    if _manager_class is not None:
        return _manager_class
    from numba.cuda.cudadrv.driver import NumbaCUDAMemoryManager

    class CountingMemoryManager(NumbaCUDAMemoryManager):
        """numba's manager; ``memalloc`` admitted by, and counted in, the device's ledger."""

        def initialize(self) -> None:
            super().initialize()
            ledger(int(self.context.device.id)).flush = self.deallocations.clear

        def memalloc(self, size: int) -> Any:
            led = ledger(int(self.context.device.id))
            led.admit(size)
            owned = super().memalloc(size)
            led.allocated(size)
            # the buffer is released when its pointer's finalizer runs (the last view gone): count it there
            fin = getattr(getattr(owned, "_mem", None), "_finalizer", None)
            detached = fin.detach() if fin is not None else None
            if detached is None:  # numba's internals changed: count it dropped with the owning pointer
                weakref.finalize(owned, led.dropped, size)
                return owned
            mem, release, args, kwargs = detached

            def release_counted() -> None:
                led.dropped(size)
                release(*args, **kwargs)

            mem._finalizer = weakref.finalize(mem, release_counted)
            return owned

    _manager_class = CountingMemoryManager
    return _manager_class


# ------------------------------------------------------------------------------------------- simulator


def _owner(arr: Any) -> Any:
    """The numpy array that owns a simulated device array's memory (views keep it alive)."""
    host = getattr(arr, "_ary", arr)
    while getattr(host, "base", None) is not None and hasattr(host.base, "nbytes"):
        host = host.base
    return host


def _wrap_simulator(cuda: Any) -> None:
    """Count the simulator's allocating calls in ledger 0: ``device_array``, ``device_array_like`` and
    ``to_device`` without a destination (every call site reaches them through the ``numba.cuda`` module)."""

    def counted(make: Callable[..., Any], nbytes_of: Callable[..., int]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            n = nbytes_of(*args, **kwargs)
            if n is None:
                return make(*args, **kwargs)
            led = ledger(0)
            led.admit(n)
            out = make(*args, **kwargs)
            led.allocated(n)
            weakref.finalize(_owner(out), led.dropped, n)
            return out

        call.__wrapped__ = make  # type: ignore[attr-defined]
        call.__doc__ = make.__doc__
        return call

    import numpy as np

    def shape_bytes(shape: Any, dtype: Any = np.float64, *args: Any, **kwargs: Any) -> int:
        dt = np.dtype(kwargs.get("dtype", dtype))
        return int(np.prod(shape, dtype=np.int64)) * dt.itemsize

    def like_bytes(ary: Any, *args: Any, **kwargs: Any) -> int:
        return int(np.prod(ary.shape, dtype=np.int64)) * np.dtype(ary.dtype).itemsize

    def to_device_bytes(obj: Any, stream: Any = 0, copy: bool = True, to: Any = None, **kw: Any) -> Any:
        if to is not None or kw.get("to") is not None:
            return None  # copies into an existing array: nothing allocated
        return int(np.asarray(obj).nbytes)

    cuda.device_array = counted(cuda.device_array, shape_bytes)
    cuda.device_array_like = counted(cuda.device_array_like, like_bytes)
    cuda.to_device = counted(cuda.to_device, to_device_bytes)
