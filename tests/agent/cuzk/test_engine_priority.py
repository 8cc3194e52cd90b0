"""cuzk's priorities through ``engine serve`` (docs post.md §8), with the CI prover double (the agent's
AdmittedProver and pipeline over toy circuits, real Groth16 proofs by the reference engine, every partition
pairing-checked): a WinningPoSt submitted behind queued PoRep work starts at the running job's next partition
boundary, never preempting the partition in flight; WindowPoSt goes before queued PoRep; the turns of one
device (agent.cuzk.scheduler.DeviceTurns) on their own."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_r1cs
from _engine import running_engine, until

from agent.cuzk import proving_pb2 as pb
from agent.cuzk.request import Priority, ProofKind, ProofRequest, priority_of
from agent.cuzk.scheduler import DeviceTurns
from agent.proving.pipeline import Circuits, ProofCancelled, ProofPipeline
from agent.proving.prover import AdmittedProver
from agent.proving.work import InputFormat, Work, WorkKind
from gpu.groth16 import reference

PARTITION_S = 0.35
COMPLETED = pb.AwaitProofResponse.COMPLETED


class Recorder(ReferenceEngine):
    """The reference engine, logging ("start" | "end", job tag, partition) around every prove call (the tag
    is the toy witness's first input, the partition its aux value − 9); a partition named in ``hold`` does not
    end before the test sets its event (so the test knows what is in flight when)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(delay_s=delay_s)
        self.events: list[tuple[str, int, int]] = []
        self.hold: dict[tuple[int, int], threading.Event] = {}
        self._events = threading.Lock()

    def prove(self, key: tuple, asg: list[int], *, memory_bytes: int | None, timings: dict) -> bytes:
        tag, k = asg[1], asg[-1] - 9
        with self._events:
            self.events.append(("start", tag, k))
        gate = self.hold.get((tag, k))
        if gate is not None:
            assert gate.wait(30), f"partition {k} of job {tag} held too long"
        try:
            return super().prove(key, asg, memory_bytes=memory_bytes, timings=timings)
        finally:
            with self._events:
                self.events.append(("end", tag, k))


def priority_prover(tmp: Path, porep_partitions: int = 4) -> tuple[AdmittedProver, Any, Recorder]:
    """An engine prover with two toy proof types — a PoRep of ``porep_partitions`` partitions and a
    one-partition PoSt — and the check that makes each request such a Work by its proof_kind; a request's
    tag (its job's first public input) is the first byte of its vanilla_proof / vanilla_proofs[0]."""
    porep = SimpleNamespace(name="ToyPoRep", param_stem="toy-porep", partitions=porep_partitions,
                            size_label="toy", sector_size=2048)
    post = SimpleNamespace(name="ToyPoSt", param_stem="toy-post", partitions=1, size_label="toy",
                           sector_size=2048)
    params = reference.setup(toy_r1cs(2), reference.ToxicWaste(3, 5, 7, 11, 13))
    tmp.mkdir(parents=True, exist_ok=True)
    for pt in (porep, post):
        params.write(tmp / f"{pt.param_stem}.params")
    circuit = ToyCircuit(2, lambda c1: c1.xs)
    engine = Recorder(PARTITION_S)
    pipe = ProofPipeline(
        tmp, engines=[engine], circuits=Circuits(circuit, circuit),  # type: ignore[arg-type]
        cache=tmp / "cache", read_params=lambda p, check: params,
    )

    def check(req: ProofRequest) -> Work:
        is_post = req.kind in (ProofKind.WINNING_POST, ProofKind.WINDOW_POST_PARTITION)
        pt = post if is_post else porep
        tag = (req.vanilla_proofs[0] if is_post else req.vanilla_proof)[0]
        xs = [[tag, 11 + k] for k in range(pt.partitions)]
        kind = {ProofKind.WINNING_POST: WorkKind.WINNING_POST,
                ProofKind.WINDOW_POST_PARTITION: WorkKind.WINDOW_POST}.get(req.kind, WorkKind.POREP)  # type: ignore[arg-type]
        c1 = SimpleNamespace(proof_type=pt, xs=xs)
        return Work(kind, pt, c1, None, tuple(map(tuple, xs)), b"", InputFormat.CUZK, None, None)  # type: ignore[arg-type]

    return AdmittedProver(pipe), check, engine


def porep_req(tag: int, rid: str) -> pb.SubmitProofRequest:
    kind = pb.POREP_SEAL_COMMIT
    return pb.SubmitProofRequest(request_id=rid, proof_kind=kind, vanilla_proof=bytes([tag]) * 8)


def post_req(tag: int, rid: str, kind: int = pb.WINNING_POST, **over: Any) -> pb.SubmitProofRequest:
    return pb.SubmitProofRequest(request_id=rid, proof_kind=kind, vanilla_proofs=[bytes([tag]) * 8], **over)


async def porep_a_proving(stub: Any, engine: Recorder) -> Any:
    """PoRep A (tag 1, ``porep-1000-1``) submitted and its partition 0 started; its SubmitProof answer."""
    a = await stub.SubmitProof(porep_req(1, "porep-1000-1"))
    await until(lambda: ("start", 1, 0) in engine.events)
    return a


def _at(events: list[tuple[str, int, int]], what: tuple[str, int, int]) -> int:
    return events.index(what)


def test_default_priorities_are_cuzks() -> None:
    assert priority_of(ProofRequest(proof_kind=4)) == Priority.CRITICAL
    assert priority_of(ProofRequest(proof_kind=3)) == Priority.HIGH
    assert priority_of(ProofRequest(proof_kind=1)) == Priority.NORMAL
    assert priority_of(ProofRequest(proof_kind=2)) == Priority.NORMAL
    assert priority_of(ProofRequest(proof_kind=1, priority=4)) == Priority.CRITICAL  # the caller's own
    assert priority_of(ProofRequest(proof_kind=1, priority=9)) == Priority.CRITICAL  # clamped


@pytest.mark.anyio
async def test_winning_post_behind_queued_porep_starts_at_the_next_partition_boundary(tmp_path: Path) -> None:
    """PoRep A (4 partitions) proving, PoRep B queued behind it; a WinningPoSt W arrives while A's partition 1
    is in flight. W starts as soon as that partition ends (not preempting it, not after the whole of A, and
    before B), A's partition 2 waits for W, and B starts only after A. Every proof verifies."""
    prover, check, engine = priority_prover(tmp_path / "p")
    engine.hold[(1, 1)] = release = threading.Event()
    async with running_engine(prover, "127.0.0.1:0", check=check) as (svc, stub, _):
        turns = svc.jobs.scheduler.turns[-1]  # the CPU slot's
        a = await porep_a_proving(stub, engine)
        b = await stub.SubmitProof(porep_req(2, "porep-1000-2"))
        await until(lambda: bool(svc.jobs.scheduler.order()))  # B checked and queued
        await until(lambda: ("start", 1, 1) in engine.events)  # A's partition 1 in flight (held)
        w = await stub.SubmitProof(post_req(3, "winpost-1000-ab"))
        assert w.queue_position == 0  # ahead of B
        await until(lambda: turns.waiting().get(Priority.CRITICAL) == 1)  # W synthesised, at the device
        assert svc.jobs.scheduler.borrowing() == {w.job_id: a.job_id}
        assert turns.in_flight() == {Priority.NORMAL: 1}  # not preempted
        release.set()
        done = {}
        for sub in (a, b, w):
            done[sub.job_id] = await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id))
        assert all(r.status == COMPLETED for r in done.values()), [r.error_message for r in done.values()]
        ev = engine.events
        assert _at(ev, ("end", 1, 1)) < _at(ev, ("start", 3, 0))  # A's partition 1 was not preempted
        assert _at(ev, ("end", 3, 0)) < _at(ev, ("start", 1, 2))  # W went at that boundary
        assert _at(ev, ("end", 1, 3)) < _at(ev, ("start", 2, 0))
        # never two partitions on the device at once: starts and ends alternate
        assert [e[0] for e in ev] == ["start", "end"] * (len(ev) // 2)
        assert done[w.job_id].queue_wait_ms < 3 * PARTITION_S * 1000  # not the whole of A (4 partitions)
        assert done[b.job_id].queue_wait_ms > 4 * PARTITION_S * 1000
        text = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
        assert 'psagent_engine_jobs_total{proof_kind="winning-post",status="COMPLETED"} 1.0' in text


@pytest.mark.anyio
async def test_window_and_winning_post_go_before_queued_porep(tmp_path: Path) -> None:
    """A running, B queued; then a WindowPoSt X and a WinningPoSt W are submitted, W last. X (HIGH) borrows
    A's device at its next boundary; W (CRITICAL), arriving while A lends to X, waits at the head of the
    queue, ahead of B, and goes as soon as it can; B runs last, whole; everything verifies."""
    prover, check, engine = priority_prover(tmp_path / "p", porep_partitions=3)
    engine.hold[(1, 0)] = release = threading.Event()
    async with running_engine(prover, "127.0.0.1:0", check=check) as (svc, stub, _):
        turns = svc.jobs.scheduler.turns[-1]
        a = await porep_a_proving(stub, engine)
        b = await stub.SubmitProof(porep_req(2, "porep-1000-2"))
        await until(lambda: bool(svc.jobs.scheduler.order()))
        x = await stub.SubmitProof(post_req(4, "wdpost-1000-0-[1 2]", kind=pb.WINDOW_POST_PARTITION))
        await until(lambda: turns.waiting().get(Priority.HIGH) == 1)  # X borrows A: at the device
        w = await stub.SubmitProof(post_req(3, "winpost-1000-cd"))
        await until(lambda: svc.jobs.scheduler.order() == [w.job_id, b.job_id])  # W waits: A lends to X
        release.set()
        for sub in (a, b, w, x):
            r = await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id))
            assert r.status == COMPLETED, r.error_message
        ev = engine.events
        starts = [tag for what, tag, _ in ev if what == "start"]
        assert starts.index(4) < starts.index(2) and starts.index(3) < starts.index(2)  # PoSt before B
        assert _at(ev, ("start", 1, 0)) < _at(ev, ("start", 4, 0))
        assert starts[-3:] == [2, 2, 2] and 2 not in starts[:-3]  # B last, whole
        assert [e[0] for e in ev] == ["start", "end"] * (len(ev) // 2)
        status = await stub.GetStatus(pb.GetStatusRequest())
        kinds = {q.proof_kind for q in status.queues}
        assert kinds == {"porep-c2", "snap-update", "window-post", "winning-post"}


@pytest.mark.anyio
async def test_a_queued_post_can_be_cancelled(tmp_path: Path) -> None:
    prover, check, engine = priority_prover(tmp_path / "p", porep_partitions=3)
    async with running_engine(prover, "127.0.0.1:0", check=check) as (svc, stub, _):
        a = await porep_a_proving(stub, engine)
        x = await stub.SubmitProof(post_req(4, "wdpost-1000-0-[1]", kind=pb.WINDOW_POST_PARTITION))
        cancelled = await stub.CancelProof(pb.CancelProofRequest(job_id=x.job_id))
        r = await stub.AwaitProof(pb.AwaitProofRequest(job_id=x.job_id))
        assert r.status in (pb.AwaitProofResponse.CANCELLED, COMPLETED)  # it may have started already
        assert cancelled.was_running == (r.status == COMPLETED) or r.status == pb.AwaitProofResponse.CANCELLED
        assert (await stub.AwaitProof(pb.AwaitProofRequest(job_id=a.job_id))).status == COMPLETED
        assert not svc.jobs.scheduler.order() and not svc.jobs.scheduler.borrowing()


def test_turns_never_preempt_and_let_the_higher_priority_go_first() -> None:
    """One device's turns on threads: a low-priority partition in flight finishes; a high one waiting goes
    before the next low one; equal priorities share; a cancelled wait leaves."""
    turns = DeviceTurns()
    log: list[str] = []
    lock = threading.Lock()

    def partition(name: str, prio: int, hold_s: float, cancel: threading.Event | None = None) -> None:
        try:
            with turns.partition(prio, cancel):
                with lock:
                    log.append(f"+{name}")
                time.sleep(hold_s)
                with lock:
                    log.append(f"-{name}")
        except ProofCancelled:
            with lock:
                log.append(f"x{name}")

    low0 = threading.Thread(target=partition, args=("L0", 2, 0.3))
    low0.start()
    time.sleep(0.05)
    high = threading.Thread(target=partition, args=("H", 4, 0.1))
    high.start()
    time.sleep(0.05)
    low1 = threading.Thread(target=partition, args=("L1", 2, 0.05))
    low1.start()
    stop = threading.Event()
    doomed = threading.Thread(target=partition, args=("C", 1, 0.0, stop))
    doomed.start()
    stop.set()
    for t in (low0, high, low1, doomed):
        t.join(5)
    assert log.index("-L0") < log.index("+H") < log.index("-H") < log.index("+L1"), log
    assert "xC" in log and "+C" not in log
    assert turns.in_flight() == {}


@pytest.mark.anyio
async def test_a_borrower_never_runs_beside_its_lender_on_one_device(tmp_path: Path) -> None:
    """Many WinningPoSts against one long PoRep: each takes its turn between A's partitions, one at a time."""
    prover, check, engine = priority_prover(tmp_path / "p", porep_partitions=3)
    async with running_engine(prover, "127.0.0.1:0", check=check) as (_, stub, _):
        a = await porep_a_proving(stub, engine)
        posts = await asyncio.gather(*(stub.SubmitProof(post_req(10 + i, f"winpost-{i}")) for i in range(3)))
        for sub in (a, *posts):
            assert (await stub.AwaitProof(pb.AwaitProofRequest(job_id=sub.job_id))).status == COMPLETED
        ev = engine.events
        assert [e[0] for e in ev] == ["start", "end"] * (len(ev) // 2)
        assert all(_at(ev, ("end", 1, 0)) < _at(ev, ("start", 10 + i, 0)) for i in range(3))


class _SlotProver:
    """A prover double for the scheduler alone: one slot; a job proves until the test releases it; a job
    whose work is "big" does not fit a lent grant (NotLendable), as a WindowPoSt beside a Snap job may not."""

    def __init__(self) -> None:
        from agent.admission import CPU_SLOT

        self.slots = (CPU_SLOT,)
        self.capacity = 1
        self.log: list[tuple[str, str, bool]] = []
        self.release: dict[str, asyncio.Event] = {}
        self.admit: dict[str, asyncio.Event] = {}  # a job named here is admitted only once its event is set

    async def prove(
        self, work: Any, job_id: str, *, cancel: Any = None, admitted: Any = None, turn: Any = None,
        lent: Any = None,
    ) -> str:
        from agent.admission import Grant
        from agent.proving.prover import NotLendable

        if lent is not None and work == "big":
            raise NotLendable(f"{job_id}: needs more than the lent grant")
        if job_id in self.admit:
            await self.admit[job_id].wait()  # parameters loading, device memory not yet free
        admitted(lent or Grant(self.slots[0], 100))
        self.log.append(("start", job_id, lent is not None))
        await self.release.setdefault(job_id, asyncio.Event()).wait()
        self.log.append(("end", job_id, lent is not None))
        return f"proof of {job_id}"


@pytest.mark.anyio
async def test_a_post_too_big_for_the_lent_grant_waits_for_a_slot_keeping_its_place() -> None:
    """A (NORMAL) runs; B (NORMAL) queued; H (CRITICAL, too big to borrow A's grant) goes back to the queue
    without losing its place: when A ends, H starts on the slot before B. A small PoSt S borrows meanwhile."""
    from agent.cuzk.scheduler import Scheduler

    prover = _SlotProver()
    sched = Scheduler(prover)
    tasks = {}

    def start(job: str, work: str, priority: int) -> None:
        prover.release.setdefault(job, asyncio.Event())
        run = sched.run(work, job, priority, admitted=lambda g: None)  # type: ignore[arg-type]
        tasks[job] = asyncio.ensure_future(run)

    start("A", "porep", Priority.NORMAL)
    await until(lambda: ("start", "A", False) in prover.log)
    start("B", "porep", Priority.NORMAL)
    start("H", "big", Priority.HIGH)
    await until(lambda: sched.order() == ["H", "B"])  # H tried A's grant, did not fit, queued again first
    start("S", "small", Priority.CRITICAL)
    await until(lambda: ("start", "S", True) in prover.log)  # S borrows A's grant
    assert sched.borrowing() == {"S": "A"}
    prover.release["S"].set()
    prover.release["A"].set()
    await until(lambda: ("start", "H", False) in prover.log)
    assert sched.order() == ["B"]
    prover.release["H"].set()
    prover.release["B"].set()
    assert [await tasks[j] for j in "ABHS"] == [f"proof of {j}" for j in "ABHS"]
    starts = [job for what, job, _ in prover.log if what == "start"]
    assert starts == ["A", "S", "H", "B"]


@pytest.mark.anyio
async def test_a_post_borrows_as_soon_as_the_running_job_is_admitted() -> None:
    """A PoSt that finds the running job not yet admitted (no grant to borrow) borrows the moment it is."""
    from agent.cuzk.scheduler import Scheduler

    prover = _SlotProver()
    prover.admit["A"] = admit = asyncio.Event()
    sched = Scheduler(prover)
    prover.release.update(A=asyncio.Event(), W=asyncio.Event())
    a = asyncio.ensure_future(sched.run("porep", "A", Priority.NORMAL, admitted=lambda g: None))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    w = asyncio.ensure_future(sched.run("small", "W", Priority.CRITICAL, admitted=lambda g: None))  # type: ignore[arg-type]
    await until(lambda: sched.order() == ["W"])  # A holds the slot but has no grant yet
    admit.set()
    await until(lambda: ("start", "W", True) in prover.log)
    assert sched.borrowing() == {"W": "A"}
    prover.release["W"].set()
    prover.release["A"].set()
    assert (await a, await w) == ("proof of A", "proof of W")
