"""The one place that knows how Numba's CPU target, its CUDA target and the CUDA simulator differ.

* :func:`jitable` makes a plain Python function callable from ``@njit`` code (CPU overload), from
  ``@cuda.jit`` kernels (CUDA overload compiled with ``forceinline=True``: gpu.md §4.5 measured +46 % on the
  XYZZ madd kernel) and, unchanged, from the simulator, which runs kernels as Python. This is the single
  source of truth for the field and curve arithmetic.
* :func:`kernel` wraps ``cuda.jit`` and drops the options that the simulator rejects (``forceinline``,
  ``launch_bounds``, ``max_registers``, ``lto``, ``lineinfo``; gpu.md §4.10).
* :func:`umul64hi` is libdevice's ``mul.hi.u64`` on a GPU and a Python fallback in the simulator, which has
  no libdevice (deps.md §5).

Whether the simulator is on is decided by ``NUMBA_ENABLE_CUDASIM`` before numba is first imported, so it is
a property of the process; :func:`simulator` reads it from numba's config each time it is asked.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numba import config

from gpu.options import process

F = TypeVar("F", bound=Callable[..., Any])


def _follow_environment() -> None:
    """Re-read numba's config if NUMBA_ENABLE_CUDASIM changed after numba's config was first loaded (pytest
    plugins load it before tests/conftest.py sets the variable) and numba.cuda is not imported yet: otherwise
    the simulator would silently not be used."""
    env = os.environ.get("NUMBA_ENABLE_CUDASIM")
    if env is None or "numba.cuda" in sys.modules:
        return
    if (env.strip() not in ("", "0")) != bool(getattr(config, "ENABLE_CUDASIM", 0)):
        config.reload_config()


_follow_environment()

_CPU_OPTS: Any = {"no_cpython_wrapper": True}
_SIM_REJECTS = ("forceinline", "launch_bounds", "max_registers", "lto", "lineinfo")


def _cuda_overload() -> Callable[..., Any] | None:
    """numba-cuda's ``overload`` for the CUDA target, or None when kernels are simulated or the real CUDA
    target is absent (the plain install: numba's bundled ``numba.cuda`` has no ``extending.overload``; the
    ``cuda`` extra brings numba-cuda). Without it only the CPU registrations are made, which is all the CPU
    backend needs."""
    if simulator():
        return None
    try:
        from numba.cuda.extending import overload  # type: ignore[attr-defined]
    except ImportError:
        return None
    return overload


def simulator() -> bool:
    """True when numba.cuda is the CUDA simulator (kernels run as Python on numpy scalars)."""
    return bool(getattr(config, "ENABLE_CUDASIM", 0))


def cache_enabled() -> bool:
    """On-disk caching of compiled code: the per-process ``EngineOptions.kernel_cache`` its caller configured
    (``gpu.options.configure``), read when a function is decorated.

    Off by default: Numba's cache is keyed on the caching function's own file only, so a kernel cached before
    an edit of the field code it inlines would be reused stale (numba/numba#8888). Nor does the key see the
    PTX product (``gpu.options``): one cache directory per setting (``EngineOptions.cache_tag``).
    """
    return process().kernel_cache


def jitable(fn: F) -> F:
    """Register ``fn`` for the CPU target and (unless simulated) the CUDA target with forced inlining.

    Returns ``fn`` itself, so it stays callable from Python (the simulator relies on that).
    """
    return jitable_cuda(lambda: None)(fn)


def jitable_cuda(make_cuda: Callable[[], Callable[..., Any] | None]) -> Callable[[F], F]:
    """Like :func:`jitable`, but CUDA kernels get ``make_cuda()`` instead of ``fn`` when it returns a function
    (a hand-written PTX version, gpu.arith.montgomery_ptx): the Python definition stays the CPU's and the
    simulator's, and the real-GPU tests compare the two bit for bit."""

    def wrap(fn: F) -> F:
        from numba.core.extending import overload as cpu_overload

        cpu_overload(fn, target="cpu", jit_options=_CPU_OPTS, strict=False)(lambda *a: fn)
        cuda_overload = _cuda_overload()
        if cuda_overload is not None:
            impl = make_cuda() or fn
            cuda_overload(fn, target="cuda", jit_options={"forceinline": True}, strict=False)(lambda *a: impl)
        return fn

    return wrap


_NOINLINE: set[str] = set()


def _install_noinline_hook() -> None:
    """Mark the CUDA definitions of the functions in _NOINLINE ``noinline`` in LLVM IR.

    NVVM inlines every device function it is given (measured: ``jitable_cold`` copies and non-forceinline
    overloads were inlined anyway), which made each G2 kernel 80-110k PTX lines with spills and minutes of
    ptxas time. numba-cuda has no option for this, so its function-descriptor hook is wrapped here, the one
    place that knows numba internals; the CPU target is not affected.
    """
    from numba.cuda.core import funcdesc

    if getattr(funcdesc.FunctionDescriptor.declare_function, "_psagent_hook", False):
        return
    original = funcdesc.FunctionDescriptor.declare_function

    def declare_function(self, module):
        fn = original(self, module)
        if self.qualname in _NOINLINE and "alwaysinline" not in fn.attributes:
            fn.attributes.add("noinline")
        return fn

    declare_function._psagent_hook = True  # type: ignore[attr-defined]
    funcdesc.FunctionDescriptor.declare_function = declare_function


def jitable_noinline(fn: F) -> F:
    """Like :func:`jitable`, but CUDA keeps ``fn`` a separate function (a call): for large helpers used many
    times in one kernel (Fq2 multiplication in the G2 formulas), where code size, not call overhead,
    dominates. Same behaviour on the CPU and in the simulator."""
    from numba.core.extending import overload as cpu_overload

    cpu_overload(fn, target="cpu", jit_options=_CPU_OPTS, strict=False)(lambda *a: fn)
    cuda_overload = _cuda_overload()
    if cuda_overload is not None:
        _install_noinline_hook()
        _NOINLINE.add(fn.__qualname__)
        cuda_overload(fn, target="cuda", jit_options={}, strict=False)(lambda *a: fn)
    return fn


def jitable_cold(fn: F) -> F:
    """A copy of ``fn`` that CUDA compiles as an ordinary device function (a call, not inlined).

    For rare paths (the P == Q fallback inside an addition) and cold kernels (bucket reduction): inlining
    every formula everywhere multiplied the PTX size (integrate: 159k lines, 24 s to compile, spills),
    while these paths cost little time either way. CPU and simulator behaviour is unchanged.
    """
    import types as pytypes

    from numba.core.extending import overload as cpu_overload

    g = pytypes.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__ + "_cold", fn.__defaults__, fn.__closure__
    )
    g.__qualname__ = fn.__qualname__ + "_cold"
    g.__doc__ = fn.__doc__
    g.__module__ = fn.__module__
    cpu_overload(g, target="cpu", jit_options=_CPU_OPTS, strict=False)(lambda *a: g)
    cuda_overload = _cuda_overload()
    if cuda_overload is not None:
        cuda_overload(g, target="cuda", jit_options={}, strict=False)(lambda *a: g)
    return g  # type: ignore[return-value]


