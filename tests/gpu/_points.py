"""Random test points from an independent source (blst via pyblst): k*G for fresh random k."""

from __future__ import annotations

import random

import numpy as np
from pyblst import BlstP1Element, BlstP2Element

from gpu.arith.fields.constants import R_MODULUS
from gpu.curves import g1_from_blst, g1_generator, g1_to_blst, g2_from_blst, g2_generator, g2_to_blst

G1_BLST = g1_to_blst(g1_generator())[0]
G2_BLST = g2_to_blst(g2_generator())[0]


def blst_points(group: str, ks: list[int]) -> list:
    g = G1_BLST if group == "g1" else G2_BLST
    return [
        g.scalar_mul(k) if k % R_MODULUS else (BlstP1Element() if group == "g1" else BlstP2Element())
        for k in ks
    ]


def random_points(group: str, n: int, rnd: random.Random) -> tuple[np.ndarray, list]:
    """(our affine array, the pyblst points) for n random multiples of the generator."""
    pts = blst_points(group, [rnd.randrange(1, R_MODULUS) for _ in range(n)])
    arr = (g1_from_blst if group == "g1" else g2_from_blst)(pts)
    return arr, pts
