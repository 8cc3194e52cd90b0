"""The agent's durable state: work requests, reward vouchers and asks.

Why a database and not files: every state change of a request must be one atomic step that survives a
``kill -9`` at any instant, so that after a restart every request is either submitted exactly once or still
pending (never lost, never submitted twice). SQLite in WAL mode gives that on one host with no server to run;
the :class:`Store` protocol is what the agent uses, so a PostgreSQL backend for fleets (rows claimed with
``FOR UPDATE SKIP LOCKED``) can be added beside :class:`SqliteStore` without touching the loops.

The request life cycle is an explicit state machine (:data:`TRANSITIONS`); a change that is not an edge of it
raises :class:`TransitionError` and changes nothing::

    queued ──► fetched ──► proving ──► computed ──► submitted
       │          │           │            │
       └──────────┴───────────┴────────────┴──► gone | failed     (fetched/proving ──► queued: orphan reset)

Request data (the ProofData bytes) lives in the row while it is needed and is erased when the request ends
(the market's terms, 6.3: inputs are discarded right after the work is done).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

import anyio

__all__ = [
    "ACTIVE_STATES",
    "TERMINAL_STATES",
    "TRANSITIONS",
    "Ask",
    "AskState",
    "HostRow",
    "Payment",
    "RequestRow",
    "RequestState",
    "SqlStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "TransitionError",
    "in_worker",
]


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
    proof_type: str  # "porep" | "snap" | "" until the data is read
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
    def store_data(self, row_id: int, data: bytes, proof_type: str) -> RequestRow: ...
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


_MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE requests (
        row_id       INTEGER PRIMARY KEY AUTOINCREMENT,
        service_id   INTEGER NOT NULL,
        request_cid  TEXT NOT NULL UNIQUE,
        work_ask_id  INTEGER NOT NULL,
        proof_type   TEXT NOT NULL DEFAULT '',
        obtained_at  REAL NOT NULL,
        deadline     REAL,
        state        TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        job_id       TEXT,
        owner        TEXT,
        last_error   TEXT,
        proof        BLOB,
        pow          INTEGER,
        data         BLOB,
        updated_at   REAL NOT NULL
    );
    CREATE INDEX requests_state ON requests(state, row_id);
    CREATE TABLE payments (
        nonce              INTEGER PRIMARY KEY,
        amount             TEXT NOT NULL,
        cumulative_amount  TEXT NOT NULL,
        signature          BLOB NOT NULL,
        request_cid        TEXT NOT NULL,
        received_at        REAL NOT NULL
    );
    CREATE TABLE asks (
        ask_id         INTEGER PRIMARY KEY,
        price_attofil  TEXT NOT NULL,
        created_at     REAL NOT NULL,
        state          TEXT NOT NULL,
        updated_at     REAL NOT NULL
    );
    """,
    # 2: submit attempts, so a 409 after a crash between submitting and recording it is understood
    """
    ALTER TABLE requests ADD COLUMN submit_attempts INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: fleet members (one row per agent process: heartbeat, capacity, last error, requester flag)
    """
    CREATE TABLE hosts (
        owner          TEXT PRIMARY KEY,
        hostname       TEXT NOT NULL,
        pid            INTEGER NOT NULL,
        capacity       INTEGER NOT NULL,
        devices        TEXT NOT NULL DEFAULT '',
        started_at     REAL NOT NULL,
        heartbeat_at   REAL NOT NULL,
        last_error     TEXT,
        last_error_at  REAL,
        requester      INTEGER NOT NULL DEFAULT 0,
        stopped_at     REAL
    );
    CREATE INDEX requests_owner ON requests(owner);
    """,
)

_REQUEST_COLUMNS = (
    "row_id, service_id, request_cid, work_ask_id, proof_type, obtained_at, deadline, state, attempts, "
    "job_id, owner, last_error, proof, pow, updated_at, data IS NOT NULL, submit_attempts"
)
_HOST_COLUMNS = (
    "h.owner, h.hostname, h.pid, h.capacity, h.devices, h.started_at, h.heartbeat_at, h.last_error, "
    "h.last_error_at, h.requester, h.stopped_at, "
    "(SELECT COUNT(*) FROM requests r WHERE r.owner = h.owner AND r.state = 'proving'), "
    "(SELECT COUNT(*) FROM requests r WHERE r.owner = h.owner AND r.state != 'proving')"
)
_LEASABLE = frozenset({RequestState.QUEUED, RequestState.COMPUTED})


def _row(r: Sequence[Any]) -> RequestRow:
    return RequestRow(
        row_id=r[0],
        service_id=r[1],
        request_cid=r[2],
        work_ask_id=r[3],
        proof_type=r[4],
        obtained_at=r[5],
        deadline=r[6],
        state=RequestState(r[7]),
        attempts=r[8],
        job_id=r[9],
        owner=r[10],
        last_error=r[11],
        proof=None if r[12] is None else bytes(r[12]),
        pow=None if r[13] is None else bool(r[13]),
        updated_at=r[14],
        has_data=bool(r[15]),
        submit_attempts=r[16],
    )


class _Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class _Db(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> _Cursor: ...


class SqlStore:
    """The queries both backends share, written once with ``?`` placeholders (the PostgreSQL backend
    translates them). A backend provides the connection (:meth:`_tx`, :meth:`_read`), the row lock of a claim
    (``_LOCK_ROWS``), its migrations, its clock for heartbeats and its requester election."""

    _LOCK_ROWS = ""  # PostgreSQL: " FOR UPDATE SKIP LOCKED" (SQLite serialises writers: BEGIN IMMEDIATE)

    def __init__(
        self, *, clock: Callable[[], float] | None, heartbeat_s: float, stale_after_s: float
    ) -> None:
        if not 0 < heartbeat_s < stale_after_s:
            raise StoreError(f"need 0 < heartbeat_s ({heartbeat_s}) < stale_after_s ({stale_after_s})")
        self._clock = clock or time.time
        self._fixed_clock = clock is not None
        self._lock = threading.RLock()
        # rows claimed or leased through this object whose step is still running, counted per step: a row
        # can move from one step of this process to the next (fetched here, then claimed here) before the
        # first step's let_go runs, and that late let_go must not drop the second step's hold
        self._in_flight: Counter[int] = Counter()
        self.heartbeat_s = heartbeat_s
        self.stale_after_s = stale_after_s

    # -- backend hooks ----------------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[_Db]:  # pragma: no cover - each backend has its own
        raise NotImplementedError
        yield

    @contextmanager
    def _read(self) -> Iterator[_Db]:  # pragma: no cover
        raise NotImplementedError
        yield

    def _fleet_now(self, db: _Db) -> float:
        """The clock heartbeats are written and judged by (PostgreSQL: the server's, one for all hosts)."""
        return self._clock()

    def schema_version(self) -> int:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def try_lead(self, owner: str) -> bool:  # pragma: no cover
        raise NotImplementedError

    # -- requests ---------------------------------------------------------------------------------------

    def add_request(
        self,
        service_id: int,
        request_cid: str,
        work_ask_id: int,
        *,
        obtained_at: float | None = None,
        deadline: float | None = None,
    ) -> RequestRow | None:
        """Insert a newly matched request; None when its request cid is already known (dedupe)."""
        now = self._clock()
        with self._tx() as db:
            r = db.execute(
                "INSERT INTO requests (service_id, request_cid, work_ask_id, obtained_at, deadline, state, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(request_cid) DO NOTHING "
                "RETURNING row_id",
                (
                    service_id,
                    request_cid,
                    work_ask_id,
                    now if obtained_at is None else obtained_at,
                    deadline,
                    RequestState.QUEUED.value,
                    now,
                ),
            ).fetchone()
            if r is None:
                return None
            db.execute(
                "UPDATE asks SET state = ?, updated_at = ? WHERE ask_id = ? AND state = ?",
                (AskState.MATCHED.value, now, work_ask_id, AskState.ACTIVE.value),
            )
            return self._get(db, int(r[0]))

    def _get(self, db: _Db, row_id: int) -> RequestRow:
        r = db.execute(f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE row_id = ?", (row_id,)).fetchone()
        if r is None:
            raise StoreError(f"no request row {row_id}")
        return _row(r)

    def get(self, row_id: int) -> RequestRow:
        with self._read() as db:
            return self._get(db, row_id)

    def by_cid(self, request_cid: str) -> RequestRow | None:
        with self._read() as db:
            r = db.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE request_cid = ?", (request_cid,)
            ).fetchone()
        return None if r is None else _row(r)

    def list_requests(self, states: Sequence[RequestState] | None = None) -> list[RequestRow]:
        with self._read() as db:
            if states is None:
                rows = db.execute(f"SELECT {_REQUEST_COLUMNS} FROM requests ORDER BY row_id").fetchall()
            else:
                marks = ",".join("?" * len(states))
                rows = db.execute(
                    f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE state IN ({marks}) ORDER BY row_id",
                    [s.value for s in states],
                ).fetchall()
        return [_row(r) for r in rows]

    def counts(self) -> dict[RequestState, int]:
        with self._read() as db:
            rows = db.execute("SELECT state, COUNT(*) FROM requests GROUP BY state").fetchall()
        out = dict.fromkeys(RequestState, 0)
        out.update({RequestState(s): int(n) for s, n in rows})
        return out

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
    ) -> RequestRow:
        """Move a row from ``src`` to ``dst`` (compare-and-set: fails if the row is no longer in ``src``, or,
        with ``owner``, no longer held by that owner: a claim re-queued from a member presumed dead is fenced
        off, so its late result cannot overwrite the new claim's).

        Entering a terminal state erases the request data; entering ``computed`` needs the proof; every change
        drops the row's claim. ``error`` is kept as last_error (None keeps the old one)."""
        if dst not in TRANSITIONS[src]:
            raise TransitionError(f"{src.value} → {dst.value} is not a request state change")
        if dst is RequestState.COMPUTED and not proof:
            raise TransitionError("a request becomes computed only with its (verified) proof")
        now = self._clock()
        with self._tx() as db:
            sets = ["state = ?", "updated_at = ?", "owner = NULL"]
            args: list[object] = [dst.value, now]
            if error is not None:
                sets.append("last_error = ?")
                args.append(error)
            if proof is not None:
                sets.append("proof = ?")
                args.append(proof)
            if pow is not None:
                sets.append("pow = ?")
                args.append(int(pow))
            if job_id is not None:
                sets.append("job_id = ?")
                args.append(job_id)
            if dst in TERMINAL_STATES or dst is RequestState.QUEUED:
                sets.append("data = NULL")
            where = "row_id = ? AND state = ?"
            args += [row_id, src.value]
            if owner is not None:
                where += " AND owner = ?"
                args.append(owner)
            cur = db.execute(f"UPDATE requests SET {', '.join(sets)} WHERE {where}", args)
            if cur.rowcount != 1:
                r = db.execute("SELECT state, owner FROM requests WHERE row_id = ?", (row_id,)).fetchone()
                if r is None:
                    where = "does not exist"
                elif r[0] != src.value:
                    where = f"is {r[0]}"
                else:
                    where = f"is held by {r[1] or 'nobody'}"
                raise TransitionError(
                    f"request row {row_id} {where}, not {src.value}{f' held by {owner}' if owner else ''}"
                )
            return self._get(db, row_id)

    def store_data(self, row_id: int, data: bytes, proof_type: str) -> RequestRow:
        """Keep the fetched (already hash-checked) request data and move queued → fetched in one step."""
        now = self._clock()
        with self._tx() as db:
            cur = db.execute(
                "UPDATE requests SET data = ?, proof_type = ?, state = ?, updated_at = ?, owner = NULL "
                "WHERE row_id = ? AND state = ?",
                (data, proof_type, RequestState.FETCHED.value, now, row_id, RequestState.QUEUED.value),
            )
            if cur.rowcount != 1:
                raise TransitionError(f"request row {row_id} is not queued")
            return self._get(db, row_id)

    def note_submit_attempt(self, row_id: int) -> RequestRow:
        """Record, before sending, that a computed proof is being submitted: if the process dies before the
        answer is stored, the next start knows a 409 means the market already has it."""
        with self._tx() as db:
            db.execute(
                "UPDATE requests SET submit_attempts = submit_attempts + 1, updated_at = ? WHERE row_id = ?",
                (self._clock(), row_id),
            )
            return self._get(db, row_id)

    def data(self, row_id: int) -> bytes:
        with self._read() as db:
            r = db.execute("SELECT data FROM requests WHERE row_id = ?", (row_id,)).fetchone()
        if r is None or r[0] is None:
            raise StoreError(f"request row {row_id} holds no data")
        return bytes(r[0])

    def claim(
        self, owner: str, src: RequestState = RequestState.FETCHED, dst: RequestState = RequestState.PROVING
    ) -> RequestRow | None:
        """Atomically take the oldest unheld row in ``src`` for ``owner`` (moving it to ``dst``, counting an
        attempt and giving it a job id unique per attempt); None when there is none, or when ``owner`` is a
        fleet member already proving as many rows as its registered capacity."""
        if dst not in TRANSITIONS[src]:
            raise TransitionError(f"{src.value} → {dst.value} is not a request state change")
        now = self._clock()
        # the in-flight mark is set after COMMIT (a failed commit must not leave the row marked while nobody
        # holds it), under the store's lock so no other thread's claim sees the row as dropped meanwhile
        with self._lock:
            row = self._claim_tx(owner, src, dst, now)
            if row is not None:
                self._in_flight[row.row_id] += 1
            return row

    def _claim_tx(self, owner: str, src: RequestState, dst: RequestState, now: float) -> RequestRow | None:
        with self._tx() as db:
            if dst is RequestState.PROVING:
                cap = db.execute("SELECT capacity FROM hosts WHERE owner = ?", (owner,)).fetchone()
                if cap is not None:
                    rows = db.execute(
                        "SELECT row_id FROM requests WHERE owner = ? AND state = ?",
                        (owner, RequestState.PROVING.value),
                    ).fetchall()
                    if sum(r[0] in self._in_flight for r in rows) >= cap[0]:
                        return None
            # an unheld row in src, or one of ours in dst whose step ended without a state change (a failed
            # write): taken up again at once, as a new attempt
            dropped, args = self._dropped(owner)
            r = db.execute(
                f"SELECT row_id, attempts FROM requests WHERE (state = ? AND owner IS NULL) OR "
                f"(state = ? AND {dropped}) ORDER BY row_id LIMIT 1{self._LOCK_ROWS}",
                (src.value, dst.value, *args),
            ).fetchone()
            if r is None:
                return None
            row_id, attempts = r
            db.execute(
                "UPDATE requests SET state = ?, owner = ?, attempts = ?, job_id = ?, updated_at = ? "
                "WHERE row_id = ?",
                (dst.value, owner, attempts + 1, f"{row_id}-{attempts + 1}", now, row_id),
            )
            return self._get(db, row_id)

    def _dropped(self, owner: str) -> tuple[str, list[object]]:
        """SQL (on ``owner``/``row_id``) for rows held by ``owner`` that no step of this process works on."""
        ids = sorted(r for r, n in self._in_flight.items() if n > 0)
        if not ids:
            return "owner = ?", [owner]
        return f"owner = ? AND row_id NOT IN ({','.join('?' * len(ids))})", [owner, *ids]

    def let_go(self, row_id: int) -> None:
        """The step that claimed or leased ``row_id`` is over (however it ended). Never fails (no write): if
        the step could not record its outcome (disk full, connection lost) the row stays held by this owner,
        and is taken up again by this process's next claim or lease, or re-queued by :meth:`reap`. Call it
        once per claim or lease (a state change does not end the hold: the row may already be in this
        process's next step)."""
        with self._lock:
            n = self._in_flight[row_id] - 1
            if n > 0:
                self._in_flight[row_id] = n
            else:
                self._in_flight.pop(row_id, None)

    def lease(self, owner: str, state: RequestState) -> RequestRow | None:
        """Hold the oldest unheld row in ``state`` (queued: to fetch it; computed: to submit it) for ``owner``
        without changing its state, so one member of the fleet works on it at a time. The next state change
        (or :meth:`release`) drops the hold; None when every such row is held or there is none."""
        if state not in _LEASABLE:
            raise TransitionError(f"{state.value} rows are claimed with claim(), not leased")
        with self._lock:  # in flight once committed (see claim)
            with self._tx() as db:
                dropped, args = self._dropped(owner)
                r = db.execute(
                    f"SELECT row_id FROM requests WHERE state = ? AND (owner IS NULL OR ({dropped})) "
                    f"ORDER BY row_id LIMIT 1{self._LOCK_ROWS}",
                    (state.value, *args),
                ).fetchone()
                if r is None:
                    return None
                db.execute(
                    "UPDATE requests SET owner = ?, updated_at = ? WHERE row_id = ?",
                    (owner, self._clock(), r[0]),
                )
                row = self._get(db, int(r[0]))
            self._in_flight[row.row_id] += 1
            return row

    def release(self, row_id: int, owner: str) -> bool:
        """Give back a lease (a fetch or submit that will be retried later); False if ``owner`` held none."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE requests SET owner = NULL WHERE row_id = ? AND owner = ? AND state != ?",
                (row_id, owner, RequestState.PROVING.value),
            )
            return cur.rowcount == 1

    def _requeue(self, db: _Db, who: str, args: Sequence[object]) -> int:
        """Re-queue the claims of the owners selected by the SQL condition ``who`` (on column ``owner``):
        proving → fetched (the data is still in the row), leases dropped, fetched without data → queued."""
        now = self._clock()
        n = db.execute(
            "UPDATE requests SET state = ?, owner = NULL, updated_at = ?, "
            "last_error = 'orphan reset (' || COALESCE(owner, 'no owner') || ')' "
            f"WHERE state = ? AND ({who})",
            (RequestState.FETCHED.value, now, RequestState.PROVING.value, *args),
        ).rowcount
        db.execute(
            f"UPDATE requests SET owner = NULL WHERE owner IS NOT NULL AND state != ? AND ({who})",
            (RequestState.PROVING.value, *args),
        )
        n += db.execute(
            "UPDATE requests SET state = ?, updated_at = ? WHERE state = ? AND data IS NULL",
            (RequestState.QUEUED.value, now, RequestState.FETCHED.value),
        ).rowcount
        return int(n)

    def reset_orphans(self, live_owner: str) -> int:
        """At start: re-queue work claimed by any owner other than ``live_owner`` (one agent per SQLite file,
        so every other owner is a dead process). Returns the number of rows reset. The PostgreSQL store,
        shared by live members, re-queues only the claims of members that stopped heartbeating."""
        with self._tx() as db:
            return self._requeue(db, "owner IS NULL OR owner != ?", (live_owner,))

    def reap(self, live_owner: str) -> int:
        """Re-queue the claims of every owner but ``live_owner`` that is not a live fleet member (no hosts
        row, stopped, or silent for ``stale_after_s``), and those of ``live_owner`` whose step is over
        (:meth:`let_go`): nothing a dead member held is lost, and nothing a live member works on is taken."""
        with self._tx() as db:
            now = self._fleet_now(db)
            dropped, args = self._dropped(live_owner)
            return self._requeue(
                db,
                "owner IS NULL OR (owner != ? AND owner NOT IN (SELECT owner FROM hosts WHERE "
                f"stopped_at IS NULL AND heartbeat_at >= ?)) OR ({dropped})",
                (live_owner, now - self.stale_after_s, *args),
            )

    def purge(self, *, submitted_before: float, failed_before: float) -> int:
        """Delete ended rows older than the retention limits (submitted/gone, failed), and members gone
        longer than the failed rows' retention."""
        with self._tx() as db:
            n = db.execute(
                "DELETE FROM requests WHERE (state IN (?, ?) AND updated_at < ?) "
                "OR (state = ? AND updated_at < ?)",
                (
                    RequestState.SUBMITTED.value,
                    RequestState.GONE.value,
                    submitted_before,
                    RequestState.FAILED.value,
                    failed_before,
                ),
            ).rowcount
            db.execute("DELETE FROM hosts WHERE heartbeat_at < ?", (failed_before,))
            return int(n)

    # -- fleet ------------------------------------------------------------------------------------------

    def heartbeat(
        self,
        owner: str,
        *,
        hostname: str,
        pid: int,
        capacity: int,
        devices: Sequence[str] = (),
        last_error: str | None = None,
    ) -> None:
        """Register or refresh this member: alive now, with its capacity, devices and last error (None keeps
        the previous one)."""
        with self._tx() as db:
            now = self._fleet_now(db)
            db.execute(
                "INSERT INTO hosts (owner, hostname, pid, capacity, devices, started_at, heartbeat_at, "
                "last_error, last_error_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(owner) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, "
                "capacity = excluded.capacity, "
                "devices = excluded.devices, stopped_at = NULL, "
                "last_error = COALESCE(excluded.last_error, hosts.last_error), "
                "last_error_at = COALESCE(excluded.last_error_at, hosts.last_error_at)",
                (
                    owner,
                    hostname,
                    pid,
                    capacity,
                    "\n".join(devices),
                    now,
                    now,
                    last_error,
                    None if last_error is None else now,
                ),
            )

    def leave(self, owner: str) -> int:
        """A clean exit: mark the member stopped and hand back whatever it still holds (re-queued)."""
        with self._tx() as db:
            now = self._fleet_now(db)
            db.execute(
                "UPDATE hosts SET stopped_at = ?, requester = 0 WHERE owner = ?", (now, owner)
            )
            return self._requeue(db, "owner = ?", (owner,))

    def hosts(self) -> list[HostRow]:
        with self._read() as db:
            now = self._fleet_now(db)
            rows = db.execute(
                f"SELECT {_HOST_COLUMNS} FROM hosts h ORDER BY h.hostname, h.started_at"
            ).fetchall()
        return [
            HostRow(
                owner=r[0],
                hostname=r[1],
                pid=int(r[2]),
                capacity=int(r[3]),
                devices=tuple(d for d in r[4].split("\n") if d),
                started_at=r[5],
                heartbeat_at=r[6],
                last_error=r[7],
                last_error_at=r[8],
                requester=bool(r[9]),
                stopped_at=r[10],
                proving=int(r[11]),
                leased=int(r[12]),
                alive=r[10] is None and r[6] >= now - self.stale_after_s,
                age_s=max(0.0, now - r[6]),
            )
            for r in rows
        ]

    def fleet_capacity(self) -> int:
        """Concurrent proofs the live members admit together (what the request loop sizes its asks by)."""
        with self._read() as db:
            now = self._fleet_now(db)
            r = db.execute(
                "SELECT COALESCE(SUM(capacity), 0) FROM hosts WHERE stopped_at IS NULL AND heartbeat_at >= ?",
                (now - self.stale_after_s,),
            ).fetchone()
        return int(r[0])

    def _mark_requester(self, owner: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE hosts SET requester = CASE WHEN owner = ? THEN 1 ELSE 0 END "
                "WHERE requester != CASE WHEN owner = ? THEN 1 ELSE 0 END",
                (owner, owner),
            )

    # -- payments ---------------------------------------------------------------------------------------

    def record_payment(self, payment: Payment) -> bool:
        """Keep a reward voucher; False if its nonce is already recorded (the same voucher again).

        A voucher whose cumulative amount is below an earlier nonce's is refused: vouchers are cumulative,
        so that would be a market error worth stopping on rather than a ledger that silently shrinks."""
        with self._tx() as db:
            if db.execute("SELECT 1 FROM payments WHERE nonce = ?", (payment.nonce,)).fetchone():
                return False
            prior = db.execute(
                "SELECT nonce, cumulative_amount FROM payments WHERE nonce < ? ORDER BY nonce DESC LIMIT 1",
                (payment.nonce,),
            ).fetchone()
            if prior is not None and int(prior[1]) > payment.cumulative_amount:
                raise StoreError(
                    f"voucher nonce {payment.nonce} has cumulative amount {payment.cumulative_amount} below "
                    f"nonce {prior[0]}'s {prior[1]}"
                )
            db.execute(
                "INSERT INTO payments (nonce, amount, cumulative_amount, signature, request_cid, "
                "received_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    payment.nonce,
                    str(payment.amount),
                    str(payment.cumulative_amount),
                    payment.signature,
                    payment.request_cid,
                    payment.received_at,
                ),
            )
            return True

    def payments(self) -> list[Payment]:
        with self._read() as db:
            rows = db.execute(
                "SELECT nonce, amount, cumulative_amount, signature, request_cid, received_at FROM payments "
                "ORDER BY nonce"
            ).fetchall()
        return [Payment(r[0], int(r[1]), int(r[2]), bytes(r[3]), r[4], r[5]) for r in rows]

    # -- asks -------------------------------------------------------------------------------------------

    def record_ask(self, ask_id: int, price_attofil: int, created_at: float | None = None) -> None:
        now = self._clock()
        with self._tx() as db:
            db.execute(
                "INSERT INTO asks (ask_id, price_attofil, created_at, state, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(ask_id) DO NOTHING",
                (
                    ask_id,
                    str(price_attofil),
                    now if created_at is None else created_at,
                    AskState.ACTIVE.value,
                    now,
                ),
            )

    def set_ask_state(self, ask_id: int, state: AskState) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE asks SET state = ?, updated_at = ? WHERE ask_id = ?",
                (state.value, self._clock(), ask_id),
            )

    def asks(self, states: Sequence[AskState] | None = None) -> list[Ask]:
        with self._read() as db:
            rows = db.execute(
                "SELECT ask_id, price_attofil, created_at, state, updated_at FROM asks ORDER BY ask_id"
            ).fetchall()
        out = [Ask(r[0], int(r[1]), r[2], AskState(r[3]), r[4]) for r in rows]
        return out if states is None else [a for a in out if a.state in states]


