"""The store named by a config URL, SQLite or PostgreSQL.

Why a module of its own: ``agent.store`` holds the interface and the SQLite backend, ``agent.store_pg`` the
PostgreSQL one (built on ``agent.store``'s queries); the choice between them sits above both, so neither
imports the other's optional dependency.
"""

from __future__ import annotations

from typing import Any

from agent.store import SqliteStore, SqlStore, StoreError


def open_store(url: str, **options: Any) -> SqlStore:
    """The store named by a config URL: ``sqlite:///PATH`` or ``postgresql://…`` (needs psagent[postgres]).
    ``options`` (heartbeat_s, stale_after_s, clock, discard_inputs) go to the backend."""
    if url.startswith("sqlite:///"):
        return SqliteStore(url[len("sqlite:///") :], **options)  # sqlite:////abs/path → /abs/path
    if url.startswith(("postgresql://", "postgres://")):
        try:
            from agent.store_pg import PgStore
        except ImportError as e:  # psycopg is the optional extra
            raise StoreError(
                f"the PostgreSQL store needs psycopg: pip install 'psagent[postgres]' ({e})"
            ) from e
        return PgStore(url, **options)
    raise StoreError(f"unknown store URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST/DB")
