"""Where the engine runs: the backend as an enum, and the one error type that CUDA failures become.

The engine takes ``Backend.cpu`` or ``Backend.cuda`` (or their names) and, for CUDA, an explicit device;
``Backend.auto`` is resolved once, by :func:`gpu.device.resolve_backend`, before work starts. CUDA driver,
compiler and out-of-memory failures are translated into :class:`GpuError` at one boundary,
:meth:`gpu.device.Device.use`, inside which all of the engine's CUDA work runs. Imports nothing of ours.
"""

from __future__ import annotations

from enum import StrEnum


class Backend(StrEnum):
    """Where the arithmetic runs; ``auto`` is CUDA when a real GPU is usable, else the CPU."""

    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


class GpuError(RuntimeError):
    """A CUDA failure (driver, kernel compilation, out of memory) on ``device`` (an index, or None when no
    device was involved yet); the original exception is its ``__cause__``."""

    def __init__(self, message: str, *, device: int | None = None, out_of_memory: bool = False) -> None:
        super().__init__(message)
        self.device = device
        self.out_of_memory = out_of_memory


def engine_backend(backend: Backend | str) -> Backend:
    """``cpu`` or ``cuda`` as the engine takes it; a bad name or an unresolved ``auto`` is a ValueError."""
    try:
        chosen = Backend(backend)
    except ValueError:
        raise ValueError(f"backend must be 'cpu' or 'cuda', not {backend!r}") from None
    if chosen is Backend.auto:
        raise ValueError("backend 'auto' must be resolved before it reaches the engine (resolve_backend)")
    return chosen
