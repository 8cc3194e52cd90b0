"""GPU discovery and selection: an explicit Device object per job, one lock per device.

Nothing is read at import: ``devices()`` asks the driver (or the simulator) when called, so a process can
start before its GPUs are visible and a scheduler can hand a different device to each job.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from gpu.arith.cudashim import simulator

_locks: dict[int, threading.RLock] = {}
_locks_guard = threading.Lock()


def _lock_for(index: int) -> threading.RLock:
    with _locks_guard:
        return _locks.setdefault(index, threading.RLock())


@dataclass(frozen=True)
class Device:
    """One CUDA device (or the simulator's fake one)."""

    index: int
    name: str
    compute_capability: tuple[int, int]
    memory_bytes: int
    simulated: bool = False
    _lock: threading.RLock = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @contextmanager
    def use(self) -> Iterator[Device]:
        """Hold this device's lock and make it current for the calling thread."""
        lock = self._lock or _lock_for(self.index)
        with lock:
            if self.simulated:
                yield self
                return
            from numba import cuda

            with cuda.gpus[self.index]:
                yield self


def devices() -> list[Device]:
    """The devices visible now (the simulator counts as one)."""
    from numba import cuda

    if simulator():
        return [Device(0, "CUDA simulator", (0, 0), 0, True, _lock_for(0))]
    if not cuda.is_available():
        return []
    out = []
    for d in cuda.list_devices():
        with cuda.gpus[d.id]:
            free, total = cuda.current_context().get_memory_info()
            dev = cuda.get_current_device()
            out.append(
                Device(
                    d.id,
                    dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
                    tuple(dev.compute_capability),
                    int(total),
                    False,
                    _lock_for(d.id),
                )
            )
    return out


def get_device(device: Device | int | None = None) -> Device:
    """Resolve a Device, an index, or None (the first device); raises RuntimeError if there is none."""
    if isinstance(device, Device):
        return device
    found = devices()
    if not found:
        raise RuntimeError("no CUDA device is available (and the simulator is off)")
    if device is None:
        return found[0]
    for d in found:
        if d.index == device:
            return d
    raise RuntimeError(f"no CUDA device with index {device}; visible: {[d.index for d in found]}")
