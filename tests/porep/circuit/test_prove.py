"""A sealed 2KiB C1 proven on the CPU backend with a development setup and verified with pyblst
(gpu.groth16.verifier) against public inputs derived without the circuit. The 2KiB circuit has a 2^22
domain: the setup (~4 min) and the proof (~3 min) take minutes on 2 cores; CI runs this one proof (P11 asks
for it), the 20-proof repetition is benchmarks/repeat_cpu_proofs.py."""

from __future__ import annotations

import pytest
from circuit_c1 import PROVER, SECTOR, TICKET, Synthesised

from gpu.groth16 import setup
from gpu.groth16.prover import Assignment, ProvingKey, prove
from gpu.groth16.verifier import verify
from porep.c1 import SealCommitPhase1Output
from porep.sdr import public_inputs


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_2kib_c1_proves_and_verifies_on_cpu(synth_2kib: Synthesised, c1_2kib: SealCommitPhase1Output) -> None:
    r1cs = synth_2kib.r1cs
    params = setup.generate(r1cs, test_seed=11)
    pk = ProvingKey(params, r1cs.density(), backend="cpu")
    (proof,) = prove(pk, Assignment.from_r1cs(r1cs, synth_2kib.cs.witness_array()))
    inputs = public_inputs.record_inputs(
        c1_2kib.proof_type, prover_id=PROVER, sector_id=SECTOR, ticket=TICKET, seed=c1_2kib.seed,
        comm_d=c1_2kib.comm_d, comm_r=c1_2kib.comm_r,
    )[0]
    assert verify(params.vk, proof.to_bytes(), inputs)
    wrong = list(inputs)
    wrong[3 + 15] ^= 1  # challenge 0's challenge input
    assert not verify(params.vk, proof.to_bytes(), wrong)
