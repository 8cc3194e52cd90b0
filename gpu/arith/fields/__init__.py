"""BLS12-381 fields: Fr (scalars, 8 limbs), Fq (base field, 12 limbs) and Fq2 (G2 coordinates).

Stable API (others build Poseidon, the NTT and Groth16 on it; change it only compatibly).

Representation
  * An element is a tuple of little-endian uint32 limbs in Montgomery form (R = 2^256 for Fr, 2^384 for Fq);
    Fq2 is a pair (c0, c1) of Fq tuples. Outputs are always fully reduced (< modulus).
  * Host arrays are C-contiguous uint32, shape (n, 8) for Fr, (n, 12) for Fq, (n, 2, 12) for Fq2.
    Montgomery inside the engine, canonical at the edges.

Device-level ops (tuples in, tuples out; callable from @njit code, from @cuda.jit kernels, where they are
force-inlined, and from plain Python / the CUDA simulator) for F in {fr, fq}:
  F_mul, F_sqr, F_add, F_dbl, F_sub, F_neg, F_inv (0 -> 0), F_pow(a, e_limbs_uint32_array),
  F_is_zero, F_eq, F_select(c, a, b), F_zero(), F_one() (Montgomery 1), F_r2(), F_raw_one(),
  F_load(arr, i) / F_store(arr, i, v) for arr[i, :], F_load2/F_store2 for arr[i, k, :], F_load3/F_store3.
  Fq2: fq2_mul, fq2_sqr, fq2_add, fq2_dbl, fq2_sub, fq2_neg, fq2_conj, fq2_inv, fq2_mul_fq, fq2_is_zero,
  fq2_eq, fq2_zero, fq2_one, fq2_load2/fq2_store2 (arr[i, k, :, :]).

CPU batch ops on arrays (Numba, parallel): F_mul_batch(a, b[, out]) (b may be one row, broadcast),
  F_sqr_batch, F_add_batch, F_sub_batch, F_neg_batch, F_pow_batch(a, int_exponent),
  F_inv_batch(a, method="montgomery"|"fermat").

Conversions: F_from_ints(ints) -> canonical limbs (ValueError if >= modulus), F_to_ints(arr),
  F_to_mont(arr) / F_from_mont(arr), F_encode(ints) -> Montgomery array, F_decode(arr) -> ints,
  F_from_bytes(data, "little"|"big", reduce=False) -> canonical limbs, F_to_bytes(arr, byteorder),
  F_is_canonical(arr) -> bool mask, F_random(n, rng) -> random canonical limbs.
  fq2_encode([(c0, c1), ...]) / fq2_decode(arr).
"""

# ruff: noqa: F405 - __all__ names what the star imports of fq and fr bring (without their MODULUS / NLIMBS)

from gpu.arith.fields.constants import FQ_LIMBS, FR_LIMBS, P_MODULUS, R_MODULUS
from gpu.arith.fields.fq import *  # noqa: F403 (fq.py / fr.py: the field's stable face)
from gpu.arith.fields.fq2 import (
    fq2_add,
    fq2_conj,
    fq2_dbl,
    fq2_decode,
    fq2_encode,
    fq2_eq,
    fq2_inv,
    fq2_inv_batch,
    fq2_is_zero,
    fq2_load2,
    fq2_mul,
    fq2_mul_batch,
    fq2_mul_fq,
    fq2_neg,
    fq2_one,
    fq2_sqr,
    fq2_sqr_batch,
    fq2_store2,
    fq2_sub,
    fq2_zero,
)
from gpu.arith.fields.fr import *  # noqa: F403 (fq.py / fr.py: the field's stable face)

__all__ = [
    "FQ_LIMBS",
    "FR_LIMBS",
    "P_MODULUS",
    "R_MODULUS",
    "fq2_add",
    "fq2_conj",
    "fq2_dbl",
    "fq2_decode",
    "fq2_encode",
    "fq2_eq",
    "fq2_inv",
    "fq2_inv_batch",
    "fq2_is_zero",
    "fq2_load2",
    "fq2_mul",
    "fq2_mul_batch",
    "fq2_mul_fq",
    "fq2_neg",
    "fq2_one",
    "fq2_sqr",
    "fq2_sqr_batch",
    "fq2_store2",
    "fq2_sub",
    "fq2_zero",
    "fq_add",
    "fq_add_batch",
    "fq_dbl",
    "fq_decode",
    "fq_encode",
    "fq_eq",
    "fq_from_bytes",
    "fq_from_ints",
    "fq_from_mont",
    "fq_inv",
    "fq_inv_batch",
    "fq_is_canonical",
    "fq_is_zero",
    "fq_load",
    "fq_load2",
    "fq_load3",
    "fq_mul",
    "fq_mul_batch",
    "fq_neg",
    "fq_neg_batch",
    "fq_one",
    "fq_pow",
    "fq_pow_batch",
    "fq_r2",
    "fq_random",
    "fq_raw_one",
    "fq_select",
    "fq_sqr",
    "fq_sqr_batch",
    "fq_store",
    "fq_store2",
    "fq_store3",
    "fq_sub",
    "fq_sub_batch",
    "fq_to_bytes",
    "fq_to_ints",
    "fq_to_mont",
    "fq_zero",
    "fr_add",
    "fr_add_batch",
    "fr_dbl",
    "fr_decode",
    "fr_encode",
    "fr_eq",
    "fr_from_bytes",
    "fr_from_ints",
    "fr_from_mont",
    "fr_inv",
    "fr_inv_batch",
    "fr_is_canonical",
    "fr_is_zero",
    "fr_load",
    "fr_load2",
    "fr_load3",
    "fr_mul",
    "fr_mul_batch",
    "fr_neg",
    "fr_neg_batch",
    "fr_one",
    "fr_pow",
    "fr_pow_batch",
    "fr_r2",
    "fr_random",
    "fr_raw_one",
    "fr_select",
    "fr_sqr",
    "fr_sqr_batch",
    "fr_store",
    "fr_store2",
    "fr_store3",
    "fr_sub",
    "fr_sub_batch",
    "fr_to_bytes",
    "fr_to_ints",
    "fr_to_mont",
    "fr_zero",
]
