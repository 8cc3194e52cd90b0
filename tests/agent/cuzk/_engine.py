"""Helpers of the engine's tests: Curio-shaped requests from real 2KiB inputs, the agent's prover with toy
circuits over each request's own public inputs (gpu.groth16.reference proofs, real pairing checks: the
prover double of CI), and a running engine on a Unix socket or loopback TCP."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from _doubles import ReferenceEngine, ToyCircuit, toy_r1cs  # tests/agent is on sys.path

from agent.cuzk import proving_pb2 as pb
from agent.proving.pipeline import Circuits, ProofPipeline
from agent.proving.prover import AdmittedProver
from agent.proving.work import InputFormat, Work, WorkKind
from gpu.groth16 import reference
from market.proofdata import ProofData


def go_wrapper(c1_json: bytes, sector: int, size: int) -> bytes:
    """What Curio's wrapC1Output sends: Go's json.Marshal of {SectorNum, Phase1Out []byte, SectorSize}."""
    b64 = base64.b64encode(c1_json).decode()
    doc = {"SectorNum": sector, "Phase1Out": b64, "SectorSize": size}
    return json.dumps(doc, separators=(",", ":")).encode()


def porep_message(proofdata: bytes, request_id: str = "porep-1000-1", **over: Any) -> pb.SubmitProofRequest:
    """A PoRep SubmitProofRequest as lib/ffi/cuzk_funcs.go builds it, from a ProofData's C1."""
    pd = ProofData.parse(proofdata)
    assert pd.porep is not None and pd.porep_raw is not None
    pt = pd.porep.proof_type
    fields: dict[str, Any] = {
        "request_id": request_id,
        "proof_kind": pb.POREP_SEAL_COMMIT,
        "sector_size": pt.sector_size,
        "registered_proof": pt.id,
        "priority": pb.NORMAL,
        "vanilla_proof": go_wrapper(pd.porep_raw, pd.sector_id.number, pt.sector_size),
        "sector_number": pd.sector_id.number,
        "miner_id": pd.sector_id.miner,
    }
    fields.update(over)
    return pb.SubmitProofRequest(**fields)


def snap_message(
    proofdata: bytes, request_id: str = "ps-snap-1000-2-7", **over: Any
) -> pb.SubmitProofRequest:
    """A Snap SubmitProofRequest as ProofShare's computeSnap builds it (no sector_size)."""
    pd = ProofData.parse(proofdata)
    assert pd.snap is not None
    s = pd.snap
    fields: dict[str, Any] = {
        "request_id": request_id,
        "proof_kind": pb.SNAP_DEALS_UPDATE,
        "registered_proof": s.proof_type,
        "priority": pb.NORMAL,
        "vanilla_proofs": list(s.proofs),
        "sector_number": pd.sector_id.number,
        "miner_id": pd.sector_id.miner,
        "comm_r_old": s.old_r,
        "comm_r_new": s.new_r,
        "comm_d_new": s.new_d,
    }
    fields.update(over)
    return pb.SubmitProofRequest(**fields)


@dataclass
class ToyParams:
    params: Any
    path: Path

    def read(self, path: Path, subgroup_check: bool) -> Any:
        assert path == self.path
        return self.params


def toy_prover(
    directory: Path, porep: Work, snap: Work, *, delay_s: float = 0.0, engine: ReferenceEngine | None = None,
    metrics: Any = None,
) -> AdmittedProver:
    """The agent's AdmittedProver and ProofPipeline with the circuits replaced by toy ones over each request's
    own public inputs (read back from its C1 / Snap request, as the real witness reads them) and the
    reference Groth16 engine: every partition is still pairing-checked against the Work's public inputs."""
    from porep.sdr.public_inputs import from_c1
    from porep.snap.partition import update_public_inputs

    directory.mkdir(parents=True, exist_ok=True)
    readers: dict[Path, ToyParams] = {}
    circuits = []
    for work, inputs_of in ((porep, from_c1), (snap, lambda item: update_public_inputs(item.snap))):
        n = len(work.public_inputs[0])
        secret = [secrets.randbelow(2**200) + 2 for _ in range(5)]
        params = reference.setup(toy_r1cs(n), reference.ToxicWaste(*secret))
        path = directory / f"{work.proof_type.param_stem}.params"
        params.write(path)
        readers[path] = ToyParams(params, path)
        circuits.append(ToyCircuit(n, inputs_of, delay_s=delay_s))
    pipe = ProofPipeline(
        directory, engines=[engine or ReferenceEngine()], circuits=Circuits(*circuits),  # type: ignore[arg-type]
        cache=directory / "cache", read_params=lambda p, check: readers[p].read(p, check),
    )
    return AdmittedProver(pipe, accepted=(), accepted_update=(), metrics=metrics)


