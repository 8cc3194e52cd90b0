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
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

import numpy as np

from gpu.arith.fields import (
    fr_add_batch,
    fr_encode,
    fr_from_ints,
    fr_from_mont,
    fr_mul_batch,
)
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2
from gpu.groth16.fixed_base import FixedBase, best_window, windows
from gpu.groth16.params import Parameters, VerifyingKey
from gpu.groth16.r1cs import R1CS
from gpu.groth16.reference import ToxicWaste
from gpu.ntt import Direction, Order, ntt
from gpu.ntt.tables import powers


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
    tw = (
        _toxic
        if _toxic is not None
        else (toxic_from_seed(test_seed) if test_seed is not None else _random_toxic())
    )
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


def _generate(r1cs: R1CS, tw: ToxicWaste, progress: Progress | None, timings: dict[str, float]) -> Parameters:
    logn = r1cs.domain_log
    n = 1 << logn
    ni = r1cs.num_inputs
    # rough units: the evaluation ~ n/8, tables by size, then every point
    pre = n / 8
    meter = _Meter(progress, timings, pre)

    meter.begin("evaluate")
    pw = powers(tw.tau, n)  # Montgomery tau^i
    lag = ntt(pw, direction=Direction.INVERSE, order=Order.NN)
    u, v, w = r1cs.column_sums(lag)
    del lag
    ginv, dinv = pow(tw.gamma, R - 2, R), pow(tw.delta, R - 2, R)
    c = fr_encode([tw.beta, tw.alpha, ginv, dinv])
    ext = fr_add_batch(fr_add_batch(fr_mul_batch(u, c[0:1]), fr_mul_batch(v, c[1:2])), w)
    del w
    ext_ic = fr_from_mont(fr_mul_batch(np.ascontiguousarray(ext[:ni]), c[2:3]))
    ext_l = fr_from_mont(fr_mul_batch(np.ascontiguousarray(ext[ni:]), c[3:4]))
    del ext
    if ext_l.shape[0] and not np.all(ext_l.any(axis=1)):
        j = int(np.argmin(ext_l.any(axis=1)))
        raise UnconstrainedVariable(
            f"aux variable {j} is unconstrained (its L query point would be the identity)"
        )
    zt = (pow(tw.tau, n, R) - 1) % R
    hsc = fr_from_mont(fr_mul_batch(np.ascontiguousarray(pw[: n - 1]), fr_encode([zt * dinv % R])))
    del pw
    uc, vc = fr_from_mont(u), fr_from_mont(v)
    del u, v
    unz, vnz = uc.any(axis=1), vc.any(axis=1)
    a_sc, b_sc = np.ascontiguousarray(uc[unz]), np.ascontiguousarray(vc[vnz])
    del uc, vc
    k1 = fr_from_ints([tw.alpha, tw.beta, tw.delta])
    k2 = fr_from_ints([tw.beta, tw.gamma, tw.delta])
    meter.step(pre)
    meter.end()

    n1 = 3 + ni + hsc.shape[0] + ext_l.shape[0] + a_sc.shape[0] + b_sc.shape[0]
    n2 = 3 + b_sc.shape[0]
    w1, w2 = best_window(n1), best_window(n2)
    t1 = windows(w1) << (w1 - 1)
    t2 = windows(w2) << (w2 - 1)
    meter.total = pre + t1 + G2_COST * t2 + n1 + G2_COST * n2

    meter.begin("tables")
    g1 = FixedBase(G1, G1.generator(), window=w1)
    meter.step(t1)
    g2 = FixedBase(G2, G2.generator(), window=w2)
    meter.step(G2_COST * t2)
    meter.end()

    step1 = meter.counter()
    meter.begin("vk")
    p1 = g1.mul(k1, step1)
    p2 = g2.mul(k2, meter.counter(G2_COST))
    ic = g1.mul(ext_ic, step1)
    meter.end()
    vk = VerifyingKey(p1[0:1], p1[1:2], p2[0:1], p2[1:2], p1[2:3], p2[2:3], ic)
    out = {}
    for name, group_fb, scalars, weight in (
        ("h", g1, hsc, 1.0),
        ("l", g1, ext_l, 1.0),
        ("a", g1, a_sc, 1.0),
        ("b_g1", g1, b_sc, 1.0),
        ("b_g2", g2, b_sc, G2_COST),
    ):
        meter.begin(name)
        out[name] = group_fb.mul(scalars, meter.counter(weight))
        meter.end()
    return Parameters(vk, out["h"], out["l"], out["a"], out["b_g1"], out["b_g2"])


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
