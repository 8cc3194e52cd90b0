"""CPU parallelism for the Numba batch kernels: chunks of an index range run on a thread pool.

The kernels are ``@njit(nogil=True)`` functions taking ``(lo, hi, ...)``; threads run them concurrently. This
replaces ``parallel=True``/``prange``, whose parfor compilation more than doubled compile times (measured
9 s -> 22 s for one G1 kernel on the 2-core CI machine), which every CI run and every process start pays.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from gpu.options import process

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def cpu_threads() -> int:
    """Worker count: the process's ``gpu.options.EngineOptions.cpu_threads`` if set, else the CPUs this
    process may use (the pool is made with the count at its first use)."""
    n = process().cpu_threads
    if n:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=cpu_threads(), thread_name_prefix="psagent-cpu")
        return _pool


def parallel_for(kernel: Callable[..., Any], n: int, *args: Any, min_chunk: int = 16) -> None:
    """Run ``kernel(lo, hi, *args)`` over [0, n) split into chunks, in parallel; re-raises the first error."""
    if n <= 0:
        return
    workers = cpu_threads()
    nchunks = max(1, min(workers * 4, n // max(1, min_chunk)))
    if nchunks == 1:
        kernel(0, n, *args)
        return
    bounds = [(c * n // nchunks, (c + 1) * n // nchunks) for c in range(nchunks)]
    futures = [_get_pool().submit(kernel, lo, hi, *args) for lo, hi in bounds]
    for f in futures:
        f.result()


def chunked(n: int, parts: int) -> list[tuple[int, int]]:
    """[0, n) split into ``parts`` near-equal (lo, hi) ranges."""
    return [(c * n // parts, (c + 1) * n // parts) for c in range(parts)]


def parallel_map(fn: Callable[..., Any], items: list[Any]) -> list[Any]:
    """fn(item) for each item on the pool, results in order."""
    if len(items) <= 1:
        return [fn(x) for x in items]
    futures = [_get_pool().submit(fn, x) for x in items]
    return [f.result() for f in futures]
