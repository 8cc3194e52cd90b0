"""The store's schema, once: its migrations in order, with the four column types the two backends spell
differently left as names (``{serial}``, ``{int64}``, ``{real}``, ``{blob}``) and each backend's spelling of
them. A schema version therefore means the same tables on SQLite and on PostgreSQL; :func:`upgrade` runs
them alike on both."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agent.store.model import StoreError
from agent.store.sql import _Db

__all__ = ["POSTGRES_TYPES", "SQLITE_TYPES", "migrations", "upgrade"]

SQLITE_TYPES: Mapping[str, str] = {
    "serial": "INTEGER PRIMARY KEY AUTOINCREMENT",
    "int64": "INTEGER",
    "real": "REAL",
    "blob": "BLOB",
}
POSTGRES_TYPES: Mapping[str, str] = {
    "serial": "BIGSERIAL PRIMARY KEY",
    "int64": "BIGINT",
    "real": "DOUBLE PRECISION",
    "blob": "BYTEA",
}

_MIGRATIONS: tuple[str, ...] = (
    # 1: the first schema
    """
    CREATE TABLE requests (
        row_id       {serial},
        service_id   {int64} NOT NULL,
        request_cid  TEXT NOT NULL UNIQUE,
        work_ask_id  {int64} NOT NULL,
        proof_type   TEXT NOT NULL DEFAULT '',
        obtained_at  {real} NOT NULL,
        deadline     {real},
        state        TEXT NOT NULL,
        attempts     INTEGER NOT NULL DEFAULT 0,
        job_id       TEXT,
        owner        TEXT,
        last_error   TEXT,
        proof        {blob},
        pow          INTEGER,
        data         {blob},
        updated_at   {real} NOT NULL
    );
    CREATE INDEX requests_state ON requests(state, row_id);
    CREATE TABLE payments (
        nonce              {int64} PRIMARY KEY,
        amount             TEXT NOT NULL,
        cumulative_amount  TEXT NOT NULL,
        signature          {blob} NOT NULL,
        request_cid        TEXT NOT NULL,
        received_at        {real} NOT NULL
    );
    CREATE TABLE asks (
        ask_id         {int64} PRIMARY KEY,
        price_attofil  TEXT NOT NULL,
        created_at     {real} NOT NULL,
        state          TEXT NOT NULL,
        updated_at     {real} NOT NULL
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
        started_at     {real} NOT NULL,
        heartbeat_at   {real} NOT NULL,
        last_error     TEXT,
        last_error_at  {real},
        requester      INTEGER NOT NULL DEFAULT 0,
        stopped_at     {real}
    );
    CREATE INDEX requests_owner ON requests(owner);
    """,
    # 4: the column holds the request's kind ("porep" | "snap"), not a proof type
    """
    ALTER TABLE requests RENAME COLUMN proof_type TO kind;
    """,
)


def migrations(types: Mapping[str, str]) -> tuple[str, ...]:
    """The migrations in one backend's column types (:data:`SQLITE_TYPES` or :data:`POSTGRES_TYPES`)."""
    return tuple(m.format_map(types) for m in _MIGRATIONS)


def upgrade(
    db: _Db, version: int, steps: Sequence[str], *, store: str, mark: Callable[[int], object]
) -> None:
    """Run the migrations after ``version`` (the store's), in one transaction ``db``; ``mark(n)`` records
    version n in the backend's way. A store newer than ``steps`` is refused (StoreError naming ``store``)."""
    if version > len(steps):
        raise StoreError(
            f"the store {store} has schema version {version}, newer than this psagent knows ({len(steps)}): "
            "upgrade psagent"
        )
    for n in range(version, len(steps)):
        for statement in steps[n].split(";"):
            if statement.strip():
                db.execute(statement)
        mark(n + 1)
