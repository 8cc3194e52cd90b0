"""Fixtures of the agent's tests."""

from __future__ import annotations

import pytest
from _doubles import make_work_bytes  # tests/agent is on sys.path


@pytest.fixture(scope="session")
def work_bytes() -> bytes:
    """ProofData bytes of a real 2KiB C1 (miner 1000, sector 1), sealed once per test session (~6 s)."""
    return make_work_bytes()


@pytest.fixture(scope="session")
def challenge_pool(tmp_path_factory: pytest.TempPathFactory) -> object:
    """One real 2KiB challenge sector for the end-to-end tests (sealed once per session); every challenge the
    mock issues is a fresh C1 cut from it."""
    from market.mock.pool import ChallengePool

    return ChallengePool.open(tmp_path_factory.mktemp("pool"))


@pytest.fixture(scope="session")
def pg_server() -> object:
    """A PostgreSQL server for the session (tests/agent/_pgcluster.py): a throwaway cluster, or
    PSAGENT_TEST_PG_URL. Its ``url`` is None (and ``reason`` says why) when none can be started."""
    from _pgcluster import pg_server as server

    with server() as s:
        if s.url is None:
            import sys

            print(f"\n*** PostgreSQL tests SKIP: {s.reason} ***", file=sys.__stderr__, flush=True)
        yield s


@pytest.fixture
def pg_url(pg_server: object) -> str:
    """A fresh empty database on the session's PostgreSQL server; skips (loudly) when there is none."""
    if pg_server.url is None:  # type: ignore[attr-defined]
        pytest.skip(f"NO POSTGRESQL SERVER: {pg_server.reason}")  # type: ignore[attr-defined]
    return pg_server.database()  # type: ignore[attr-defined,no-any-return]


@pytest.fixture(scope="session")
def mixed_pool(challenge_pool: object) -> object:
    """The session's challenge pool with a CC sector beside it (sealed once, ~6-12 s): every second request
    it makes is a SnapDeals update of that sector with fresh random data."""
    from market.mock.pool import ChallengePool

    return ChallengePool.open(challenge_pool.directory, snap_every=2)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def snap_bytes(mixed_pool: object) -> bytes:
    """ProofData bytes of a real 2KiB Snap request (ProofType 0, one partition), strictly checked."""
    return mixed_pool.make_snap()  # type: ignore[attr-defined,no-any-return]
