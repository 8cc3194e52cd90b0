"""A slow, independent Groth16 setup and prover for tiny circuits: Python integers for every field operation
(Lagrange basis in closed form, O(n^2) interpolation, schoolbook polynomial division by X^n - 1) and pyblst
for every group operation. It shares no arithmetic with the engine (no NTT, no MSM, no gpu.arith.fields/curves
math), so the tests use it as the oracle: the engine's setup and prover must reproduce its bytes exactly for
the same toxic waste and (r, s), and its proofs must verify with pyblst and py_ecc.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pyblst import BlstP1Element, BlstP2Element

from gpu.arith.fields import fr_to_ints
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.curves import G1, G2
from gpu.groth16.params import Parameters, VerifyingKey
from gpu.groth16.r1cs import R1CS, Matrix

G1_GEN = bytes.fromhex(
    "97f1d3a73197d7942695638c4fa9ac0fc3688c4f9774b905a14e3a3f171bac586c55e83ff97a1aeffb3af00adb22c6bb"
)
G2_GEN = bytes.fromhex(
    "93e02b6052719f607dacd3a088274f65596bd0d09920b61ab5da61bbdc7f5049334cf11213945d57e5ac7d055d042b7e"
    "024aa2b2f08f0a91260805272dc51051c6e47ad4fa403b02b4510b647ae3d1770bac0326a805bbefd48056c8c121bdb8"
)
MAX_DOMAIN = 1 << 9


@dataclass(frozen=True)
class ToxicWaste:
    """The setup secrets. Never persisted; tests pass fixed values to compare implementations."""

    tau: int
    alpha: int
    beta: int
    gamma: int
    delta: int


def _inv(x: int) -> int:
    return pow(x % R, R - 2, R)


def _rows(mat: Matrix) -> list[list[tuple[int, int]]]:
    vals = fr_to_ints(np.ascontiguousarray(mat.vals)) if mat.nnz else []
    ptr = mat.row_ptr
    return [
        [(int(mat.cols[e]), vals[e]) for e in range(int(ptr[i]), int(ptr[i + 1]))]
        for i in range(len(ptr) - 1)
    ]


def _matrices(r1cs: R1CS) -> tuple[list[list[tuple[int, int]]], ...]:
    """A, B, C rows with bellperson's input constraints appended (A = x_i, B = C = 0)."""
    a, b, c = _rows(r1cs.a), _rows(r1cs.b), _rows(r1cs.c)
    a += [[(i, 1)] for i in range(r1cs.num_inputs)]
    b += [[] for _ in range(r1cs.num_inputs)]
    c += [[] for _ in range(r1cs.num_inputs)]
    return a, b, c


