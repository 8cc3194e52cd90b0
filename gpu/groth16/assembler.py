"""Partition proofs put back together in order, keyed by a job id unique per attempt (cuzk.md §1.10, §5.1).

cuzk's assembler was keyed by a request id that concurrent ProofShare jobs shared, and mixed partitions of
different proofs ("0/10 valid partitions"). Here every attempt registers a fresh job id (reusing one is an
error), each partition is accepted once (a duplicate or a partition for an unknown, finished or failed job is
an error, never a silent overwrite), and assemble() refuses until every slot is filled.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field

from gpu.groth16.params import PROOF_BYTES


class AssemblyError(RuntimeError):
    """A partition that does not belong where it was sent (unknown job, duplicate, late, out of range)."""


def new_job_id(prefix: str = "job") -> str:
    """A job id unique per attempt (random UUID)."""
    return f"{prefix}-{uuid.uuid4().hex}"


@dataclass
class _Job:
    partitions: int
    slots: list[bytes | None] = field(default_factory=list)
    failed: str | None = None


class ProofAssembler:
    """Thread-safe registry of in-flight partitioned jobs."""

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
            if job.failed:
                raise AssemblyError(f"job {job_id!r} already failed ({job.failed})")
            if not 0 <= index < job.partitions:
                raise AssemblyError(f"partition {index} out of range 0..{job.partitions - 1}")
            if job.slots[index] is not None:
                raise AssemblyError(f"duplicate partition {index} for job {job_id!r}")
            job.slots[index] = bytes(proof)

    def missing(self, job_id: str) -> list[int]:
        with self._lock:
            job = self._job(job_id)
            return [i for i, s in enumerate(job.slots) if s is None]

    def fail(self, job_id: str, reason: str) -> None:
        """Mark a job failed: later partitions are rejected, the slots are dropped."""
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
