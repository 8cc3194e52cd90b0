"""The staged benchmark scripts' figures (``r1cs_check.py``, ``post_r1cs_check.py``): a stage timed in wall
and CPU seconds, a line per stage stamped with the time and the load, and the process's memory."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from typing import Any


def rss_gib() -> float:
    """Peak resident memory of this process so far (``ru_maxrss``), GiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def now_rss_gib() -> float:
    """Resident memory of this process now, GiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def line(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", flush=True)


def timed(fn: Callable[..., Any], *args: Any, **kw: Any) -> tuple[Any, float, float]:
    """``fn(*args, **kw)``, its wall seconds and its CPU seconds."""
    t, c = time.perf_counter(), time.process_time()
    r = fn(*args, **kw)
    return r, time.perf_counter() - t, time.process_time() - c
