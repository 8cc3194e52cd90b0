from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from market.mock import DigestStandInChecker, MarketRules, MockMarket
from market.mock.pool import ChallengePool
from market.wallet import Wallet


@pytest.fixture
def anyio_backend() -> str:
    """The mock serves from its own thread; the client side runs on asyncio only (trio is covered by the
    client's own tests)."""
    return "asyncio"


@pytest.fixture(scope="session")
def challenge_pool(tmp_path_factory: pytest.TempPathFactory) -> ChallengePool:
    """One real 2KiB sector sealed per session (~6-12 s); every challenge is a fresh C1 cut from it."""
    return ChallengePool.open(tmp_path_factory.mktemp("pool"))


@pytest.fixture
def wallet() -> Wallet:
    return Wallet.generate()


def start_market(pool: ChallengePool, *, state_path: Path | None = None, **rules: object) -> MockMarket:
    return MockMarket(
        checker=DigestStandInChecker(),
        rules=MarketRules(**rules),  # type: ignore[arg-type]
        state_path=state_path,
        challenge_source=pool.make,
    ).start()


@pytest.fixture
def market(challenge_pool: ChallengePool) -> Iterator[MockMarket]:
    """A market with small numbers: 2 challenge proofs per slot."""
    m = start_market(challenge_pool, slot_divisor=2)
    try:
        yield m
    finally:
        m.stop()
