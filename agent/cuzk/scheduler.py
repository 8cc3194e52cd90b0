"""The cuzk server's priority scheduling (docs post.md §8, docs/cuzk.md §1.3): WinningPoSt ahead of everything
queued, WindowPoSt ahead of PoRep and Snap, and no PoSt waiting for a whole PoRep or Snap job.

Two levels:

* :class:`Scheduler` (the event loop): checked jobs wait here and start in priority order, then submission
  order (cuzk's queue). A job starts on a job slot of its own (admission: ``agent.proving.prover``) when one
  is free; when every slot is taken and the head of the queue outranks a running job, it *borrows* that job's
  grant — its device and device bytes — instead of waiting for the whole job to end (the grant must cover the
  borrower's bytes, else it waits for a slot).
* :class:`DeviceTurns` (the proving threads, one per device): every partition proven on a device takes a
  turn. A partition starts only while no partition of another priority is in flight on the device and no
  higher-priority partition waits. So a borrower waits for the lender's partition in flight to finish (never
  preempted), then proves while the lender's next partition waits: it starts at the next partition
  boundary, on the bytes the paused job holds.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

from agent.proving.pipeline import ProofCancelled
from agent.proving.prover import NotLendable

if TYPE_CHECKING:
    from agent.admission import Grant
    from agent.proving.prover import Proven
    from agent.proving.work import Work
    from gpu.device import Device

__all__ = ["DeviceTurns", "Scheduler", "SchedulingProver"]

log = logging.getLogger(__name__)

CANCEL_POLL_S = 0.25  # how often a partition waiting for its turn looks at its job's cancel flag


class DeviceTurns:
    """Who may prove a partition on one device now (threads; see the module docstring)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._inflight: Counter[int] = Counter()
        self._waiting: Counter[int] = Counter()

    def _may_start(self, priority: int) -> bool:
        if any(n and q > priority for q, n in self._waiting.items()):
            return False
        return not any(n and q != priority for q, n in self._inflight.items())

    @contextmanager
    def partition(self, priority: int, cancel: threading.Event | None = None) -> Iterator[None]:
        """Hold the device for one partition of a job of ``priority``; waits (cancellably: ProofCancelled
        when ``cancel`` is set meanwhile) while other priorities are in flight or a higher one waits."""
        with self._cv:
            self._waiting[priority] += 1
            try:
                while not self._may_start(priority):
                    if cancel is not None and cancel.is_set():
                        raise ProofCancelled("cancelled while waiting for the device")
                    self._cv.wait(CANCEL_POLL_S if cancel is not None else None)
            finally:
                self._waiting[priority] -= 1
                self._cv.notify_all()  # a lower priority may go now, if this one left without starting
            self._inflight[priority] += 1
        try:
            yield
        finally:
            with self._cv:
                self._inflight[priority] -= 1
                self._cv.notify_all()

    def in_flight(self) -> dict[int, int]:
        """Partitions proving now, by priority."""
        with self._cv:
            return {q: n for q, n in self._inflight.items() if n}

    def waiting(self) -> dict[int, int]:
        """Partitions waiting for their turn, by priority."""
        with self._cv:
            return {q: n for q, n in self._waiting.items() if n}


class SchedulingProver(Protocol):
    """What the scheduler, and the jobs that feed it, need of the prover
    (``agent.proving.prover.AdmittedProver``): its slots and the proving call."""

    @property
    def slots(self) -> tuple[Device, ...]: ...
    @property
    def capacity(self) -> int: ...

    async def prove(
        self,
        work: Work,
        job_id: str,
        *,
        cancel: threading.Event | None = None,
        admitted: Callable[[Grant], None] | None = None,
        turn: Callable[[Device], AbstractContextManager[object]] | None = None,
        lent: Grant | None = None,
    ) -> Proven: ...


@dataclass(eq=False)
class _Running:
    job_id: str
    priority: int
    own: bool  # on a slot of its own (else on a lent grant)
    grant: Grant | None = None  # known once admitted
    borrower: str | None = None  # the job proving on this one's grant now


@dataclass(eq=False)
class _Entry:
    job_id: str
    priority: int
    seq: int
    ready: anyio.Event = field(default_factory=anyio.Event)
    running: _Running | None = None
    lender: _Running | None = None
    no_lend: bool = False  # a lent grant was too small: wait for a slot of its own


