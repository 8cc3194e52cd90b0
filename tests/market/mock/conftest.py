from __future__ import annotations

from collections.abc import Callable

import pytest

from market.mock import MockMarket
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
def market(make_market: MakeMarket) -> MockMarket:
    """A market with small numbers: 2 challenge proofs per slot."""
    return make_market(slot_divisor=2)
