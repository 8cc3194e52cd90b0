"""Host -> device copy rates on the GPU machine: why a, b, c take the time they take (gpu.transfer).

    python3 benchmarks/transfer_bench.py [--gib 4] [--reps 3] [--json FILE]

Rows (GB/s, best of reps): host memcpy (numpy, one thread), the threaded fill into a pinned buffer
(pinned_copy), a plain copy_to_device from pageable memory, Staging.upload from pageable memory, and the
direct DMA from page-locked memory; plus the one-time cost of allocating that much page-locked memory.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _kernel_cache  # noqa: E402,F401  (PSAGENT_NUMBA_CACHE as an engine option, before gpu compiles)
import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402

from gpu.transfer import Staging, pinned_copy, pinned_empty  # noqa: E402


def best(fn, reps: int) -> float:
    ts = []
    for _ in range(reps):
        cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=4.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    n = int(a.gib * (1 << 30)) // 32
    host = np.random.default_rng(0).integers(0, 2**32, size=(n, 8), dtype=np.uint32)
    nbytes = host.nbytes
    d = cuda.device_array((n, 8), dtype=np.uint32)
    other = np.empty_like(host)
    other[:] = 0  # touch the pages
    row: dict[str, float] = {"bytes": nbytes}
    t0 = time.perf_counter()
    pin = pinned_empty((n, 8), np.uint32)
    row["pinned_alloc_s"] = time.perf_counter() - t0
    rates = {
        "host_memcpy_1thread": best(lambda: np.copyto(other, host), a.reps),
        "pinned_copy_incl_alloc": best(lambda: pinned_copy(host), 1),
        "copy_to_device_pageable": best(lambda: d.copy_to_device(host), a.reps),
        "staging_pageable": best(lambda: Staging().upload(host, d), 1),
        "direct_pinned": 0.0,
    }
    np.copyto(pin, host)
    st = Staging()
    st.upload(pin[:1024], d[:1024])
    rates["staging_pageable_warm"] = best(lambda: st.upload(host, d), a.reps)
    rates["direct_pinned"] = best(lambda: st.upload(pin, d), a.reps)
    assert np.array_equal(d[n - 4 :].copy_to_host(), host[n - 4 :])
    for k, s in rates.items():
        row[k + "_GBps"] = nbytes / s / 1e9
        print(f"{k:28s} {nbytes / s / 1e9:7.1f} GB/s  ({s * 1e3:8.1f} ms for {nbytes / 1e9:.2f} GB)")
    print(f"{'pinned alloc':28s} {row['pinned_alloc_s'] * 1e3:8.1f} ms for {nbytes / 1e9:.2f} GB")
    if a.json:
        Path(a.json).write_text(json.dumps(row, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
