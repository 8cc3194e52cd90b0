"""The store's model: request states and their machine, the rows the agent reads, the Store protocol.

Shared by both backends (``agent.store.sqlite``, ``agent.store.postgres``) and by every caller; the
machine (:data:`TRANSITIONS`) is the one the agent's stages move rows along.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import ParamSpec, Protocol, TypeVar

import anyio

P = ParamSpec("P")
T = TypeVar("T")


async def in_worker(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a (blocking) store call in a worker thread, so the agent's event loop never waits on the disk."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))


class StoreError(Exception):
    """The store cannot be opened or used (bad URL, newer schema, disk error)."""


class TransitionError(StoreError):
    """A request state change that is not an edge of the state machine, or on a row that moved meanwhile."""


class RequestState(StrEnum):
    QUEUED = "queued"  # matched by the market, data not fetched yet
    FETCHED = "fetched"  # data downloaded, hash-checked and strictly checked
    PROVING = "proving"  # claimed by a prover (owner set)
    COMPUTED = "computed"  # proof verified locally, waiting to be submitted
    SUBMITTED = "submitted"  # the market accepted the proof
    GONE = "gone"  # the market reassigned the work (410) or its deadline passed: never resubmitted
    FAILED = "failed"  # could not be proven or submitted; last_error says why


TERMINAL_STATES = frozenset({RequestState.SUBMITTED, RequestState.GONE, RequestState.FAILED})
ACTIVE_STATES = frozenset(set(RequestState) - TERMINAL_STATES)

_S = RequestState
TRANSITIONS: dict[RequestState, frozenset[RequestState]] = {
    _S.QUEUED: frozenset({_S.FETCHED, _S.GONE, _S.FAILED}),
    # back to queued: an orphan reset of a fetch that died half-way is harmless (fetch again)
    _S.FETCHED: frozenset({_S.PROVING, _S.QUEUED, _S.GONE, _S.FAILED}),
    # back to fetched: a retry after a failed attempt or an orphan reset (the data is still in the row)
    _S.PROVING: frozenset({_S.COMPUTED, _S.FETCHED, _S.GONE, _S.FAILED}),
    _S.COMPUTED: frozenset({_S.SUBMITTED, _S.GONE, _S.FAILED}),
    _S.SUBMITTED: frozenset(),
    _S.GONE: frozenset(),
    _S.FAILED: frozenset(),
}


class AskState(StrEnum):
    ACTIVE = "active"  # created, not yet matched
    MATCHED = "matched"  # a request with this work-ask id arrived
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"  # no longer listed by the market and never matched (e.g. an orphan ask)


@dataclass(frozen=True)
class RequestRow:
    row_id: int
    service_id: int  # the market's WorkRequest.id
    request_cid: str
    work_ask_id: int
    kind: str  # what the request asks for: "porep" | "snap" (agent.proving.work.WorkKind); "" until fetched
    obtained_at: float
    deadline: float | None
    state: RequestState
    attempts: int
    job_id: str | None
    owner: str | None
    last_error: str | None
    proof: bytes | None
    pow: bool | None
    updated_at: float
    has_data: bool
    submit_attempts: int = 0


@dataclass(frozen=True)
class Payment:
    nonce: int
    amount: int  # attoFIL
    cumulative_amount: int  # attoFIL
    signature: bytes
    request_cid: str
    received_at: float


@dataclass(frozen=True)
class Ask:
    ask_id: int
    price_attofil: int
    created_at: float
    state: AskState
    updated_at: float


@dataclass(frozen=True)
class HostRow:
    """One agent process of the fleet as its heartbeats left it (the ``hosts`` table)."""

    owner: str  # the process's claim token (hostname-pid-random)
    hostname: str
    pid: int
    capacity: int  # concurrent proofs it admits (its device slots)
    devices: tuple[str, ...]
    started_at: float
    heartbeat_at: float
    last_error: str | None
    last_error_at: float | None
    requester: bool  # it held the fleet's requester lock when it last took it
    stopped_at: float | None  # a clean exit; None while running (or after a crash)
    proving: int  # rows it holds in proving
    leased: int  # queued/computed rows it holds while fetching/submitting
    alive: bool  # running and heartbeating within the store's stale_after_s
    age_s: float = 0.0  # since its last heartbeat, by the store's clock (PostgreSQL: the server's)


class Store(Protocol):
    """What the agent's loops need from durable state. Every method is one transaction.

    Fleet members (one per agent process, PostgreSQL for many hosts) heartbeat every ``heartbeat_s``;
    a member silent for ``stale_after_s`` is dead and :meth:`reap` re-queues its claims."""

    heartbeat_s: float
    stale_after_s: float

    def add_request(
        self,
        service_id: int,
        request_cid: str,
        work_ask_id: int,
        *,
        obtained_at: float | None = None,
        deadline: float | None = None,
    ) -> RequestRow | None: ...
    def get(self, row_id: int) -> RequestRow: ...
    def by_cid(self, request_cid: str) -> RequestRow | None: ...
    def list_requests(self, states: Sequence[RequestState] | None = None) -> list[RequestRow]: ...
    def counts(self) -> dict[RequestState, int]: ...
    def transition(
        self,
        row_id: int,
        src: RequestState,
        dst: RequestState,
        *,
        error: str | None = None,
        proof: bytes | None = None,
        pow: bool | None = None,
        job_id: str | None = None,
        owner: str | None = None,
    ) -> RequestRow: ...
    def store_data(self, row_id: int, data: bytes, kind: str) -> RequestRow: ...
    def data(self, row_id: int) -> bytes: ...
    def note_submit_attempt(self, row_id: int) -> RequestRow: ...
    def claim(self, owner: str, src: RequestState = ..., dst: RequestState = ...) -> RequestRow | None: ...
    def lease(self, owner: str, state: RequestState) -> RequestRow | None: ...
    def release(self, row_id: int, owner: str) -> bool: ...
    def let_go(self, row_id: int) -> None: ...
    def reset_orphans(self, live_owner: str) -> int: ...
    def reap(self, live_owner: str) -> int: ...
    def heartbeat(
        self, owner: str, *, hostname: str, pid: int, capacity: int, devices: Sequence[str] = (),
        last_error: str | None = None,
    ) -> None: ...
    def leave(self, owner: str) -> int: ...
    def hosts(self) -> list[HostRow]: ...
    def fleet_capacity(self) -> int: ...
    def try_lead(self, owner: str) -> bool: ...
    def record_payment(self, payment: Payment) -> bool: ...
    def payments(self) -> list[Payment]: ...
    def record_ask(self, ask_id: int, price_attofil: int, created_at: float | None = None) -> None: ...
    def set_ask_state(self, ask_id: int, state: AskState) -> None: ...
    def asks(self, states: Sequence[AskState] | None = None) -> list[Ask]: ...
    def purge(self, *, submitted_before: float, failed_before: float) -> int: ...
    def schema_version(self) -> int: ...
    def close(self) -> None: ...


@asynccontextmanager
async def leased(store: Store, owner: str, state: RequestState) -> AsyncIterator[RequestRow | None]:
    """The oldest unheld row in ``state`` leased to ``owner`` for the block (None when there is none); the
    hold is let go when the block ends, however it ends (:meth:`Store.let_go`)."""
    row = await in_worker(store.lease, owner, state)
    try:
        yield row
    finally:
        if row is not None:
            store.let_go(row.row_id)


@asynccontextmanager
async def claimed(store: Store, owner: str) -> AsyncIterator[RequestRow | None]:
    """The oldest fetched row claimed by ``owner`` (now proving, a new attempt) for the block, or None; let
    go when the block ends (:meth:`Store.let_go`)."""
    row = await in_worker(store.claim, owner)
    try:
        yield row
    finally:
        if row is not None:
            store.let_go(row.row_id)
