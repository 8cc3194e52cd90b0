"""The kernel cache for the benchmark scripts, as ``psagent`` takes it: ``PSAGENT_NUMBA_CACHE=1`` (with
numba's ``NUMBA_CACHE_DIR``) turns Numba's on-disk cache on. ``gpu`` reads no ``PSAGENT_*`` variable, so a
script that compiles kernels imports this first (before any ``gpu`` module that compiles), and the engine
option is set as a value. Imports nothing heavy (no pydantic: some device scripts run without the agent's
dependencies)."""

from __future__ import annotations

import os
from dataclasses import replace

from gpu.options import configure, process

configure(replace(process(), kernel_cache=os.environ.get("PSAGENT_NUMBA_CACHE") == "1"))
