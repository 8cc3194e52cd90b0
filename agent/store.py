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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import ParamSpec, Protocol, TypeVar

import anyio

__all__ = [
    "ACTIVE_STATES",
    "TERMINAL_STATES",
    "TRANSITIONS",
    "Ask",
    "AskState",
    "Payment",
    "RequestRow",
    "RequestState",
    "SqliteStore",
    "Store",
    "StoreError",
    "TransitionError",
    "in_worker",
    "open_store",
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


class Store(Protocol):
    """What the agent's loops need from durable state. Every method is one transaction."""

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
    ) -> RequestRow: ...
    def store_data(self, row_id: int, data: bytes, proof_type: str) -> RequestRow: ...
    def data(self, row_id: int) -> bytes: ...
    def note_submit_attempt(self, row_id: int) -> RequestRow: ...
    def claim(self, owner: str, src: RequestState = ..., dst: RequestState = ...) -> RequestRow | None: ...
    def reset_orphans(self, live_owner: str) -> int: ...
    def record_payment(self, payment: Payment) -> bool: ...
    def payments(self) -> list[Payment]: ...
    def record_ask(self, ask_id: int, price_attofil: int, created_at: float | None = None) -> None: ...
    def set_ask_state(self, ask_id: int, state: AskState) -> None: ...
    def asks(self, states: Sequence[AskState] | None = None) -> list[Ask]: ...
    def purge(self, *, submitted_before: float, failed_before: float) -> int: ...
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
)

_REQUEST_COLUMNS = (
    "row_id, service_id, request_cid, work_ask_id, proof_type, obtained_at, deadline, state, attempts, "
    "job_id, owner, last_error, proof, pow, updated_at, data IS NOT NULL, submit_attempts"
)


def _row(r: tuple) -> RequestRow:
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
        proof=r[12],
        pow=None if r[13] is None else bool(r[13]),
        updated_at=r[14],
        has_data=bool(r[15]),
        submit_attempts=r[16],
    )