def dispatching(choose: Callable[..., Any], inline: bool = True) -> Callable[[F], F]:
    """Decorator for a generic device-level function: ``choose(*numba_arg_types)`` returns the jitable
    implementation for those types (e.g. the G1 or the G2 formula), so one kernel source serves both groups.
    The decorated Python function is the simulator's (run-time) dispatcher. ``inline=False`` makes CUDA
    call the implementation instead of inlining it (see jitable_cold)."""

    def wrap(fn: F) -> F:
        from numba.core.extending import overload as cpu_overload

        cpu_overload(fn, target="cpu", jit_options=_CPU_OPTS, strict=False)(choose)
        cuda_overload = _cuda_overload()
        if cuda_overload is not None:
            opts = {"forceinline": True} if inline else {}
            cuda_overload(fn, target="cuda", jit_options=opts, strict=False)(choose)
        return fn

    return wrap


def kernel(*args: Any, **options: Any) -> Any:
    """``numba.cuda.jit`` for kernels, minus the options the simulator rejects; ``cache`` follows
    :func:`cache_enabled` unless given."""
    from numba import cuda

    if simulator():
        for key in _SIM_REJECTS:
            options.pop(key, None)
        options.pop("cache", None)
    else:
        options.setdefault("cache", cache_enabled())
    if args and callable(args[0]) and len(args) == 1:
        return cuda.jit(**options)(args[0])
    return cuda.jit(*args, **options)


def _umul64hi_py(a: Any, b: Any) -> np.uint64:
    return np.uint64((int(a) * int(b)) >> 64)


def _make_umul64hi() -> Callable[[Any, Any], Any]:
    if simulator():
        return _umul64hi_py
    from numba import cuda, int64, uint64
    from numba.cuda import libdevice

    jit: Any = cuda.jit

    @jit(device=True, forceinline=True)
    def umul64hi(a, b):
        # libdevice types it int64: wrap the result (gpu.md §4.1, the int64 + uint64 promotion trap).
        return uint64(libdevice.umul64hi(int64(a), int64(b)))

    return umul64hi  # type: ignore[no-any-return,unused-ignore]


umul64hi = _make_umul64hi()
