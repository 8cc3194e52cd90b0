"""`psagent bench ntt`: NTT and Groth16 H-step timings with warm-up, median of repetitions and a result check
(docs/performance.md "How to measure"). Inputs are random field elements (never zeros); CUDA timings keep the
data resident and synchronise before reading the clock; every size's result is checked (CUDA against the CPU
path up to ``check_max_log``, above that by inverse(forward(x)) == x on the device)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np

from gpu.device import Device
from gpu.ntt import Direction, Kind, Order, ntt


def random_fr(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Random elements below 2^254 < r (valid Montgomery representations), uint32 limbs, cheap at 2^27."""
    x = rng.integers(0, 1 << 32, size=shape, dtype=np.uint32)
    x[..., 7] &= np.uint32(0x3FFFFFFF)
    return x


def _sync(backend: str) -> None:
    if backend == "cuda":
        from numba import cuda

        cuda.synchronize()


def bench_ntt(
    logn: int,
    *,
    backend: str = "cpu",
    reps: int = 5,
    warmup: int = 1,
    order: Order = Order.NR,
    kind: Kind = Kind.STANDARD,
    batch: int = 1,
    check_max_log: int = 20,
    seed: int = 0,
    device: Device | int | None = None,
) -> dict[str, Any]:
    """Forward NTTs of ``batch`` x 2^logn elements; returns a result row."""
    rng = np.random.default_rng(seed)
    x = random_fr((batch, 1 << logn, 8), rng)
    row: dict[str, Any] = {
        "what": "ntt",
        "log_n": logn,
        "batch": batch,
        "backend": backend,
        "order": order.value,
        "kind": kind.value,
        "reps": reps,
    }
    if backend == "cuda":
        from numba import cuda

        from gpu.device import get_device

        dev = get_device(0 if device is None else device)  # a measurement's default: device 0
        row["device"] = dev.name
        with dev.use():
            d = cuda.to_device(x)
            for _ in range(warmup):
                ntt(d, order=order, kind=kind, backend="cuda", device=dev)
            times = []
            for _ in range(reps):
                _sync(backend)
                t0 = time.perf_counter()
                ntt(d, order=order, kind=kind, backend="cuda", device=dev)
                _sync(backend)
                times.append(time.perf_counter() - t0)
            del d
            if logn <= check_max_log:
                got = ntt(x, order=order, kind=kind, backend="cuda", device=dev)
                row["check"] = (
                    "equals CPU path" if np.array_equal(got, ntt(x, order=order, kind=kind)) else "MISMATCH"
                )
            else:
                d = cuda.to_device(x)
                ntt(d, order=order, kind=kind, backend="cuda", device=dev)
                inv_order = Order(order.value[::-1])
                ntt(d, order=inv_order, kind=kind, direction=Direction.INVERSE, backend="cuda", device=dev)
                ok = np.array_equal(d.copy_to_host(), x)
                row["check"] = "inverse(forward(x)) == x on device" if ok else "MISMATCH"
    else:
        for _ in range(warmup):
            ntt(x, order=order, kind=kind)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            y = ntt(x, order=order, kind=kind)
            times.append(time.perf_counter() - t0)
        z = ntt(y, order=Order(order.value[::-1]), kind=kind, direction=Direction.INVERSE)
        row["check"] = "inverse(forward(x)) == x" if np.array_equal(z, x) else "MISMATCH"
    row["median_ms"] = statistics.median(times) * 1e3
    row["min_ms"] = min(times) * 1e3
    return row


def bench_h_step(
    logn: int,
    *,
    backend: str = "cpu",
    reps: int = 5,
    warmup: int = 1,
    check_max_log: int = 20,
    seed: int = 0,
    device: Device | int | None = None,
) -> dict[str, Any]:
    """The Groth16 H step (3 iNTT + 3 coset NTT + pointwise + coset iNTT) on resident a, b, c."""
    from gpu.groth16.prover import h_step_device, quotient_cpu

    rng = np.random.default_rng(seed)
    n = 1 << logn
    abc = random_fr((3, n, 8), rng)
    row: dict[str, Any] = {"what": "h_step", "log_n": logn, "backend": backend, "reps": reps}
    times = []
    if backend == "cuda":
        from numba import cuda

        from gpu.device import get_device

        dev = get_device(0 if device is None else device)  # a measurement's default: device 0
        row["device"] = dev.name
        with dev.use():
            d = cuda.to_device(abc)
            for _ in range(warmup):
                h_step_device(d, logn, dev)
            for _ in range(reps):
                cuda.synchronize()
                t0 = time.perf_counter()
                h_step_device(d, logn, dev)
                cuda.synchronize()
                times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            d.copy_to_device(abc)
            cuda.synchronize()
            row["upload_abc_ms"] = (time.perf_counter() - t0) * 1e3
            if logn <= check_max_log:
                got = h_step_device(d, logn, dev).copy_to_host()
                want = quotient_cpu(abc[0], abc[1], abc[2], logn)
                row["check"] = "equals CPU path" if np.array_equal(got, want) else "MISMATCH"
            else:
                row["check"] = f"not checked above 2^{check_max_log} (the NTTs are checked separately)"
            del d
    else:
        for _ in range(warmup):
            quotient_cpu(abc[0], abc[1], abc[2], logn)
        for _ in range(reps):
            t0 = time.perf_counter()
            quotient_cpu(abc[0], abc[1], abc[2], logn)
            times.append(time.perf_counter() - t0)
        row["check"] = "CPU is the reference (tests check it against the O(n^2) DFT)"
    row["median_ms"] = statistics.median(times) * 1e3
    row["min_ms"] = min(times) * 1e3
    return row


def format_rows(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'what':8s} {'size':>6s} {'batch':>5s} {'backend':7s} {'median ms':>11s} {'min ms':>10s}  check"
    ]
    for r in rows:
        lines.append(
            f"{r['what']:8s} {'2^' + str(r['log_n']):>6s} {r.get('batch', 1):>5d} {r['backend']:7s} "
            f"{r['median_ms']:11.2f} {r['min_ms']:10.2f}  {r['check']}"
        )
    return "\n".join(lines)
