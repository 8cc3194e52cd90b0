"""Multi-scalar multiplication over G1 and G2 (Pippenger with signed windows + the Groth16 split).

Public API (backend Backend.cpu | Backend.cuda or its name, with the device named for CUDA; both give
identical affine results):
  msm_g1(bases, scalars, backend=..., device=..., window=None) -> (2, 12) affine point
  msm_g2(bases, scalars, ...) -> (2, 2, 12)
  MSMContext(bases, backend=..., device=...): bases uploaded once (kept on the device), then
      ctx.msm(scalars[, window=, timings=]) any number of times;
      ctx.msm_batch([scalars_0, ..., scalars_{K-1}][, window=, timings=, max_bytes=]) -> (K, ...) affine
      points: K vectors of one length over the same bases, on the GPU in one pass (split to fit max_bytes).
Bases: affine Montgomery arrays, (n, 2, 12) G1 / (n, 2, 2, 12) G2, identity = zeros. Scalars: canonical Fr,
(n, 8) uint32 (or a numba device array of that shape for the CUDA backend). Stages, one file each as in
sppark: digits, sort, batch_add, accumulate, integrate; orchestrator: context.py; CPU version: cpu.py.
"""

from __future__ import annotations

import numpy as np

from gpu.device import Device
from gpu.msm.context import MSMContext, group_of, msm
from gpu.msm.digits import num_windows, window_bits
from gpu.placement import Backend

__all__ = ["MSMContext", "group_of", "msm", "msm_g1", "msm_g2", "num_windows", "window_bits"]


def msm_g1(
    bases: np.ndarray,
    scalars: np.ndarray,
    *,
    backend: Backend | str = Backend.cpu,
    device: Device | int | None = None,
    window: int | None = None,
) -> np.ndarray:
    """sum_i scalars[i] * bases[i] for G1 bases (n, 2, 12); returns the affine (2, 12) result."""
    if group_of(bases).name != "g1":
        raise ValueError("msm_g1 needs (n, 2, 12) G1 bases")
    return msm(bases, scalars, backend=backend, device=device, window=window)


def msm_g2(
    bases: np.ndarray,
    scalars: np.ndarray,
    *,
    backend: Backend | str = Backend.cpu,
    device: Device | int | None = None,
    window: int | None = None,
) -> np.ndarray:
    """sum_i scalars[i] * bases[i] for G2 bases (n, 2, 2, 12); returns the affine (2, 2, 12) result."""
    if group_of(bases).name != "g2":
        raise ValueError("msm_g2 needs (n, 2, 2, 12) G2 bases")
    return msm(bases, scalars, backend=backend, device=device, window=window)
