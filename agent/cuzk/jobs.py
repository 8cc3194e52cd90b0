"""The cuzk server's jobs: identity, admission, cancellation and answers, independent of gRPC.

* Identity: Curio reuses request ids on retry (``porep-<miner>-<sector>``) and every ProofShare challenge is
  miner 1000 / sector 1, so a job is keyed by request id **and** payload digest
  (:meth:`~agent.cuzk.request.ProofRequest.digest`). A call with the id and payload of a job still open
  attaches to it; the same id with another payload is a new job. Each job has its own id
  (``<request_id>#<n>``), so partitions of two jobs are never mixed (docs/cuzk.md §1.10).
* Admission: at most ``max_pending`` jobs open at once (Curio's ``MaxPending``; one more is refused as
  :class:`TooManyJobs`). An open job is checked (``work_of``, in a thread), then waits in the priority queue
  (:class:`~agent.cuzk.scheduler.Scheduler`: WinningPoSt, WindowPoSt, then PoRep and Snap, each in
  submission order; a PoSt takes a busy device at the running job's next partition boundary) and for a
  device slot and its memory in the agent's own :class:`~agent.admission.Admission`, through the one proving
  path (:class:`~agent.proving.prover.AdmittedProver`), and every partition is pairing-checked before the
  answer.
* Cancellation: a job that has not started is dropped from the queue at once; a running one stops at its
  next partition boundary (:class:`~agent.proving.pipeline.ProofCancelled`) and its slot is then free. A
  ``Prove`` call that goes away (Curio's ``ProveTimeout``, a cancelled context) cancels its job unless
  another call still waits on it or it was queued with ``SubmitProof``.
* Answers: a job ends COMPLETED (the proof, every partition verified), FAILED (one line saying why: bad
  input, a failed check, an error) or CANCELLED. Ended jobs are kept for a while so that ``AwaitProof``
  finds them; their inputs are dropped as soon as they end.
* Ownership: every job runs as a task of one task group, open while the server serves (:meth:`Jobs.running`,
  entered by ``agent.cuzk.server.CuzkServer.start``): a job outlives the call that submitted it, never the
  server. When the group closes, every open job is cancelled and waited for (a running one stops at its next
  partition boundary).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from enum import IntEnum, StrEnum
from typing import TYPE_CHECKING

import anyio

from agent.cuzk.metrics import CuzkMetrics
from agent.cuzk.request import SERVED, ProofKind, ProofRequest, RequestError, circuit_id, priority_of, work_of
from agent.cuzk.scheduler import Scheduler, SchedulingProver
from agent.proving.pipeline import ProofCancelled
from agent.proving.work import JobId

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from agent.admission import Grant
    from agent.proving.prover import Proven
    from agent.proving.work import Work
    from gpu.device import Device

__all__ = ["AmbiguousJob", "Job", "JobNotFound", "JobState", "Jobs", "Outcome", "Status", "TooManyJobs"]

log = logging.getLogger(__name__)

KEEP_ENDED_S = 3600.0  # ended jobs stay findable by AwaitProof this long...
KEEP_ENDED = 1000  # ...and at most this many of them


class TooManyJobs(RuntimeError):
    """``max_pending`` jobs are open: a new one is refused (gRPC RESOURCE_EXHAUSTED)."""


class JobNotFound(KeyError):
    def __str__(self) -> str:
        return f"no job {self.args[0]!r}"


class AmbiguousJob(ValueError):
    """A bare request id that names several open jobs."""


class Status(IntEnum):
    """``cuzk.v1.AwaitProofResponse.Status``."""

    UNKNOWN = 0
    COMPLETED = 1
    FAILED = 2
    CANCELLED = 3
    TIMEOUT = 4


class JobState(StrEnum):
    CHECKING = "checking"
    QUEUED = "queued"
    RUNNING = "running"
    ENDED = "ended"


@dataclass(frozen=True)
class Outcome:
    """An answer (``AwaitProofResponse``): times in whole milliseconds."""

    status: Status
    proof: bytes = b""
    error: str = ""
    queue_wait_ms: int = 0
    srs_load_ms: int = 0
    synthesis_ms: int = 0
    gpu_compute_ms: int = 0
    total_ms: int = 0


@dataclass(eq=False)
class Job:
    job_id: str
    request_id: str
    digest: str
    kind: ProofKind | None
    submitted_at: float
    request: ProofRequest | None
    priority: int = 2
    state: JobState = JobState.CHECKING
    circuit: str = ""
    partitions: int = 0
    device: Device | None = None
    admitted_at: float | None = None
    ended_at: float | None = None
    outcome: Outcome | None = None
    holders: int = 0  # Prove calls waiting on it
    pinned: bool = False  # queued by SubmitProof: it outlives its callers
    cancel: threading.Event = field(default_factory=threading.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None

    @property
    def open(self) -> bool:
        return self.outcome is None

    @property
    def kind_label(self) -> str:
        return self.kind.label if self.kind is not None else "unknown"


class Jobs:
    """The job table of one cuzk server (see the module docstring). Every method runs on the event loop."""

    def __init__(
        self,
        prover: SchedulingProver,
        *,
        max_pending: int = 10,
        check: Callable[[ProofRequest], Work] = work_of,
        metrics: CuzkMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be >= 1")
        self.prover = prover
        self.scheduler = Scheduler(prover)
        self.max_pending = max_pending
        self.check = check
        self.metrics = metrics or CuzkMetrics()
        self.metrics.max_pending.set(max_pending)
        self.clock = clock
        self.started_at = clock()
        self._jobs: dict[str, Job] = {}
        self._seq = 0
        self.ended: Counter[tuple[str, Status]] = Counter()
        self._tasks: TaskGroup | None = None  # the jobs' owner while running() is open

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Jobs]:
        """The jobs' owner: while open, each new job runs as a task of this one task group; on leaving, every
        open job is cancelled (a running one stops at its next partition boundary) and waited for."""
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            try:
                yield self
            finally:
                self._tasks = None
                for job in self.open_jobs():
                    self.cancel(job)

    # -- submitting ---------------------------------------------------------------------------------------

    def submit(self, req: ProofRequest, *, pinned: bool = False) -> tuple[Job, bool]:
        """The job of ``req`` and whether the call attached to one already open. ``pinned`` (SubmitProof):
        the job runs until it ends or CancelProof, whoever waits. TooManyJobs when a new job would exceed
        ``max_pending``."""
        digest = req.digest()
        for job in reversed(self._jobs.values()):
            if job.open and job.request_id == req.request_id and job.digest == digest:
                job.pinned |= pinned
                self.metrics.attached.inc()
                log.info("%s: a call attached to the open job (same request id and payload)", job.job_id)
                return job, True
        self._prune()
        open_jobs = sum(1 for j in self._jobs.values() if j.open)
        if open_jobs >= self.max_pending:
            self.metrics.refused.labels(reason="busy").inc()
            raise TooManyJobs(
                f"{open_jobs} jobs open, engine.max_pending = {self.max_pending}: set Curio's [Cuzk] "
                "MaxPending to at most this server's"
            )
        if self._tasks is None:
            raise RuntimeError("a job submitted outside Jobs.running(): nothing would own it")
        job = self._new(req, digest, pinned)
        self._tasks.start_soon(self._run, job, name=f"psagent-job-{job.job_id}")
        return job, False

    def _new(self, req: ProofRequest, digest: str, pinned: bool) -> Job:
        self._seq += 1
        job = Job(
            job_id=JobId.for_cuzk(req.request_id, self._seq),
            request_id=req.request_id,
            digest=digest,
            kind=req.kind,
            submitted_at=self.clock(),
            request=req,
            priority=priority_of(req),
            pinned=pinned,
        )
        self._jobs[job.job_id] = job
        return job

    def queue_position(self, job: Job) -> int:
        """Open jobs not yet running that start before ``job`` (0: it is next): those queued ahead of it in
        priority order (then submission order), and those still being checked that will be."""
        order = {job_id: i for i, job_id in enumerate(self._jobs)}  # submission order

        def first(other: Job) -> bool:
            return (-other.priority, order[other.job_id]) < (-job.priority, order[job.job_id])

        return sum(1 for o in self.open_jobs() if o.state is not JobState.RUNNING and first(o))

    # -- running ------------------------------------------------------------------------------------------

    async def _run(self, job: Job) -> None:
        with anyio.CancelScope() as scope:
            job.scope = scope
            try:
                assert job.request is not None
                work = await anyio.to_thread.run_sync(self.check, job.request)
                job.request = None  # the Work holds what is needed from here on
                job.circuit = circuit_id(work.proof_type)
                job.partitions = work.partitions
                job.state = JobState.QUEUED
                proven = await self.scheduler.run(
                    work, job.job_id, job.priority, cancel=job.cancel,
                    admitted=lambda g: self._admitted(job, g),
                )
                del work
                self._end(job, self._answer(job, proven))
            except RequestError as exc:
                self._end(job, Outcome(Status.FAILED, error=str(exc)))
            except ProofCancelled:
                self._end(job, Outcome(Status.CANCELLED, error="cancelled"))
            except Exception as exc:  # noqa: BLE001 - any failure is this job's answer; the server serves on
                log.exception("%s: failed", job.job_id)
                self._end(job, Outcome(Status.FAILED, error=_one_line(exc)))
        if job.open:  # the scope was cancelled before the job started proving
            self._end(job, Outcome(Status.CANCELLED, error="cancelled"))

    def _admitted(self, job: Job, grant: Grant) -> None:
        job.admitted_at = self.clock()
        job.device = grant.device
        job.state = JobState.RUNNING
        log.info("%s: %s, %d partition(s), priority %d, admitted after %.1f s", job.job_id, job.circuit,
                 job.partitions, job.priority, job.admitted_at - job.submitted_at)

    def _answer(self, job: Job, proven: Proven) -> Outcome:
        """COMPLETED only with a proof of the right length whose every partition verified."""
        times = self._times(job, proven)
        if not proven.report.ok:
            why = f"the proof was not returned: {proven.report.diagnosis()}"
            return replace(times, status=Status.FAILED, error=why)
        want = 192 * job.partitions
        if len(proven.proof) != want:
            why = f"the prover returned {len(proven.proof)} bytes, not {want}"
            return replace(times, status=Status.FAILED, error=why)
        if job.kind is not None:
            self.metrics.partitions.labels(proof_kind=job.kind_label).inc(job.partitions)
        return replace(times, status=Status.COMPLETED, proof=proven.proof)

    def _times(self, job: Job, proven: Proven) -> Outcome:
        """The answer's timings (status still UNKNOWN)."""
        stages = proven.result.stages() if proven.result is not None else {}
        setup = sum(proven.result.setup.values()) if proven.result is not None else 0.0
        admitted = job.admitted_at if job.admitted_at is not None else job.submitted_at
        return Outcome(
            Status.UNKNOWN,
            queue_wait_ms=_ms(admitted - job.submitted_at),
            srs_load_ms=_ms(proven.setup_s + setup),
            synthesis_ms=_ms(stages.get("witness", 0.0) + stages.get("a/b/c", 0.0)),
            gpu_compute_ms=_ms(stages.get("groth16", 0.0)),
        )

    def _end(self, job: Job, outcome: Outcome) -> None:
        if not job.open:
            return
        now = self.clock()
        admitted = job.admitted_at if job.admitted_at is not None else now
        if outcome.status is not Status.COMPLETED and not outcome.queue_wait_ms:
            outcome = replace(outcome, queue_wait_ms=_ms(admitted - job.submitted_at))
        job.outcome = outcome = replace(outcome, total_ms=_ms(now - job.submitted_at))
        job.ended_at = now
        job.state = JobState.ENDED
        job.request = None
        job.scope = None
        job.done.set()
        self.ended[(job.kind_label, outcome.status)] += 1
        self.metrics.jobs.labels(proof_kind=job.kind_label, status=outcome.status.name).inc()
        if outcome.status is Status.COMPLETED:
            self.metrics.seconds.labels(proof_kind=job.kind_label).observe(now - job.submitted_at)
        if job.admitted_at is not None:
            waited = job.admitted_at - job.submitted_at
            self.metrics.queue_wait.labels(proof_kind=job.kind_label).observe(waited)
        level = logging.INFO if outcome.status is Status.COMPLETED else logging.WARNING
        log.log(level, "%s: %s%s (%.1f s)", job.job_id, outcome.status.name,
                f": {outcome.error}" if outcome.error else "", now - job.submitted_at)

    # -- waiting and cancelling ---------------------------------------------------------------------------

    async def wait(self, job: Job, timeout_s: float | None = None) -> Outcome:
        """The job's answer; with ``timeout_s``, TIMEOUT when it has not ended by then (it goes on)."""
        with anyio.move_on_after(timeout_s):  # None: no limit
            await job.done.wait()
        if job.outcome is None:
            assert timeout_s is not None
            return Outcome(
                Status.TIMEOUT, error=f"still {job.state.value} after {timeout_s * 1000:.0f} ms",
                total_ms=_ms(self.clock() - job.submitted_at),
            )
        return job.outcome

    async def prove(self, req: ProofRequest) -> tuple[Job, Outcome]:
        """``Prove``: submit (or attach) and wait. If the caller goes away (cancellation: Curio's deadline or
        a cancelled context), the job is cancelled unless another caller still waits on it or it is
        pinned."""
        job, _ = self.submit(req)
        job.holders += 1
        try:
            outcome = await self.wait(job)
        except anyio.get_cancelled_exc_class():
            job.holders -= 1
            if job.open and job.holders == 0 and not job.pinned:
                log.info("%s: its caller went away: cancelling", job.job_id)
                self.cancel(job)
            raise
        job.holders -= 1
        return job, outcome

    def cancel(self, job: Job) -> bool:
        """Cancel an open job; whether it was running (it then stops at its next partition boundary)."""
        if not job.open:
            return False
        was_running = job.state is JobState.RUNNING
        job.cancel.set()
        if job.scope is not None:
            job.scope.cancel()  # a wait in the queue ends now; a running pipeline sees job.cancel
        return was_running

    def find(self, job_id: str) -> Job:
        """A job by the id SubmitProof returned, or by a bare request id naming one job: the open one, else
        the latest ended one. JobNotFound / AmbiguousJob."""
        job = self._jobs.get(job_id)
        if job is not None:
            return job
        same = [j for j in self._jobs.values() if j.request_id == job_id]
        if not same:
            raise JobNotFound(job_id)
        open_jobs = [j for j in same if j.open]
        if len(open_jobs) > 1:
            raise AmbiguousJob(
                f"request id {job_id!r} names {len(open_jobs)} open jobs "
                f"({', '.join(j.job_id for j in open_jobs)}): use the job id SubmitProof returned"
            )
        return open_jobs[0] if open_jobs else same[-1]

    # -- reporting ----------------------------------------------------------------------------------------

    def open_jobs(self) -> list[Job]:
        return [j for j in self._jobs.values() if j.open]

    def uptime_s(self) -> float:
        return self.clock() - self.started_at

    def totals(self) -> tuple[int, int]:
        """(completed, failed) since start (cancelled jobs are neither)."""
        completed = sum(n for (_, s), n in self.ended.items() if s is Status.COMPLETED)
        failed = sum(n for (_, s), n in self.ended.items() if s is Status.FAILED)
        return completed, failed

    def metrics_text(self) -> str:
        m = self.metrics
        for kind in SERVED:
            jobs = [j for j in self.open_jobs() if j.kind is kind]
            m.queued.labels(proof_kind=kind.label).set(sum(j.state is not JobState.RUNNING for j in jobs))
            m.running.labels(proof_kind=kind.label).set(sum(j.state is JobState.RUNNING for j in jobs))
        m.uptime.set(self.uptime_s())
        return m.text()

    def _prune(self) -> None:
        now = self.clock()
        ended = [j for j in self._jobs.values() if not j.open]
        drop = {j.job_id for j in ended if j.ended_at is not None and now - j.ended_at > KEEP_ENDED_S}
        kept = [j for j in ended if j.job_id not in drop]
        drop.update(j.job_id for j in kept[: max(0, len(kept) - KEEP_ENDED)])  # the oldest first
        for job_id in drop:
            del self._jobs[job_id]


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def _one_line(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:limit] if first else type(exc).__name__
