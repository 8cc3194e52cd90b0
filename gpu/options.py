"""The engine's options as one value: how it computes, decided by its caller, never read from the environment.

:class:`EngineOptions` holds every switch the engine has. Four of them act per engine (``device_spmv``: A·w,
B·w, C·w evaluated on the device from matrices resident on the proving key; ``params_to_device``: parameter
files decoded straight onto the device; ``device_memory``: the engine's device budget; ``layout``: how a proof
is laid out in it): they are passed to the agent's engine with the rest of the record.
Three act per process and must be set before the arithmetic is compiled (``ptx``: which Montgomery product the
CUDA kernels inline; ``cpu_threads``: the host thread pool's width; ``kernel_cache``: Numba's on-disk cache of
compiled code, in numba's ``NUMBA_CACHE_DIR``): :func:`configure` sets them once, before ``gpu.arith``'s field
modules are imported, and :func:`process` is what the arithmetic reads. The on-disk kernel cache is keyed by
:meth:`EngineOptions.cache_tag`, because Numba's own key does not see the PTX choice.

Defaults: ``DEVICE_PATHS`` is the one line that turns both device paths on or off by default (on since a 32GiB
proof made with both verified on an H100, BENCHMARKS.md P27; the layout still computes A·w, B·w, C·w on the
host where the matrices do not fit). Imports nothing (layer 0, beside ``gpu.placement``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

__all__ = ["DEVICE_PATHS", "EngineOptions", "LAYOUT_NAMES", "LayoutName", "Ptx", "configure", "process"]

DEVICE_PATHS = True  # the device SpMV and the parameters decoded on the device (32GiB verified on an H100)

Ptx = Literal["evenodd", "cios", "off"]
PTX_PRODUCTS: tuple[Ptx, ...] = ("evenodd", "cios", "off")
LayoutName = Literal["auto", "resident", "stream24", "stream16"]
LAYOUT_NAMES: tuple[LayoutName, ...] = ("auto", "resident", "stream24", "stream16")


@dataclass(frozen=True)
class EngineOptions:
    """``device_spmv`` / ``params_to_device``: CUDA only (the CPU engine ignores them); ``ptx``: the CUDA
    kernels' Montgomery product (``evenodd`` split PTX, row-wise ``cios`` PTX, or ``off``: the generated limb
    code); ``cpu_threads``: host threads for the CPU kernels (0: every CPU this process may use);
    ``kernel_cache``: compiled code cached on disk (off by default: Numba keys a cache entry by the caching
    function's own file, so an edit of the code it inlines would be missed; whoever turns it on gives each
    source and setting its own directory); ``device_memory``: the device bytes the engine may allocate, key
    included (0: the free memory once the context is up and every kernel has run once, less a reserve);
    ``layout``: the memory layout (``gpu.groth16.plan``; ``auto``: the first that fits the budget, resident
    before streamed)."""

    device_spmv: bool = DEVICE_PATHS
    params_to_device: bool = DEVICE_PATHS
    ptx: Ptx = "evenodd"
    cpu_threads: int = 0
    kernel_cache: bool = False
    device_memory: int = 0
    layout: LayoutName = "auto"

    def __post_init__(self) -> None:
        if self.ptx not in PTX_PRODUCTS:
            raise ValueError(f"ptx must be one of {', '.join(PTX_PRODUCTS)}, got {self.ptx!r}")
        if self.cpu_threads < 0:
            raise ValueError(f"cpu_threads must be >= 0, got {self.cpu_threads}")
        if self.device_memory < 0:
            raise ValueError(f"device_memory must be >= 0 bytes, got {self.device_memory}")
        if self.layout not in LAYOUT_NAMES:
            raise ValueError(f"layout must be one of {', '.join(LAYOUT_NAMES)}, got {self.layout!r}")

    def cache_tag(self) -> str:
        """What the compiled kernels depend on beyond the sources: ``ptx1`` (even/odd), ``ptx1-cios``,
        ``ptx0`` (off)."""
        return {"evenodd": "ptx1", "cios": "ptx1-cios", "off": "ptx0"}[self.ptx]

    def same_process(self, other: EngineOptions) -> bool:
        """Whether ``other`` asks for the same per-process settings (the per-engine ones may differ)."""
        mine = (self.ptx, self.cpu_threads, self.kernel_cache)
        return mine == (other.ptx, other.cpu_threads, other.kernel_cache)


_process = EngineOptions()
_frozen = False  # set once the arithmetic has read the per-process options


def configure(options: EngineOptions) -> None:
    """Set the per-process options (``ptx``, ``cpu_threads``, ``kernel_cache``) before the arithmetic is
    compiled. Once the
    field modules were imported, a different PTX choice is refused (those kernels are compiled already)."""
    global _process
    if _frozen and options.ptx != _process.ptx:
        raise RuntimeError(
            f"the CUDA arithmetic was compiled with ptx={_process.ptx!r}; ptx={options.ptx!r} needs a new "
            "process (set it before the engine is imported)"
        )
    _process = replace(options)


def process(*, freeze: bool = False) -> EngineOptions:
    """The per-process options as configured (defaults if nobody did); ``freeze``: the caller compiles with
    them (the field modules), so the PTX choice is fixed from now on."""
    global _frozen
    if freeze:
        _frozen = True
    return _process
