"""The real checker and prover adapters. The checker is exercised with a real Groth16 proof of a toy circuit
whose public inputs are those of a real 2KiB request (the StackedDRG circuit's proof needs minutes of CPU:
the dry run and ``make run`` prove one); what is tested is that the checker binds each partition's proof to
the request's public values, computed without the circuit."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.proving import CircuitProver, PairingChecker, params_paths
from gpu.groth16 import reference
from gpu.groth16.r1cs import CSR, R1CS
from market.proofdata import ProofData
from porep.public_inputs import from_c1


def _toy_circuit(n_inputs: int) -> R1CS:
    """x_i · ONE = x_i for every input, and one auxiliary y · ONE = y."""
    rows = [[(i, 1)] for i in range(1, n_inputs + 2)]
    one = [[(0, 1)] for _ in rows]
    return R1CS(n_inputs + 1, 1, CSR.from_rows(rows), CSR.from_rows(one), CSR.from_rows(rows))


@pytest.mark.slow
def test_pairing_checker_per_partition(work_bytes: bytes, tmp_path: Path) -> None:
    work = ProofData.parse(work_bytes)
    assert work.porep is not None
    pt = work.porep.proof_type
    (inputs,) = from_c1(work.porep)
    r1cs = _toy_circuit(len(inputs))
    params = reference.setup(r1cs, reference.ToxicWaste(tau=3, alpha=5, beta=7, gamma=11, delta=13))
    proof = reference.prove(params, r1cs, [1, *inputs, 9], r=17, s=19)
    checker = PairingChecker(tmp_path, keys={pt.param_stem: params.vk})
    assert checker.verify(work, proof).partitions == (True,)
    tampered = bytearray(proof)
    tampered[50] ^= 1
    report = checker.verify(work, bytes(tampered))
    assert report.partitions == (False,) and "partitions [0] of 1 did not verify" in report.diagnosis()
    short = checker.verify(work, proof[:-1])
    assert short.partitions == (False,) and "191 bytes" in short.detail
    # the same proof for another miner's sector: replica_id (from the miner's prover id) differs
    other = ProofData.parse(work_bytes.replace(b'"Miner":1000', b'"Miner":1001'))
    assert checker.verify(other, proof).partitions == (False,)


def test_missing_parameters_named_before_synthesis(work_bytes: bytes, tmp_path: Path) -> None:
    work = ProofData.parse(work_bytes)
    assert work.porep is not None
    prover = CircuitProver(tmp_path, backend="cpu")
    with pytest.raises(FileNotFoundError, match=params_paths(tmp_path, work.porep.proof_type)[0].name):
        prover.prove(work, "ps-porep-1000-1-1-1")
    with pytest.raises(FileNotFoundError, match="verifying key"):
        PairingChecker(tmp_path).verify(work, b"\0" * 192)
