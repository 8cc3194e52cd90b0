"""Fixtures of the agent's tests."""

from __future__ import annotations

import pytest
from _doubles import make_work_bytes  # tests/agent is on sys.path


@pytest.fixture(scope="session")
def work_bytes() -> bytes:
    """ProofData bytes of a real 2KiB C1 (miner 1000, sector 1), sealed once per test session (~6 s)."""
    return make_work_bytes()
