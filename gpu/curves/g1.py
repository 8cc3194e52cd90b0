"""G1: the order-r subgroup of y^2 = x^3 + 4 over Fq.

Device-level point ops (curves._generated.g1, generated from gpu/curves/_curve_template.py) are re-exported
here; the host API works on (n, 2, 12) uint32 Montgomery affine arrays [x, y] with the identity as x = y = 0.
"""

from __future__ import annotations

from pyblst import BlstP1Element

from gpu.arith.fields.constants import G1_GENERATOR
from gpu.curves._generated import g1 as _gen
from gpu.curves._generated.g1 import *  # noqa: F401,F403  (g1_xyzz_add_affine, g1_xyzz_dbl, g1_jac_add, ...)
from gpu.curves._host import Group

G1 = Group("g1", _gen, False, BlstP1Element, G1_GENERATOR)

g1_encode = G1.encode
g1_decode = G1.decode
g1_generator = G1.generator
g1_to_bytes = G1.to_bytes
g1_from_bytes = G1.from_bytes
g1_to_blst = G1.to_blst
g1_from_blst = G1.from_blst
g1_check = G1.check
g1_xyzz_to_affine = G1.xyzz_to_affine
g1_jac_to_affine = G1.jac_to_affine
g1_mul = G1.mul
g1_add = G1.add
g1_double = G1.double
g1_neg = G1.neg
g1_sum_xyzz = G1.sum_xyzz
