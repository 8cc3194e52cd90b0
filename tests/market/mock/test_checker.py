"""The pairing checker's plumbing, with a real Groth16 proof: a toy circuit whose public inputs are exactly
the 39 StackedDRG inputs of a 2KiB request (porep.sdr.public_inputs, computed from the request's C1), set up
and proved by the independent pure-Python reference (gpu.groth16.reference). The real circuit's verifying key
replaces the toy one in production; what is tested here is that the checker binds a proof to its request.
"""

from __future__ import annotations

import pytest

from gpu.groth16 import reference
from gpu.groth16.r1cs import CSR, R1CS
from market.mock import DigestStandInChecker, PairingChecker, stand_in_proof
from market.mock.pool import ChallengePool
from market.proofdata import ProofData
from porep.sdr.public_inputs import from_c1


def _toy_circuit(n_inputs: int) -> R1CS:
    """x_i · ONE = x_i for every input, and one auxiliary y · ONE = y."""
    rows = [[(i, 1)] for i in range(1, n_inputs + 2)]
    one = [[(0, 1)] for _ in rows]
    return R1CS(n_inputs + 1, 1, CSR.from_rows(rows), CSR.from_rows(one), CSR.from_rows(rows))


@pytest.mark.slow
def test_pairing_checker_binds_proof_to_request(challenge_pool: ChallengePool) -> None:
    request, other = challenge_pool.make(), challenge_pool.make()
    pd = ProofData.parse(request)
    assert pd.porep is not None
    (inputs,) = from_c1(pd.porep)  # one partition at 2KiB
    r1cs = _toy_circuit(len(inputs))
    params = reference.setup(r1cs, reference.ToxicWaste(tau=11, alpha=13, beta=17, gamma=19, delta=23))
    proof = reference.prove(params, r1cs, [1, *inputs, 5], r=29, s=31)
    checker = PairingChecker(params.vk)  # (reading a key file first compiles its decoder: ~45 s in CI)
    assert checker.check("PoRep", request, proof).ok
    verdict = checker.check("PoRep", other, proof)  # another request's inputs
    assert not verdict.ok and "partitions [0]" in verdict.diagnosis
    assert not checker.check("PoRep", request, proof[:-1]).ok
    tampered = bytearray(proof)
    tampered[100] ^= 1
    assert not checker.check("PoRep", request, bytes(tampered)).ok
    assert not checker.check("Snap", request, proof).ok


def test_stand_in_checker_is_explicit(challenge_pool: ChallengePool) -> None:
    request = challenge_pool.make()
    checker = DigestStandInChecker()
    assert "no cryptographic check" in checker.name
    assert checker.check("PoRep", request, stand_in_proof(request)).ok
    assert not checker.check("PoRep", challenge_pool.make(), stand_in_proof(request)).ok
    assert not checker.check("PoRep", request, bytes(192)).ok
    assert not checker.check("PoRep", b"{}", bytes(192)).ok
