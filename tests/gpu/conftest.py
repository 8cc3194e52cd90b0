"""Shared helpers for the GPU-engine tests: fresh randomness per run, the seed in every failure message."""

from __future__ import annotations

import os
import secrets

import numpy as np
import pytest
from numba.core import config

# numba-cuda installs a .pth redirector that imports numba's config when the interpreter starts, before
# tests/conftest.py sets NUMBA_ENABLE_CUDASIM; re-read the environment before numba.cuda is first imported,
# so that the simulator is really used.
config.reload_config()

from numba.cuda.core import config as cuda_config  # noqa: E402  (imports numba.cuda: after the reload)

cuda_config.reload_config()

# Tiny test grids are deliberate; numba-cuda's low-occupancy warning would be turned into an error by the
# project's warnings-as-errors setting (it lives in numba.cuda.core.errors, not the filtered numba.core one).
config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS = 0

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    from numba import cuda

    assert cuda.is_available() and type(cuda.gpus).__module__.startswith("numba.cuda.simulator"), (
        "NUMBA_ENABLE_CUDASIM=1 but numba.cuda is not the simulator (imported before the config reload?)"
    )


@pytest.fixture
def seed() -> int:
    """A fresh seed each run (PSAGENT_TEST_SEED pins it to replay a failure)."""
    return int(os.environ.get("PSAGENT_TEST_SEED") or secrets.randbits(63))


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Tests hand host arrays to kernels on purpose (small inputs); numba-cuda's copy-overhead warning would
    # become an error under the project's warnings-as-errors setting. Scoped to this directory's tests.
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.filterwarnings("ignore::numba.cuda.core.errors.NumbaPerformanceWarning"))