def _domain(r1cs: R1CS) -> tuple[int, int]:
    n = 1 << r1cs.domain_log
    if n > MAX_DOMAIN:
        raise ValueError(f"the reference implementation is for tiny circuits (domain {n} > {MAX_DOMAIN})")
    return n, pow(7, (R - 1) // n, R)  # 7 generates Fr*, so 7^((r-1)/n) has order exactly n


def _g1(k: int) -> BlstP1Element:
    return BlstP1Element.uncompress(G1_GEN).scalar_mul(k % R)


def _g2(k: int) -> BlstP2Element:
    return BlstP2Element.uncompress(G2_GEN).scalar_mul(k % R)


def setup(r1cs: R1CS, tw: ToxicWaste) -> Parameters:
    """bellperson's generate_parameters with the standard generators, in Python integers + pyblst."""
    n, w = _domain(r1cs)
    at, bt, ct = _matrices(r1cs)
    tau = tw.tau % R
    zt = (pow(tau, n, R) - 1) % R
    # L_k(tau) = (tau^n - 1) / n * w^k / (tau - w^k)
    lag = [zt * _inv(n) * pow(w, k, R) * _inv(tau - pow(w, k, R)) % R for k in range(n)]
    nv = r1cs.num_vars
    u, v, ww = [0] * nv, [0] * nv, [0] * nv
    for k, row in enumerate(at):
        for j, coef in row:
            u[j] = (u[j] + coef * lag[k]) % R
    for k, row in enumerate(bt):
        for j, coef in row:
            v[j] = (v[j] + coef * lag[k]) % R
    for k, row in enumerate(ct):
        for j, coef in row:
            ww[j] = (ww[j] + coef * lag[k]) % R
    ext = [(tw.beta * u[j] + tw.alpha * v[j] + ww[j]) % R for j in range(nv)]
    ginv, dinv = _inv(tw.gamma), _inv(tw.delta)
    ni = r1cs.num_inputs
    if any(e * dinv % R == 0 for e in ext[ni:]):
        raise ValueError("unconstrained aux variable: its L query point would be the identity")
    vk = VerifyingKey(
        G1.from_blst([_g1(tw.alpha)]),
        G1.from_blst([_g1(tw.beta)]),
        G2.from_blst([_g2(tw.beta)]),
        G2.from_blst([_g2(tw.gamma)]),
        G1.from_blst([_g1(tw.delta)]),
        G2.from_blst([_g2(tw.delta)]),
        G1.from_blst([_g1(e * ginv) for e in ext[:ni]]),
    )
    h = [_g1(pow(tau, i, R) * zt * dinv) for i in range(n - 1)]
    return Parameters(
        vk,
        _pts(G1, h),
        _pts(G1, [_g1(e * dinv) for e in ext[ni:]]),
        _pts(G1, [_g1(x) for x in u if x]),
        _pts(G1, [_g1(x) for x in v if x]),
        _pts(G2, [_g2(x) for x in v if x]),
    )


def _pts(group: object, pts: list[object]) -> np.ndarray:
    from gpu.curves._host import Group

    assert isinstance(group, Group)
    if not pts:
        return np.zeros((0,) + group.affine_shape, dtype=np.uint32)
    return group.from_blst(pts)


def _eval_rows(rows: list[list[tuple[int, int]]], wit: list[int]) -> list[int]:
    return [sum(c * wit[j] for j, c in row) % R for row in rows]


def _interpolate(evals: list[int], n: int, w: int) -> list[int]:
    winv, ninv = _inv(w), _inv(n)
    return [sum(evals[j] * pow(winv, i * j, R) for j in range(n)) * ninv % R for i in range(n)]


def quotient(r1cs: R1CS, witness: list[int]) -> list[int]:
    """Coefficients h_0..h_{n-2} of (A(X) B(X) - C(X)) / (X^n - 1); ValueError if the division is not exact
    (the witness does not satisfy the constraints)."""
    n, w = _domain(r1cs)
    at, bt, ct = _matrices(r1cs)
    pa, pb, pc = (_interpolate(_eval_rows(m, witness) + [0] * (n - len(m)), n, w) for m in (at, bt, ct))
    prod = [0] * (2 * n - 1)
    for i, x in enumerate(pa):
        if x:
            for j, y in enumerate(pb):
                prod[i + j] = (prod[i + j] + x * y) % R
    for i, x in enumerate(pc):
        prod[i] = (prod[i] - x) % R
    # divide by X^n - 1: q_i = p_{i+n} + q_{i+n}, remainder p_i + q_i for i < n must vanish
    q = [0] * (2 * n - 1)
    for i in range(2 * n - 2, n - 1, -1):
        q[i - n] = (prod[i] + q[i]) % R
    if any((prod[i] + q[i]) % R for i in range(n)):
        raise ValueError("A*B - C is not divisible by Z: the witness does not satisfy the R1CS")
    return q[: n - 1]


def prove(params: Parameters, r1cs: R1CS, witness: list[int], r: int, s: int) -> bytes:
    """The 192-byte proof for a full assignment ``witness`` (Python ints, witness[0] = 1)."""
    ni = r1cs.num_inputs
    dens = r1cs.density()
    h = quotient(r1cs, witness)
    vk = params.vk
    alpha, beta1, delta1 = (G1.to_blst(x)[0] for x in (vk.alpha_g1, vk.beta_g1, vk.delta_g1))
    beta2, delta2 = G2.to_blst(vk.beta_g2)[0], G2.to_blst(vk.delta_g2)[0]

    def msm(points: list[Any], scalars: list[int], zero: Any) -> Any:
        acc = zero
        for p, k in zip(points, scalars, strict=True):
            if k % R:
                acc = acc + p.scalar_mul(k % R)
        return acc

    zero1, zero2 = BlstP1Element(), BlstP2Element()
    aux = witness[ni:]
    a_sc = witness[:ni] + [x for x, d in zip(aux, dens.a_aux, strict=True) if d]
    b_sc = [x for x, d in zip(witness[:ni], dens.b_input, strict=True) if d] + [
        x for x, d in zip(aux, dens.b_aux, strict=True) if d
    ]
    h_ans = msm(G1.to_blst(params.h), h, zero1)
    l_ans = msm(G1.to_blst(params.l), aux, zero1)
    a_ans = msm(G1.to_blst(params.a), a_sc, zero1)
    b1_ans = msm(G1.to_blst(params.b_g1), b_sc, zero1)
    b2_ans = msm(G2.to_blst(params.b_g2), b_sc, zero2)
    pa = alpha + delta1.scalar_mul(r % R) + a_ans
    pb = beta2 + delta2.scalar_mul(s % R) + b2_ans
    pc = (
        a_ans.scalar_mul(s % R)
        + b1_ans.scalar_mul(r % R)
        + delta1.scalar_mul(r * s % R)
        + alpha.scalar_mul(s % R)
        + beta1.scalar_mul(r % R)
        + h_ans
        + l_ans
    )
    return bytes(pa.compress()) + bytes(pb.compress()) + bytes(pc.compress())
