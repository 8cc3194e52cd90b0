"""PoSt challenge derivation (rust-fil-proofs ``storage-proofs-post/src/fallback``: ``vanilla.rs``,
``utils.rs``; docs post.md §2).

A challenged leaf is the first 8 bytes (little endian) of SHA-256(randomness ‖ sector_id as u64 LE ‖
challenge index as u64 LE), modulo the sector's node count. The challenge index of challenge ``n`` of the
``i``-th sector of partition ``k`` is ``(k·sectors + i)·challenges + n`` under API 1.0.0 (WinningPoSt, Window
V1) and plain ``n`` under 1.2.0 (Window V1_1: the grindability fix). WinningPoSt's vanilla proof has one
sector and 66 challenges (index n); its circuit sees 66 sectors of one challenge each, sector ``i`` at index
``i·1 + 0`` — the same 66 leaves.
"""

from __future__ import annotations

import hashlib

__all__ = ["challenge_index", "leaf_challenge", "sector_challenge", "sector_leaf_challenges"]


def challenge_index(api_version: str, sector_index: int, challenges_per_sector: int, n: int) -> int:
    """``get_challenge_index``: the index hashed for challenge ``n`` of the sector at ``sector_index``
    (counted over all partitions)."""
    if api_version in ("1.0.0", "1.1.0"):
        return sector_index * challenges_per_sector + n
    if api_version == "1.2.0":
        return n
    raise ValueError(f"unknown PoSt API version {api_version!r}")


def leaf_challenge(randomness: bytes, sector_id: int, index: int, nodes: int) -> int:
    """``generate_leaf_challenge``: the challenged node of a sector of ``nodes`` nodes."""
    h = hashlib.sha256(bytes(randomness) + sector_id.to_bytes(8, "little") + index.to_bytes(8, "little"))
    return int.from_bytes(h.digest()[:8], "little") % nodes


def sector_leaf_challenges(
    randomness: bytes, sector_id: int, nodes: int, *, api_version: str, sector_index: int, count: int
) -> list[int]:
    """The ``count`` challenged nodes of one sector (what its vanilla proof's inclusion proofs prove)."""
    return [
        leaf_challenge(randomness, sector_id, challenge_index(api_version, sector_index, count, n), nodes)
        for n in range(count)
    ]


def sector_challenge(randomness: bytes, n: int, sector_set_len: int, prover_id: bytes) -> int:
    """``generate_sector_challenge``: which of ``sector_set_len`` sectors WinningPoSt challenge ``n`` picks
    (SHA-256(prover_id ‖ randomness ‖ n as u64 LE), first 8 bytes LE, modulo the set size). Not part of the
    circuit: Curio picks the sector and sends its vanilla proof."""
    if sector_set_len <= 0:
        raise ValueError("empty sector set")
    h = hashlib.sha256(bytes(prover_id) + bytes(randomness) + n.to_bytes(8, "little"))
    return int.from_bytes(h.digest()[:8], "little") % sector_set_len
