"""The store on PostgreSQL, for fleets: many hosts, one wallet, one shared queue.

Same queries and state machine as the SQLite store (``agent.store.sql.SqlStore``); what PostgreSQL adds:

* Claims and leases take rows with ``SELECT … FOR UPDATE SKIP LOCKED``, so provers, fetchers and submitters
  on every host each get a different row without waiting on one another.
* One requester for the fleet: a session-level advisory lock (:data:`REQUESTER_LOCK`) held on a connection of
  its own. PostgreSQL drops it when that session ends — a killed process's socket closes at once, a host that
  vanishes from the network is noticed by TCP keepalives — and the next member that asks takes it over.
* Heartbeats and their staleness are judged by the server's clock, one clock for all hosts, so skew between
  hosts cannot make a live member look dead.
* Migrations run under a transaction-level advisory lock, so members starting together upgrade once.

Connection loss is a :class:`StoreError` for the call that saw it; the next call reconnects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from agent.store.model import StoreError
from agent.store.schema import POSTGRES_TYPES, migrations, upgrade
from agent.store.sql import SqlStore, _Cursor, _Db

__all__ = ["PG_MIGRATIONS", "PgStore", "REQUESTER_LOCK"]

REQUESTER_LOCK = 0x7073_6167_656E_7401  # "psagent\x01": the fleet's requester election (a bigint key)
MIGRATION_LOCK = 0x7073_6167_656E_7402  # "psagent\x02": schema upgrades, one member at a time

# agent.store.schema's migrations in PostgreSQL's types (SQLite's are the same ones in its types).
PG_MIGRATIONS = migrations(POSTGRES_TYPES)


class _PgDb:
    """A psycopg connection speaking the shared queries' ``?`` placeholders."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Any = (), /) -> _Cursor:
        return self._conn.execute(sql.replace("?", "%s"), params)


def _connect(url: str, timeout_s: float) -> psycopg.Connection[Any]:
    # keepalives: a member whose host vanished (no FIN) loses its session, and with it the requester lock,
    # within idle + interval * count seconds instead of the kernel's two hours
    return psycopg.connect(
        url,
        autocommit=True,
        connect_timeout=max(1, int(timeout_s)),
        keepalives=1,
        keepalives_idle=10,
        keepalives_interval=5,
        keepalives_count=3,
        application_name="psagent",
    )


class PgStore(SqlStore):
    """:class:`agent.store.Store` on a PostgreSQL database shared by the fleet. Thread-safe: one connection
    for the queries behind a lock, one more for the requester lock while this member holds it."""

    SCHEMA_VERSION = len(PG_MIGRATIONS)
    _LOCK_ROWS = " FOR UPDATE SKIP LOCKED"

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] | None = None,
        heartbeat_s: float = 5.0,
        stale_after_s: float = 30.0,
        connect_timeout_s: float = 10.0,
        discard_inputs: bool = True,
    ) -> None:
        super().__init__(
            clock=clock, heartbeat_s=heartbeat_s, stale_after_s=stale_after_s, discard_inputs=discard_inputs
        )
        self.url = url
        self._timeout_s = connect_timeout_s
        self._conn: psycopg.Connection[Any] | None = None
        self._lead_lock = threading.Lock()
        self._lead_conn: psycopg.Connection[Any] | None = None
        try:
            self._conn = _connect(url, connect_timeout_s)
            self._migrate()
        except StoreError:
            self.close()
            raise
        except psycopg.Error as e:
            self.close()
            raise StoreError(f"cannot open the store {_redact(url)}: {_one_line(e)}") from e

    # -- plumbing ---------------------------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            if self._conn is not None:
                self._conn.close()
            self._conn = _connect(self.url, self._timeout_s)
        return self._conn

    @contextmanager
    def _tx(self) -> Iterator[_Db]:
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    yield _PgDb(conn)
            except psycopg.OperationalError as e:
                raise StoreError(f"the PostgreSQL store: {_one_line(e)}") from e

    @contextmanager
    def _read(self) -> Iterator[_Db]:
        with self._tx() as db:  # one snapshot for the statements of a read
            yield db

    def _fleet_now(self, db: _Db) -> float:
        if self._fixed_clock:
            return self._clock()
        return float(db.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())").fetchone()[0])

    def _migrate(self) -> None:
        with self._tx() as db:
            db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            db.execute("CREATE TABLE IF NOT EXISTS psagent_schema (version INTEGER NOT NULL)")
            r = db.execute("SELECT version FROM psagent_schema").fetchone()
            if r is None:
                db.execute("INSERT INTO psagent_schema (version) VALUES (0)")
            version = 0 if r is None else int(r[0])
            upgrade(
                db, version, PG_MIGRATIONS, store=_redact(self.url),
                mark=lambda n: db.execute("UPDATE psagent_schema SET version = ?", (n,)),
            )

    def schema_version(self) -> int:
        with self._read() as db:
            return int(db.execute("SELECT version FROM psagent_schema").fetchone()[0])

    def reset_orphans(self, live_owner: str) -> int:
        """At start: other members share the database, so only the claims of dead members are re-queued."""
        return self.reap(live_owner)

    # -- the requester election -------------------------------------------------------------------------

    def try_lead(self, owner: str) -> bool:
        """True while this member holds the fleet's requester lock (taking it when free). The lock lives on a
        session of its own: when the holder dies its session ends, the lock is free, and whoever asks next
        (every member asks each round) becomes the requester."""
        with self._lead_lock:
            try:
                if self._lead_conn is not None and not (self._lead_conn.closed or self._lead_conn.broken):
                    self._lead_conn.execute("SELECT 1")  # the session (and so the lock) is still ours
                    return True
                self._drop_lead()
                conn = _connect(self.url, self._timeout_s)
                try:
                    got = conn.execute("SELECT pg_try_advisory_lock(%s)", (REQUESTER_LOCK,)).fetchone()
                except BaseException:
                    conn.close()  # never leave a session (and maybe the lock) behind
                    raise
                if not (got and got[0]):
                    conn.close()
                    return False
                self._lead_conn = conn
            except psycopg.OperationalError:
                self._drop_lead()
                return False
        self._mark_requester(owner)
        return True

    def _drop_lead(self) -> None:
        if self._lead_conn is not None:
            self._lead_conn.close()  # ends the session: the lock is released with it
            self._lead_conn = None

    def leave(self, owner: str) -> int:
        with self._lead_lock:
            self._drop_lead()
        return super().leave(owner)

    def close(self) -> None:
        with self._lead_lock:
            self._drop_lead()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _redact(url: str) -> str:
    """The URL without its password (it goes into error lines and logs)."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    creds, at, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in creds else ''}@{host}"
