from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """anyio's pytest plugin runs ``@pytest.mark.anyio`` tests on this backend (trio is not installed)."""
    return "asyncio"
