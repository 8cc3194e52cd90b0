"""Fixed-base scalar multiplication k_i * G for many scalars and one base (the setup's bulk work).

A comb of WINDOW-bit windows: table[w][d - 1] = d * 2^(WINDOW w) * G for d in 1..2^WINDOW - 1 (32 windows x
255 affine points for 8-bit windows), then each k*G is at most 32 mixed additions (no doublings) in XYZZ, and
one batch normalisation at the end. Works for G1 and G2 through gpu.curves.generic (the array shape picks the
group).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_from_ints
from gpu.arith.fields.constants import R_MODULUS as _R
from gpu.curves._host import Group
from gpu.curves.generic import load_affine, store_xyzz, xyzz_add_affine, xyzz_identity_like

WINDOW = 8
NWIN = 256 // WINDOW
DIGITS = (1 << WINDOW) - 1


@njit(nogil=True, cache=cache_enabled())
def _comb_n(lo, hi, table, scalars, out):
    for i in range(lo, hi):
        acc = xyzz_identity_like(table)
        for k in range(NWIN):
            d = (np.int64(scalars[i, k >> 2]) >> ((k & 3) * 8)) & 255
            if d != 0:
                acc = xyzz_add_affine(acc, load_affine(table, k * DIGITS + d - 1))
        store_xyzz(out, i, acc)


class FixedBase:
    """k -> k * base for a fixed affine base (one (1, 2, ...) array of ``group``)."""

    def __init__(self, group: Group, base: np.ndarray) -> None:
        self.group = group
        ks = [d << (WINDOW * w) for w in range(NWIN) for d in range(1, DIGITS + 1)]
        reps = np.ascontiguousarray(np.broadcast_to(base, (len(ks),) + group.affine_shape))
        self.table = group.mul(reps, fr_from_ints([k % _R for k in ks]))

    def mul(self, scalars: np.ndarray) -> np.ndarray:
        """(n, 8) canonical scalars -> (n, 2, ...) affine points."""
        s = np.ascontiguousarray(scalars, dtype=np.uint32)
        out = np.empty((s.shape[0], 4) + self.group.coord_shape, dtype=np.uint32)
        parallel_for(_comb_n, s.shape[0], self.table, s, out, min_chunk=64)
        return self.group.xyzz_to_affine(out)
