"""Poseidon over the BLS12-381 scalar field exactly as neptune (and so Filecoin) defines it: the reference.

Plain Python integers, written to be read next to the spec (docs porep.md §2): this module is the oracle
that the batched Numba form (:mod:`porep.hashes.poseidon_batch`) is tested against, and it computes every
constant that form uses.

* Width t = arity + 1, S-box x^5, R_F = 8 full rounds split 4 + 4 around R_P partial rounds
  (neptune ``src/round_numbers.rs`` for ``Strength::Standard``).
* Round constants: the Grain LFSR of the Poseidon reference script ``create_rcs_grain.sage`` with
  field = 1, sbox = 1, n = 255 (neptune ``src/round_constants.rs``).
* MDS: the Cauchy matrix M[i][j] = 1 / (x_i + y_j) with x_i = i, y_j = t + j (neptune ``src/mds.rs``).
* Round i: add the t round constants, S-box on every element (full) or on s[0] only (partial), then s ← M·s.
* Hash (``HashType::MerkleTree``): s = [2^arity − 1, x_1, …, x_arity]; the output is s[1] after the
  permutation.

:func:`optimized_constants` rewrites the partial rounds so that each costs one constant, one S-box and a
sparse (2t − 1 multiplication) matrix instead of t constants and a dense t² matrix: the round constants
of s[1..] are pushed forward through M, and M is factored per round into a sparse matrix times
diag(1, Â), whose diag(1, Â) part commutes with the partial S-box and is folded into the previous round
(the Poseidon paper's appendix B; neptune's ``preprocessing.rs``/``matrix.rs`` compute the same kind of
thing). :func:`permute_optimized` runs that form on integers; the tests check it equals :func:`permute`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
"""The BLS12-381 scalar field modulus r (255 bits)."""

FULL_ROUNDS = 8
PARTIAL_ROUNDS = {2: 55, 4: 56, 8: 57, 11: 57, 16: 59, 24: 59, 36: 60}
"""R_P per arity for Strength::Standard (neptune ``round_numbers.rs`` test against known values)."""

ARITIES = tuple(PARTIAL_ROUNDS)
FIELD_BITS = 255


def _inv(x: int) -> int:
    return pow(x, R - 2, R)


# ============================================================================================ constants


def grain_round_constants(width: int, full_rounds: int, partial_rounds: int) -> list[int]:
    """The width·(R_F + R_P) round constants from the Grain LFSR (``create_rcs_grain.sage 1 1 255 …``).

    80-bit state, most significant field first: field type (2 bits) = 1, S-box (4 bits) = 1, field size
    (12) = 255, t (12), R_F (10), R_P (10), then 30 ones. Taps b[i+80] = b[i+62]^b[i+51]^b[i+38]^b[i+23]
    ^b[i+13]^b[i]; the first 160 outputs are discarded; then bits are self-shrunk (pairs (x, y): emit y
    when x = 1). A constant is 255 emitted bits read MSB first, redrawn (not reduced) while >= r.
    """
    fields = ((1, 2), (1, 4), (FIELD_BITS, 12), (width, 12), (full_rounds, 10), (partial_rounds, 10))
    bits: list[int] = []
    for value, n in fields:
        bits.extend((value >> (n - 1 - i)) & 1 for i in range(n))
    bits.extend([1] * 30)
    assert len(bits) == 80

    # The register as an int: bit i is b[i] (b[0] leaves first, the new bit enters at 79).
    reg = sum(b << i for i, b in enumerate(bits))

    def step() -> int:
        nonlocal reg
        new = ((reg >> 62) ^ (reg >> 51) ^ (reg >> 38) ^ (reg >> 23) ^ (reg >> 13) ^ reg) & 1
        reg = (reg >> 1) | (new << 79)
        return new

    for _ in range(160):
        step()

    def shrunk_bit() -> int:
        while True:
            x = step()
            y = step()
            if x:
                return y

    out: list[int] = []
    while len(out) < width * (full_rounds + partial_rounds):
        value = 0
        for _ in range(FIELD_BITS):
            value = (value << 1) | shrunk_bit()
        if value < R:
            out.append(value)
    return out


def cauchy_mds(width: int) -> tuple[tuple[int, ...], ...]:
    """M[i][j] = 1 / (i + (width + j)) mod r (symmetric)."""
    return tuple(tuple(_inv(i + width + j) for j in range(width)) for i in range(width))


def merkle_tree_tag(arity: int) -> int:
    """Domain tag of ``HashType::MerkleTree``: 2^arity − 1 (a bitmask of the present children)."""
    return (1 << arity) - 1


@dataclass(frozen=True)
class PoseidonConstants:
    """Everything that fixes Poseidon for one arity (Standard strength, MerkleTree hash type)."""

    arity: int
    width: int
    full_rounds: int
    partial_rounds: int
    round_constants: tuple[int, ...]  # round i uses [i·width, (i+1)·width)
    mds: tuple[tuple[int, ...], ...]
    domain_tag: int


@cache
def constants(arity: int) -> PoseidonConstants:
    if arity not in PARTIAL_ROUNDS:
        raise ValueError(f"no Filecoin Poseidon constants for arity {arity} (have {ARITIES})")
    t = arity + 1
    rp = PARTIAL_ROUNDS[arity]
    return PoseidonConstants(
        arity=arity,
        width=t,
        full_rounds=FULL_ROUNDS,
        partial_rounds=rp,
        round_constants=tuple(grain_round_constants(t, FULL_ROUNDS, rp)),
        mds=cauchy_mds(t),
        domain_tag=merkle_tree_tag(arity),
    )


# ============================================================================================ plain form


def _mat_vec(m: Sequence[Sequence[int]], v: Sequence[int]) -> list[int]:
    return [sum(a * b for a, b in zip(row, v, strict=True)) % R for row in m]


def permute(state: Sequence[int], c: PoseidonConstants) -> list[int]:
    """The Poseidon permutation (neptune ``hash_correct``): rounds of constants, S-box, MDS."""
    t = c.width
    if len(state) != t:
        raise ValueError(f"state of {len(state)} elements, width is {t}")
    s = [x % R for x in state]
    half = c.full_rounds // 2
    for rnd in range(c.full_rounds + c.partial_rounds):
        rc = c.round_constants[rnd * t : (rnd + 1) * t]
        s = [(x + k) % R for x, k in zip(s, rc, strict=True)]
        if rnd < half or rnd >= half + c.partial_rounds:
            s = [pow(x, 5, R) for x in s]
        else:
            s[0] = pow(s[0], 5, R)
        s = _mat_vec(c.mds, s)
    return s


def hash_ints(inputs: Sequence[int], arity: int | None = None) -> int:
    """Poseidon_arity(inputs) with the MerkleTree tag; ``len(inputs)`` must equal the arity."""
    arity = len(inputs) if arity is None else arity
    if len(inputs) != arity:
        raise ValueError(f"{len(inputs)} inputs for arity {arity}")
    for x in inputs:
        if not 0 <= x < R:
            raise ValueError("Poseidon input is not a canonical Fr element")
    c = constants(arity)
    return permute([c.domain_tag, *inputs], c)[1]


def fr_from_le(data: bytes) -> int:
    """A 32-byte little-endian Fr repr as an integer (must be canonical, as blstrs ``from_repr`` demands)."""
    if len(data) != 32:
        raise ValueError(f"Fr repr must be 32 bytes, got {len(data)}")
    x = int.from_bytes(data, "little")
    if x >= R:
        raise ValueError("not a canonical Fr element (>= r)")
    return x


def fr_to_le(x: int) -> bytes:
    return int(x).to_bytes(32, "little")


def hash_domains(children: Sequence[bytes]) -> bytes:
    """Poseidon of 32-byte PoseidonDomain values (Fr LE), as a PoseidonDomain; arity = len(children)."""
    return fr_to_le(hash_ints([fr_from_le(bytes(c)) for c in children]))


def hash2(a: bytes, b: bytes) -> bytes:
    """``PoseidonFunction::hash2`` = Poseidon arity 2, e.g. comm_r = hash2(comm_c, comm_r_last)."""
    return hash_domains([a, b])


# ============================================================================================ optimized form


@dataclass(frozen=True)
class OptimizedConstants:
    """The partial-round-optimized form of one arity's Poseidon (see the module docstring).

    Rounds 0..h−1 (h = R_F/2) are full with ``first_rc[i]``; round h−1 multiplies by ``pre_sparse``
    instead of M. Partial round j adds ``partial_rc[j]`` to s[0], S-boxes s[0] and applies sparse matrix
    j: s'[0] = ``sparse_m00[j]``·s[0] + Σ ``sparse_v[j]``[k]·s[1+k]; s'[1+k] = ``sparse_w[j]``[k]·s[0]
    + s[1+k]. Rounds after that are full with ``last_rc[i]`` and M.
    """

    arity: int
    width: int
    half_full_rounds: int
    partial_rounds: int
    domain_tag: int
    first_rc: tuple[tuple[int, ...], ...]
    partial_rc: tuple[int, ...]
    last_rc: tuple[tuple[int, ...], ...]
    mds: tuple[tuple[int, ...], ...]
    pre_sparse: tuple[tuple[int, ...], ...]
    sparse_m00: tuple[int, ...]
    sparse_v: tuple[tuple[int, ...], ...]
    sparse_w: tuple[tuple[int, ...], ...]


def _mat_mul(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> list[list[int]]:
    cols = list(zip(*b, strict=True))
    return [[sum(x * y for x, y in zip(row, col, strict=True)) % R for col in cols] for row in a]


def _mat_inv(m: Sequence[Sequence[int]]) -> list[list[int]]:
    """Gauss–Jordan inverse mod r (the matrices here are Cauchy-derived, hence invertible)."""
    n = len(m)
    a = [list(row) + [int(i == j) for j in range(n)] for i, row in enumerate(m)]
    for col in range(n):
        piv = next(r for r in range(col, n) if a[r][col] % R)
        a[col], a[piv] = a[piv], a[col]
        inv = _inv(a[col][col])
        a[col] = [x * inv % R for x in a[col]]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col]
                a[r] = [(x - f * y) % R for x, y in zip(a[r], a[col], strict=True)]
    return [row[n:] for row in a]


@cache
def optimized_constants(arity: int) -> OptimizedConstants:
    c = constants(arity)
    t, h, rp = c.width, c.full_rounds // 2, c.partial_rounds
    rc = [list(c.round_constants[i * t : (i + 1) * t]) for i in range(c.full_rounds + rp)]
    m = [list(row) for row in c.mds]

    # 1. Round constants: in a partial round only s[0] meets the S-box, so the constants of s[1..] can be
    #    added after it instead; passing through M they become M·(0, c[1..]), added to the next round's.
    partial_rc = []
    for j in range(rp):
        cur = rc[h + j]
        partial_rc.append(cur[0])
        moved = _mat_vec(m, [0, *cur[1:]])
        nxt = rc[h + j + 1]
        rc[h + j + 1] = [(x + y) % R for x, y in zip(nxt, moved, strict=True)]

    # 2. Matrices, from the last partial round backwards: N = S·D with D = diag(1, N[1:,1:]) and S sparse
    #    [[n00, n0r·D̂^-1], [nr0, I]]; D commutes with the partial round's S-box (it leaves s[0] alone and
    #    fixes e0), so it moves into the previous round's matrix: N ← D·M. What is left at the end
    #    multiplies the last first-half full round (the pre-sparse matrix).
    m00: list[int] = [0] * rp
    vs: list[tuple[int, ...]] = [()] * rp
    ws: list[tuple[int, ...]] = [()] * rp
    n = m
    for j in reversed(range(rp)):
        nrr = [row[1:] for row in n[1:]]
        v = _mat_vec(list(zip(*_mat_inv(nrr), strict=True)), n[0][1:])  # n0r · Nrr^-1
        m00[j], vs[j], ws[j] = n[0][0], tuple(v), tuple(row[0] for row in n[1:])
        d = [[1] + [0] * (t - 1)] + [[0, *row] for row in nrr]
        n = _mat_mul(d, m)

    return OptimizedConstants(
        arity=arity,
        width=t,
        half_full_rounds=h,
        partial_rounds=rp,
        domain_tag=c.domain_tag,
        first_rc=tuple(tuple(r) for r in rc[:h]),
        partial_rc=tuple(partial_rc),
        last_rc=tuple(tuple(r) for r in rc[h + rp :]),
        mds=c.mds,
        pre_sparse=tuple(tuple(r) for r in n),
        sparse_m00=tuple(m00),
        sparse_v=tuple(vs),
        sparse_w=tuple(ws),
    )


def permute_optimized(state: Sequence[int], o: OptimizedConstants) -> list[int]:
    """The same permutation as :func:`permute`, computed in the optimized form."""
    s = [x % R for x in state]
    for i in range(o.half_full_rounds):
        s = [pow((x + k) % R, 5, R) for x, k in zip(s, o.first_rc[i], strict=True)]
        s = _mat_vec(o.pre_sparse if i == o.half_full_rounds - 1 else o.mds, s)
    for j in range(o.partial_rounds):
        x0 = pow((s[0] + o.partial_rc[j]) % R, 5, R)
        rest = s[1:]
        s0 = (o.sparse_m00[j] * x0 + sum(a * b for a, b in zip(o.sparse_v[j], rest, strict=True))) % R
        s = [s0] + [(w * x0 + x) % R for w, x in zip(o.sparse_w[j], rest, strict=True)]
    for i in range(o.half_full_rounds):
        s = [pow((x + k) % R, 5, R) for x, k in zip(s, o.last_rc[i], strict=True)]
        s = _mat_vec(o.mds, s)
    return s
