from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


MakeMarket = Callable[..., MockMarket]


@pytest.fixture
def make_market(challenge_pool: ChallengePool) -> Iterator[MakeMarket]:
    """Start mock markets with the given rules (keyword arguments of MarketRules, plus state_path); every
    market started is stopped at teardown."""
    started: list[MockMarket] = []

    def make(*, state_path: Path | None = None, **rules: Any) -> MockMarket:
        m = MockMarket(
            checker=DigestStandInChecker(),
            rules=MarketRules(**rules),
            state_path=state_path,
            challenge_source=challenge_pool.make,
        ).start()
        started.append(m)
        return m

    yield make
    for m in started:
        m.stop()


@pytest.fixture
def market(make_market: MakeMarket) -> MockMarket:
    """A market with small numbers: 2 challenge proofs per slot."""
    return make_market(slot_divisor=2)
