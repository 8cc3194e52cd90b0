"""Updating a CC sector with data and generating the vanilla partition proofs (docs snap.md §2–4, §8.1).

Order as rust-fil-proofs ``encode_into`` + ``prove_all_partitions``: tree D over the fr32-padded data →
comm_d_new; phi = H_snap(comm_d_new, comm_r_old); new replica = key + data·rho; tree R over it →
comm_r_new = H2(comm_c, root); then per partition k: the apex leaves (tree-D row at the apex height,
indices [k·A, (k+1)·A)) and, per challenge, Merkle proofs in tree R old, tree D and tree R new. Only the
sizes we seal are single trees (2KiB, 8MiB, 512MiB: 8-0-0); Rust's test-only sizes use compound tree R
shapes (:mod:`porep.snap.tree_r`) and are updated from a given key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from porep.hashes.merkle import MerkleTree, build_tree_d
from porep.hashes.poseidon import hash2
from porep.snap import encoding
from porep.snap.challenges import partition_challenges
from porep.snap.params import UpdateConstants, UpdateProofType, hs
from porep.snap.proof import SINGLE, ChallengeProof, MerkleProof, PartitionProof, PathElement
from porep.snap.randomness import phi as make_phi
from porep.snap.tree_r import TreeR, build_tree_r
from porep.snap.tree_r import single as single_tree

if TYPE_CHECKING:
    from porep.sdr.seal import SealedSector

NODE = 32


def _d_proofs(tree: MerkleTree, indices: list[int]) -> list[MerkleProof]:
    hashes, pos = tree.path_arrays(indices)
    out = []
    for i, c in enumerate(indices):
        path = tuple(
            PathElement(tuple(h.tobytes() for h in hashes[i, lvl]), int(pos[i, lvl]))
            for lvl in range(tree.depth)
        )
        out.append(MerkleProof(SINGLE, tree.root, tree.levels[0][c].tobytes(), path))
    return out


@dataclass
class SectorUpdate:
    """An updated sector: commitments, the three trees and what the proofs need. ``proof_type`` is None
    for Rust's test-only sizes, which have constants but no proof id."""

    constants: UpdateConstants
    proof_type: UpdateProofType | None
    h: int
    comm_c: bytes
    comm_r_old: bytes
    comm_d_new: bytes
    comm_r_new: bytes
    phi: int
    tree_r_old: TreeR
    tree_d_new: MerkleTree
    tree_r_new: TreeR

    @property
    def comm_r_last_new(self) -> bytes:
        return self.tree_r_new.root

    @property
    def replica(self) -> bytes:
        """The new sealed file."""
        return self.tree_r_new.leaves.tobytes()

    @property
    def data(self) -> bytes:
        """The fr32-padded data (tree D's leaves, Filecoin's staged "unsealed" file)."""
        return self.tree_d_new.leaves.tobytes()

    def challenges(self, k: int) -> list[int]:
        return partition_challenges(self.constants, self.comm_r_new, k)

    def partition_proof(self, k: int) -> PartitionProof:
        consts = self.constants
        cs = self.challenges(k)
        a = consts.apex_leaves
        row = self.tree_d_new.levels[consts.apex_height]
        apex = tuple(row[i].tobytes() for i in range(k * a, (k + 1) * a))
        r_old, d_new, r_new = (
            self.tree_r_old.proofs(cs),
            _d_proofs(self.tree_d_new, cs),
            self.tree_r_new.proofs(cs),
        )
        return PartitionProof(
            self.comm_c, apex, tuple(ChallengeProof(*p) for p in zip(r_old, d_new, r_new, strict=True))
        )

    def partition_proofs(self) -> list[PartitionProof]:
        return [self.partition_proof(k) for k in range(self.constants.partitions)]


def update(
    proof_type: UpdateProofType | UpdateConstants,
    tree_r_old: TreeR | MerkleTree,
    comm_c: bytes,
    data: bytes | np.ndarray,
    h: int | None = None,
) -> SectorUpdate:
    """Encode ``data`` (N canonical 32-byte nodes, normally fr32-padded) into the sector whose tree R_last
    is ``tree_r_old`` (its leaves are the sector key) and build everything the proofs need."""
    if isinstance(proof_type, UpdateProofType):
        pt: UpdateProofType | None = proof_type
        consts = proof_type.constants
    else:
        pt, consts = None, proof_type
    old = single_tree(tree_r_old) if isinstance(tree_r_old, MerkleTree) else tree_r_old
    h = consts.h if h is None else h
    if h not in hs(consts.nodes):
        raise ValueError(f"h = {h} is not one of {hs(consts.nodes)} for a sector of {consts.nodes} nodes")
    key = old.leaves
    if key.shape[0] != consts.nodes or old.shape != consts.tree_r:
        raise ValueError(
            f"tree R_old has {key.shape[0]} leaves in shape {old.shape}, "
            f"the update needs {consts.nodes} in shape {consts.tree_r}"
        )
    nodes = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data
    nodes = np.ascontiguousarray(nodes, dtype=np.uint8).reshape(-1, NODE)
    if nodes.shape[0] != consts.nodes:
        raise ValueError(f"data of {nodes.shape[0]} nodes, the sector has {consts.nodes}")
    comm_r_old = hash2(comm_c, old.root)
    tree_d = build_tree_d(nodes)
    comm_d_new = tree_d.root
    phi_value = make_phi(comm_d_new, comm_r_old)
    replica = encoding.encode(key, nodes, phi_value, h)
    tree_r_new = build_tree_r(replica, consts.tree_r)
    return SectorUpdate(
        constants=consts,
        proof_type=pt,
        h=h,
        comm_c=bytes(comm_c),
        comm_r_old=comm_r_old,
        comm_d_new=comm_d_new,
        comm_r_new=hash2(comm_c, tree_r_new.root),
        phi=phi_value,
        tree_r_old=old,
        tree_d_new=tree_d,
        tree_r_new=tree_r_new,
    )


def update_sector(sealed: SealedSector, data: bytes, h: int | None = None) -> SectorUpdate:
    """Update a CC sector sealed by :func:`porep.sdr.seal.seal` with fr32-padded ``data`` (a full sector).

    Filecoin only snaps committed-capacity sectors, whose comm_d is the zero commitment; anything else is
    refused. The padded data must be fr32 (every node below 2^254), as the staged "unsealed" file is.
    """
    from porep.hashes.sha254 import zero_comm
    from porep.snap.params import for_sector_size

    info = sealed.info
    pt = for_sector_size(sealed.proof_type.sector_size)
    if info.comm_d != zero_comm(sealed.proof_type.sector_size):
        raise ValueError("not a CC sector: its comm_d is not the zero commitment")
    nodes = np.frombuffer(bytes(data), np.uint8).reshape(-1, NODE)
    if (nodes[:, 31] & 0xC0).any():
        raise ValueError("data has a node with its top two bits set (not fr32-padded)")
    return update(pt, sealed.tree_r_last, info.comm_c, nodes, h)
