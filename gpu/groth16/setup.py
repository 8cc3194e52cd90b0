"""Development trusted setup for any R1CS (bellperson's generate_parameters, on the engine's NTT and
fixed-base multiplication). The toxic waste lives only in this function's frame: it is drawn from the OS
CSPRNG and never written anywhere. ``test_seed`` derives it from a seed instead, for reproducible tests and
benchmarks; such parameters are insecure and ``describe()`` / the CLI mark them so.

  tau powers 1..tau^(n-1); Lagrange values L_k(tau) = inverse NTT of the powers
    (L_k(tau) = n^-1 sum_i tau^i w^-ik)
  u_j, v_j, w_j = sum_k M[k, j] L_k(tau) (input constraints included)
  h_i = tau^i Z(tau) / delta (i < n - 1); ic_j = (beta u_j + alpha v_j + w_j) / gamma; l_j = (...) / delta
  a = [u_j]_1, b_g1 = [v_j]_1, b_g2 = [v_j]_2 without zeros; vk = alpha, beta, gamma, delta in G1/G2.
"""

from __future__ import annotations

import hashlib
import secrets

import numpy as np

from gpu.arith.fields import (
    fr_add_batch,
    fr_encode,
    fr_from_mont,
    fr_mul_batch,
)
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2
from gpu.groth16.fixed_base import FixedBase
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


def generate(r1cs: R1CS, *, test_seed: int | None = None, _toxic: ToxicWaste | None = None) -> Parameters:
    """Parameters for ``r1cs``. Secure randomness unless ``test_seed`` is given (then insecure, for tests)."""
    tw = (
        _toxic
        if _toxic is not None
        else (toxic_from_seed(test_seed) if test_seed is not None else _random_toxic())
    )
    try:
        return _generate(r1cs, tw)
    finally:
        del tw


def _generate(r1cs: R1CS, tw: ToxicWaste) -> Parameters:
    logn = r1cs.domain_log
    n = 1 << logn
    ni = r1cs.num_inputs
    pw = powers(tw.tau, n)  # Montgomery tau^i
    lag = ntt(pw, direction=Direction.INVERSE, order=Order.NN)
    u, v, w = r1cs.column_sums(lag)
    ginv, dinv = pow(tw.gamma, R - 2, R), pow(tw.delta, R - 2, R)
    c = fr_encode([tw.beta, tw.alpha, ginv, dinv])
    ext = fr_add_batch(fr_add_batch(fr_mul_batch(u, c[0:1]), fr_mul_batch(v, c[1:2])), w)
    ext_ic = fr_from_mont(fr_mul_batch(np.ascontiguousarray(ext[:ni]), c[2:3]))
    ext_l = fr_from_mont(fr_mul_batch(np.ascontiguousarray(ext[ni:]), c[3:4]))
    if ext_l.shape[0] and not np.all(ext_l.any(axis=1)):
        j = int(np.argmin(ext_l.any(axis=1)))
        raise UnconstrainedVariable(
            f"aux variable {j} is unconstrained (its L query point would be the identity)"
        )
    zt = (pow(tw.tau, n, R) - 1) % R
    hsc = fr_from_mont(fr_mul_batch(np.ascontiguousarray(pw[: n - 1]), fr_encode([zt * dinv % R])))
    uc, vc = fr_from_mont(u), fr_from_mont(v)
    unz, vnz = uc.any(axis=1), vc.any(axis=1)
    g1 = FixedBase(G1, G1.generator())
    g2 = FixedBase(G2, G2.generator())
    from gpu.arith.fields import fr_from_ints

    k1 = fr_from_ints([tw.alpha, tw.beta, tw.delta])
    k2 = fr_from_ints([tw.beta, tw.gamma, tw.delta])
    p1 = g1.mul(k1)
    p2 = g2.mul(k2)
    vk = VerifyingKey(p1[0:1], p1[1:2], p2[0:1], p2[1:2], p1[2:3], p2[2:3], g1.mul(ext_ic))
    return Parameters(
        vk,
        g1.mul(hsc),
        g1.mul(ext_l),
        g1.mul(np.ascontiguousarray(uc[unz])),
        g1.mul(np.ascontiguousarray(vc[vnz])),
        g2.mul(np.ascontiguousarray(vc[vnz])),
    )


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
