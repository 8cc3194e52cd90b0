"""The store on one SQLite file in WAL mode, for one agent process (the default)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from agent.store.model import StoreError
from agent.store.schema import SQLITE_TYPES, migrations, upgrade
from agent.store.sql import SqlStore, _Db

__all__ = ["SQLITE_MIGRATIONS", "SqliteStore"]

SQLITE_MIGRATIONS = migrations(SQLITE_TYPES)


class SqliteStore(SqlStore):
    """:class:`Store` on one SQLite file in WAL mode, for one agent process. Thread-safe (one connection
    behind a lock): the agent calls it from worker threads (``anyio.to_thread``), so the event loop never
    waits on the disk. The only agent is always the requester."""

    SCHEMA_VERSION = len(SQLITE_MIGRATIONS)

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], float] | None = None,
        heartbeat_s: float = 5.0,
        stale_after_s: float = 30.0,
        discard_inputs: bool = True,
        create: bool = True,
    ) -> None:
        """``create`` False: a read-only caller (``psagent status``) never creates a store at a typo'd
        path; a missing file is a StoreError saying so."""
        super().__init__(
            clock=clock, heartbeat_s=heartbeat_s, stale_after_s=stale_after_s, discard_inputs=discard_inputs
        )
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
            upgrade(
                db, version, SQLITE_MIGRATIONS, store=str(self.path),
                mark=lambda n: db.execute(f"PRAGMA user_version = {n}"),
            )

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
