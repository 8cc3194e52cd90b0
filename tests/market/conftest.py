from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """anyio's pytest plugin runs each ``@pytest.mark.anyio`` test on both backends."""
    return str(request.param)
