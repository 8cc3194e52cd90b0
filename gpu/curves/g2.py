"""G2: the order-r subgroup of y^2 = x^3 + 4(1 + u) over Fq2.

Device-level point ops (curves._generated.g2, generated from gpu/curves/_curve_template.py) are re-exported
here; the host API works on (n, 2, 2, 12) uint32 Montgomery affine arrays [x, y][c0, c1] with the
identity as x = y = 0.
"""

from __future__ import annotations

from pyblst import BlstP2Element

from gpu.arith.fields.constants import G2_GENERATOR
from gpu.curves._generated import g2 as _gen
from gpu.curves._generated.g2 import *  # noqa: F401,F403  (g2_xyzz_add_affine, g2_xyzz_dbl, g2_jac_add, ...)
from gpu.curves._host import Group

G2 = Group("g2", _gen, True, BlstP2Element, G2_GENERATOR)

g2_encode = G2.encode
g2_decode = G2.decode
g2_generator = G2.generator
g2_to_bytes = G2.to_bytes
g2_from_bytes = G2.from_bytes
g2_to_blst = G2.to_blst
g2_from_blst = G2.from_blst
g2_check = G2.check
g2_xyzz_to_affine = G2.xyzz_to_affine
g2_jac_to_affine = G2.jac_to_affine
g2_mul = G2.mul
g2_add = G2.add
g2_double = G2.double
g2_neg = G2.neg
g2_sum_xyzz = G2.sum_xyzz