class Scheduler:
    """Priority dispatch of checked jobs onto a prover's slots (see the module docstring). Event loop only."""

    def __init__(self, prover: SchedulingProver) -> None:
        self.prover = prover
        self.turns = {slot.index: DeviceTurns() for slot in prover.slots}
        self._waiting: list[_Entry] = []
        self._running: list[_Running] = []
        self._seq = 0

    # -- reporting -------------------------------------------------------------------------------------------

    def order(self) -> list[str]:
        """Job ids waiting to start, in the order they will start."""
        return [e.job_id for e in sorted(self._waiting, key=lambda e: (-e.priority, e.seq))]

    def borrowing(self) -> dict[str, str]:
        """Running borrowers and whose grant each proves on."""
        return {r.borrower: r.job_id for r in self._running if r.borrower is not None}

    # -- running ---------------------------------------------------------------------------------------------

    async def run(
        self,
        work: Work,
        job_id: str,
        priority: int,
        *,
        cancel: threading.Event | None = None,
        admitted: Callable[[Grant], None] | None = None,
    ) -> Proven:
        """Wait for this job's turn in the queue, then prove it (on its own slot or a lent grant). Cancelling
        the caller while it waits leaves nothing behind."""
        self._seq += 1
        entry = _Entry(job_id, priority, self._seq)
        while True:
            self._waiting.append(entry)
            self._dispatch()
            try:
                await entry.ready.wait()
            except BaseException:
                if entry in self._waiting:
                    self._waiting.remove(entry)
                elif entry.running is not None:
                    self._finish(entry)
                self._dispatch()
                raise
            assert entry.running is not None
            run = entry.running

            def on_admitted(grant: Grant, run: _Running = run) -> None:
                run.grant = grant
                if admitted is not None:
                    admitted(grant)
                self._dispatch()  # a PoSt waiting for a lender may borrow this grant now

            turn = self._turn(priority, cancel)
            try:
                if entry.lender is not None:
                    assert entry.lender.grant is not None
                    log.info("%s: priority %d, on %s's device at its next partition boundary",
                             job_id, priority, entry.lender.job_id)
                    return await self.prover.prove(
                        work, job_id, cancel=cancel, admitted=on_admitted, turn=turn, lent=entry.lender.grant
                    )
                return await self.prover.prove(work, job_id, cancel=cancel, admitted=on_admitted, turn=turn)
            except NotLendable as exc:
                log.info("%s: %s; waiting for a slot of its own", job_id, exc)
                entry = _Entry(job_id, priority, entry.seq, no_lend=True)  # keeps its place in the queue
            finally:
                self._finish_run(run, entry)

    def _turn(
        self, priority: int, cancel: threading.Event | None
    ) -> Callable[[Device], AbstractContextManager[object]]:
        def turn(device: Device) -> AbstractContextManager[object]:
            return self.turns[device.index].partition(priority, cancel)

        return turn

    def _finish_run(self, run: _Running, entry: _Entry) -> None:
        if run in self._running:
            self._running.remove(run)
        for r in self._running:
            if r.borrower == run.job_id:
                r.borrower = None
        self._dispatch()

    def _finish(self, entry: _Entry) -> None:
        if entry.running is not None:
            self._finish_run(entry.running, entry)

    def _dispatch(self) -> None:
        """Start waiting jobs in priority order while they can start; the first that cannot stops the
        round (nothing overtakes it)."""
        own = sum(1 for r in self._running if r.own)
        for entry in sorted(self._waiting, key=lambda e: (-e.priority, e.seq)):
            if own < self.prover.capacity:
                self._start(entry, None)
                own += 1
                continue
            lender = None if entry.no_lend else self._lender(entry.priority)
            if lender is None:
                break
            self._start(entry, lender)

    def _lender(self, priority: int) -> _Running | None:
        """A running job on its own slot, admitted, lending to nobody, of lower priority (lowest first)."""
        found = [r for r in self._running if r.own and r.grant is not None and r.borrower is None
                 and r.priority < priority]
        return min(found, key=lambda r: r.priority) if found else None

    def _start(self, entry: _Entry, lender: _Running | None) -> None:
        self._waiting.remove(entry)
        entry.running = _Running(entry.job_id, entry.priority, own=lender is None)
        if lender is not None:
            lender.borrower = entry.job_id
            entry.lender = lender
        self._running.append(entry.running)
        entry.ready.set()

    def positions(self, job_ids: Sequence[str]) -> dict[str, int]:
        """Each waiting job's place in the start order (0: next)."""
        order = {j: i for i, j in enumerate(self.order())}
        return {j: order[j] for j in job_ids if j in order}
