"""The engine over gRPC, on a Unix socket and loopback TCP, with CI's prover double: the agent's own
admission, pipeline and pairing check, the circuits replaced by toy ones over each real 2KiB request's own
public inputs (tests/agent/cuzk/_engine.py). ``make test-engine-long`` runs the real 2KiB provers."""

from __future__ import annotations

import asyncio
import base64
import json
import stat
from pathlib import Path
from typing import Any

import grpc
import pytest
from _doubles import ReferenceEngine  # tests/agent is on sys.path
from _engine import (
    assert_refused_in_one_line,
    porep_message,
    running_engine,
    snap_message,
    toy_job_prover,
    toy_prover,
    until,
)

from agent.cuzk import proving_pb2 as pb
from agent.proving.work import Work, WorkKind
from market.proofdata import ProofData

pytestmark = pytest.mark.anyio
COMPLETED, FAILED, CANCELLED, TIMEOUT = (
    pb.AwaitProofResponse.COMPLETED, pb.AwaitProofResponse.FAILED, pb.AwaitProofResponse.CANCELLED,
    pb.AwaitProofResponse.TIMEOUT,
)


@pytest.fixture(params=["unix", "tcp"])
def listen(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return f"unix://{tmp_path}/engine.sock" if request.param == "unix" else "127.0.0.1:0"


async def test_prove_porep_and_snap_as_curio_sends_them(
    mixed_pool: Any, porep_work: Work, snap_work: Work, tmp_path: Path, listen: str
) -> None:
    """A PoRep C1 wrapper (PoRepSnarkCuzk's request) and a Snap request (ProofShare's, sector_size 0):
    COMPLETED, 192 bytes per partition, the proof of that very request, the timings filled."""
    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    async with running_engine(prover, listen) as (svc, stub, _):
        if listen.startswith("unix"):
            assert stat.S_IMODE(Path(listen[len("unix://"):]).stat().st_mode) == 0o660
        for raw, msg in (
            (p := mixed_pool.make_porep(), porep_message(p)),
            (s := mixed_pool.make_snap(), snap_message(s)),
        ):
            r = (await stub.Prove(pb.ProveRequest(submit=msg), timeout=60)).result
            assert r.status == COMPLETED, r.error_message
            work = Work.from_bytes(raw)
            assert len(r.proof) == 192 * work.partitions and r.job_id.startswith(msg.request_id + "#")
            assert prover.pipeline.verifier.verify(work, r.proof).ok
            porep_kind = work.kind is WorkKind.POREP
            other = Work.from_bytes(mixed_pool.make_porep() if porep_kind else mixed_pool.make_snap())
            assert not prover.pipeline.verifier.verify(other, r.proof).ok  # bound to its own request
            assert r.total_ms >= r.queue_wait_ms and r.total_ms >= r.gpu_compute_ms > 0
        status = await stub.GetStatus(pb.GetStatusRequest())
        assert status.total_proofs_completed == 2 and status.total_proofs_failed == 0
        assert status.pinned_memory_limit_bytes == prover.pipeline.host.total > 0


def _malformed(porep: bytes, snap: bytes) -> list[tuple[str, pb.SubmitProofRequest, str]]:
    """(what, request, what its error_message says) for each kind of bad input."""
    pd = ProofData.parse(porep)
    assert pd.porep_raw is not None
    good = porep_message(porep)
    wrapper = json.loads(good.vanilla_proof)

    def wrapped(**kw: Any) -> bytes:
        return json.dumps({**wrapper, **kw}, separators=(",", ":")).encode()

    s = snap_message(snap)
    flipped = bytes([s.comm_r_new[0] ^ 1]) + s.comm_r_new[1:]
    return [
        ("bad base64", _with(good, vanilla_proof=wrapped(Phase1Out="@@not base64@@")), "not valid base64"),
        ("truncated wrapper JSON", _with(good, vanilla_proof=good.vanilla_proof[:-40]), "not JSON"),
        ("truncated C1 JSON",
         _with(good, vanilla_proof=wrapped(Phase1Out=base64.b64encode(pd.porep_raw[:-200]).decode())),
         "Phase1Out: not a valid C1"),
        ("wrapper SectorNum", _with(good, vanilla_proof=wrapped(SectorNum=7)),
         "SectorNum 7 is not sector_number 1"),
        ("wrong miner", _with(good, miner_id=1001), "failed the strict check"),
        ("wrong registered_proof", _with(good, registered_proof=8),
         "is not that of registered_proof StackedDrg32GiBV1_1"),
        ("empty vanilla_proof", _with(good, vanilla_proof=b""), "vanilla_proof is empty"),
        ("no kind", _with(good, proof_kind=pb.PROOF_KIND_UNSPECIFIED), "proof_kind is unset"),
        ("wrong partition count", _with(s, vanilla_proofs=list(s.vanilla_proofs) * 2),
         "2 partition proofs in vanilla_proofs, a StackedDrg2KiBV1 update has 1"),
        ("wrong commitment", _with(s, comm_r_new=flipped), "failed the strict check"),
        ("short commitment", _with(s, comm_d_new=s.comm_d_new[:31]),
         "comm_d_new must be 32 raw bytes, got 31"),
        ("not an update proof", _with(s, registered_proof=9),
         "registered_proof 9 is not a RegisteredUpdateProof"),
        ("snap sector size", _with(s, sector_size=32 << 30), "sector_size 34359738368 is not that of"),
        ("corrupt partition proof", _with(s, vanilla_proofs=[s.vanilla_proofs[0][:-7]]),
         "failed the strict check"),
    ]


def _with(msg: pb.SubmitProofRequest, **over: Any) -> pb.SubmitProofRequest:
    out = pb.SubmitProofRequest()
    out.CopyFrom(msg)
    for k, v in over.items():
        if k == "vanilla_proofs":
            del out.vanilla_proofs[:]
            out.vanilla_proofs.extend(v)
        else:
            setattr(out, k, v)
    return out


async def test_malformed_payloads_fail_with_one_line_and_the_engine_serves_on(
    mixed_pool: Any, porep_work: Work, snap_work: Work, tmp_path: Path
) -> None:
    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    porep, snap = mixed_pool.make_porep(), mixed_pool.make_snap()
    cases = _malformed(porep, snap)
    async with running_engine(prover, f"unix://{tmp_path}/e.sock") as (_, stub, _):
        await assert_refused_in_one_line(stub, prover, cases)
        ok = (await stub.Prove(pb.ProveRequest(submit=porep_message(porep)), timeout=60)).result
        assert ok.status == COMPLETED, ok.error_message
        status = await stub.GetStatus(pb.GetStatusRequest())
        assert (status.total_proofs_completed, status.total_proofs_failed) == (1, len(cases))


@pytest.mark.slow
async def test_ten_calls_one_request_id_ten_payloads_ten_answers(
    mixed_pool: Any, porep_work: Work, snap_work: Work, tmp_path: Path
) -> None:
    """ProofShare's old ids (and Curio's retries) reuse one request id: ten concurrent calls with the same id
    and ten different C1s are ten jobs with ten proofs, each the proof of its own C1. The same id and payload
    twice at once is one job."""
    prover = toy_prover(tmp_path / "p", porep_work, snap_work, engine=ReferenceEngine(delay_s=0.05))
    payloads = [mixed_pool.make_porep() for _ in range(10)]
    async with running_engine(prover, "127.0.0.1:0") as (svc, stub, _):
        calls = [stub.Prove(pb.ProveRequest(submit=porep_message(p, "ps-porep-1000-1")), timeout=120)
                 for p in payloads]
        results = [r.result for r in await asyncio.gather(*calls)]
        assert [r.status for r in results] == [COMPLETED] * 10, [r.error_message for r in results]
        assert len({r.job_id for r in results}) == 10 and len({r.proof for r in results}) == 10
        works = [Work.from_bytes(p) for p in payloads]
        verifier = prover.pipeline.verifier
        for i, r in enumerate(results):
            assert verifier.verify(works[i], r.proof).ok
            assert not verifier.verify(works[(i + 1) % 10], r.proof).ok
        # the same id and the same payload while it runs: one job, both calls answered with it
        same = porep_message(payloads[0], "porep-1000-1")
        a, b = await asyncio.gather(*(stub.Prove(pb.ProveRequest(submit=same), timeout=60) for _ in range(2)))
        assert a.result.job_id == b.result.job_id and a.result.proof == b.result.proof
        assert a.result.status == COMPLETED
        text = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
        assert "psagent_engine_calls_attached_total 1.0" in text
        assert 'psagent_engine_jobs_total{proof_kind="porep-c2",status="COMPLETED"} 11.0' in text


@pytest.mark.slow
async def test_a_cancelled_call_frees_its_slot(tmp_path: Path) -> None:
    """One device slot. A: 4 partitions of 0.5 s; B queued behind it. B's caller gives up (its deadline):
    B ends CANCELLED without ever proving. A's caller gives up (0.7 s) while partition 1 proves: A stops at
    that partition's end and C, queued behind it, gets the slot then instead of after A's 2 s."""
    prover, check, circuit = toy_job_prover(tmp_path / "p", 4, 0.5)
    engine = prover.pipeline.engines[0]
    async with running_engine(prover, "127.0.0.1:0", check=check) as (svc, stub, _):
        jobs = svc.jobs

        def req(tag: bytes, rid: str) -> pb.ProveRequest:
            return pb.ProveRequest(submit=pb.SubmitProofRequest(
                request_id=rid, proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=tag * 8))

        a = asyncio.ensure_future(stub.Prove(req(b"a", "a"), timeout=0.7))
        await until(lambda: any(j.state.value == "running" for j in jobs.open_jobs()))
        with pytest.raises(grpc.aio.AioRpcError) as gone:
            await stub.Prove(req(b"b", "b"), timeout=0.2)  # queued behind A; its caller gives up
        assert gone.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        job_b = jobs.find("b")
        await until(lambda: not job_b.open)
        assert job_b.outcome.status.name == "CANCELLED" and job_b.admitted_at is None
        status = await stub.GetStatus(pb.GetStatusRequest())
        porep_q = next(q for q in status.queues if q.proof_kind == "porep-c2")
        assert (porep_q.pending, porep_q.in_progress) == (0, 1)  # only A, proving
        c = asyncio.ensure_future(stub.Prove(req(b"c", "c"), timeout=30))
        with pytest.raises(grpc.aio.AioRpcError) as deadline:
            await a
        assert deadline.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
        rc = (await c).result
        assert jobs.find("a").outcome.status.name == "CANCELLED"
        assert rc.status == COMPLETED and len(rc.proof) == 4 * 192
        proven_for_a = len(engine.memory) - 4  # C proved its 4 partitions; B none
        assert 1 <= proven_for_a <= 2, proven_for_a  # the partition in flight ended, nothing after it
        assert rc.queue_wait_ms < 1500  # A's boundary (~0.7 s), not A's end (~1.7 s)
        assert prover.admission.running(prover.slots[0]) == 0 and prover.pipeline.host.used == 0


async def test_submit_await_cancel_status_and_metrics(tmp_path: Path) -> None:
    """SubmitProof answers at once; AwaitProof honours timeout_ms (TIMEOUT, the job goes on), then answers;
    CancelProof cancels a running job for real; unknown ids are NOT_FOUND; GetStatus and GetMetrics show
    the queue, the loaded circuit and its users, and the totals."""
    prover, check, _ = toy_job_prover(tmp_path / "p", 3, 0.2)
    async with running_engine(prover, f"unix://{tmp_path}/e.sock", check=check) as (svc, stub, _):
        def submit(tag: bytes, rid: str) -> pb.SubmitProofRequest:
            return pb.SubmitProofRequest(
                request_id=rid, proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=tag * 8
            )

        one = await stub.SubmitProof(submit(b"1", "job-1"))
        assert one.job_id == "job-1#1" and one.queue_position == 0
        await until(lambda: svc.jobs.find("job-1").state.value == "running")
        two = await stub.SubmitProof(submit(b"2", "job-2"))
        three = await stub.SubmitProof(submit(b"3", "job-3"))
        assert (two.queue_position, three.queue_position) == (0, 1)  # 0: next for the slot
        waited = await stub.AwaitProof(pb.AwaitProofRequest(job_id=one.job_id, timeout_ms=100))
        assert waited.status == TIMEOUT and "after 100 ms" in waited.error_message
        status = await stub.GetStatus(pb.GetStatusRequest())
        srs = [(s.circuit_id, s.ref_count, s.tier) for s in status.loaded_srs]
        assert srs == [("porep-2k", 1, pb.SRSStatus.HOT)]
        q = next(q for q in status.queues if q.proof_kind == "porep-c2")
        assert (q.pending, q.in_progress) == (2, 1)
        # a queued job cancelled: it never runs (was_running false)
        assert not (await stub.CancelProof(pb.CancelProofRequest(job_id=three.job_id))).was_running
        assert (await stub.AwaitProof(pb.AwaitProofRequest(job_id=three.job_id))).status == CANCELLED
        done = await stub.AwaitProof(pb.AwaitProofRequest(job_id="job-1"))  # a bare request id names the job
        assert done.status == COMPLETED and len(done.proof) == 3 * 192 and done.job_id == "job-1#1"
        await until(lambda: svc.jobs.find("job-2").state.value == "running")
        cancelled = await stub.CancelProof(pb.CancelProofRequest(job_id=two.job_id))
        assert cancelled.was_running
        after = await stub.AwaitProof(pb.AwaitProofRequest(job_id=two.job_id))
        assert after.status == CANCELLED and after.proof == b""
        assert not (await stub.CancelProof(pb.CancelProofRequest(job_id=two.job_id))).was_running
        for call, msg in ((stub.AwaitProof, pb.AwaitProofRequest(job_id="nope")),
                          (stub.CancelProof, pb.CancelProofRequest(job_id="nope"))):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call(msg)
            assert err.value.code() is grpc.StatusCode.NOT_FOUND
        status = await stub.GetStatus(pb.GetStatusRequest())
        assert (status.total_proofs_completed, status.total_proofs_failed) == (1, 0)
        assert status.uptime_seconds >= 0 and status.gpus == []  # the CPU backend has no GPU
        text = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
        assert 'psagent_engine_jobs_total{proof_kind="porep-c2",status="CANCELLED"} 2.0' in text
        assert 'psagent_engine_partitions_verified_total{proof_kind="porep-c2"} 3.0' in text
        assert "psagent_engine_max_pending 10.0" in text


async def test_max_pending_refuses_one_more_job(tmp_path: Path) -> None:
    prover, check, _ = toy_job_prover(tmp_path / "p", 2, 0.2)
    async with running_engine(prover, "127.0.0.1:0", max_pending=2, check=check) as (svc, stub, _):
        def submit(tag: bytes) -> pb.SubmitProofRequest:
            return pb.SubmitProofRequest(
                request_id="r", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=tag * 8
            )

        first = await stub.SubmitProof(submit(b"1"))
        await stub.SubmitProof(submit(b"2"))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.SubmitProof(submit(b"3"))
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "engine.max_pending = 2" in (err.value.details() or "")
        again = await stub.SubmitProof(submit(b"1"))  # the same id and payload attaches: no new job
        assert again.job_id == first.job_id
        with pytest.raises(grpc.aio.AioRpcError, match="AwaitProof|ambiguous|names 2 open jobs") as amb:
            await stub.AwaitProof(pb.AwaitProofRequest(job_id="r"))
        assert amb.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert (await stub.AwaitProof(pb.AwaitProofRequest(job_id=first.job_id))).status == COMPLETED


async def test_preload_and_evict(porep_work: Work, snap_work: Work, tmp_path: Path) -> None:
    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    async with running_engine(prover, "127.0.0.1:0") as (_, stub, _):
        first = await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k"))
        assert not first.already_loaded and prover.loaded(porep_work.proof_type)
        assert (await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id="porep-2k"))).already_loaded
        status = await stub.GetStatus(pb.GetStatusRequest())
        assert [s.circuit_id for s in status.loaded_srs] == ["porep-2k"]
        evicted = await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="porep-2k"))
        assert evicted.was_loaded and not prover.loaded(porep_work.proof_type)
        assert not (await stub.EvictSRS(pb.EvictSrsRequest(circuit_id="porep-2k"))).was_loaded
        assert list((await stub.GetStatus(pb.GetStatusRequest())).loaded_srs) == []
        for cid, code, says in (
            ("wpost-32g", grpc.StatusCode.FAILED_PRECONDITION,
             "parameters for StackedDrgWindow32GiBV1_1 not found"),
            ("wpost-1t", grpc.StatusCode.INVALID_ARGUMENT, "unknown circuit id"),
            ("porep-1t", grpc.StatusCode.INVALID_ARGUMENT, "unknown circuit id"),
            ("porep-32g", grpc.StatusCode.FAILED_PRECONDITION,
             "parameters for StackedDrg32GiBV1_1 not found"),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.PreloadSRS(pb.PreloadSrsRequest(circuit_id=cid))
            assert err.value.code() is code and says in (err.value.details() or ""), cid


async def test_gpu_status_reports_each_device_and_its_job(tmp_path: Path) -> None:
    """Two devices: one GPUStatus each, with the memory figures the driver gives (here a stand-in for
    ``Device.memory_info``) and the job proving on it."""
    from gpu.device import Device

    prover, check, _ = toy_job_prover(tmp_path / "p", 2, 0.3)
    engines = [prover.pipeline.engines[0], ReferenceEngine(delay_s=0.3)]
    for i, e in enumerate(engines):
        e.device = Device(i, f"H100 stand-in {i}", (9, 0), True)
    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver

    pipe = prover.pipeline
    two = AdmittedProver(
        ProofPipeline(pipe.params_dir, engines=engines, circuits=pipe.circuits, cache=pipe.cache,
                      read_params=pipe.read_params),
        accepted=(), accepted_update=(),
    )
    figures = {0: (60 << 30, 80 << 30), 1: (70 << 30, 80 << 30)}
    engine = running_engine(two, "127.0.0.1:0", check=check, memory_info=lambda d: figures[d.index])
    async with engine as (svc, stub, _):
        await stub.SubmitProof(pb.SubmitProofRequest(request_id="x", proof_kind=pb.POREP_SEAL_COMMIT,
                                                     vanilla_proof=b"x" * 8))
        await until(lambda: svc.jobs.find("x").state.value == "running")
        status = await stub.GetStatus(pb.GetStatusRequest())
        got = [(g.ordinal, g.name, g.vram_free_bytes, g.vram_total_bytes) for g in status.gpus]
        assert got == [(0, "H100 stand-in 0", 60 << 30, 80 << 30), (1, "H100 stand-in 1", 70 << 30, 80 << 30)]
        busy = [g for g in status.gpus if g.current_job_id]
        assert len(busy) == 1 and busy[0].current_job_id == "x#1" and busy[0].current_proof_kind == "porep-c2"


@pytest.mark.slow
async def test_a_300_mib_message_is_refused_cleanly(
    porep_work: Work, snap_work: Work, tmp_path: Path
) -> None:
    """Over the 256 MiB limit Curio's client has too: RESOURCE_EXHAUSTED, and the engine serves on."""
    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    async with running_engine(prover, f"unix://{tmp_path}/e.sock") as (_, stub, _):
        huge = pb.SubmitProofRequest(request_id="huge", proof_kind=pb.POREP_SEAL_COMMIT,
                                     vanilla_proof=bytes(300 << 20))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Prove(pb.ProveRequest(submit=huge), timeout=120)
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        del huge
        status = await stub.GetStatus(pb.GetStatusRequest(), timeout=10)
        assert status.total_proofs_failed == 0 and all(q.pending == 0 for q in status.queues)


async def test_get_metrics_serves_the_provers_series_beside_the_jobs(
    mixed_pool: Any, porep_work: Work, snap_work: Work, tmp_path: Path
) -> None:
    """The engine as the runtime composes it: GetMetrics carries the prover's series (the agent's names, so
    the dashboard's prover panels read an engine too) beside the job table's, from one registry."""
    from agent import runtime
    from agent.config import Settings
    from agent.cuzk import proving_pb2_grpc as pb_grpc
    from agent.opsview.metrics import ProverMetrics

    prover = toy_prover(tmp_path / "p", porep_work, snap_work, metrics=ProverMetrics(role="engine"))
    server = runtime.cuzk_server(Settings(), prover, "127.0.0.1:0")
    target = await server.start()
    try:
        async with grpc.aio.insecure_channel(target) as channel:
            stub = pb_grpc.ProvingEngineStub(channel)
            msg = porep_message(mixed_pool.make_porep())
            r = (await stub.Prove(pb.ProveRequest(submit=msg), timeout=60)).result
            assert r.status == COMPLETED, r.error_message
            text = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
    finally:
        await server.stop(0)
    assert 'psagent_engine_jobs_total{proof_kind="porep-c2",status="COMPLETED"} 1.0' in text
    assert 'psagent_proofs_total{kind="porep",outcome="verified"} 1.0' in text
    assert 'psagent_proofs_total{kind="snap",outcome="verified"} 0.0' in text
    assert 'psagent_partition_seconds_count{kind="porep",stage="verify"} 1.0' in text
    assert 'role="engine"' in text and "psagent_device_busy_seconds_total" in text


def _ours(prefix: str = "psagent-") -> list[str]:
    """The names of this loop's tasks of ours that have not finished."""
    tasks = asyncio.all_tasks()
    return sorted(t.get_name() for t in tasks if t.get_name().startswith(prefix) and not t.done())


async def test_stopping_the_server_ends_every_job_it_owns(tmp_path: Path) -> None:
    """Every job is a task of the server's own task group (#48 item 7: they were loose asyncio tasks that
    outlived the server): stopping it cancels a job SubmitProof left running (at its next partition
    boundary) and one still queued, and waits for both. A job submitted while the server is not serving is
    refused, never left without an owner."""
    from agent.cuzk.jobs import Status
    from agent.cuzk.server import request_of

    prover, check, _ = toy_job_prover(tmp_path / "p", 3, 0.2)

    def submit(tag: bytes, rid: str) -> pb.SubmitProofRequest:
        return pb.SubmitProofRequest(request_id=rid, proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=tag * 8)

    async with running_engine(prover, f"unix://{tmp_path}/e.sock", check=check) as (svc, stub, _):
        running = await stub.SubmitProof(submit(b"1", "a"))
        queued = await stub.SubmitProof(submit(b"2", "b"))
        await until(lambda: svc.jobs.find("a").state.value == "running")
        assert _ours("psagent-job-") == [f"psagent-job-{running.job_id}", f"psagent-job-{queued.job_id}"]
    a, b = svc.jobs.find(running.job_id), svc.jobs.find(queued.job_id)
    assert a.outcome is not None and a.outcome.status is Status.CANCELLED and a.admitted_at is not None
    assert b.outcome is not None and b.outcome.status is Status.CANCELLED and b.admitted_at is None
    assert _ours() == []
    with pytest.raises(RuntimeError, match="outside Jobs.running"):
        svc.jobs.submit(request_of(submit(b"3", "c")))


async def test_serve_leaves_no_task_behind(tmp_path: Path) -> None:
    """serve's own tasks (systemd's watchdog, the stop watcher) and the jobs end before it returns."""
    from agent.cuzk import proving_pb2_grpc as pb_grpc
    from agent.cuzk.jobs import Jobs
    from agent.cuzk.server import CuzkServer, CuzkService, serve
    from agent.sdnotify import Notifier

    prover, check, _ = toy_job_prover(tmp_path / "p", 3, 0.2)
    jobs = Jobs(prover, check=check)
    server = CuzkServer(CuzkService(jobs, prover), f"unix://{tmp_path}/e.sock")
    stop = asyncio.Event()
    targets: list[str] = []
    notifier = Notifier("", "200000")  # a watchdog ping every 0.1 s
    task = asyncio.ensure_future(serve(server, notifier=notifier, stop=stop, ready=targets.append))
    await until(lambda: bool(targets))
    assert _ours("psagent-cuzk-") == ["psagent-cuzk-stop", "psagent-cuzk-watchdog"]
    async with grpc.aio.insecure_channel(targets[0]) as channel:
        job = await pb_grpc.ProvingEngineStub(channel).SubmitProof(pb.SubmitProofRequest(
            request_id="a", proof_kind=pb.POREP_SEAL_COMMIT, vanilla_proof=b"1" * 8
        ))
    await until(lambda: jobs.find("a").state.value == "running")
    stop.set()
    await task
    assert _ours() == [] and not jobs.open_jobs()
    assert jobs.find(job.job_id).outcome is not None
