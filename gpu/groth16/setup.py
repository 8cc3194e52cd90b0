"""Development trusted setup for any R1CS (bellperson's generate_parameters, on the engine's NTT and
fixed-base multiplication). The toxic waste lives only in this function's frame: it is drawn from the OS
CSPRNG and never written anywhere. ``test_seed`` derives it from a seed instead, for reproducible tests and
benchmarks; such parameters are insecure and ``describe()`` / the CLI mark them so.

  tau powers 1..tau^(n-1); Lagrange values L_k(tau) = inverse NTT of the powers
    (L_k(tau) = n^-1 sum_i tau^i w^-ik)
  u_j, v_j, w_j = sum_k M[k, j] L_k(tau) (input constraints included)
  h_i = tau^i Z(tau) / delta (i < n - 1); ic_j = (beta u_j + alpha v_j + w_j) / gamma; l_j = (...) / delta
  a = [u_j]_1, b_g1 = [v_j]_1, b_g2 = [v_j]_2 without zeros; vk = alpha, beta, gamma, delta in G1/G2.

The bulk is ~4 fixed-base products per constraint (h, l, a, b_g1) on G1 and one per B-column on G2, done by
gpu.groth16.fixed_base with one table per group whose window fits the count (a 2^22 domain: ~10 M G1
products with 16-bit windows). G2 is used only for b_g2 and the vk.

``generate`` returns the parameters in memory (CPU). ``generate_file`` streams them into a .params file as
they are computed, on the CPU or with the products on a GPU (gpu.groth16.fixed_base_cuda; same bytes): a
32GiB partition has ~430 M G1 and ~33 M G2 products and a ~47 GB file, which the host never holds. The
evaluation stays on the CPU, bounded: the column sums run in parallel over column ranges straight from the
(possibly interned) coefficients, and the scalars are formed in place, canonical (a canonical value times a
Montgomery one is canonical), so no Montgomery copy of anything large is made.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import njit

from gpu.arith.cpupool import cpu_threads, parallel_for, parallel_map
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import (
    fr_add,
    fr_add_batch,
    fr_encode,
    fr_from_ints,
    fr_from_mont,
    fr_load,
    fr_mul,
    fr_mul_batch,
    fr_store,
)
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2
from gpu.curves._host import Group
from gpu.device import Device, place
from gpu.groth16 import plan
from gpu.groth16.fixed_base import MAX_WINDOW, FixedBase, best_window, windows
from gpu.groth16.params import G1_UNC, G2_UNC, VK_FIXED, Parameters, ParamsWriter, VerifyingKey
from gpu.groth16.r1cs import R1CS
from gpu.groth16.reference import ToxicWaste
from gpu.ntt import Direction, Order, ntt
from gpu.ntt.tables import powers
from gpu.placement import Backend


class UnconstrainedVariable(ValueError):
    """An aux variable appears in no constraint, so its L query point would be the identity."""


def toxic_from_seed(seed: int) -> ToxicWaste:
    """Deterministic toxic waste for TESTS ONLY (anyone who knows the seed can forge proofs)."""
    vals = []
    for name in ("tau", "alpha", "beta", "gamma", "delta"):
        d = hashlib.sha256(f"psagent-test-setup:{seed}:{name}".encode()).digest()
        vals.append(int.from_bytes(d, "big") % (R - 1) + 1)
    return ToxicWaste(*vals)


def _random_toxic() -> ToxicWaste:
    return ToxicWaste(*(secrets.randbelow(R - 1) + 1 for _ in range(5)))


Progress = Callable[[str, float, float], None]
"""``progress(stage, done, total)``: work units done of the whole setup (G1 point = 1, G2 point = G2_COST)."""

G2_COST = 4.0  # a G2 addition costs ~4 G1 additions (Fq2 products are 3-4 Fq products)


def generate(
    r1cs: R1CS,
    *,
    test_seed: int | None = None,
    _toxic: ToxicWaste | None = None,
    progress: Progress | None = None,
    timings: dict[str, float] | None = None,
) -> Parameters:
    """Parameters for ``r1cs``. Secure randomness unless ``test_seed`` is given (then insecure, for tests).

    ``progress`` is called as the work goes (for a progress bar); ``timings`` receives seconds per stage."""
    tw = _toxic_of(test_seed, _toxic)
    try:
        return _generate(r1cs, tw, progress, timings if timings is not None else {})
    finally:
        del tw


class _Meter:
    """Stage timings and the progress callback's running total."""

    def __init__(self, progress: Progress | None, timings: dict[str, float], total: float) -> None:
        self.progress, self.timings, self.total, self.done = progress, timings, total, 0.0
        self.stage, self.t0 = "", time.perf_counter()

    def begin(self, stage: str) -> None:
        self.stage, self.t0 = stage, time.perf_counter()
        self.step(0.0)

    def end(self) -> None:
        self.timings[self.stage] = self.timings.get(self.stage, 0.0) + time.perf_counter() - self.t0

    def step(self, units: float) -> None:
        self.done += units
        if self.progress is not None:
            self.progress(self.stage, min(self.done, self.total), self.total)

    def counter(self, weight: float = 1.0) -> Callable[[int], None]:
        return lambda k: self.step(k * weight)


