"""The store named by a config URL, SQLite or PostgreSQL.

Why a module of its own: ``agent.store`` holds the interface and the SQLite backend, ``agent.store_pg`` the
PostgreSQL one (built on ``agent.store``'s queries); the choice between them sits above both, so neither
imports the other's optional dependency.
"""

from __future__ import annotations

from typing import Any

from agent.store import SqliteStore, SqlStore, StoreError


def open_store(url: str, *, create: bool = True, **options: Any) -> SqlStore:
    """The store named by a config URL: ``sqlite:///PATH`` or ``postgresql://…`` (needs psagent[postgres]).
    ``options`` (heartbeat_s, stale_after_s, clock) go to the backend; ``create`` False: an SQLite file
    that does not exist is an error, not a new empty store (a PostgreSQL database is never created)."""
    if url.startswith("sqlite:///"):
        return SqliteStore(url[len("sqlite:///") :], create=create, **options)  # sqlite:////abs → /abs
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from agent.store_pg import PgStore
        except ImportError as e:  # psycopg is the optional extra
            raise StoreError(
                f"the PostgreSQL store needs psycopg: pip install 'psagent[postgres]' ({e})"
            ) from e
        return PgStore(url, **options)
    raise StoreError(f"unknown store URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST/DB")
