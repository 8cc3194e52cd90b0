"""Radix-2 evaluation domains of Fr: roots of unity, the coset shift, the enums that name a transform, and the
plan (Gentleman-Sande or Cooley-Tukey, plus at most one bit reversal) derived from the requested orders.

Fr has 2-adicity 32: r - 1 = 2^32 * t with t odd, and 7 generates Fr* (the multiplicative generator of
blstrs/arkworks/sppark), so w_{2^32} = 7^t and w_n = w_{2^32}^(2^32 / n). The coset is g * <w_n> with g = 7,
as in bellperson's EvaluationDomain (coset_fft multiplies coefficient i by g^i) and SupraSeal's groth16_ntt_h.

Transforms (n = 2^logn, x the input array, coefficients a_i, evaluations y_j):
  FORWARD  STANDARD  y_j = sum_i a_i w^(ij)
  FORWARD  COSET     y_j = sum_i a_i g^i w^(ij)          (evaluations on the coset g<w>)
  INVERSE  STANDARD  a_i = n^-1 sum_j y_j w^(-ij)
  INVERSE  COSET     a_i = g^-i n^-1 sum_j y_j w^(-ij)
Orders (as in sppark's InputOutputOrder): N = natural, R = bit-reversed, first letter the input, second the
output. DIF (Gentleman-Sande) maps natural to bit-reversed, DIT (Cooley-Tukey) bit-reversed to natural, so NR
and RN cost no permutation; NN and RR add one. The Groth16 H step uses iNTT NR -> coset NTT RN ->
coset iNTT NR and never permutes (the H bases are permuted once instead, see gpu.groth16).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gpu.arith.fields.constants import R_MODULUS

TWO_ADICITY = 32
GENERATOR = 7  # multiplicative generator of Fr*, also the coset shift
_T = (R_MODULUS - 1) >> TWO_ADICITY
ROOT_2_32 = pow(GENERATOR, _T, R_MODULUS)  # primitive 2^32-th root of unity
MAX_LOG = TWO_ADICITY


class Order(enum.Enum):
    """Input/output element orders: N natural, R bit-reversed (input letter first)."""

    NN = "NN"
    NR = "NR"
    RN = "RN"
    RR = "RR"


class Direction(enum.Enum):
    FORWARD = "forward"  # coefficients -> evaluations
    INVERSE = "inverse"  # evaluations -> coefficients (includes the 1/n)


class Kind(enum.Enum):
    STANDARD = "standard"  # the subgroup <w_n>
    COSET = "coset"  # the coset g<w_n>, g = 7


class Algorithm(enum.Enum):
    DIF = "dif"  # Gentleman-Sande: natural in, bit-reversed out
    DIT = "dit"  # Cooley-Tukey: bit-reversed in, natural out


@dataclass(frozen=True)
class Plan:
    """How one transform runs: an optional bit reversal before, the butterflies, an optional one after."""

    algorithm: Algorithm
    permute_before: bool
    permute_after: bool


def plan(order: Order) -> Plan:
    """The cheapest algorithm for an order: NR and RN need no permutation, NN and RR one."""
    if order is Order.NR:
        return Plan(Algorithm.DIF, False, False)
    if order is Order.RN:
        return Plan(Algorithm.DIT, False, False)
    if order is Order.NN:
        return Plan(Algorithm.DIF, False, True)
    return Plan(Algorithm.DIF, True, False)  # RR: permute to natural, DIF back to bit-reversed


def check_log(logn: int) -> None:
    if not 0 <= logn <= MAX_LOG:
        raise ValueError(f"NTT size 2^{logn} outside 2^0..2^{MAX_LOG} (Fr has 2-adicity {TWO_ADICITY})")


def log2_exact(n: int) -> int:
    """log2(n) for a power of two n >= 1, else ValueError."""
    if n < 1 or n & (n - 1):
        raise ValueError(f"NTT length {n} is not a power of two")
    return n.bit_length() - 1


def root_of_unity(logn: int) -> int:
    """A primitive 2^logn-th root of unity w_n (w_n^(n/2) = -1)."""
    check_log(logn)
    return pow(ROOT_2_32, 1 << (TWO_ADICITY - logn), R_MODULUS)


def coset_shift() -> int:
    return GENERATOR


def vanishing_on_coset(logn: int) -> int:
    """Z(X) = X^n - 1 is the constant g^n - 1 on the coset g<w_n>."""
    return (pow(GENERATOR, 1 << logn, R_MODULUS) - 1) % R_MODULUS


def bitrev(i: int, logn: int) -> int:
    """i with its low logn bits reversed."""
    out = 0
    for _ in range(logn):
        out = (out << 1) | (i & 1)
        i >>= 1
    return out


def split_passes(logn: int, max_bits: int) -> list[int]:
    """Split logn radix-2 stages into passes of at most max_bits, as even as possible (largest first)."""
    if logn == 0:
        return []
    k = -(-logn // max_bits)
    base, extra = divmod(logn, k)
    return [base + 1] * extra + [base] * (k - extra)
