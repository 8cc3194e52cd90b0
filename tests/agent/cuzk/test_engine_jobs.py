"""Job identity and its callers (agent.cuzk.request, agent.cuzk.jobs), with the toy prover of CI."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from _engine import running_engine, toy_job_prover, until

from agent.cuzk import proving_pb2 as pb
from agent.cuzk.request import CIRCUIT_SIZES, ProofRequest, circuit_id, circuit_proof_type
from agent.cuzk.server import request_of


def test_the_digest_is_the_payload_not_the_name_or_priority() -> None:
    base = ProofRequest(request_id="porep-1000-1", proof_kind=1, vanilla_proof=b"abc", priority=2)
    assert base.digest() == ProofRequest(request_id="other", proof_kind=1, vanilla_proof=b"abc").digest()
    for changed in (
        ProofRequest(request_id="porep-1000-1", proof_kind=1, vanilla_proof=b"abd"),
        ProofRequest(request_id="porep-1000-1", proof_kind=2, vanilla_proof=b"abc"),
        ProofRequest(request_id="porep-1000-1", proof_kind=1, vanilla_proof=b"abc", miner_id=1),
        ProofRequest(request_id="porep-1000-1", proof_kind=1, vanilla_proof=b"abc", comm_r_new=b"x"),
    ):
        assert changed.digest() != base.digest()
    # the boundary between repeated items is part of the digest
    one = ProofRequest(vanilla_proofs=(b"ab", b"c"))
    assert one.digest() != ProofRequest(vanilla_proofs=(b"a", b"bc")).digest()
    msg = pb.SubmitProofRequest(request_id="x", proof_kind=pb.SNAP_DEALS_UPDATE, vanilla_proofs=[b"p"],
                                comm_r_old=b"o", miner_id=5, partition_index=3, randomness=b"r")
    req = request_of(msg)
    assert (req.request_id, req.proof_kind, req.vanilla_proofs, req.comm_r_old, req.miner_id) == (
        "x", 2, (b"p",), b"o", 5
    )
    assert (req.partition_index, req.randomness) == (3, b"r")


def test_circuit_ids_name_the_parameters_of_each_size() -> None:
    from agent.config import CUZK_CIRCUITS

    for kind in ("porep", "snap", "wpost", "winning"):
        for size, nbytes in CIRCUIT_SIZES.items():
            pt = circuit_proof_type(f"{kind}-{size}")
            assert pt.sector_size == nbytes and circuit_id(pt) == f"{kind}-{size}"
            assert CUZK_CIRCUITS.fullmatch(f"{kind}-{size}")  # what [engine] preload accepts
    assert circuit_proof_type("porep-32g").name == "StackedDrg32GiBV1_1"
    assert circuit_proof_type("snap-32g").name == "StackedDrg32GiBV1"
    assert circuit_proof_type("wpost-32g").name == "StackedDrgWindow32GiBV1_1"
    assert circuit_proof_type("winning-32g").name == "StackedDrgWinning32GiBV1"


@pytest.mark.anyio
async def test_who_waits_on_a_job_decides_whether_a_caller_leaving_cancels_it(tmp_path: Path) -> None:
    """Two Prove calls on one job: the first leaving does not cancel it, the second gets the proof. A job
    queued with SubmitProof outlives a Prove call that attached and left. A lone Prove call leaving
    cancels its job."""
    prover, check, _ = toy_job_prover(tmp_path / "p", 2, 0.3)
    async with running_engine(prover, "127.0.0.1:0", check=check) as (svc, stub, _):
        def call(tag: bytes, rid: str) -> pb.ProveRequest:
            return pb.ProveRequest(submit=pb.SubmitProofRequest(
                request_id=rid, proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=tag * 8))

        stays = asyncio.ensure_future(stub.Prove(call(b"s", "shared"), timeout=30))
        await until(lambda: bool(svc.jobs.open_jobs()))
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.Prove(call(b"s", "shared"), timeout=0.1)  # attached, then gone
        assert (await stays).result.status == pb.AwaitProofResponse.COMPLETED

        queued = await stub.SubmitProof(call(b"q", "pinned").submit)
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.Prove(call(b"q", "pinned"), timeout=0.1)
        done = await stub.AwaitProof(pb.AwaitProofRequest(job_id=queued.job_id))
        assert done.status == pb.AwaitProofResponse.COMPLETED

        with pytest.raises(grpc.aio.AioRpcError):
            await stub.Prove(call(b"l", "lone"), timeout=0.1)
        lone = svc.jobs.find("lone")
        await until(lambda: not lone.open)
        assert lone.outcome.status.name == "CANCELLED"
