"""BLS12-381 G1 and G2: device-level point arithmetic (affine, Jacobian, XYZZ; identity handled everywhere),
CPU batch operations, zcash serialisation and pyblst interop. Depends on gpu.arith.fields only.

Array layouts (uint32, Montgomery coordinates): G1 affine (n, 2, 12) [x, y]; G2 affine (n, 2, 2, 12)
[x, y][c0, c1]; XYZZ (n, 4, ...) [X, Y, ZZ, ZZZ]; Jacobian (n, 3, ...) [X, Y, Z]. The affine identity is
x = y = 0. Scalars are canonical Fr, (n, 8) uint32.

Host API per group (G = g1 | g2): G_encode/G_decode (Python ints), G_generator(), G_to_bytes/G_from_bytes
(zcash, compressed or not, subgroup-checked), G_to_blst/G_from_blst, G_check (0 ok / 1 off curve / 2 not in
subgroup), G_mul (per-point scalar multiplication), G_add, G_double, G_neg, G_xyzz_to_affine,
G_jac_to_affine (batch normalisation), G_sum_xyzz.
"""

from gpu.curves.g1 import (
    G1,
    g1_add,
    g1_check,
    g1_decode,
    g1_double,
    g1_encode,
    g1_from_blst,
    g1_from_bytes,
    g1_generator,
    g1_jac_to_affine,
    g1_mul,
    g1_neg,
    g1_sum_xyzz,
    g1_to_blst,
    g1_to_bytes,
    g1_xyzz_to_affine,
)
from gpu.curves.g2 import (
    G2,
    g2_add,
    g2_check,
    g2_decode,
    g2_double,
    g2_encode,
    g2_from_blst,
    g2_from_bytes,
    g2_generator,
    g2_jac_to_affine,
    g2_mul,
    g2_neg,
    g2_sum_xyzz,
    g2_to_blst,
    g2_to_bytes,
    g2_xyzz_to_affine,
)
from gpu.curves.serialisation import EncodingError

__all__ = [
    "EncodingError",
    "G1",
    "G2",
    "g1_add",
    "g1_check",
    "g1_decode",
    "g1_double",
    "g1_encode",
    "g1_from_blst",
    "g1_from_bytes",
    "g1_generator",
    "g1_jac_to_affine",
    "g1_mul",
    "g1_neg",
    "g1_sum_xyzz",
    "g1_to_blst",
    "g1_to_bytes",
    "g1_xyzz_to_affine",
    "g2_add",
    "g2_check",
    "g2_decode",
    "g2_double",
    "g2_encode",
    "g2_from_blst",
    "g2_from_bytes",
    "g2_generator",
    "g2_jac_to_affine",
    "g2_mul",
    "g2_neg",
    "g2_sum_xyzz",
    "g2_to_blst",
    "g2_to_bytes",
    "g2_xyzz_to_affine",
]