def toy_job_prover(tmp: Path, partitions: int, delay_s: float) -> tuple[Any, Any, ToyCircuit]:
    """A prover of a toy ``partitions``-partition proof type (parameters under its stem) and the Jobs check
    that turns every request into such a Work: partition boundaries the real 2KiB proofs (one partition)
    do not have."""
    from agent.proving.pipeline import Circuits, ProofPipeline
    from agent.proving.prover import AdmittedProver
    from gpu.groth16 import reference

    pt = SimpleNamespace(
        name="Toy", param_stem="toy", partitions=partitions, size_label="toy", sector_size=2048
    )
    params = reference.setup(toy_r1cs(2), reference.ToxicWaste(3, 5, 7, 11, 13))
    tmp.mkdir(parents=True, exist_ok=True)
    params.write(tmp / "toy.params")
    circuit = ToyCircuit(2, lambda c1: c1.xs)
    pipe = ProofPipeline(
        tmp, engines=[ReferenceEngine(delay_s=delay_s)], circuits=Circuits(circuit, circuit),  # type: ignore[arg-type]
        cache=tmp / "cache", read_params=lambda p, check: params,
    )

    def check(req: Any) -> Work:
        xs = [[int.from_bytes(req.vanilla_proof[:8], "little"), 11 + k] for k in range(partitions)]
        c1 = SimpleNamespace(proof_type=pt, xs=xs)
        return Work(WorkKind.POREP, pt, c1, None, tuple(map(tuple, xs)), b"", InputFormat.C1, None, None)  # type: ignore[arg-type]

    return AdmittedProver(pipe, accepted=(), accepted_update=()), check, circuit


async def until(cond: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


@asynccontextmanager
async def running_engine(
    prover: AdmittedProver, listen: str, *, max_pending: int = 10, check: Any = None, **service: Any
) -> AsyncIterator[tuple[Any, Any, Any]]:
    """(the service, a ProvingEngine stub, the channel) of an engine serving on ``listen``; ``check``: the
    jobs' request → Work (default the real one)."""
    import grpc

    from agent.cuzk import proving_pb2_grpc as pb_grpc
    from agent.cuzk.jobs import Jobs
    from agent.cuzk.server import MAX_MESSAGE_BYTES, CuzkServer, CuzkService

    jobs = Jobs(prover, max_pending=max_pending, **({"check": check} if check is not None else {}))
    svc = CuzkService(jobs, prover, **service)
    server = CuzkServer(svc, listen)
    target = await server.start()
    options = [
        ("grpc.max_send_message_length", 512 << 20), ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)
    ]
    channel = grpc.aio.insecure_channel(target, options=options)
    try:
        yield svc, pb_grpc.ProvingEngineStub(channel), channel
    finally:
        await channel.close()
        await server.stop(0)


async def assert_refused_in_one_line(
    stub: Any, prover: AdmittedProver, cases: list[tuple[str, Any, str]]
) -> None:
    """Each ``(what, request, says)`` FAILS through ``Prove`` with one short line containing ``says`` and no
    proof, and none of them loaded anything (refused before any proving)."""
    for what, req, says in cases:
        r = (await stub.Prove(pb.ProveRequest(submit=req), timeout=60)).result
        assert r.status == pb.AwaitProofResponse.FAILED, what
        assert says in r.error_message and "\n" not in r.error_message, (what, r.error_message)
        assert r.proof == b"" and len(r.error_message) <= 500
    assert prover.pipeline.loaded_shapes() == []  # every one refused before any proving


def assert_checks_outside(verifier: Any, work: Work, proof: bytes) -> None:
    """``proof`` verifies outside the engine (``verifier``: the ``.vk`` files) and a flipped byte does not."""
    assert verifier.verify(work, proof).ok
    bad = bytearray(proof)
    bad[100] ^= 1
    assert not verifier.verify(work, bytes(bad)).ok


@asynccontextmanager
async def engine_serve(settings: Any, ready_timeout_s: float) -> AsyncIterator[tuple[Any, str, float]]:
    """(a ProvingEngine stub, the target, the warm-up seconds) of the engine the composition root builds from
    ``settings`` as ``psagent engine serve`` does, warmed up and serving; stopped on exit."""
    import grpc

    from agent import runtime
    from agent.cuzk import proving_pb2_grpc as pb_grpc
    from agent.cuzk.server import MAX_MESSAGE_BYTES, serve
    from agent.sdnotify import Notifier

    prover = runtime.cuzk_prover(settings)
    server = runtime.cuzk_server(settings, prover, runtime.cuzk_listen(settings))
    stop = asyncio.Event()
    ready: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    t0 = time.perf_counter()
    serving = asyncio.ensure_future(
        serve(server, warm_up=prover.warm_up, stop=stop, ready=ready.set_result, notifier=Notifier(""))
    )
    target = await asyncio.wait_for(ready, ready_timeout_s)
    warm = time.perf_counter() - t0
    try:
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
        async with grpc.aio.insecure_channel(target, options=options) as channel:
            yield pb_grpc.ProvingEngineStub(channel), target, warm
    finally:
        stop.set()
        await serving
