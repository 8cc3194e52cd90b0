"""The agent's durable state: work requests, reward vouchers, asks and fleet members.

  model     the request state machine, the rows, the :class:`Store` protocol, :func:`leased` / :func:`claimed`
            (a row held for one step of a stage, let go however the step ends)
  sql       :class:`SqlStore`: the queries both backends share
  sqlite    :class:`SqliteStore`: one file in WAL mode (one agent process)
  postgres  ``PgStore``: a database shared by a fleet (needs the ``postgres`` extra: imported on demand)
  :func:`open_store`: the store a configuration URL names

Why a database and not files: every state change of a request must be one atomic step that survives a
``kill -9`` at any instant, so that after a restart every request is either submitted exactly once or still
pending (never lost, never submitted twice). SQLite in WAL mode gives that on one host with no server to run;
the :class:`Store` protocol is what the agent uses; PostgreSQL serves fleets (rows claimed with
``FOR UPDATE SKIP LOCKED``) through the same queries.

The request life cycle is an explicit state machine (:data:`TRANSITIONS`); a change that is not an edge of it
raises :class:`TransitionError` and changes nothing::

    queued ──► fetched ──► proving ──► computed ──► submitted
       │          │           │            │
       └──────────┴───────────┴────────────┴──► gone | failed     (fetched/proving ──► queued: orphan reset)

Request data (the ProofData bytes) lives in the row while it is needed and is erased when the request ends
(the market's terms, 6.3: inputs are discarded right after the work is done), unless the operator chose to
keep ended requests' inputs until their rows are purged (``retention.discard_inputs = false``).
"""

from __future__ import annotations

from typing import Any

from agent.store.model import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    Ask,
    AskState,
    HostRow,
    Payment,
    RequestRow,
    RequestState,
    Store,
    StoreError,
    TransitionError,
    claimed,
    in_worker,
    leased,
)
from agent.store.sql import SqlStore
from agent.store.sqlite import SqliteStore

__all__ = [
    "ACTIVE_STATES",
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
    "TERMINAL_STATES",
    "TRANSITIONS",
    "TransitionError",
    "claimed",
    "in_worker",
    "leased",
    "open_store",
]


def open_store(url: str, *, create: bool = True, **options: Any) -> SqlStore:
    """The store named by a config URL: ``sqlite:///PATH`` or ``postgresql://…`` (needs psagent[postgres]).
    ``options`` (heartbeat_s, stale_after_s, clock, discard_inputs) go to the backend; ``create`` False: an
    SQLite file that does not exist is an error, not a new empty store (a PostgreSQL database is never
    created). The PostgreSQL backend is imported only here, so the plain install never needs its driver."""
    if url.startswith("sqlite:///"):
        return SqliteStore(url[len("sqlite:///") :], create=create, **options)  # sqlite:////abs → /abs
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from agent.store.postgres import PgStore
        except ImportError as e:  # psycopg is the optional extra
            raise StoreError(
                f"the PostgreSQL store needs psycopg: pip install 'psagent[postgres]' ({e})"
            ) from e
        return PgStore(url, **options)
    raise StoreError(f"unknown store URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST/DB")
