"""Doubles for the agent's tests: a prover that marks its partition proofs and a checker that reads the
mark. They stand in for the Groth16 prover and the pairing check where a test is about the pipeline's logic;
the real ones run in the end-to-end tests."""

from __future__ import annotations

import secrets

from agent.pipeline import VerifyReport
from market.proofdata import ProofData, SectorID
from porep.c1 import KeyOrder
from porep.ids import prover_id
from porep.seal import seal
from porep.vanilla import make_c1


def make_work_bytes(miner: int = 1000, sector: int = 1) -> bytes:
    """A real ProofData carrying the C1 of a freshly sealed 2KiB sector (Go key order, as Curio sends it)."""
    sealed = seal(
        "StackedDrg2KiBV1_1", prover_id(miner), sector, bytes([7]) * 32, piece=bytes(range(256)) * 7
    )
    c1 = make_c1(sealed, bytes([9]) * 32)
    return ProofData.encode(SectorID(miner, sector), porep=c1.to_json(KeyOrder.GO))


class FakeProver:
    """Returns 192 bytes per partition; ``corrupt`` flips a byte of that partition's proof."""

    def __init__(self, corrupt: int | None = None, fail: int = 0) -> None:
        self.corrupt = corrupt
        self.fail = fail
        self.job_ids: list[str] = []

    def prove(self, work: ProofData, job_id: str) -> bytes:
        self.job_ids.append(job_id)
        if self.fail:
            self.fail -= 1
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
        assert work.porep is not None
        parts = [
            bytearray(secrets.token_bytes(1) * 192) for _ in range(work.porep.arrays.proof_type.partitions)
        ]
        for p in parts:
            p[0] = 0xA5  # the checker double's "valid" mark
        if self.corrupt is not None:
            parts[self.corrupt][0] ^= 0xFF
        return b"".join(parts)


class MarkChecker:
    """Checker double: a partition 'verifies' iff it carries the prover double's mark."""

    def verify(self, work: ProofData, proof: bytes) -> VerifyReport:
        return VerifyReport(tuple(proof[i] == 0xA5 for i in range(0, len(proof), 192)))
