"""The "gen randomness" Poseidon of SnapDeals and what it derives: phi, rho and the challenge digests.

``HASH_TYPE_GEN_RANDOMNESS`` is neptune's ``HashType::Custom(CType::Arbitrary(1))``: the arity-2 Poseidon of
porep.md §2.4 (same round constants and MDS) with domain tag 1·2^40 in s[0] instead of the MerkleTree tag 3
(docs snap.md §2.1). comm_r is still the MerkleTree-tag hash (``porep.hashes.poseidon.hash2``), never this
one.
"""

from __future__ import annotations

from functools import lru_cache

from porep.hashes.poseidon import (
    OptimizedConstants,
    R,
    constants,
    fr_from_le,
    fr_to_le,
    optimized_constants,
    permute_optimized,
)

GEN_RANDOMNESS_TAG = 1 << 40


@lru_cache(maxsize=1)
def _opt() -> OptimizedConstants:
    return optimized_constants(2)


def h_snap(a: int, b: int) -> int:
    """Poseidon-2 with the gen-randomness tag over two canonical Fr elements (output s[1])."""
    if not (0 <= a < R and 0 <= b < R):
        raise ValueError("Poseidon input is not a canonical Fr element")
    return permute_optimized([GEN_RANDOMNESS_TAG, a, b], _opt())[1]


def h_snap_plain(a: int, b: int) -> int:
    """The same hash through the plain (unoptimised) permutation: an in-package cross-check."""
    from porep.hashes.poseidon import permute

    return permute([GEN_RANDOMNESS_TAG, a, b], constants(2))[1]


def phi(comm_d_new: bytes, comm_r_old: bytes) -> int:
    """phi = H_snap(comm_d_new, comm_r_old), both read as LE Fr reprs (must be canonical)."""
    return h_snap(fr_from_le(comm_d_new), fr_from_le(comm_r_old))


def rho(phi_value: int, high: int) -> int:
    """rho(high) = H_snap(phi, high): the factor of the nodes whose h high index bits are ``high``."""
    return h_snap(phi_value, high)


def rhos(phi_value: int, h: int) -> list[int]:
    """rho for every high value 0 … 2^h − 1."""
    return [rho(phi_value, high) for high in range(1 << h)]


def digest(comm_r_new: bytes, index: int) -> int:
    """Challenge digest ``index`` (counted across all partitions): H_snap(comm_r_new, index)."""
    return h_snap(fr_from_le(comm_r_new), index)


def phi_bytes(comm_d_new: bytes, comm_r_old: bytes) -> bytes:
    return fr_to_le(phi(comm_d_new, comm_r_old))
