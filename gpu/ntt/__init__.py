"""Number-theoretic transforms over Fr (BLS12-381 scalars), CPU (Numba) and CUDA, with identical results.

Public API
  ntt(x, direction=Direction.FORWARD, kind=Kind.STANDARD, order=Order.NN, backend=Backend.cpu, device=None)
      backend: Backend.cpu | Backend.cuda (or the name); the CUDA backend needs the device named.
      x: (n, 8) or (batch, n, 8) uint32 Montgomery Fr, n a power of two (up to 2^32 by the field; 2^27 is the
      Groth16 PoRep size). A numpy array is copied and the result returned as numpy; with backend="cuda" a
      numba device array is transformed in place (and returned). Batches share twiddles and kernel launches.
  Order / Direction / Kind / Algorithm / plan(order): the transform is named by enums and the algorithm is
  derived from the order (DIF for NR, DIT for RN, one bit reversal for NN and RR), as in sppark's ntt.cuh.
  root_of_unity(logn), coset_shift() (= 7), vanishing_on_coset(logn) (= g^n - 1).
  Precomputed tables (twiddles, coset powers) are cached per size: gpu.ntt.tables on the host,
  gpu.ntt.cuda.device_twiddles on each device.
Semantics are in gpu.ntt.domain; the scale factors (g^i, n^-1, g^-i n^-1) are fused into the first/last pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpu.device import Device, place
from gpu.ntt import cpu as _cpu
from gpu.ntt.domain import (
    Algorithm,
    Direction,
    Kind,
    Order,
    Plan,
    bitrev,
    coset_shift,
    log2_exact,
    plan,
    root_of_unity,
    vanishing_on_coset,
)
from gpu.ntt.tables import NO_SCALE, Scale, scale, twiddles
from gpu.placement import Backend

__all__ = [
    "Algorithm",
    "Direction",
    "Kind",
    "Order",
    "Plan",
    "bitrev",
    "coset_shift",
    "ntt",
    "plan",
    "root_of_unity",
    "scales_for",
    "transform_cpu",
    "transform_cuda",
    "twiddles",
    "vanishing_on_coset",
]


def scales_for(logn: int, direction: Direction, kind: Kind) -> tuple[Scale, Scale]:
    """(pre, post) factors: forward coset scales the input by g^i; the inverse scales its output by n^-1 or
    g^-i n^-1 (i = coefficient index)."""
    if direction is Direction.FORWARD:
        return (scale(logn, "coset") if kind is Kind.COSET else NO_SCALE), NO_SCALE
    return NO_SCALE, scale(logn, "inv_coset" if kind is Kind.COSET else "inv")


def _as_batch(x: Any) -> tuple[Any, int, bool]:
    if x.ndim == 2:
        return x.reshape((1,) + tuple(x.shape)), log2_exact(x.shape[0]), True
    if x.ndim == 3:
        return x, log2_exact(x.shape[1]), False
    raise ValueError(f"NTT input must be (n, 8) or (batch, n, 8), got shape {x.shape}")


def _check_host(x: np.ndarray) -> np.ndarray:
    if x.dtype != np.uint32 or x.shape[-1] != 8:
        raise ValueError(f"NTT input must be uint32 with 8 limbs per element, got {x.dtype} {x.shape}")
    return x


def transform_cpu(a: np.ndarray, logn: int, p: Plan, inverse: bool, pre: Scale, post: Scale) -> None:
    """In place on a C-contiguous (batch, n, 8) host array."""
    if p.permute_before:
        _cpu.bitrev_permute(a, logn)
    dif = p.algorithm is Algorithm.DIF
    _cpu.apply(a, logn, pre, reversed_pos=not dif)
    _cpu.butterflies(a, logn, twiddles(logn), p.algorithm, inverse)
    _cpu.apply(a, logn, post, reversed_pos=dif)
    if p.permute_after:
        _cpu.bitrev_permute(a, logn)


def transform_cuda(
    d_a: Any,
    logn: int,
    p: Plan,
    inverse: bool,
    pre: Scale,
    post: Scale,
    *,
    device: Device,
    passes: list[tuple[int, int, int]] | None = None,
) -> None:
    """In place on a (batch, n, 8) device array; the caller holds the device (Device.use())."""
    from gpu.ntt import cuda as _cu

    if p.permute_before:
        _cu.bitrev_permute(d_a, logn)
    _cu.butterflies(d_a, logn, p.algorithm, inverse, pre, post, device=device, plan=passes)
    if p.permute_after:
        _cu.bitrev_permute(d_a, logn)


def ntt(
    x: Any,
    *,
    direction: Direction = Direction.FORWARD,
    kind: Kind = Kind.STANDARD,
    order: Order = Order.NN,
    backend: Backend | str = Backend.cpu,
    device: Device | int | None = None,
    passes: list[tuple[int, int, int]] | None = None,
) -> Any:
    """The transform named by (direction, kind, order) of every row; see the module docstring.
    ``passes`` overrides the CUDA pass shape (tests)."""
    p = plan(order)
    inverse = direction is Direction.INVERSE
    chosen, dev = place(backend, device)
    if dev is None:
        a = np.array(_check_host(np.asarray(x)), dtype=np.uint32, order="C", copy=True)
        a3, logn, squeeze = _as_batch(a)
        pre, post = scales_for(logn, direction, kind)
        transform_cpu(a3, logn, p, inverse, pre, post)
        return a
    from numba import cuda

    with dev.use():
        host = isinstance(x, np.ndarray)
        d = cuda.to_device(np.ascontiguousarray(_check_host(x))) if host else x
        d3, logn, _ = _as_batch(d)
        pre, post = scales_for(logn, direction, kind)
        transform_cuda(d3, logn, p, inverse, pre, post, device=dev, passes=passes)
        if host:
            return d.copy_to_host()
        return d
