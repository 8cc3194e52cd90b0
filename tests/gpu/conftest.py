"""Shared helpers for the GPU-engine tests: fresh randomness per run, the seed in every failure message."""

from __future__ import annotations

import os
import secrets

import numpy as np
import pytest
from numba.core import config
from numba.cuda.core import config as cuda_config

# numba-cuda installs a .pth redirector that imports numba's config when the interpreter starts, before
# tests/conftest.py sets NUMBA_ENABLE_CUDASIM; re-read the environment so that the simulator is really used
# (numba.cuda itself is first imported below, after this).
config.reload_config()
cuda_config.reload_config()

# Tiny test grids are deliberate; numba-cuda's low-occupancy warning would be turned into an error by the
# project's warnings-as-errors setting (it lives in numba.cuda.core.errors, not the filtered numba.core one).
config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0


@pytest.fixture
def seed() -> int:
    """A fresh seed each run (PSAGENT_TEST_SEED pins it to replay a failure)."""
    return int(os.environ.get("PSAGENT_TEST_SEED") or secrets.randbits(63))


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)
