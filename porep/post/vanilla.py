"""Vanilla PoSt proofs of sealed sectors (``generate_single_vanilla_proof``; docs post.md §3): what Curio's
PoSt tasks make from the sealed replica before they call the engine, for sector sizes whose tree R_last is one
tree (8-0-0: 2KiB, 8MiB, 512MiB). The engine's tests and the long suite prove requests made here from real
sealed sectors (the fixtures' rust-fil-proofs and venus ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from porep.hashes.merkle import MerkleTree, build_poseidon_tree
from porep.hashes.poseidon import hash2
from porep.post.params import PoStProofType
from porep.post.proof import FallbackPoStSectorProof, MerkleProof, PathElement, SectorProof
from porep.post.verify import challenges_of
from porep.snap.proof import SINGLE

__all__ = ["SealedReplica", "post_request", "sector_proof"]

NODE = 32


@dataclass(frozen=True)
class SealedReplica:
    """A sealed sector as PoSt reads it: its id, the replica's bytes and comm_c (from ``p_aux``)."""

    sector_id: int
    replica: bytes
    comm_c: bytes

    def tree(self) -> MerkleTree:
        return build_poseidon_tree(np.frombuffer(self.replica, np.uint8).reshape(-1, NODE), 8)

    @property
    def comm_r_last(self) -> bytes:
        return self.tree().root

    @property
    def comm_r(self) -> bytes:
        return hash2(self.comm_c, self.comm_r_last)


def sector_proof(
    pt: PoStProofType, sector: SealedReplica, challenges: Sequence[int]
) -> FallbackPoStSectorProof:
    """The vanilla proof of ``sector`` for ``challenges`` (leaf indices)."""
    if pt.tree.sub or pt.tree.top:
        raise ValueError(f"{pt.size_label}: only single-tree (8-0-0) sectors are built here")
    if len(sector.replica) != pt.sector_size:
        raise ValueError(
            f"the replica is {len(sector.replica)} bytes, a {pt.size_label} sector is {pt.sector_size}"
        )
    tree = sector.tree()
    sibs, pos = tree.path_arrays(list(challenges))
    leaves = tree.leaves
    proofs = tuple(
        MerkleProof(
            SINGLE, tree.root, leaves[c].tobytes(),
            tuple(
                PathElement(tuple(s.tobytes() for s in sibs[k, h]), int(pos[k, h])) for h in range(tree.depth)
            ),
        )
        for k, c in enumerate(challenges)
    )
    comm_r = hash2(sector.comm_c, tree.root)
    return FallbackPoStSectorProof(sector.sector_id, comm_r, (SectorProof(proofs, sector.comm_c, tree.root),))


def post_request(
    pt: PoStProofType, randomness: bytes, sectors: Sequence[SealedReplica], partition_index: int = 0
) -> list[bytes]:
    """The ``vanilla_proofs`` of an engine request: one bincode proof per sector, each for the challenges its
    position in the partition gives it."""
    return [
        sector_proof(pt, s, challenges_of(pt, randomness, partition_index, i, s.sector_id)).to_bytes()
        for i, s in enumerate(sectors)
    ]