@njit(nogil=True, cache=cache_enabled())
def _column_sums_range(clo, chi, nrows, ptr, cols, vals, lag, out):  # type: ignore[no-untyped-def]
    # out[c] += vals[e] * lag[row] for the entries whose column c lies in [clo, chi): canonical vals times
    # Montgomery lag gives canonical products. A thread owns a column range, so no two threads write one row
    # of out; each scans every entry's column (4 bytes), the multiplications are its own.
    for i in range(nrows):
        for e in range(ptr[i], ptr[i + 1]):
            c = cols[e]
            if c >= clo and c < chi:
                fr_store(out, c, fr_add(fr_load(out, c), fr_mul(fr_load(vals, e), fr_load(lag, i))))


@njit(nogil=True, cache=cache_enabled())
def _column_sums_range_idx(clo, chi, nrows, ptr, cols, coeff, table, lag, out):  # type: ignore[no-untyped-def]
    # the same with interned coefficients: vals[e] = table[coeff[e]] (a compact matrix, gpu.groth16.r1cs)
    for i in range(nrows):
        for e in range(ptr[i], ptr[i + 1]):
            c = cols[e]
            if c >= clo and c < chi:
                fr_store(out, c, fr_add(fr_load(out, c), fr_mul(fr_load(table, coeff[e]), fr_load(lag, i))))