class SqliteStore:
    """:class:`Store` on one SQLite file in WAL mode. Thread-safe (one connection behind a lock): the agent
    calls it from worker threads (``anyio.to_thread``), so the event loop never waits on the disk."""

    SCHEMA_VERSION = len(_MIGRATIONS)

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = str(path)
        self._clock = clock
        self._lock = threading.RLock()
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")  # a voucher or a state change must survive power loss
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as e:
            raise StoreError(f"cannot open the store {self.path}: {e}") from e

    # -- plumbing ---------------------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

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

    def close(self) -> None:
        with self._lock:
            self._db.close()

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
            cur = db.execute(
                "INSERT INTO requests (service_id, request_cid, work_ask_id, obtained_at, deadline, state, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(request_cid) DO NOTHING",
                (
                    service_id,
                    request_cid,
                    work_ask_id,
                    now if obtained_at is None else obtained_at,
                    deadline,
                    RequestState.QUEUED.value,
                    now,
                ),
            )
            if cur.rowcount == 0:
                return None
            row_id = cur.lastrowid
            db.execute(
                "UPDATE asks SET state = ?, updated_at = ? WHERE ask_id = ? AND state = ?",
                (AskState.MATCHED.value, now, work_ask_id, AskState.ACTIVE.value),
            )
            return self._get(db, int(row_id))  # type: ignore[arg-type]

    def _get(self, db: sqlite3.Connection, row_id: int) -> RequestRow:
        r = db.execute(f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE row_id = ?", (row_id,)).fetchone()
        if r is None:
            raise StoreError(f"no request row {row_id}")
        return _row(r)

    def get(self, row_id: int) -> RequestRow:
        with self._lock:
            return self._get(self._db, row_id)

    def by_cid(self, request_cid: str) -> RequestRow | None:
        with self._lock:
            r = self._db.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE request_cid = ?", (request_cid,)
            ).fetchone()
        return None if r is None else _row(r)

    def list_requests(self, states: Sequence[RequestState] | None = None) -> list[RequestRow]:
        with self._lock:
            if states is None:
                rows = self._db.execute(f"SELECT {_REQUEST_COLUMNS} FROM requests ORDER BY row_id").fetchall()
            else:
                marks = ",".join("?" * len(states))
                rows = self._db.execute(
                    f"SELECT {_REQUEST_COLUMNS} FROM requests WHERE state IN ({marks}) ORDER BY row_id",
                    [s.value for s in states],
                ).fetchall()
        return [_row(r) for r in rows]

    def counts(self) -> dict[RequestState, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) FROM requests GROUP BY state").fetchall()
        out = dict.fromkeys(RequestState, 0)
        out.update({RequestState(s): n for s, n in rows})
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
    ) -> RequestRow:
        """Move a row from ``src`` to ``dst`` (compare-and-set: fails if the row is no longer in ``src``).

        Entering a terminal state erases the request data; entering ``computed`` needs the proof; leaving
        ``proving`` clears the owner. ``error`` is kept as last_error (None keeps the old one)."""
        if dst not in TRANSITIONS[src]:
            raise TransitionError(f"{src.value} → {dst.value} is not a request state change")
        if dst is RequestState.COMPUTED and not proof:
            raise TransitionError("a request becomes computed only with its (verified) proof")
        now = self._clock()
        with self._tx() as db:
            sets = ["state = ?", "updated_at = ?"]
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
            if src is RequestState.PROVING or dst is RequestState.QUEUED:
                sets.append("owner = NULL")
            if dst in TERMINAL_STATES:
                sets.append("data = NULL")
            if dst is RequestState.QUEUED:
                sets.append("data = NULL")
            cur = db.execute(
                f"UPDATE requests SET {', '.join(sets)} WHERE row_id = ? AND state = ?",
                [*args, row_id, src.value],
            )
            if cur.rowcount != 1:
                r = db.execute("SELECT state FROM requests WHERE row_id = ?", (row_id,)).fetchone()
                where = "does not exist" if r is None else f"is {r[0]}"
                raise TransitionError(f"request row {row_id} {where}, not {src.value}")
            return self._get(db, row_id)

    def store_data(self, row_id: int, data: bytes, proof_type: str) -> RequestRow:
        """Keep the fetched (already hash-checked) request data and move queued → fetched in one step."""
        now = self._clock()
        with self._tx() as db:
            cur = db.execute(
                "UPDATE requests SET data = ?, proof_type = ?, state = ?, updated_at = ? "
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
        with self._lock:
            r = self._db.execute("SELECT data FROM requests WHERE row_id = ?", (row_id,)).fetchone()
        if r is None or r[0] is None:
            raise StoreError(f"request row {row_id} holds no data")
        return bytes(r[0])

    def claim(
        self, owner: str, src: RequestState = RequestState.FETCHED, dst: RequestState = RequestState.PROVING
    ) -> RequestRow | None:
        """Atomically take the oldest row in ``src`` for ``owner`` (moving it to ``dst``, counting an attempt
        and giving it a job id unique per attempt); None when there is none."""
        if dst not in TRANSITIONS[src]:
            raise TransitionError(f"{src.value} → {dst.value} is not a request state change")
        now = self._clock()
        with self._tx() as db:
            r = db.execute(
                "SELECT row_id, attempts FROM requests WHERE state = ? ORDER BY row_id LIMIT 1", (src.value,)
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

    def reset_orphans(self, live_owner: str) -> int:
        """Re-queue work claimed by any owner other than ``live_owner`` (a dead process): proving → fetched
        (the data is still there), fetched without data → queued. Returns the number of rows reset."""
        now = self._clock()
        with self._tx() as db:
            n = db.execute(
                "UPDATE requests SET state = ?, owner = NULL, updated_at = ?, last_error = "
                "COALESCE(last_error, 'orphan reset') WHERE state = ? AND (owner IS NULL OR owner != ?)",
                (RequestState.FETCHED.value, now, RequestState.PROVING.value, live_owner),
            ).rowcount
            n += db.execute(
                "UPDATE requests SET state = ?, updated_at = ? WHERE state = ? AND data IS NULL",
                (RequestState.QUEUED.value, now, RequestState.FETCHED.value),
            ).rowcount
            return int(n)

    def purge(self, *, submitted_before: float, failed_before: float) -> int:
        """Delete ended rows older than the retention limits (submitted/gone, failed)."""
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
            return int(n)

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
        with self._lock:
            rows = self._db.execute(
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
        with self._lock:
            rows = self._db.execute(
                "SELECT ask_id, price_attofil, created_at, state, updated_at FROM asks ORDER BY ask_id"
            ).fetchall()
        out = [Ask(r[0], int(r[1]), r[2], AskState(r[3]), r[4]) for r in rows]
        return out if states is None else [a for a in out if a.state in states]


def open_store(url: str) -> SqliteStore:
    """The store named by a config URL (``sqlite:///PATH``). PostgreSQL is the fleet issue's."""
    if url.startswith("sqlite:///"):
        return SqliteStore(url[len("sqlite:///") :])  # sqlite:////abs/path → /abs/path
    if url.startswith(("postgresql://", "postgres://")):
        raise StoreError("the PostgreSQL store is not built yet: use sqlite:///PATH")
    raise StoreError(f"unknown store URL {url!r}: use sqlite:///PATH")
