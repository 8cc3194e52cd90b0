"""Fixtures of the engine's tests: real 2KiB requests (the session's challenge pool: a sealed sector and a
CC sector updated with fresh data) and their Works."""

from __future__ import annotations

import pytest

from agent.proving.work import Work


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # grpc.aio runs on asyncio


@pytest.fixture(scope="session")
def porep_work(mixed_pool: object) -> Work:
    return Work.from_bytes(mixed_pool.make_porep())  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def snap_work(snap_bytes: bytes) -> Work:
    return Work.from_bytes(snap_bytes)
