"""The request stages: fetch → check → prove (verified) → store → submit, one store transaction per step.

Three stages, each a function that does one unit of work and returns whether it found any (the service runs
each in a loop inside one anyio task group; tests call them step by step):

* :func:`fetch_one`   queued → fetched: download (the client checks the bytes against the request CID), then
  ``agent.proving.work.Work.from_bytes`` (parse, strict vanilla check, public inputs) — bad input fails
  here, before any GPU time. The Work is handed to the prove stage (:class:`WorkHandoff`), so a request is
  parsed once; a proof taken up after a restart (or by another fleet member) parses the stored bytes.
* :func:`prove_one`   fetched → proving → computed: prove under a job id unique per attempt; the prover's one
  verdict (every partition pairing-checked by the proof pipeline as it was proven) decides. A proof that did
  not verify is **never** stored as computed: the row goes back to fetched for another attempt, and after
  ``max_attempts`` to failed with the per-partition diagnosis. Work past its deadline is dropped (gone).
* :func:`submit_one`  computed → submitted: a fresh signature per attempt (the client's), the voucher kept
  unless the proof was a challenge (pow); 410 → gone (kept for the record, never resubmitted); a 409 after our
  own lost answer → submitted (the market has it; vouchers are cumulative, so a later one covers the lost
  one); other refusals → failed. Ending a request erases its data (ToS 6.3).

PoRep C2 and SnapDeals update work are both proven (the proof pipeline picks the circuit by the Work's kind).
Work this agent cannot prove is recorded as failed with the reason, never silently dropped.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from agent.proving.pipeline import ProofCancelled
from agent.proving.prover import Proven
from agent.proving.verifier import VerifyReport
from agent.proving.work import JobId, Work, WorkError, WorkKind
from agent.store import (
    Payment,
    RequestRow,
    RequestState,
    Store,
    TransitionError,
    claimed,
    in_worker,
    leased,
)
from market.client import AlreadyAccepted
from market.errors import MarketError, ProtocolError, Rejected, WorkGone
from market.models import ProofReward

__all__ = [
    "Prover",
    "StageCounters",
    "StageSettings",
    "UnsupportedWork",
    "WorkHandoff",
    "accepting",
    "fetch_one",
    "prove_one",
    "request_work",
    "submit_one",
]

log = logging.getLogger(__name__)
S = RequestState


class Prover(Protocol):
    """Turns checked work into proof bytes (192 per partition) and the one verdict on them (the agent's is
    ``agent.proving.prover.AdmittedProver``: admission, the proof pipeline, a pairing check per partition).
    A prover whose ``prove`` also takes ``cancel`` (a threading.Event; set: ``ProofCancelled`` at the next
    partition boundary) is stopped when the market takes the work back while it is being proven."""

    async def prove(self, work: Work, job_id: str) -> Proven: ...


def _takes_cancel(prover: Prover) -> bool:
    try:
        return "cancel" in inspect.signature(prover.prove).parameters
    except (TypeError, ValueError):
        return False


class FetchMarket(Protocol):
    async def fetch_request_bytes(self, request_cid: str) -> bytes: ...


class SubmitMarket(Protocol):
    async def complete(self, request_cid: str, proof: bytes) -> ProofReward | AlreadyAccepted: ...


@dataclass(frozen=True)
class StageSettings:
    max_attempts: int = 3
    owner: str = "psagent"  # this process's claim token (orphan reset re-queues other owners' claims)
    # prover.verify_before_submit = false under its debug switch: a proof whose partitions were not checked
    # is stored as computed (with a warning); one that failed its check never is
    submit_unverified: bool = False
    # how often a proof in progress looks whether its work is still ours (the request loop marks work the
    # market took back gone; the deadline may pass): then it stops at the next partition boundary
    watch_s: float = 2.0


class WorkHandoff:
    """Checked Works from the fetch stage to the prove stage, by row id, so a request is parsed once. Bounded
    (the oldest is dropped past ``limit``: its proof then parses the stored bytes again); a Work is taken at
    most once."""

    def __init__(self, limit: int = 16) -> None:
        self.limit = limit
        self._works: OrderedDict[int, Work] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, row_id: int, work: Work) -> None:
        with self._lock:
            self._works[row_id] = work
            while len(self._works) > self.limit:
                self._works.popitem(last=False)

    def take(self, row_id: int) -> Work | None:
        with self._lock:
            return self._works.pop(row_id, None)


@dataclass
class StageCounters:
    fetched: int = 0
    fetch_failed: int = 0
    proofs_ok: int = 0
    proofs_failed: int = 0
    verify_failed: int = 0
    submitted: int = 0
    already_accepted: int = 0
    gone: int = 0
    submit_failed: int = 0
    paid_attofil: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def add_time(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


def request_work(raw: bytes) -> Work:
    """A market request's Work: only the market's ProofData is accepted (``Work.from_bytes``); raises
    ``WorkError``."""
    return Work.from_bytes(raw, request_only=True)


class UnsupportedWork(WorkError):
    """Valid work of a kind this agent does not prove (not in ``prover.accepted_proof_types``: the gate
    loaded no key for it)."""


def accepting(porep: Sequence[str], snap: Sequence[str]) -> Callable[[bytes], Work]:
    """:func:`request_work` limited to the accepted proof types (config prover.accepted_proof_types): other
    work fails as unsupported after its strict check, before any proving."""

    def check(raw: bytes) -> Work:
        work = request_work(raw)
        name = work.proof_type.name
        what, allowed = (f"snap:{name}", snap) if work.kind is WorkKind.SNAP else (name, porep)
        if name not in allowed:
            raise UnsupportedWork(f"{what} is not in prover.accepted_proof_types")
        return work

    return check


async def fetch_one(
    market: FetchMarket,
    store: Store,
    *,
    check: Callable[[bytes], Work] = request_work,
    counters: StageCounters | None = None,
    owner: str = "psagent",
    handoff: WorkHandoff | None = None,
) -> bool:
    """Fetch and check the oldest queued request that no other fleet member is fetching (leased to
    ``owner`` meanwhile); its Work goes to ``handoff``. Returns False when none is queued."""
    c = counters or StageCounters()
    # a step that could not record its end leaves the row held, to be taken up again (Store.let_go)
    async with leased(store, owner, S.QUEUED) as row:
        if row is None:
            return False
        return await _fetch_leased(market, store, row, check, c, owner, handoff)


async def _fetch_leased(
    market: FetchMarket,
    store: Store,
    row: RequestRow,
    check: Callable[[bytes], Work],
    c: StageCounters,
    owner: str,
    handoff: WorkHandoff | None,
) -> bool:
    t0 = time.perf_counter()
    try:
        raw = await market.fetch_request_bytes(row.request_cid)
    except ProtocolError as e:  # hash mismatch, too large, malformed: the data itself is bad
        await in_worker(store.transition, row.row_id, S.QUEUED, S.FAILED, error=f"fetch: {e}")
        c.fetch_failed += 1
        log.error("request %s: bad data from the market: %s", row.request_cid, e)
        return True
    except MarketError as e:  # transient (the client already retried within its budget): try again later
        log.warning("request %s: fetch failed, will retry: %s", row.request_cid, e)
        await in_worker(store.release, row.row_id, owner)
        raise
    try:
        work = await anyio.to_thread.run_sync(check, raw)
    except UnsupportedWork as e:
        await in_worker(store.transition, row.row_id, S.QUEUED, S.FAILED, error=f"unsupported: {e}")
        c.fetch_failed += 1
        log.error("request %s: cannot be proven here: %s", row.request_cid, e)
        return True
    except WorkError as e:  # not a ProofData, a C1 or Snap request that fails the strict check, …
        await in_worker(store.transition, row.row_id, S.QUEUED, S.FAILED, error=f"check: {e}")
        c.fetch_failed += 1
        log.error("request %s: input failed the strict check: %s", row.request_cid, e)
        return True
    await in_worker(store.store_data, row.row_id, raw, work.kind.value)
    if handoff is not None:
        handoff.put(row.row_id, work)
    c.fetched += 1
    c.add_time("fetch", time.perf_counter() - t0)
    return True


async def prove_one(
    store: Store,
    prover: Prover,
    settings: StageSettings,
    *,
    counters: StageCounters | None = None,
    clock: Callable[[], float] = time.time,
    handoff: WorkHandoff | None = None,
    check: Callable[[bytes], Work] = request_work,
) -> RequestRow | None:
    """Claim the oldest fetched request, prove it (verified), store. Returns the row as it ended, or None.
    The Work comes from ``handoff`` when the fetch stage of this process left it there, else from the stored
    bytes (``check``)."""
    c = counters or StageCounters()
    async with claimed(store, settings.owner) as row:
        if row is None:
            return None
        return await _prove_claimed(store, row, prover, settings, c, clock, handoff, check)


async def _prove_claimed(
    store: Store,
    row: RequestRow,
    prover: Prover,
    settings: StageSettings,
    c: StageCounters,
    clock: Callable[[], float],
    handoff: WorkHandoff | None,
    check: Callable[[bytes], Work],
) -> RequestRow:
    if row.deadline is not None and clock() > row.deadline:
        log.warning("request %s: deadline passed before proving; dropped", row.request_cid)
        c.gone += 1
        return await in_worker(
            store.transition, row.row_id, S.PROVING, S.GONE, error="deadline passed before proving",
            owner=settings.owner,
        )
    work = handoff.take(row.row_id) if handoff is not None else None
    if work is None:
        raw = await in_worker(store.data, row.row_id)
        try:
            work = await anyio.to_thread.run_sync(check, raw)
        except WorkError as e:  # checked when fetched: the stored bytes changed (or this psagent is stricter)
            c.proofs_failed += 1
            return await in_worker(
                store.transition, row.row_id, S.PROVING, S.FAILED, error=f"check: {e}", owner=settings.owner
            )
    job_id = JobId.for_request(work, row.row_id, row.attempts)
    t0 = time.perf_counter()
    watch = _Watch(store, row, settings, clock)
    try:
        proven = await watch.prove(prover, work, job_id)
    except ProofCancelled:
        if watch.why is None:  # cancelled by nobody here: a prover fault like any other
            return await _retry_or_fail(store, row, "prover: cancelled", settings, c)
        return await watch.end(c)
    except Exception as e:  # a prover fault: retry (bounded), never lose the work
        log.exception("request %s: prover failed (attempt %d)", row.request_cid, row.attempts)
        return await _retry_or_fail(store, row, f"prover: {type(e).__name__}: {e}", settings, c)
    if watch.why is not None:  # taken back while a prover that cannot stop finished it: nothing to store
        return await watch.end(c)
    c.add_time("prove", time.perf_counter() - t0)
    proof, report = proven.proof, proven.report
    if len(proof) != work.proof_bytes:
        want = work.proof_bytes
        report = VerifyReport((False,) * work.partitions, f"proof is {len(proof)} bytes, want {want}")
    if not report.ok and settings.submit_unverified and not any(p is False for p in report.partitions):
        log.warning("request %s: proof NOT verified (verify_before_submit = false), stored", row.request_cid)
    elif not report.ok:
        c.verify_failed += 1
        log.error("request %s: proof did not verify, not stored: %s", row.request_cid, report.diagnosis())
        return await _retry_or_fail(store, row, f"verify: {report.diagnosis()}", settings, c)
    c.proofs_ok += 1
    # owner-fenced: if this member was presumed dead and the row re-queued, its late proof is refused
    try:
        return await in_worker(
            store.transition, row.row_id, S.PROVING, S.COMPUTED, proof=proof, job_id=job_id,
            owner=settings.owner,
        )
    except TransitionError:
        now = await in_worker(store.get, row.row_id)
        if now.state is not S.GONE:
            raise
        log.warning("request %s: taken back by the market as its proof ended; not submitted", row.request_cid)
        return now


class _Watch:
    """A proof's look-out while it runs: every ``watch_s`` it reads the row (the request loop marks work the
    market no longer lists gone, from proving too) and the deadline; either sets ``why`` and the prover's
    cancel event, so the proof stops at its next partition boundary instead of running to the end for a
    submit the market answers with 410."""

    def __init__(
        self, store: Store, row: RequestRow, settings: StageSettings, clock: Callable[[], float]
    ) -> None:
        self.store, self.row, self.settings, self.clock = store, row, settings, clock
        self.cancel = threading.Event()
        self.why: str | None = None
        self.deadline = False

    def _look(self) -> None:
        now = self.row_now()
        if now.state is not S.PROVING or now.owner != self.settings.owner:
            self.why = f"the market took it back while it was proven ({now.state.value})"
        elif self.row.deadline is not None and self.clock() > self.row.deadline:
            self.why, self.deadline = "deadline passed while proving", True
        if self.why is not None:
            self.cancel.set()

    def row_now(self) -> RequestRow:
        return self.store.get(self.row.row_id)

    async def prove(self, prover: Prover, work: Work, job_id: str) -> Proven:
        if not _takes_cancel(prover):
            proven = await prover.prove(work, job_id)
            await in_worker(self._look)
            return proven
        result: list[Proven] = []
        failure: list[Exception] = []  # raised after the group: a task group wraps what escapes it
        async with anyio.create_task_group() as tg:

            async def look_out() -> None:
                while self.why is None:
                    await anyio.sleep(self.settings.watch_s)
                    try:
                        await in_worker(self._look)
                    except Exception as e:  # noqa: BLE001 - a store hiccup: look again next time
                        log.warning("request %s: cannot read its row: %s", self.row.request_cid, e)

            tg.start_soon(look_out)
            try:
                result.append(await prover.prove(work, job_id, cancel=self.cancel))  # type: ignore[call-arg]
            except Exception as e:  # noqa: BLE001 - re-raised below, as itself
                failure.append(e)
            finally:
                tg.cancel_scope.cancel()
        if failure:
            raise failure[0]
        return result[0]

    async def end(self, c: StageCounters) -> RequestRow:
        """The row of a proof stopped (or finished) after its work was taken back: gone, without a submit."""
        c.gone += 1
        log.warning("request %s: %s; proof stopped, not submitted", self.row.request_cid, self.why)
        if not self.deadline:
            return await in_worker(self.row_now)
        try:
            return await in_worker(
                self.store.transition, self.row.row_id, S.PROVING, S.GONE, error=f"{self.why}; proof stopped",
                owner=self.settings.owner,
            )
        except TransitionError:  # the request loop marked it gone meanwhile
            return await in_worker(self.row_now)


async def _retry_or_fail(
    store: Store, row: RequestRow, error: str, settings: StageSettings, c: StageCounters
) -> RequestRow:
    if row.attempts >= settings.max_attempts:
        c.proofs_failed += 1
        return await in_worker(
            store.transition,
            row.row_id,
            S.PROVING,
            S.FAILED,
            error=f"{error} (after {row.attempts} attempts)",
            owner=settings.owner,
        )
    return await in_worker(
        store.transition, row.row_id, S.PROVING, S.FETCHED, error=error, owner=settings.owner
    )


async def submit_one(
    market: SubmitMarket,
    store: Store,
    *,
    counters: StageCounters | None = None,
    clock: Callable[[], float] = time.time,
    owner: str = "psagent",
) -> RequestRow | None:
    """Submit the oldest computed proof that no other fleet member is submitting (leased to ``owner``).
    Returns the row as it ended, or None when nothing is computed.

    Transient failures (the client already retried within its budget) leave the row computed and re-raise, so
    the caller's loop backs off and tries again with a fresh signature. Every submission is noted in the store
    before it is sent, so a 409 for a proof that an earlier (crashed) process sent is read as accepted."""
    c = counters or StageCounters()
    async with leased(store, owner, S.COMPUTED) as row:
        if row is None:
            return None
        return await _submit_leased(market, store, row, c, clock, owner)


async def _submit_leased(
    market: SubmitMarket,
    store: Store,
    row: RequestRow,
    c: StageCounters,
    clock: Callable[[], float],
    owner: str,
) -> RequestRow:
    assert row.proof is not None
    earlier_tries = row.submit_attempts
    await in_worker(store.note_submit_attempt, row.row_id)
    t0 = time.perf_counter()
    try:
        outcome = await market.complete(row.request_cid, row.proof)
    except WorkGone as e:
        c.gone += 1
        log.warning("request %s: gone (410), dropped: %s", row.request_cid, e)
        return await in_worker(store.transition, row.row_id, S.COMPUTED, S.GONE, error=str(e))
    except Rejected as e:
        if e.retryable:  # a 5xx/429 outage outlasted the client's budget: the proof is still good
            if row.deadline is None or clock() <= row.deadline:
                await in_worker(store.release, row.row_id, owner)
                raise
            c.gone += 1
            log.warning("request %s: deadline passed while the market kept failing: %s", row.request_cid, e)
            return await in_worker(
                store.transition, row.row_id, S.COMPUTED, S.GONE, error=f"deadline passed during outage: {e}"
            )
        if e.status == 409 and earlier_tries > 0:
            c.already_accepted += 1
            log.info(
                "request %s: 409 for a proof an earlier run submitted: the market has it", row.request_cid
            )
            return await in_worker(
                store.transition, row.row_id, S.COMPUTED, S.SUBMITTED, error=f"accepted earlier: {e}"
            )
        c.submit_failed += 1
        log.error("request %s: submission refused: %s", row.request_cid, e)
        return await in_worker(store.transition, row.row_id, S.COMPUTED, S.FAILED, error=f"submit: {e}")
    except Exception:  # transient (the client retried within its budget): free it for the next try
        await in_worker(store.release, row.row_id, owner)
        raise
    c.add_time("submit", time.perf_counter() - t0)
    if isinstance(outcome, AlreadyAccepted):
        c.already_accepted += 1
        log.info("request %s: accepted (its answer was lost); a later voucher covers it", row.request_cid)
        return await in_worker(
            store.transition,
            row.row_id,
            S.COMPUTED,
            S.SUBMITTED,
            error=f"accepted, answer lost: {outcome.body}",
        )
    reward = outcome
    if not reward.pow:
        await in_worker(
            store.record_payment,
            Payment(
                reward.nonce,
                reward.amount,
                reward.cumulative_amount,
                reward.signature,
                row.request_cid,
                clock(),
            ),
        )
        c.paid_attofil += reward.amount
    c.submitted += 1
    return await in_worker(store.transition, row.row_id, S.COMPUTED, S.SUBMITTED, pow=reward.pow)
