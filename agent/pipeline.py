"""The work pipeline: fetch → check → prove → verify → store → submit, one store transaction per step.

Three stages, each a function that does one unit of work and returns whether it found any (the service runs
each in a loop inside one anyio task group; tests call them step by step):

* :func:`fetch_one`   queued → fetched: download (the client checks the bytes against the request CID), parse
  the ProofData, strictly check the C1 (porep.vanilla_verify) — bad input fails here, before any GPU time.
* :func:`prove_one`   fetched → proving → computed: prove under a job id unique per attempt, then verify the
  proof against the verifying key and public inputs (pairing). A proof that does not verify is **never**
  stored as computed: the row goes back to fetched for another attempt, and after ``max_attempts`` to failed
  with the per-partition diagnosis. Work past its deadline is dropped (gone) instead of proven.
* :func:`submit_one`  computed → submitted: a fresh signature per attempt (the client's), the voucher kept
  unless the proof was a challenge (pow); 410 → gone (kept for the record, never resubmitted); a 409 after our
  own lost answer → submitted (the market has it; vouchers are cumulative, so a later one covers the lost
  one); other refusals → failed. Ending a request erases its data (ToS 6.3).

PoRep C2 and SnapDeals update work are both proven (agent.proving routes each to its circuit). A proof type
this agent cannot prove would be recorded as failed with a clear reason and an error log line — never
silently dropped (``UnsupportedWork``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import anyio

from agent.store import Payment, RequestRow, RequestState, Store, in_worker
from market.client import AlreadyAccepted
from market.errors import MarketError, ProtocolError, Rejected, WorkGone
from market.models import ProofReward
from market.proofdata import ProofData

__all__ = [
    "AdmittedProver",
    "PipelineSettings",
    "ProofChecker",
    "Prover",
    "StageCounters",
    "UnsupportedWork",
    "accepting",
    "VerifyReport",
    "check_work",
    "fetch_one",
    "prove_one",
    "submit_one",
]

log = logging.getLogger(__name__)
S = RequestState


class UnsupportedWork(Exception):
    """Work of a kind this agent cannot prove (a proof type the market may add later)."""


@dataclass(frozen=True)
class VerifyReport:
    """The local verification of a proof: ``partitions[i]`` is True when partition i's proof verified."""

    partitions: tuple[bool, ...]
    detail: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.partitions) and all(self.partitions)

    def diagnosis(self) -> str:
        bad = [i for i, ok in enumerate(self.partitions) if not ok]
        text = f"partitions {bad} of {len(self.partitions)} did not verify" if bad else "verified"
        return f"{text}{': ' + self.detail if self.detail else ''}"


class Prover(Protocol):
    """Turns checked work into proof bytes (192 per partition). Blocking: the stage runs it in a thread,
    bounded by the stage's capacity limiter."""

    def prove(self, work: ProofData, job_id: str) -> bytes: ...


@runtime_checkable
class AdmittedProver(Protocol):
    """A prover that does its own admission (agent.proving.CircuitProver: a device slot and memory grant from
    agent.admission, the work in a worker thread): the stage awaits it directly."""

    async def prove_async(self, work: ProofData, job_id: str) -> bytes: ...


class ProofChecker(Protocol):
    """Verifies proof bytes for the work, independently of the prover (its own public inputs, the vk)."""

    def verify(self, work: ProofData, proof: bytes) -> VerifyReport: ...


class FetchMarket(Protocol):
    async def fetch_request_bytes(self, request_cid: str) -> bytes: ...


class SubmitMarket(Protocol):
    async def complete(self, request_cid: str, proof: bytes) -> ProofReward | AlreadyAccepted: ...


@dataclass(frozen=True)
class PipelineSettings:
    max_attempts: int = 3
    owner: str = "psagent"  # this process's claim token (orphan reset re-queues other owners' claims)


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


def check_work(raw: bytes) -> ProofData:
    """Parse and strictly check request data: a PoRep C1 (porep.vanilla_verify.check_c1) or a SnapDeals
    update (porep.snap.verify.check_request); raises ProtocolError / VanillaProofError / UpdateProofError."""
    from porep.ids import prover_id
    from porep.vanilla_verify import check_c1

    work = ProofData.parse(raw)
    if work.snap is not None:
        from porep.snap.verify import check_request

        check_request(work.snap)
        return work
    assert work.porep is not None  # ProofData.parse requires exactly one of PoRep / Snap
    check_c1(work.porep, prover_id=prover_id(work.sector_id.miner), sector=work.sector_id.number)
    return work


def accepting(porep: Sequence[str], snap: Sequence[str]) -> Callable[[bytes], ProofData]:
    """:func:`check_work` limited to the accepted proof types (config prover.accepted_proof_types): other
    work fails as unsupported after its strict check, before any proving (the gate loaded no key for it)."""

    def check(raw: bytes) -> ProofData:
        work = check_work(raw)
        if work.snap is not None:
            from porep.snap.params import update_proof_type

            name, allowed = update_proof_type(work.snap.proof_type).name, snap
            what = f"snap:{name}"
        else:
            assert work.porep is not None
            name, allowed = work.porep.proof_type.name, porep
            what = name
        if name not in allowed:
            raise UnsupportedWork(f"{what} is not in prover.accepted_proof_types")
        return work

    return check


