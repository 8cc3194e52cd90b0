"""A prover double that the mock market's DigestStandInChecker accepts (its stand-in token, 192 bytes per
partition) and a checker double that reads it back per partition. They exercise the agent's loops, store and
fault handling against the real mock over HTTP without Groth16 time; the real prover has its own tests."""

from __future__ import annotations

import time

from agent.pipeline import VerifyReport
from market.mock.checker import stand_in_proof
from market.proofdata import ProofData


class StandInProver:
    """``corrupt``: flip a byte of that partition; ``delay_s``: time per proof (to catch it mid-proving)."""

    def __init__(self, corrupt: int | None = None, delay_s: float = 0.0) -> None:
        self.corrupt = corrupt
        self.delay_s = delay_s
        self.job_ids: list[str] = []

    def prove(self, work: ProofData, job_id: str) -> bytes:
        self.job_ids.append(job_id)
        if self.delay_s:
            time.sleep(self.delay_s)
        proof = bytearray(stand_in_proof(work.raw))
        if self.corrupt is not None:
            proof[self.corrupt * 192 + 7] ^= 0x01
        return bytes(proof)


class StandInChecker:
    """Partition k 'verifies' iff its 192 bytes equal the stand-in token's."""

    def verify(self, work: ProofData, proof: bytes) -> VerifyReport:
        want = stand_in_proof(work.raw)
        n = len(want) // 192
        if len(proof) != len(want):
            return VerifyReport((False,) * n, f"{len(proof)} bytes, want {len(want)}")
        parts = [k * 192 for k in range(n)]
        return VerifyReport(tuple(proof[k : k + 192] == want[k : k + 192] for k in parts))
