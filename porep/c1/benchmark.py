"""The P7 measurement (docs performance.md): parse + strict-validate + byte-exact re-serialise of a C1.

Shared by ``psagent bench c1-parse`` and ``benchmarks/c1_parse.py``. Phases, per run:

* ``decode``: scan + structural check + range checks into bulk arrays (:func:`porep.c1.codec.decode`);
* ``models``: the pydantic model from those arrays (its header: ``vanilla_proofs`` is built on first
  access, and no consumer needs it; before 2026-12-04 this phase built the whole tree, ~0.2-0.8 s at 32GiB);
* ``serialise``: ``to_json()`` from the model's arrays, in the input's key order;
* ``compare``: the output against the input bytes (must be identical).

Run 0 is cold: the layout/template cache is cleared first, as in a fresh process.
"""

from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import sys
import time
from typing import Any

import numpy as np
import pydantic

from porep.c1 import codec, layout
from porep.c1.models import SealCommitPhase1Output

PHASES = ("decode", "models", "serialise", "compare", "total")


def _one_run(raw: bytes) -> dict[str, Any]:
    t0 = time.perf_counter()
    arrays, order = codec.decode(raw)
    t1 = time.perf_counter()
    c1 = SealCommitPhase1Output.from_arrays(arrays, key_order=order, validated=True)
    t2 = time.perf_counter()
    out = c1.to_json()
    t3 = time.perf_counter()
    identical = out == raw
    t4 = time.perf_counter()
    return {
        "decode": t1 - t0,
        "models": t2 - t1,
        "serialise": t3 - t2,
        "compare": t4 - t3,
        "total": t4 - t0,
        "identical": identical,
        "proof": c1.registered_proof.name,
        "order": order.value,
    }


def measure(raw: bytes, repeat: int = 5) -> dict[str, Any]:
    """Time one cold and ``repeat`` warm runs; report per-phase seconds and the process's peak RSS."""
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    layout._layout_cached.cache_clear()
    gc.collect()
    runs = []
    for _ in range(repeat + 1):
        runs.append(_one_run(raw))
        gc.collect()
    warm = runs[1:]
    return {
        "benchmark": "c1-parse (P7)",
        "proof": runs[0]["proof"],
        "order": runs[0]["order"],
        "bytes": len(raw),
        "repeat": repeat,
        "identical": all(r["identical"] for r in runs),
        "cold": {p: runs[0][p] for p in PHASES},
        "warm_median": {p: statistics.median(r[p] for r in warm) for p in PHASES},
        "warm_min": {p: min(r[p] for r in warm) for p in PHASES},
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "machine": {
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "pydantic": pydantic.VERSION,
            "platform": platform.platform(),
        },
        "date": time.strftime("%Y-%m-%d"),
    }


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def format_report(result: dict[str, Any]) -> str:
    """A small fixed-width table of a :func:`measure` result."""
    lines = [
        f"C1 parse (P7): {result['proof']}, {result['order']} key order, {result['bytes']:,} bytes, "
        f"{result['repeat']} warm runs + 1 cold",
        f"{'phase':<10} {'cold s':>8} {'median s':>9} {'min s':>8}",
    ]
    for p in PHASES:
        cold, median, best = result["cold"][p], result["warm_median"][p], result["warm_min"][p]
        lines.append(f"{p:<10} {cold:>8.3f} {median:>9.3f} {best:>8.3f}")
    machine = result["machine"]
    lines.append(
        f"byte-identical: {'yes' if result['identical'] else 'NO'}; peak RSS of this process: "
        f"{result['max_rss_bytes'] / 2**20:,.0f} MiB; {machine['cores']} cores, {machine['cpu']}"
    )
    return "\n".join(lines)