def column_sums(r1cs: R1CS, lag: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """u_j, v_j, w_j = sum_k M[k, j] L_k(tau) for M = A, B, C, canonical, input constraints included (``lag``:
    Montgomery Lagrange values, one per constraint). The same sums as ``R1CS.column_sums`` without its serial
    loop and Montgomery copy of the coefficients (23 GB for a 32GiB partition), for plain or interned
    (``coeff`` + ``table``) matrices: threads split the columns into ranges of equal entry counts."""
    m, k, nv = r1cs.num_constraints, r1cs.num_inputs, r1cs.num_vars
    if lag.shape[0] < m + k:
        raise ValueError("need one Lagrange coefficient per constraint (input constraints included)")
    outs = []
    for mat in (r1cs.a, r1cs.b, r1cs.c):
        out = np.zeros((nv, 8), dtype=np.uint32)
        if mat.nnz:
            cum = np.cumsum(np.bincount(mat.cols, minlength=nv))
            parts = max(1, min(cpu_threads(), mat.nnz // 4096))
            cuts = np.searchsorted(cum, [mat.nnz * p // parts for p in range(1, parts)], side="right")
            bounds = list(zip([0, *cuts.tolist()], [*cuts.tolist(), nv], strict=True))
            ranges = [b for b in bounds if b[1] > b[0]]
            coeff = getattr(mat, "coeff", None)
            if coeff is not None:  # interned coefficients: never materialise the (nnz, 8) values
                table = np.ascontiguousarray(getattr(mat, "table"), dtype=np.uint32)  # noqa: B009
                args: tuple[Any, ...] = (coeff, table)
                kern: Any = _column_sums_range_idx
            else:
                args, kern = (np.ascontiguousarray(mat.vals),), _column_sums_range
            parallel_map(
                lambda b, mat=mat, args=args, kern=kern, out=out: kern(
                    b[0], b[1], m, mat.row_ptr, mat.cols, *args, lag, out
                ),
                ranges,
            )
        outs.append(out)
    outs[0][:k] = fr_add_batch(outs[0][:k], fr_from_mont(np.ascontiguousarray(lag[m : m + k])))
    return outs[0], outs[1], outs[2]


@njit(nogil=True, cache=cache_enabled())
def _combine_n(lo, hi, u, v, w, c, ni):  # type: ignore[no-untyped-def]
    # w[j] = (beta u_j + alpha v_j + w_j) / (gamma if j < ni else delta), in place; canonical u, v, w times
    # the Montgomery constants c = [beta, alpha, 1/gamma, 1/delta] stay canonical
    beta = fr_load(c, 0)
    alpha = fr_load(c, 1)
    for j in range(lo, hi):
        x = fr_add(fr_add(fr_mul(fr_load(u, j), beta), fr_mul(fr_load(v, j), alpha)), fr_load(w, j))
        fr_store(w, j, fr_mul(x, fr_load(c, 2 if j < ni else 3)))


@dataclass
class _Queries:
    """Every fixed-base product's scalar, canonical (n, 8): the vk's, then the five sections' (b_g1 and b_g2
    share ``b``)."""

    vk1: np.ndarray  # alpha, beta, delta (G1)
    vk2: np.ndarray  # beta, gamma, delta (G2)
    ic: np.ndarray
    h: np.ndarray
    l: np.ndarray  # noqa: E741 - the query's name
    a: np.ndarray
    b: np.ndarray

    def sections(self) -> list[tuple[str, Group, np.ndarray]]:
        return [
            ("h", G1, self.h),
            ("l", G1, self.l),
            ("a", G1, self.a),
            ("b_g1", G1, self.b),
            ("b_g2", G2, self.b),
        ]

    def counts(self) -> tuple[int, int]:
        """(G1 products, G2 products)."""
        n1 = self.vk1.shape[0] + self.ic.shape[0] + self.h.shape[0] + self.l.shape[0] + self.a.shape[0]
        return n1 + self.b.shape[0], self.vk2.shape[0] + self.b.shape[0]


def _evaluate(r1cs: R1CS, tw: ToxicWaste, device: Device | None = None) -> _Queries:
    """The QAP at tau and every scalar of the parameters (the CPU part of the setup; with ``device``, the
    inverse NTT of the tau powers runs there: at 2^27 it is minutes of CPU and a fraction of a second on a
    GPU, same values)."""
    n = 1 << r1cs.domain_log
    ni = r1cs.num_inputs
    pw = powers(tw.tau, n)  # Montgomery tau^i
    if device is not None:
        lag = ntt(pw, direction=Direction.INVERSE, order=Order.NN, backend=Backend.cuda, device=device)
    else:
        lag = ntt(pw, direction=Direction.INVERSE, order=Order.NN)
    u, v, w = column_sums(r1cs, lag)  # canonical
    del lag
    ginv, dinv = pow(tw.gamma, R - 2, R), pow(tw.delta, R - 2, R)
    parallel_for(
        _combine_n, w.shape[0], u, v, w, fr_encode([tw.beta, tw.alpha, ginv, dinv]), ni, min_chunk=4096
    )
    ext_ic, ext_l = w[:ni].copy(), w[ni:]
    if ext_l.shape[0] and not np.all(ext_l.any(axis=1)):
        j = int(np.argmin(ext_l.any(axis=1)))
        raise UnconstrainedVariable(
            f"aux variable {j} is unconstrained (its L query point would be the identity)"
        )
    zt = (pow(tw.tau, n, R) - 1) % R
    hsc = pw[: n - 1]
    fr_mul_batch(hsc, fr_from_ints([zt * dinv % R]), out=hsc)  # Montgomery x canonical = canonical
    unz, vnz = u.any(axis=1), v.any(axis=1)
    a_sc = u[unz]
    del u
    b_sc = v[vnz]
    del v
    return _Queries(
        vk1=fr_from_ints([tw.alpha, tw.beta, tw.delta]),
        vk2=fr_from_ints([tw.beta, tw.gamma, tw.delta]),
        ic=ext_ic,
        h=hsc,
        l=ext_l,
        a=a_sc,
        b=b_sc,
    )


def _toxic_of(test_seed: int | None, _toxic: ToxicWaste | None) -> ToxicWaste:
    if _toxic is not None:
        return _toxic
    return toxic_from_seed(test_seed) if test_seed is not None else _random_toxic()


def _prepare(
    r1cs: R1CS, tw: ToxicWaste, meter: _Meter, min_window: int = 2, device: Device | None = None
) -> tuple[_Queries, FixedBase, FixedBase, VerifyingKey]:
    """Evaluation, the generators' tables (CPU) and the verifying key; sets ``meter.total`` for the rest."""
    n = 1 << r1cs.domain_log
    pre = n / 8  # rough units: the evaluation ~ n/8, tables by size, then every point
    meter.total = pre
    meter.begin("evaluate")
    q = _evaluate(r1cs, tw, device)
    meter.step(pre)
    meter.end()
    n1, n2 = q.counts()
    w1, w2 = (min(MAX_WINDOW, max(min_window, best_window(k))) for k in (n1, n2))
    t1 = windows(w1) << (w1 - 1)
    t2 = windows(w2) << (w2 - 1)
    meter.total = pre + t1 + G2_COST * t2 + n1 + G2_COST * n2
    meter.begin("tables")
    g1 = FixedBase(G1, G1.generator(), window=w1)
    meter.step(t1)
    g2 = FixedBase(G2, G2.generator(), window=w2)
    meter.step(G2_COST * t2)
    meter.end()
    meter.begin("vk")
    step1 = meter.counter()
    p1 = g1.mul(q.vk1, step1)
    p2 = g2.mul(q.vk2, meter.counter(G2_COST))
    ic = g1.mul(q.ic, step1)
    meter.end()
    vk = VerifyingKey(p1[0:1], p1[1:2], p2[0:1], p2[1:2], p1[2:3], p2[2:3], ic)
    return q, g1, g2, vk


def _generate(r1cs: R1CS, tw: ToxicWaste, progress: Progress | None, timings: dict[str, float]) -> Parameters:
    meter = _Meter(progress, timings, 1.0)
    q, g1, g2, vk = _prepare(r1cs, tw, meter)
    out = {}
    for name, group, scalars in q.sections():
        meter.begin(name)
        fb = g2 if group is G2 else g1
        out[name] = fb.mul(scalars, meter.counter(G2_COST if group is G2 else 1.0))
        meter.end()
    return Parameters(vk, out["h"], out["l"], out["a"], out["b_g1"], out["b_g2"])


class GeneratedFile(NamedTuple):
    """What ``generate_file`` made: the verifying key, the section sizes (``describe``) and the file's
    BLAKE2b-256 (hex), computed as it was written."""

    vk: VerifyingKey
    sizes: dict[str, int]
    blake2b: str


CUDA_MIN_WINDOW = 8  # GPU products are cheap next to the CPU-built table: 8 bits (4,096 points) at least
CPU_WRITE_SLICE = 1 << 20  # points per chunk written by the CPU path (~100-200 MB of bytes)


def generate_file(
    r1cs: R1CS,
    params_path: str | os.PathLike[str],
    *,
    backend: Backend | str = Backend.cpu,
    device: Device | int | None = None,
    test_seed: int | None = None,
    _toxic: ToxicWaste | None = None,
    progress: Progress | None = None,
    timings: dict[str, float] | None = None,
) -> GeneratedFile:
    """Parameters for ``r1cs`` streamed into ``params_path`` (bellperson layout, atomic) as they are computed,
    on the CPU or on the GPU (``backend="cuda"`` with a named device: fixed-base products by
    gpu.groth16.fixed_base_cuda, and the evaluation's inverse NTT); the file is byte-identical either way for
    the same toxic waste. Returns the verifying key, the section sizes (``describe``) and the file's digest.
    The host holds the scalars and a few chunks of bytes, never the points."""
    chosen, dev = place(backend, device)
    tw = _toxic_of(test_seed, _toxic)
    timings = timings if timings is not None else {}
    try:
        meter = _Meter(progress, timings, 1.0)
        cuda_setup = chosen is Backend.cuda
        q, g1, g2, vk = _prepare(r1cs, tw, meter, CUDA_MIN_WINDOW if cuda_setup else 2, dev)
    finally:
        del tw
    producers: dict[str, Callable[[np.ndarray, Callable[[int], None]], Iterator[Any]]]
    if chosen is Backend.cuda:
        from gpu.groth16.fixed_base_cuda import CudaFixedBase

        assert dev is not None
        meter.begin("upload")
        c1, c2 = CudaFixedBase(g1, dev), CudaFixedBase(g2, dev)
        meter.end()
        producers = {"g1": c1.zcash_chunks, "g2": c2.zcash_chunks}
    else:

        def cpu_chunks(fb: FixedBase) -> Callable[[np.ndarray, Callable[[int], None]], Iterator[bytes]]:
            def gen(scalars: np.ndarray, step: Callable[[int], None]) -> Iterator[bytes]:
                for lo in range(0, scalars.shape[0], CPU_WRITE_SLICE):
                    pts = fb.mul(scalars[lo : lo + CPU_WRITE_SLICE], step)
                    yield fb.group.to_bytes(pts, compressed=False)

            return gen

        producers = {"g1": cpu_chunks(g1), "g2": cpu_chunks(g2)}
    with ParamsWriter(params_path) as w:
        w.write(vk.to_bytes())
        for name, group, scalars in q.sections():
            meter.begin(name)
            w.section(scalars.shape[0], group)
            for chunk in producers[group.name](scalars, meter.counter(G2_COST if group is G2 else 1.0)):
                w.write(chunk)
            meter.end()
        meter.begin("write")
    meter.end()
    sizes = {
        "domain_log": r1cs.domain_log,
        "num_inputs": vk.num_inputs,
        **{name: int(sc.shape[0]) for name, _, sc in q.sections()},
    }
    assert w.blake2b is not None
    return GeneratedFile(vk, sizes, w.blake2b)


class SetupEstimate(NamedTuple):
    """What :func:`generate_file` will need, known before it starts (a 32GiB run writes ~47 GB for hours)."""

    file_bytes: int  # the .params file (gpu.groth16.plan.params_file_bytes: exact)
    vk_bytes: int
    host_bytes: int  # peak host memory of the setup's scalars, beyond the R1CS
    sections: dict[str, int]


FR_BYTES = plan.FR


def estimate(sizes: plan.ProofSizes) -> SetupEstimate:
    """From the circuit's counts alone (``plan.ProofSizes``: of an R1CS, or of a circuit template's stats
    before the circuit is built): the file (h: domain - 1, l: aux, a: the A query, b: the B queries, times
    the point sizes) and the evaluation's peak of scalars: the tau powers and their inverse NTT (2 x domain)
    with the three column sums (3 x variables) held at once, plus the chunks in flight to the disk."""
    n, nv = sizes.n, sizes.num_vars
    sections = {"h": n - 1, "l": sizes.num_aux, "a": sizes.n_a, "b_g1": sizes.n_b, "b_g2": sizes.n_b}
    vk = VK_FIXED + 4 + sizes.num_inputs * G1_UNC
    chunk = min(CPU_WRITE_SLICE, max(sections.values()))  # points and their bytes, a few chunks in flight
    host = FR_BYTES * (2 * n + 3 * nv) + 8 * nv + 4 * chunk * G2_UNC + (128 << 20)
    return SetupEstimate(plan.params_file_bytes(sizes), vk, host, sections)


def describe(params: Parameters) -> dict[str, int]:
    """Sizes of a parameter set (for `psagent params info`)."""
    return {
        "domain_log": params.domain_log,
        "num_inputs": params.vk.num_inputs,
        "h": params.h.shape[0],
        "l": params.l.shape[0],
        "a": params.a.shape[0],
        "b_g1": params.b_g1.shape[0],
        "b_g2": params.b_g2.shape[0],
    }
