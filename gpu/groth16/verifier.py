"""Groth16 verification with pyblst (blst, the library Filecoin verifies with), single and batched.

  e(A, B) == e(alpha, beta) * e(sum_i x_i IC_i, gamma) * e(C, delta),  x_0 = 1   (porep.md §8)
Batch (bellperson verify_proofs_batch, deps.md §1.5): with random 128-bit r_i,
  prod_i e(r_i A_i, B_i) == e((sum r_i) alpha, beta) * e(sum_i r_i L_i, gamma) * e(sum_i r_i C_i, delta),
where sum_i r_i L_i folds into one IC combination with scalars sum_i r_i x_ij. A failing batch is diagnosed
proof by proof (``diagnose``), so an assembly or ordering bug (every partition valid alone) is told apart from
a bad partition.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyblst import BlstP1Element, BlstP2Element, final_verify, miller_loop

from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import G1, G2, EncodingError
from gpu.groth16.params import PROOF_BYTES, VerifyingKey


class VerificationError(ValueError):
    """The inputs cannot be checked at all (wrong count, non-canonical input, malformed proof bytes)."""


@dataclass
class PreparedVerifyingKey:
    """pyblst points of a verifying key plus the Miller loop of (alpha, beta), computed once."""

    alpha: Any
    beta: Any
    gamma: Any
    delta: Any
    ic: list[Any]
    ml_alpha_beta: Any

    @property
    def num_inputs(self) -> int:
        """Public inputs excluding ONE."""
        return len(self.ic) - 1


def prepare_verifying_key(vk: VerifyingKey) -> PreparedVerifyingKey:
    alpha = G1.to_blst(vk.alpha_g1)[0]
    beta = G2.to_blst(vk.beta_g2)[0]
    return PreparedVerifyingKey(
        alpha,
        beta,
        G2.to_blst(vk.gamma_g2)[0],
        G2.to_blst(vk.delta_g2)[0],
        G1.to_blst(vk.ic),
        miller_loop(alpha, beta),
    )


def _pvk(vk: VerifyingKey | PreparedVerifyingKey) -> PreparedVerifyingKey:
    return vk if isinstance(vk, PreparedVerifyingKey) else prepare_verifying_key(vk)


def prepare_inputs(pvk: PreparedVerifyingKey, inputs: Sequence[int]) -> Any:
    """IC_0 + sum x_i IC_i; raises VerificationError on a wrong count or a non-canonical input."""
    if len(inputs) != pvk.num_inputs:
        raise VerificationError(f"{len(inputs)} public inputs for a key that takes {pvk.num_inputs}")
    acc = pvk.ic[0]
    for x, p in zip(inputs, pvk.ic[1:], strict=True):
        if not 0 <= int(x) < R_MODULUS:
            raise VerificationError(f"public input {x} is not a canonical Fr element")
        if x:
            acc = acc + p.scalar_mul(int(x))
    return acc


def _decode_proof(proof: bytes) -> tuple[Any, Any, Any]:
    """pyblst points of a 192-byte proof (blst checks the subgroup); the identity is rejected."""
    if len(proof) != PROOF_BYTES:
        raise VerificationError(f"a proof is {PROOF_BYTES} bytes, got {len(proof)}")
    for off, size in ((0, 48), (48, 96), (144, 48)):
        if proof[off] & 0x40:
            raise VerificationError("a proof element is the point at infinity")
        del size
    try:
        return (
            BlstP1Element.uncompress(proof[:48]),
            BlstP2Element.uncompress(proof[48:144]),
            BlstP1Element.uncompress(proof[144:]),
        )
    except (ValueError, EncodingError) as exc:
        raise VerificationError(f"malformed proof: {exc}") from exc


def verify(vk: VerifyingKey | PreparedVerifyingKey, proof: bytes, inputs: Sequence[int]) -> bool:
    """True iff ``proof`` (192 bytes) is valid for the public ``inputs`` (ONE excluded). Malformed proofs and
    out-of-range inputs are False (use prepare_inputs / _decode_proof to get the reason)."""
    pvk = _pvk(vk)
    try:
        a, b, c = _decode_proof(bytes(proof))
        lx = prepare_inputs(pvk, inputs)
    except VerificationError:
        return False
    return bool(
        final_verify(
            miller_loop(a, b), pvk.ml_alpha_beta * miller_loop(lx, pvk.gamma) * miller_loop(c, pvk.delta)
        )
    )


def verify_batch(
    vk: VerifyingKey | PreparedVerifyingKey,
    proofs: Sequence[bytes],
    inputs: Sequence[Sequence[int]],
    *,
    randomness: Sequence[int] | None = None,
) -> bool:
    """All proofs valid (each with its inputs), by one random linear combination: k + 3 Miller loops and one
    final exponentiation. False if any proof is malformed or invalid (with overwhelming probability)."""
    pvk = _pvk(vk)
    if len(proofs) != len(inputs):
        raise VerificationError(f"{len(proofs)} proofs but {len(inputs)} input lists")
    if not proofs:
        return True
    rs = list(randomness) if randomness is not None else [secrets.randbits(128) | 1 for _ in proofs]
    try:
        decoded = [_decode_proof(bytes(p)) for p in proofs]
        for xs in inputs:
            if len(xs) != pvk.num_inputs or any(not 0 <= int(x) < R_MODULUS for x in xs):
                return False
    except VerificationError:
        return False
    lhs = None
    sum_r = 0
    acc_c = None
    for (a, b, c), r in zip(decoded, rs, strict=True):
        term = miller_loop(a.scalar_mul(r), b)
        lhs = term if lhs is None else lhs * term
        sum_r = (sum_r + r) % R_MODULUS
        rc = c.scalar_mul(r)
        acc_c = rc if acc_c is None else acc_c + rc
    # sum_i r_i L_i = (sum r_i) IC_0 + sum_j (sum_i r_i x_ij) IC_j
    lx = pvk.ic[0].scalar_mul(sum_r)
    for j in range(pvk.num_inputs):
        s = sum(r * int(xs[j]) for r, xs in zip(rs, inputs, strict=True)) % R_MODULUS
        if s:
            lx = lx + pvk.ic[j + 1].scalar_mul(s)
    rhs = (
        miller_loop(pvk.alpha.scalar_mul(sum_r), pvk.beta)
        * miller_loop(lx, pvk.gamma)
        * miller_loop(acc_c, pvk.delta)
    )
    return bool(final_verify(lhs, rhs))


def diagnose(
    vk: VerifyingKey | PreparedVerifyingKey, proofs: Sequence[bytes], inputs: Sequence[Sequence[int]]
) -> list[bool]:
    """Per-proof validity (e.g. per partition, in order), for the log when a batch fails."""
    pvk = _pvk(vk)
    return [verify(pvk, p, xs) for p, xs in zip(proofs, inputs, strict=True)]
