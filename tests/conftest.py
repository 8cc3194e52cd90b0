"""Test-wide set-up.

* Numba's CUDA simulator is switched on before anything imports numba, unless PSAGENT_REAL_CUDA=1 (the GPU
  machine), so CUDA kernels run in CI on small inputs. The on-disk kernel cache stays off.
* Real Filecoin fixtures live outside the repository, in ../shared/fixtures (PSAGENT_FIXTURES overrides).
  They are required: a missing fixture directory fails the tests that need it, it never skips them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if os.environ.get("PSAGENT_REAL_CUDA") != "1":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# The CLI turns Numba's on-disk kernel cache on (agent.cli.main); tests compile afresh unless the caller chose
# otherwise (the GPU suite sets PSAGENT_NUMBA_CACHE=1 with its own NUMBA_CACHE_DIR). A set value also keeps a
# `psagent` subprocess started by a test off the user's cache.
os.environ.setdefault("PSAGENT_NUMBA_CACHE", "0")

import pytest  # noqa: E402

from gpu.options import EngineOptions, configure  # noqa: E402  (imports nothing: numba stays unloaded)

# gpu reads no PSAGENT_* variable: the kernel cache is an engine option, given here as the CLI gives it.
configure(EngineOptions(kernel_cache=os.environ["PSAGENT_NUMBA_CACHE"] == "1"))

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("PSAGENT_FIXTURES", REPO.parent / "shared" / "fixtures")).resolve()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.fail(f"Filecoin fixtures not found at {FIXTURES} (set PSAGENT_FIXTURES)")
    return FIXTURES


@pytest.fixture
def make_market(challenge_pool: Any) -> Iterator[Callable[..., Any]]:
    """``make_market(faults=None, *, state_path=None, **rules)``: a started mock market (real HTTP on
    loopback) checking the stand-in token, issuing challenges from the folder's ``challenge_pool`` under
    ``MarketRules(**rules)``, its books in SQLite at ``state_path`` if given; every one stopped at
    teardown."""
    from market.mock import DigestStandInChecker, MarketRules, MockMarket

    started: list[MockMarket] = []

    def make(faults: str | None = None, *, state_path: Path | None = None, **rules: Any) -> MockMarket:
        m = MockMarket(
            checker=DigestStandInChecker(),
            rules=MarketRules(**rules),
            state_path=state_path,
            challenge_source=challenge_pool.make,
            faults=faults,
        ).start()
        started.append(m)
        return m

    yield make
    for m in started:
        m.stop()
