"""Fq, the BLS12-381 base field (p, 381 bits): 12 x 32-bit limbs, Montgomery radix R = 2^384.

The code lives in gpu/arith/_generated/fq.py (made by gpu/codegen.py); this module is its stable public face.
Device-level ops take and return tuples of uint32 limbs (Montgomery form) and work in @njit code, in
@cuda.jit kernels (force-inlined) and in the simulator; the *_batch functions run on (n, NLIMBS) uint32
arrays on the CPU.
"""

from gpu.arith._generated.fq import (  # noqa: F401
    MODULUS,
    NLIMBS,
    fq_add,
    fq_add_batch,
    fq_dbl,
    fq_decode,
    fq_encode,
    fq_eq,
    fq_from_bytes,
    fq_from_ints,
    fq_from_mont,
    fq_inv,
    fq_inv_batch,
    fq_is_canonical,
    fq_is_zero,
    fq_load,
    fq_load2,
    fq_load3,
    fq_mul,
    fq_mul_batch,
    fq_neg,
    fq_neg_batch,
    fq_one,
    fq_pow,
    fq_pow_batch,
    fq_r2,
    fq_random,
    fq_raw_one,
    fq_select,
    fq_sqr,
    fq_sqr_batch,
    fq_store,
    fq_store2,
    fq_store3,
    fq_sub,
    fq_sub_batch,
    fq_to_bytes,
    fq_to_ints,
    fq_to_mont,
    fq_zero,
)
