"""The engine over gRPC (loopback TCP and a Unix socket) with the prover double of CI."""

from __future__ import annotations

from pathlib import Path

import pytest
from _engine import porep_message, running_engine, snap_message, toy_prover

from agent.cuzk import proving_pb2 as pb
from agent.proving.work import Work

pytestmark = pytest.mark.anyio


async def test_prove_porep_and_snap(mixed_pool: object, porep_work: Work, snap_work: Work, tmp_path: Path) -> None:
    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    async with running_engine(prover, f"unix://{tmp_path}/e.sock") as (svc, stub, _):
        msg = porep_message(mixed_pool.make_porep())  # type: ignore[attr-defined]
        resp = await stub.Prove(pb.ProveRequest(submit=msg))
        r = resp.result
        print(r)
        assert r.status == pb.AwaitProofResponse.COMPLETED, r.error_message
        msg = snap_message(mixed_pool.make_snap())  # type: ignore[attr-defined]
        resp = await stub.Prove(pb.ProveRequest(submit=msg))
        print(resp.result)
        assert resp.result.status == pb.AwaitProofResponse.COMPLETED, resp.result.error_message
        print(await stub.GetStatus(pb.GetStatusRequest()))
        print((await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text)
