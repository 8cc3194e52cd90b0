"""Mutations of one C1 array (a ``uint8[..., 32]`` node array or an index array), as the strict check's and
the circuit's mutation tables name them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def flip(index: tuple[int, ...], byte: int = 0) -> Callable[[np.ndarray], None]:
    """Flip the low bit of byte ``byte`` of the node at ``index``."""

    def f(a: np.ndarray) -> None:
        a[(*index, byte)] ^= 1

    return f


def add(index: tuple[int, ...], delta: int = 1) -> Callable[[np.ndarray], None]:
    """Add ``delta`` to the value at ``index``."""

    def f(a: np.ndarray) -> None:
        a[index] += delta

    return f
