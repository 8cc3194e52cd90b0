"""GPU discovery and selection: an explicit Device object per job, one lock per device, and the one boundary
where CUDA failures become :class:`gpu.placement.GpuError`.

Nothing is read at import: ``devices()`` asks the driver (or the simulator) when called, so a process can
start before its GPUs are visible and the agent can hand a different device to each job. Listing devices
reads their attributes only; no device's context is created until work (or ``total_memory``) needs it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from gpu.arith.cudashim import simulator
from gpu.placement import Backend, GpuError, engine_backend

_locks: dict[int, threading.RLock] = {}
_locks_guard = threading.Lock()
_total: dict[int, int] = {}


def _lock_for(index: int) -> threading.RLock:
    with _locks_guard:
        return _locks.setdefault(index, threading.RLock())


@dataclass(frozen=True)
class Device:
    """One CUDA device (or the simulator's fake one)."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    simulated: bool = False
    _lock: threading.RLock = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @contextmanager
    def use(self) -> Iterator[Device]:
        """Hold this device's lock and make it current for the calling thread; a CUDA failure inside comes
        out as GpuError (the engine's only translation point)."""
        lock = self._lock or _lock_for(self.index)
        with lock:
            if self.simulated:
                yield self
                return
            from numba import cuda

            try:
                with cuda.gpus[self.index]:
                    yield self
            except GpuError:
                raise
            except _cuda_errors() as exc:
                raise _translate(exc, self.index) from exc

    def total_memory(self) -> int:
        """Bytes of device memory (0 for the simulator); the first call per device enters its context."""
        if self.simulated:
            return 0
        if self.index not in _total:
            from numba import cuda

            with self.use():
                _total[self.index] = int(cuda.current_context().get_memory_info()[1])
        return _total[self.index]

    def memory_info(self) -> tuple[int, int] | None:
        """(free, total) bytes now, asked without this device's lock (a status reader must not wait for a
        proof that holds the device); None for the simulator."""
        if self.simulated:
            return None
        from numba import cuda

        with cuda.gpus[self.index]:
            free, total = cuda.current_context().get_memory_info()
        return int(free), int(total)

    def free_memory(self) -> int | None:
        """Free bytes now (None for the simulator, which has no limit); holds the device while asking."""
        if self.simulated:
            return None
        from numba import cuda

        with self.use():
            return int(cuda.current_context().get_memory_info()[0])


def _cuda_errors() -> tuple[type[BaseException], ...]:
    """numba-cuda's driver / compiler exception types (none when numba-cuda is absent)."""
    try:
        from numba.cuda.cudadrv import driver, error
    except ImportError:
        return ()
    names = ("CudaDriverError", "CudaRuntimeError", "CudaSupportError", "NvvmError", "NvrtcError")
    found = [getattr(error, n, None) for n in names] + [getattr(driver, "LinkerError", None)]
    return tuple(t for t in found if isinstance(t, type))


def _translate(exc: BaseException, index: int | None) -> GpuError:
    text = str(exc)
    oom = "OUT_OF_MEMORY" in text or "out of memory" in text.lower()
    where = f"CUDA device {index}" if index is not None else "CUDA"
    return GpuError(f"{where}: {type(exc).__name__}: {text}", device=index, out_of_memory=oom)


def devices() -> list[Device]:
    """The devices visible now (the simulator counts as one); reads attributes, enters no context."""
    from numba import cuda

    if simulator():
        return [Device(0, "CUDA simulator", (0, 0), True, _lock_for(0))]
    try:
        if not cuda.is_available():
            return []
        out = []
        for d in cuda.list_devices():
            name = d.name.decode() if isinstance(d.name, bytes) else str(d.name)
            cc = tuple(d.compute_capability)
            out.append(Device(d.id, name, (int(cc[0]), int(cc[1])), False, _lock_for(d.id)))
        return out
    except _cuda_errors() as exc:
        raise _translate(exc, None) from exc


def get_device(device: Device | int) -> Device:
    """Resolve a Device or a device index (explicit: there is no default device); GpuError if absent."""
    if isinstance(device, Device):
        return device
    if device is None or isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"a CUDA device must be named (a Device or an index), not {device!r}")
    found = devices()
    if not found:
        raise GpuError("no CUDA device is available (and the simulator is off)")
    for d in found:
        if d.index == device:
            return d
    raise GpuError(f"no CUDA device with index {device}; visible: {[d.index for d in found]}", device=device)


def resolve_backend(backend: Backend | str, found: Sequence[Device] | None = None) -> Backend:
    """The one place ``auto`` is decided: CUDA when a real GPU is visible (the simulator does not count,
    it runs kernels as Python), else the CPU. ``cuda`` stays ``cuda`` if any device (or the simulator) is
    there; with none it is a GpuError. ``cpu`` is ``cpu``. ``found``: the devices visible, when the caller
    has listed them already (default: :func:`devices`)."""
    chosen = Backend(backend)
    if chosen is Backend.cpu:
        return chosen
    if found is None:
        try:
            found = devices()
        except Exception:  # noqa: BLE001 - a driver that cannot enumerate devices means: no usable GPU
            found = []
    if found and (chosen is Backend.cuda or any(not d.simulated for d in found)):
        return Backend.cuda
    if chosen is Backend.cuda:
        raise GpuError("no usable CUDA GPU here (install the 'cuda' extra and a driver, or use the CPU one)")
    return Backend.cpu


def place(backend: Backend | str, device: Device | int | None) -> tuple[Backend, Device | None]:
    """The engine's placement check: ``cpu`` (no device) or ``cuda`` on the device named; ``auto`` and a CUDA
    job without a device are refused (there is no implicit device 0)."""
    chosen = engine_backend(backend)
    if chosen is Backend.cpu:
        return chosen, None
    if device is None:
        raise ValueError("the CUDA backend needs an explicit device (a gpu.device.Device or an index)")
    return chosen, get_device(device)