class SqliteStore(SqlStore):
    """:class:`Store` on one SQLite file in WAL mode, for one agent process. Thread-safe (one connection
    behind a lock): the agent calls it from worker threads (``anyio.to_thread``), so the event loop never
    waits on the disk. The only agent is always the requester."""

    SCHEMA_VERSION = len(_MIGRATIONS)

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], float] | None = None,
        heartbeat_s: float = 5.0,
        stale_after_s: float = 30.0,
        create: bool = True,
    ) -> None:
        """``create`` False: a read-only caller (``psagent status``) never creates a store at a typo'd
        path; a missing file is a StoreError saying so."""
        super().__init__(clock=clock, heartbeat_s=heartbeat_s, stale_after_s=stale_after_s)
        self.path = str(path)
        if not create and self.path != ":memory:" and not Path(self.path).is_file():
            raise StoreError(f"the store {self.path} does not exist (psagent run creates it)")
        try:
            if self.path != ":memory:":
                try:
                    Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:  # one line and exit 2 from the CLI, never a traceback
                    raise StoreError(
                        f"cannot create the store directory {Path(self.path).parent}: {e.strerror or e}"
                    ) from None
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a voucher or a state change must survive power loss
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the store {self.path}: {e}") from e

    @contextmanager
    def _tx(self) -> Iterator[_Db]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[_Db]:
        with self._lock:
            yield self._db

    def _migrate(self) -> None:
        with self._tx() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > self.SCHEMA_VERSION:
                raise StoreError(
                    f"the store {self.path} has schema version {version}, newer than this psagent knows "
                    f"({self.SCHEMA_VERSION}): upgrade psagent"
                )
            for n in range(version, self.SCHEMA_VERSION):
                for statement in _MIGRATIONS[n].split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(f"PRAGMA user_version = {n + 1}")

    def schema_version(self) -> int:
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def try_lead(self, owner: str) -> bool:
        """One agent per file: it is the requester."""
        self._mark_requester(owner)
        return True

    def close(self) -> None:
        with self._lock:
            self._db.close()
