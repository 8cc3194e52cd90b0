"""Admission of proving work to GPUs, and the assembly of partition proofs: runtime concerns, kept on the
agent's side of the engine (which proves what it is given, on the device it is given).

* :class:`Admission`: per device one ``anyio.CapacityLimiter`` (jobs at once) and one :class:`MemoryBudget`
  (device bytes); ``async with admission.run_on(device, nbytes) as grant`` waits, cancellably, until both
  admit the job. ``grant.nbytes`` is what the engine is then told it may use
  (``gpu.groth16.prover.prove(..., memory_bytes=grant.nbytes)``), so batch sizing reads the same budget
  instead of the device's free memory (cuzk's OOM lesson, cuzk.md §5.4: admission waits, never over-commits).
  A job names its device explicitly (never process-global state read once, cuzk.md §5.3).
* :class:`HostBudget`: host bytes that the proving threads reserve before they build a partition's assignment
  (witness, A·w, B·w, C·w), so synthesis running ahead of the prover (agent.proving.ProofPipeline) cannot
  grow host memory past the budget (cuzk.md §3: its RAM hunger is many partitions' vectors held at once).
  Blocking (threads, not the event loop): the pipeline's synthesis runs in a worker thread.
* :class:`JobAssembly`: partition proofs put back in order, keyed by a job id unique per attempt
  (cuzk.md §1.10, §5.1: cuzk keyed by a request id that concurrent jobs shared and mixed partitions of
  different proofs, "0/10 valid partitions"). Every attempt registers a fresh id (reuse is an error), each
  partition is accepted once (a duplicate, or one for an unknown, finished or failed job, is an error, never
  a silent overwrite), and ``assemble`` refuses until every slot is filled.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field

import anyio

from gpu.device import Device
from gpu.groth16.params import PROOF_BYTES


class BudgetExceeded(RuntimeError):
    """A request larger than the whole budget: it could never be admitted."""


class MemoryBudget:
    """Device bytes that jobs reserve; a reservation waits (cancellably) until it fits."""

    def __init__(self, total_bytes: int) -> None:
        if total_bytes <= 0:
            raise ValueError("the budget must be positive")
        self.total = total_bytes
        self.used = 0
        self._changed = anyio.Condition()

    @asynccontextmanager
    async def reserve(self, nbytes: int) -> AsyncIterator[None]:
        if nbytes < 0:
            raise ValueError("a reservation is a non-negative number of bytes")
        if nbytes > self.total:
            raise BudgetExceeded(f"{nbytes} bytes requested, the budget is {self.total}")
        async with self._changed:
            while self.used + nbytes > self.total:
                await self._changed.wait()
            self.used += nbytes
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self.used -= nbytes
                    self._changed.notify_all()


def host_memory_bytes() -> int:
    """Physical memory of this host (0 when unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


class HostBudget:
    """Host bytes for in-flight partition assignments; ``reserve`` blocks (a thread) until the bytes fit.

    Default total: ``fraction`` of the host's physical memory (all of it counted once per process)."""

    def __init__(self, total_bytes: int | None = None, *, fraction: float = 0.75) -> None:
        total = total_bytes if total_bytes is not None else int(host_memory_bytes() * fraction)
        if total <= 0:
            raise ValueError("the host budget must be positive")
        self.total = total
        self.used = 0
        self.peak = 0
        self._changed = threading.Condition()

    @contextmanager
    def reserve(self, nbytes: int, *, timeout_s: float | None = None) -> Iterator[None]:
        """Hold ``nbytes`` for the block; TimeoutError when they did not fit within ``timeout_s``."""
        if nbytes < 0:
            raise ValueError("a reservation is a non-negative number of bytes")
        if nbytes > self.total:
            raise BudgetExceeded(f"{nbytes} host bytes requested, the budget is {self.total}")
        with self._changed:
            if not self._changed.wait_for(lambda: self.used + nbytes <= self.total, timeout=timeout_s):
                raise TimeoutError(f"{nbytes} host bytes did not fit in {timeout_s} s ({self.used} in use)")
            self.used += nbytes
            self.peak = max(self.peak, self.used)
        try:
            yield
        finally:
            with self._changed:
                self.used -= nbytes
                self._changed.notify_all()


CPU_SLOT = Device(-1, "cpu", (0, 0), True)
"""The CPU backend as one admission slot (``simulated``: it has no device-memory figure to budget)."""


@dataclass(frozen=True)
class Grant:
    """An admitted job: the device it runs on and the device bytes reserved for it."""

    device: Device
    nbytes: int


class Admission:
    """One capacity limiter and one memory budget per device.

    ``budget_bytes`` (per device index) overrides ``budget_fraction`` of each device's total memory; the
    simulator (no memory figure) gets ``budget_bytes`` or 1 TiB. ``host``: the host-memory budget the jobs'
    proving threads reserve from (:class:`HostBudget`)."""

    def __init__(
        self,
        devices: Sequence[Device],
        *,
        jobs_per_device: int = 1,
        budget_fraction: float = 0.9,
        budget_bytes: dict[int, int] | None = None,
        host: HostBudget | None = None,
    ) -> None:
        if not devices:
            raise ValueError("no devices to admit work to")
        if jobs_per_device < 1:
            raise ValueError("jobs_per_device must be >= 1")
        if not 0 < budget_fraction <= 1:
            raise ValueError("budget_fraction must be in (0, 1]")
        self.devices = {d.index: d for d in devices}
        self.host = host or HostBudget()  # shared by every device's jobs: one host
        self.limiters = {d.index: anyio.CapacityLimiter(jobs_per_device) for d in devices}
        self.budgets: dict[int, MemoryBudget] = {}
        for d in devices:
            total = (budget_bytes or {}).get(d.index) or int(d.total_memory() * budget_fraction) or (1 << 40)
            self.budgets[d.index] = MemoryBudget(total)

    @asynccontextmanager
    async def run_on(self, device: Device | int, nbytes: int) -> AsyncIterator[Grant]:
        """Wait for a job slot on ``device``, then for ``nbytes`` of its budget; both are released on exit.
        Cancelling the waiting task (a deadline, a drain) leaves nothing reserved."""
        idx = device.index if isinstance(device, Device) else int(device)
        if idx not in self.devices:
            raise ValueError(f"device {idx} is not admitted here (have {sorted(self.devices)})")
        async with self.limiters[idx], self.budgets[idx].reserve(nbytes):
            yield Grant(self.devices[idx], nbytes)


class AssemblyError(RuntimeError):
    """A partition that does not belong where it was sent (unknown job, duplicate, late, out of range)."""


def new_job_id(prefix: str = "job") -> str:
    """A job id unique per attempt (random UUID)."""
    return f"{prefix}-{uuid.uuid4().hex}"


@dataclass
class _Job:
    partitions: int
    slots: list[bytes | None] = field(default_factory=list)


class JobAssembly:
    """Registry of in-flight partitioned jobs (safe to call from the event loop and from worker threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._closed: set[str] = set()

    def start(self, job_id: str, partitions: int) -> None:
        if partitions < 1:
            raise ValueError("a job has at least one partition")
        with self._lock:
            if job_id in self._jobs or job_id in self._closed:
                raise AssemblyError(f"job id {job_id!r} was already used: ids must be unique per attempt")
            self._jobs[job_id] = _Job(partitions, [None] * partitions)

    def insert(self, job_id: str, index: int, proof: bytes) -> None:
        if len(proof) != PROOF_BYTES:
            raise AssemblyError(f"partition proof of {len(proof)} bytes (need {PROOF_BYTES})")
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                state = "finished or failed" if job_id in self._closed else "unknown"
                raise AssemblyError(f"partition {index} for {state} job {job_id!r}")
            if not 0 <= index < job.partitions:
                raise AssemblyError(f"partition {index} out of range 0..{job.partitions - 1}")
            if job.slots[index] is not None:
                raise AssemblyError(f"duplicate partition {index} for job {job_id!r}")
            job.slots[index] = bytes(proof)

    def missing(self, job_id: str) -> list[int]:
        with self._lock:
            job = self._job(job_id)
            return [i for i, s in enumerate(job.slots) if s is None]

    def fail(self, job_id: str) -> None:
        """Close a failed job: its slots are dropped and later partitions are refused."""
        with self._lock:
            self._jobs.pop(job_id, None)
            self._closed.add(job_id)

    def assemble(self, job_id: str) -> bytes:
        """The concatenation in partition order; the job is then closed."""
        with self._lock:
            job = self._job(job_id)
            missing = [i for i, s in enumerate(job.slots) if s is None]
            if missing:
                raise AssemblyError(f"job {job_id!r} is missing partitions {missing}")
            del self._jobs[job_id]
            self._closed.add(job_id)
            return b"".join(s for s in job.slots if s is not None)

    def _job(self, job_id: str) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise AssemblyError(f"no in-flight job {job_id!r}")
        return job
