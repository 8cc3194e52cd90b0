"""A prover double whose proofs the mock market's DigestStandInChecker accepts (its stand-in token, 192 bytes
per partition), with the verdict read back per partition from that token. It exercises the agent's loops,
store and fault handling against the real mock over HTTP without Groth16 time; the real prover has its own
tests."""

from __future__ import annotations

import anyio

from agent.proving.prover import Proven
from agent.proving.verifier import VerifyReport
from agent.proving.work import Work, WorkKind, recognise
from market.mock.checker import stand_in_proof


def stand_in_report(work: Work, proof: bytes) -> VerifyReport:
    """Partition k 'verifies' iff its 192 bytes equal the stand-in token's."""
    want = stand_in_proof(work.raw)
    n = len(want) // 192
    if len(proof) != len(want):
        return VerifyReport((False,) * n, f"{len(proof)} bytes, want {len(want)}")
    return VerifyReport(tuple(proof[k : k + 192] == want[k : k + 192] for k in range(0, len(want), 192)))


class StandInProver:
    """``corrupt``: flip a byte of that partition; ``delay_s``: time per proof (to catch it mid-proving)."""

    def __init__(self, corrupt: int | None = None, delay_s: float = 0.0) -> None:
        self.corrupt = corrupt
        self.delay_s = delay_s
        self.job_ids: list[str] = []

    async def prove(self, work: Work, job_id: str) -> Proven:
        self.job_ids.append(job_id)
        if self.delay_s:
            await anyio.sleep(self.delay_s)
        proof = bytearray(stand_in_proof(work.raw))
        if self.corrupt is not None:
            proof[self.corrupt * 192 + 7] ^= 0x01
        return Proven(bytes(proof), stand_in_report(work, bytes(proof)))


def parsed_only(raw: bytes) -> Work:
    """A PoRep request parsed (``recognise``) but not strictly checked: for loops whose subject is not the
    check (each 2KiB check costs ~0.4 s of CPU)."""
    got = recognise(raw, request_only=True)
    assert got.c1 is not None
    return Work(WorkKind.POREP, got.c1.proof_type, got.c1, None, (), raw, got.format, got.miner, got.sector)
