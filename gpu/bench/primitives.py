"""Field, curve and MSM benchmarks (behind `psagent bench field|curve|msm` and benchmarks/gpu_bench.py, which
the device suite runs).

Method (docs/performance.md): random inputs, warm-up first (compilation stays out), CUDA events around the
timed region, median of >= 5 runs, and every benchmarked result verified:
  field  Montgomery multiplication chains; lanes checked against Python integers (x * y^iters).
  curve  G1 XYZZ += affine chains; lanes checked against the CPU MSM of the same points.
  msm    bases P_i = P_0 + (i mod 2^k) * Q (random P_0, Q), so that sum s_i P_i = (sum s_i) P_0 +
         (sum s_i (i mod 2^k)) Q is checked with two blst scalar multiplications at any size; the point
         structure does not change the MSM's work. Optionally CPU == GPU on the same inputs.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from typing import Any

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import P_MODULUS, R_MODULUS, fq_decode, fq_encode, fr_decode, fr_encode
from gpu.curves import G1, G2
from gpu.curves.generic import load_affine, store_xyzz, xyzz_add_affine, xyzz_from_affine, xyzz_mul_small


def log(*a: Any) -> None:
    print(*a, flush=True)


def environment() -> dict[str, Any]:
    import numba

    info: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "host_cpus": os.cpu_count(),
    }
    try:
        import numba_cuda

        info["numba_cuda"] = numba_cuda.__version__
    except Exception:  # noqa: BLE001
        info["numba_cuda"] = None
    try:
        from numba import cuda

        if cuda.is_available() and not type(cuda.gpus).__module__.startswith("numba.cuda.simulator"):
            dev = cuda.get_current_device()
            info["gpu"] = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
            info["sm_count"] = dev.MULTIPROCESSOR_COUNT
            info["cc"] = list(dev.compute_capability)
            info["driver"] = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001
        info["gpu_error"] = str(exc)[:200]
    return info


def _time_cuda(fn: Any, reps: int, warmup: int = 1) -> list[float]:
    from numba import cuda

    for _ in range(warmup):
        fn()
    cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = cuda.event(), cuda.event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def _time_host(fn: Any, reps: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e3)
    return out


# ---------------------------------------------------------------------------- field


def bench_field(backend: str = "cuda", log2n: int = 20, reps: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng()
    res: dict[str, Any] = {}
    for name, mod, iters in (("fr", R_MODULUS, 128), ("fq", P_MODULUS, 64)):
        n = 1 << log2n
        xs = [int(v) for v in rng.integers(1, 1 << 62, size=8)]
        enc, dec = (fr_encode, fr_decode) if name == "fr" else (fq_encode, fq_decode)
        from gpu.arith import fields as F

        a = F.__dict__[f"{name}_to_mont"](F.__dict__[f"{name}_random"](n, rng))
        b = F.__dict__[f"{name}_to_mont"](F.__dict__[f"{name}_random"](n, rng))
        a[:8] = enc(xs)
        if backend == "cuda":
            from numba import cuda

            from gpu.bench import chains as bk

            k = bk.fr_mul_chain if name == "fr" else bk.fq_mul_chain
            da, db, do = cuda.to_device(a), cuda.to_device(b), cuda.device_array_like(a)
            t0 = time.perf_counter()
            k[n // 128, 128](da, db, do, 1)
            cuda.synchronize()
            compile_s = time.perf_counter() - t0
            grid = n // 128
            ts = _time_cuda(
                lambda k=k, da=da, db=db, do=do, g=grid, it=iters: k[g, 128](da, db, do, it), reps
            )
            out = do.copy_to_host()
            ys = dec(b[:8])
            ok = dec(out[:8]) == [x * pow(y, iters, mod) % mod for x, y in zip(xs, ys, strict=True)]
            ms = statistics.median(ts)
            res[name] = {
                "G_mul_per_s": n * iters / (ms * 1e-3) / 1e9,
                "median_ms": ms,
                "runs_ms": ts,
                "threads": n,
                "iters": iters,
                "verified": ok,
                "first_call_s": compile_s,
            }
            try:
                ov = next(iter(k.overloads.values()))
                res[name]["regs"] = ov.regs_per_thread
                res[name]["local_bytes"] = ov.local_mem_per_thread
            except Exception:  # noqa: BLE001
                pass
        else:
            mulb = F.__dict__[f"{name}_mul_batch"]
            ts = _time_host(lambda mulb=mulb, a=a, b=b: mulb(a, b), reps)
            out = mulb(a, b)
            ok = dec(out[:8]) == [x * y % mod for x, y in zip(xs, dec(b[:8]), strict=True)]
            ms = statistics.median(ts)
            res[name] = {"G_mul_per_s": n / (ms * 1e-3) / 1e9, "median_ms": ms, "runs_ms": ts, "verified": ok}
        log(f"field {name} {backend}: {res[name]['G_mul_per_s']:.3f} G mul/s (verified={ok})")
    return res


# ---------------------------------------------------------------------------- bases


@njit(nogil=True, cache=cache_enabled())
def _progression_n(lo, hi, p0, q, period, out):
    # out[i] = P0 + (i mod period) * Q as XYZZ, sequentially from the chunk's start
    qa = load_affine(q, 0)
    acc = xyzz_add_affine(xyzz_mul_small(xyzz_from_affine(qa), lo % period), load_affine(p0, 0))
    for i in range(lo, hi):
        if i % period == 0:
            acc = xyzz_from_affine(load_affine(p0, 0))
        store_xyzz(out, i, acc)
        acc = xyzz_add_affine(acc, qa)


def progression_bases(group: Any, n: int, period: int, rng: np.random.Generator) -> tuple[Any, Any, Any]:
    """(n affine bases P_0 + (i mod period) Q, blst P_0, blst Q) for random P_0, Q."""
    gen = group.to_blst(group.generator())[0]
    p0b = gen.scalar_mul(int(rng.integers(1, 1 << 62)) * 7919 + 1)
    qb = gen.scalar_mul(int(rng.integers(1, 1 << 62)) * 104729 + 3)
    p0, q = group.from_blst([p0b]), group.from_blst([qb])
    m = min(n, period)
    xyzz = np.empty((m, 4) + group.coord_shape, dtype=np.uint32)
    parallel_for(_progression_n, m, p0, q, period, xyzz, min_chunk=4096)
    base = group.xyzz_to_affine(xyzz)
    if m == n:
        return base, p0b, qb
    reps = (n + m - 1) // m
    return np.ascontiguousarray(np.tile(base, (reps,) + (1,) * (base.ndim - 1))[:n]), p0b, qb


def _limb_sums(scalars: np.ndarray, weights: np.ndarray | None) -> int:
    """sum_i w_i * s_i as a Python int (exact), for uint32 limbs and weights < 2^28."""
    total = 0
    n = scalars.shape[0]
    block = 1 << 12
    for j in range(8):
        if not scalars[:, j].any():
            continue
        col = scalars[:, j].astype(np.uint64)
        if weights is None:
            total += int(col.sum()) << (32 * j)
            continue
        for half, shift in ((weights & 0x3FFF, 0), (weights >> 14, 14)):
            prod = col * half.astype(np.uint64)  # < 2^46
            pad = (-n) % block
            sums = np.concatenate([prod, np.zeros(pad, np.uint64)]).reshape(-1, block).sum(axis=1)  # < 2^58
            total += sum(int(x) for x in sums) << (32 * j + shift)
    return total


def expected_msm(scalars: np.ndarray, p0b: Any, qb: Any, period: int) -> Any:
    n = scalars.shape[0]
    idx = (np.arange(n, dtype=np.int64) % period).astype(np.uint64)
    s0 = _limb_sums(scalars, None) % R_MODULUS
    s1 = _limb_sums(scalars, idx) % R_MODULUS
    return p0b.scalar_mul(s0) + qb.scalar_mul(s1)


def random_scalars(n: int, kind: str, rng: np.random.Generator) -> np.ndarray:
    from gpu.arith.fields import fr_random

    if kind == "bits":
        s = np.zeros((n, 8), dtype=np.uint32)
        s[:, 0] = rng.integers(0, 2, size=n, dtype=np.uint32)
        return s
    return fr_random(n, rng)


# ---------------------------------------------------------------------------- curve


def bench_curve(backend: str = "cuda", log2n: int = 19, iters: int = 32, reps: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng()
    n = 1 << log2n
    table, _, _ = progression_bases(G1, 1024, 1024, rng)
    start, _, _ = progression_bases(G1, n, n, rng)
    res: dict[str, Any] = {}
    if backend != "cuda":
        raise SystemExit("bench curve measures the CUDA kernel; use bench msm --backend cpu for the CPU path")
    from numba import cuda

    from gpu.bench import chains as bk

    ds, dt = cuda.to_device(start), cuda.to_device(table)
    do = cuda.device_array((n, 4, 12), dtype=np.uint32)
    t0 = time.perf_counter()
    bk.madd_chain[n // 128, 128](ds, dt, do, 1)
    cuda.synchronize()
    compile_s = time.perf_counter() - t0
    ts = _time_cuda(lambda: bk.madd_chain[n // 128, 128](ds, dt, do, iters), reps)
    out = G1.xyzz_to_affine(do.copy_to_host()[:4])
    want = bk.madd_chain_reference(start, table, iters, [0, 1, 2, 3])
    ok = bool(np.array_equal(out, want))
    ms = statistics.median(ts)
    res["g1_madd"] = {
        "G_madd_per_s": n * iters / (ms * 1e-3) / 1e9,
        "median_ms": ms,
        "runs_ms": ts,
        "threads": n,
        "iters": iters,
        "verified": ok,
        "first_call_s": compile_s,
    }
    try:
        ov = next(iter(bk.madd_chain.overloads.values()))
        res["g1_madd"]["regs"] = ov.regs_per_thread
        res["g1_madd"]["local_bytes"] = ov.local_mem_per_thread
    except Exception:  # noqa: BLE001
        pass
    log(f"curve g1 madd cuda: {res['g1_madd']['G_madd_per_s']:.3f} G/s (verified={ok})")
    return res


# ---------------------------------------------------------------------------- msm


def bench_msm(
    group_name: str = "g1",
    log2n: int = 20,
    backend: str = "cuda",
    reps: int = 5,
    kind: str = "random",
    windows: list[int] | None = None,
    cpu_check: bool = False,
    period_log2: int = 24,
    device: int = 0,
) -> dict[str, Any]:
    from gpu.msm import MSMContext

    group = G1 if group_name == "g1" else G2
    rng = np.random.default_rng()
    n = 1 << log2n
    period = 1 << min(log2n, period_log2)
    t0 = time.perf_counter()
    bases, p0b, qb = progression_bases(group, n, period, rng)
    scalars = random_scalars(n, kind, rng)
    gen_s = time.perf_counter() - t0
    want = expected_msm(scalars, p0b, qb, period)
    t0 = time.perf_counter()
    ctx = MSMContext(bases, backend=backend, device=device)
    upload_s = time.perf_counter() - t0
    del bases
    res: dict[str, Any] = {
        "group": group_name,
        "log2n": log2n,
        "kind": kind,
        "backend": backend,
        "gen_s": gen_s,
        "bases_upload_s": upload_s,
    }
    runs: dict[str, Any] = {}
    chosen: list[int | None] = list(windows) if windows else [None]
    for w in chosen:
        key = f"c={w}" if w else "c=auto"
        if backend == "cuda":
            from numba import cuda

            d_s = cuda.to_device(scalars)
            t0 = time.perf_counter()
            got = ctx.msm(d_s, window=w)  # warm-up (compiles on first use)
            first_s = time.perf_counter() - t0
            ts = _time_cuda(lambda w=w, d_s=d_s: ctx.msm_xyzz(d_s, window=w), reps, warmup=1)
            th = _time_host(lambda w=w: ctx.msm_xyzz(scalars, window=w), max(3, reps // 2), warmup=0)
            stages: dict[str, float] = {}
            ctx.msm_xyzz(d_s, window=w, timings=stages)
        else:
            t0 = time.perf_counter()
            got = ctx.msm(scalars, window=w)
            first_s = time.perf_counter() - t0
            ts = _time_host(lambda w=w: ctx.msm_xyzz(scalars, window=w), reps, warmup=0)
            th, stages = ts, {}
        ok = group.to_blst(got[None])[0] == want
        runs[key] = {
            "median_ms": statistics.median(ts),
            "runs_ms": ts,
            "with_scalar_upload_median_ms": statistics.median(th),
            "first_call_s": first_s,
            "verified": bool(ok),
            "stages_ms": stages,
        }
        log(
            f"msm {group_name} 2^{log2n} {kind} {backend} {key}: median {statistics.median(ts):.2f} ms "
            f"(incl. scalar upload {statistics.median(th):.2f} ms) verified={ok} stages={_fmt(stages)}"
        )
    res["runs"] = runs
    if cpu_check and backend == "cuda":
        cpu = MSMContext(ctx._bases.copy_to_host(), backend="cpu")
        t0 = time.perf_counter()
        c_res = cpu.msm(scalars)
        g_res = ctx.msm(scalars)
        res["cpu_equals_gpu"] = bool(np.array_equal(c_res, g_res))
        res["cpu_ms"] = (time.perf_counter() - t0) * 1e3
        log(f"msm {group_name} 2^{log2n}: CPU == GPU: {res['cpu_equals_gpu']} (CPU {res['cpu_ms']:.0f} ms)")
    return res


def _fmt(d: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.2f}" for k, v in d.items() if k.endswith("_ms"))
