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
