# mypy: ignore-errors
# (Numba kernel / device code: typed by Numba, not meaningfully by mypy)
"""Group-generic point operations: one kernel source for G1 and G2.

Each function picks the G1 or G2 formula from its argument types when compiled (an XYZZ/affine tuple whose
coordinates are 12-limb tuples is G1; Fq2 pairs are G2; arrays: (n, k, 12) is G1, (n, k, 2, 12) is G2), and at
run time in the simulator. Compiled code pays nothing for the dispatch.
"""

from __future__ import annotations

from typing import Any

from numba.core import types

import gpu.curves._generated.g1 as _g1
import gpu.curves._generated.g2 as _g2
from gpu.arith.cudashim import dispatching


def _pt_is_g1_type(t: Any) -> bool:
    # a point is a tuple of coordinates; a G1 coordinate is UniTuple(uint32, 12), a G2 one a pair of those
    coord = t.dtype if isinstance(t, types.UniTuple) else t.types[0]
    return isinstance(coord, types.UniTuple) and coord.count == 12 and isinstance(coord.dtype, types.Integer)


def _pt_is_g1_py(p: Any) -> bool:
    return len(p[0]) == 12


def _on_point(name: str, inline: bool = True):
    """Generic over the group of the first (point) argument."""
    g1f, g2f = getattr(_g1, "g1_" + name), getattr(_g2, "g2_" + name)

    def choose(p, *rest):
        return g1f if _pt_is_g1_type(p) else g2f

    def decorate(fn):
        def py(p, *rest):
            return (g1f if _pt_is_g1_py(p) else g2f)(p, *rest)

        py.__name__ = py.__qualname__ = "pt_" + name
        py.__doc__ = fn.__doc__
        return dispatching(choose, inline)(py)

    return decorate


def _on_array(name: str, ndim_g1: int):
    """Generic over the group of the first (array) argument, by its number of dimensions."""
    g1f, g2f = getattr(_g1, "g1_" + name), getattr(_g2, "g2_" + name)

    def choose(arr, *rest):
        return g1f if arr.ndim == ndim_g1 else g2f

    def decorate(fn):
        def py(arr, *rest):
            return (g1f if arr.ndim == ndim_g1 else g2f)(arr, *rest)

        py.__name__ = py.__qualname__ = "pt_" + name
        py.__doc__ = fn.__doc__
        return dispatching(choose)(py)

    return decorate


@_on_point("xyzz_add_affine")
def xyzz_add_affine(p, q):
    """XYZZ p + affine q."""


@_on_point("xyzz_add")
def xyzz_add(p, q):
    """XYZZ p + XYZZ q."""


@_on_point("xyzz_add_cold", inline=False)
def xyzz_add_cold(p, q):
    """XYZZ p + XYZZ q as a device-function call (cold kernels: reduction, fix-ups)."""


@_on_point("xyzz_mul_small_cold", inline=False)
def xyzz_mul_small_cold(p, k):
    """k*p for a small integer k, as a call."""


@_on_point("xyzz_dbl")
def xyzz_dbl(p):
    """2p."""


@_on_point("xyzz_neg")
def xyzz_neg(p):
    """-p."""


@_on_point("xyzz_is_identity")
def xyzz_is_identity(p):
    """p == O."""


@_on_point("xyzz_mul_small")
def xyzz_mul_small(p, k):
    """k*p for a small non-negative integer k."""


@_on_point("affine_neg")
def affine_neg(q):
    """-q (affine)."""


@_on_point("xyzz_from_affine")
def xyzz_from_affine(q):
    """Affine -> XYZZ."""


@_on_array("load_affine", 3)
def load_affine(arr, i):
    """Affine point i of a (n, 2, 12) or (n, 2, 2, 12) array."""


@_on_array("load_xyzz", 3)
def load_xyzz(arr, i):
    """XYZZ point i of a (n, 4, 12) or (n, 4, 2, 12) array."""


@_on_array("store_xyzz", 3)
def store_xyzz(arr, i, p):
    """Store XYZZ point p at index i."""


@_on_array("xyzz_identity_like", 3)
def xyzz_identity_like(arr):
    """The XYZZ identity of the group of ``arr``'s points."""