async def fetch_one(
    market: FetchMarket,
    store: Store,
    *,
    check: Callable[[bytes], ProofData] = check_work,
    counters: StageCounters | None = None,
    owner: str = "psagent",
) -> bool:
    """Fetch and check the oldest queued request that no other fleet member is fetching (leased to
    ``owner`` meanwhile). Returns False when none is queued."""
    c = counters or StageCounters()
    row = await in_worker(store.lease, owner, S.QUEUED)
    if row is None:
        return False
    try:
        return await _fetch_leased(market, store, row, check, c, owner)
    finally:
        store.let_go(row.row_id)  # a step that could not record its end leaves the row to be taken up again


async def _fetch_leased(
    market: FetchMarket,
    store: Store,
    row: RequestRow,
    check: Callable[[bytes], ProofData],
    c: StageCounters,
    owner: str,
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
    except Exception as e:  # ProtocolError, VanillaProofError, C1FormatError: invalid input
        await in_worker(store.transition, row.row_id, S.QUEUED, S.FAILED, error=f"check: {e}")
        c.fetch_failed += 1
        log.error("request %s: input failed the strict check: %s", row.request_cid, e)
        return True
    await in_worker(store.store_data, row.row_id, raw, "porep" if work.porep is not None else "snap")
    c.fetched += 1
    c.add_time("fetch", time.perf_counter() - t0)
    return True


async def prove_one(
    store: Store,
    prover: Prover | AdmittedProver,
    checker: ProofChecker,
    settings: PipelineSettings,
    *,
    counters: StageCounters | None = None,
    clock: Callable[[], float] = time.time,
    limiter: anyio.CapacityLimiter | None = None,
) -> RequestRow | None:
    """Claim the oldest fetched request, prove, verify, store. Returns the row as it ended, or None."""
    c = counters or StageCounters()
    row = await in_worker(store.claim, settings.owner)
    if row is None:
        return None
    try:
        return await _prove_claimed(store, row, prover, checker, settings, c, clock, limiter)
    finally:
        store.let_go(row.row_id)


async def _prove_claimed(
    store: Store,
    row: RequestRow,
    prover: Prover | AdmittedProver,
    checker: ProofChecker,
    settings: PipelineSettings,
    c: StageCounters,
    clock: Callable[[], float],
    limiter: anyio.CapacityLimiter | None,
) -> RequestRow:
    if row.deadline is not None and clock() > row.deadline:
        log.warning("request %s: deadline passed before proving; dropped", row.request_cid)
        c.gone += 1
        return await in_worker(
            store.transition, row.row_id, S.PROVING, S.GONE, error="deadline passed before proving",
            owner=settings.owner,
        )
    raw = await in_worker(store.data, row.row_id)
    work = ProofData.parse(raw)
    kind = "porep" if work.porep is not None else "snap"
    job_id = f"ps-{kind}-{work.sector_id.miner}-{work.sector_id.number}-{row.row_id}-{row.attempts}"
    t0 = time.perf_counter()
    try:
        if isinstance(prover, AdmittedProver):
            proof = await prover.prove_async(work, job_id)
        else:
            proof = await anyio.to_thread.run_sync(prover.prove, work, job_id, limiter=limiter)
    except Exception as e:  # a prover fault: retry (bounded), never lose the work
        log.exception("request %s: prover failed (attempt %d)", row.request_cid, row.attempts)
        return await _retry_or_fail(store, row, f"prover: {type(e).__name__}: {e}", settings, c)
    c.add_time("prove", time.perf_counter() - t0)
    t1 = time.perf_counter()
    report = await anyio.to_thread.run_sync(checker.verify, work, proof)
    c.add_time("verify", time.perf_counter() - t1)
    if not report.ok:
        c.verify_failed += 1
        log.error("request %s: proof did not verify, not stored: %s", row.request_cid, report.diagnosis())
        return await _retry_or_fail(store, row, f"verify: {report.diagnosis()}", settings, c)
    c.proofs_ok += 1
    # owner-fenced: if this member was presumed dead and the row re-queued, its late proof is refused
    return await in_worker(
        store.transition, row.row_id, S.PROVING, S.COMPUTED, proof=proof, job_id=job_id, owner=settings.owner
    )


async def _retry_or_fail(
    store: Store, row: RequestRow, error: str, settings: PipelineSettings, c: StageCounters
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
    row = await in_worker(store.lease, owner, S.COMPUTED)
    if row is None:
        return None
    try:
        return await _submit_leased(market, store, row, c, clock, owner)
    finally:
        store.let_go(row.row_id)


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
