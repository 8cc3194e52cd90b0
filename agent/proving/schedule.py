"""The partition scheduler: a proof's partitions synthesised on CPU threads ahead of the lanes proving them.

``lanes`` proving lanes take partitions 0, 1, … in order; each partition's assignment is synthesised on a
pool of ``lanes`` threads, at most ``lanes`` partitions ahead of the last one taken (the queue's bound:
``PartitionSchedule.ahead``), and holds its host bytes from ``agent.admission.HostBudget`` from
before synthesis until it is proven. Reservations are taken in partition order, so a later partition never
takes the bytes an earlier one waits for. A failure in one lane stops the others at their next partition; a
cancel stops every lane at its next partition boundary (:class:`ProofCancelled`); whatever was synthesised
ahead is given back either way.

What a partition *is* (its witness, its proof, its verdict) is the caller's: a :class:`PartitionWork`.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from agent.admission import HostBudget

__all__ = ["PartitionSchedule", "PartitionWork", "ProofCancelled"]

A = TypeVar("A")  # a partition's synthesised assignment
P = TypeVar("P")  # a partition's proof as a lane hands it on


class ProofCancelled(RuntimeError):
    """The caller cancelled the proof: raised at the next partition boundary (a partition being synthesised or
    proven runs to its end; nothing after it starts)."""


class PartitionWork(Protocol[A, P]):
    """The four steps of one partition, in the order the scheduler calls them."""

    def synthesise(self, k: int) -> A:
        """Partition ``k``'s assignment, on a synthesis thread (its host bytes are held)."""
        ...

    def prove(self, k: int, assignment: A) -> P:
        """Partition ``k``'s proof, on a lane."""
        ...

    def release(self, assignment: A) -> None:
        """Give the assignment's buffers back (right after its proof, or unproven after a failure)."""
        ...

    def finish(self, k: int, proven: P) -> None:
        """What follows the proof once the assignment was given back (the pairing check, the record)."""
        ...


class PartitionSchedule(Generic[A, P]):
    """Partitions ``0 … partitions-1`` of one proof through ``lanes`` lanes (see the module docstring).
    ``host_bytes``: what one partition's assignment holds of ``host`` until it is proven;
    ``host_peak``: the most of ``host`` in use right after any of this proof's reservations."""

    def __init__(
        self,
        partitions: int,
        lanes: int,
        *,
        host: HostBudget,
        host_bytes: int,
        job_id: str,
        cancel: threading.Event | None = None,
    ) -> None:
        self.partitions, self.lanes = partitions, lanes
        self.host, self.host_bytes = host, host_bytes
        self.job_id, self.cancel = job_id, cancel
        self.host_peak = 0
        self.ahead = lanes  # the queue's bound: partitions synthesised past the one a lane last took
        self._lock = threading.Lock()
        self._queue: dict[int, Future[A]] = {}  # synthesised (or being synthesised) ahead of the lanes
        self._submitted = 0  # partitions handed to synthesis
        self._taken = 0  # partitions taken by a lane
        self._held: dict[int, AbstractContextManager[None]] = {}  # partition -> its host reservation
        self._failed = threading.Event()
        self._turn = threading.Condition()
        self._reserving = 0  # the partition whose host bytes are reserved next (in order: none jumps ahead)
        self._pool: ThreadPoolExecutor | None = None

    def run(self, work: PartitionWork[A, P]) -> None:
        """Every partition through ``work``; returns when all were finished, raises the first failure (in
        lane order) or :class:`ProofCancelled`."""
        with ThreadPoolExecutor(self.lanes, thread_name_prefix="psagent-synth") as self._pool:
            try:
                if self.lanes == 1:
                    self._lane(work)
                else:
                    with ThreadPoolExecutor(self.lanes, thread_name_prefix="psagent-prove") as provers:
                        done = [provers.submit(self._lane, work) for _ in range(self.lanes)]
                    for f in done:
                        f.result()
            finally:
                self._give_back_queued(work)

    def _lane(self, work: PartitionWork[A, P]) -> None:
        """Take the next partition, wait for its assignment, prove it, give the assignment back, finish it."""
        while not self._failed.is_set():
            taken = self._take(work)
            if taken is None:
                return
            k, synthesised = taken
            try:
                assignment = synthesised.result()
                try:
                    proven = work.prove(k, assignment)
                finally:
                    self._release(k, assignment, work)
                    del assignment
                work.finish(k, proven)
            except BaseException:
                self._stop()
                raise

    def _take(self, work: PartitionWork[A, P]) -> tuple[int, Future[A]] | None:
        """The next partition and its synthesis (None: all taken); queue synthesis up to the bound."""
        assert self._pool is not None
        with self._lock:
            k = self._taken
            if k >= self.partitions:
                return None
            cancelled = self.cancel is not None and self.cancel.is_set()
            if not cancelled:  # a cancelled proof starts nothing more; what was synthesised ahead is freed
                self._taken = k + 1
                while self._submitted < min(self.partitions, k + 1 + self.ahead):
                    j = self._submitted
                    self._queue[j] = self._pool.submit(self._synthesise, j, work)
                    self._submitted = j + 1
                synthesised = self._queue.pop(k)
        if cancelled:
            self._stop()
            raise ProofCancelled(f"{self.job_id}: cancelled before partition {k} of {self.partitions}")
        return k, synthesised

    def _synthesise(self, k: int, work: PartitionWork[A, P]) -> A:
        """Partition ``k``'s host bytes (in partition order), then its assignment; the bytes stay held until
        it is proven, or are given back at once when synthesis fails."""
        with self._turn:
            self._turn.wait_for(lambda: self._reserving == k or self._failed.is_set())
            try:
                if self._failed.is_set():
                    raise RuntimeError("another partition of this proof failed")
                reservation = self.host.reserve(self.host_bytes)
                reservation.__enter__()
            finally:
                self._reserving = max(self._reserving, k + 1)
                self._turn.notify_all()
        with self._lock:
            self._held[k] = reservation
            self.host_peak = max(self.host_peak, self.host.used)
        try:
            return work.synthesise(k)
        except BaseException:
            self._unreserve(k)
            raise

    def _release(self, k: int, assignment: A | None, work: PartitionWork[A, P]) -> None:
        try:
            if assignment is not None:
                work.release(assignment)
        finally:
            self._unreserve(k)

    def _unreserve(self, k: int) -> None:
        with self._lock:
            reservation = self._held.pop(k, None)
        if reservation is not None:
            reservation.__exit__(None, None, None)

    def _stop(self) -> None:
        """No lane takes another partition, no synthesis still waiting for its turn starts."""
        self._failed.set()
        with self._turn:
            self._turn.notify_all()

    def _give_back_queued(self, work: PartitionWork[A, P]) -> None:
        """After a failure or a cancel: the partitions synthesised ahead give back their buffers and bytes."""
        for k, synthesised in sorted(self._queue.items()):
            if synthesised.cancel():
                continue
            try:
                left = synthesised.result()
            except BaseException:  # noqa: BLE001 - its synthesis released its bytes; the first error wins
                continue
            self._release(k, left, work)
        self._queue.clear()
