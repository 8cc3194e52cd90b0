"""Fr, the BLS12-381 scalar field (r, 255 bits): 8 x 32-bit limbs, Montgomery radix R = 2^256.

The code lives in gpu/arith/_generated/fr.py (made by gpu/codegen.py); this module is its stable public face.
Device-level ops take and return tuples of uint32 limbs (Montgomery form) and work in @njit code, in
@cuda.jit kernels (force-inlined) and in the simulator; the *_batch functions run on (n, NLIMBS) uint32
arrays on the CPU.
"""

from gpu.arith._generated.fr import (  # noqa: F401
    MODULUS,
    NLIMBS,
    fr_add,
    fr_add_batch,
    fr_dbl,
    fr_decode,
    fr_encode,
    fr_eq,
    fr_from_bytes,
    fr_from_ints,
    fr_from_mont,
    fr_inv,
    fr_inv_batch,
    fr_is_canonical,
    fr_is_zero,
    fr_load,
    fr_load2,
    fr_load3,
    fr_mul,
    fr_mul_batch,
    fr_neg,
    fr_neg_batch,
    fr_one,
    fr_pow,
    fr_pow_batch,
    fr_r2,
    fr_random,
    fr_raw_one,
    fr_select,
    fr_sqr,
    fr_sqr_batch,
    fr_store,
    fr_store2,
    fr_store3,
    fr_sub,
    fr_sub_batch,
    fr_to_bytes,
    fr_to_ints,
    fr_to_mont,
    fr_zero,
)
