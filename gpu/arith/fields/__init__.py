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

from gpu.arith.fields.constants import FQ_LIMBS, FR_LIMBS, P_MODULUS, R_MODULUS  # noqa: F401
from gpu.arith.fields.fq import *  # noqa: F401,F403
from gpu.arith.fields.fq2 import (  # noqa: F401
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
from gpu.arith.fields.fr import *  # noqa: F401,F403
