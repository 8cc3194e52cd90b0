"""Valid SnapDeals update requests of any size without a sector: the sparse update.

The vanilla check and the circuit look only at what a partition proof carries: comm_c, the apex leaves,
and per challenge three Merkle paths with their leaves (docs snap.md §4.3, §6.2). So the three trees may
be almost constant, as in :mod:`porep.sdr.sparse` for PoRep. Unlike PoRep, the challenges depend on the
*result*: comm_d_new and comm_r_old give phi, phi gives rho, rho the new replica, the new replica
comm_r_new, and comm_r_new the challenges (snap.md §2.2, §3). Nothing at a challenged node can be chosen
after the challenges are known, so every leaf is fixed in advance and the challenged leaves are simply
read out of the trees, their paths with them.

The sector here is *blockwise*: ``blocks`` contiguous runs of N/blocks nodes (a power of two, at least 2^h,
so rho is constant on a run), each run with its own seed-derived sector key (the old replica: a canonical
Fr) and data node (fr32: top two bits clear), so

    new_replica[i] = key[b] + data[b]·rho(i >> (log2 N − h)) mod r,    b = i·blocks // N,

is the encoding of snap.md §2.3 at every node, and each tree costs one hash per block per level
(:class:`porep.hashes.sparse_merkle.SparseMerkleTree` with blockwise defaults). The default, 1,024 blocks
(capped at N: 2KiB is then a fully random 64-node sector), makes a 32GiB request in seconds.

Entry points: :func:`sparse_update` (the trees, challenges and proofs, for tests) and
:func:`synth_request` (one call: a request with the fields of the market's ``ProofData.Snap``, which the
strict check, ``porep.snap.partition.update_assignment`` and the witness code take as they are).
``psagent snap synth`` wraps the latter into a ProofData file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from porep.hashes.poseidon import R, hash2
from porep.hashes.sparse_merkle import SparseMerkleTree
from porep.snap.challenges import partition_challenges
from porep.snap.params import (
    UPDATE_PROOF_TYPES,
    RegisteredUpdateProof,
    UpdateConstants,
    UpdateProofType,
    for_sector_size,
    update_proof_type,
)
from porep.snap.proof import SINGLE, ChallengeProof, MerkleProof, PartitionProof, PathElement
from porep.snap.randomness import phi as make_phi
from porep.snap.randomness import rhos

NODE = 32
DEFAULT_BLOCKS = 1024
Progress = Callable[[str, int, int], None]
"""progress(stage, done, total): "trees", "challenges", "proofs"."""


class SparseUpdateError(ValueError):
    """The inputs cannot make a sparse update (proof type, seed, block count)."""


ProofTypeArg = UpdateProofType | RegisteredUpdateProof | int | str


def resolve_proof_type(proof: ProofTypeArg) -> UpdateProofType:
    """An update proof type by object, id (0–4), name (StackedDrg32GiBV1), size label (32GiB) or sector
    size in bytes (an int of 2048 or more)."""
    if isinstance(proof, UpdateProofType):
        return proof
    try:
        if isinstance(proof, str):
            label = proof.strip().lower()
            for t in UPDATE_PROOF_TYPES:
                if t.size_label.lower() == label:
                    return t
            return update_proof_type(proof.strip())
        if not isinstance(proof, bool) and isinstance(proof, int) and proof >= 2048:
            return for_sector_size(proof)
        return update_proof_type(proof)
    except ValueError as exc:
        labels = ", ".join(t.size_label for t in UPDATE_PROOF_TYPES)
        raise SparseUpdateError(f"{exc} (sizes: {labels})") from None


def _draw(seed: int, what: str, i: int, n: int = 64) -> int:
    """Deterministic bytes of (seed, what, i) as an integer."""
    h = hashlib.shake_256(b"psagent sparse update\0%d\0%s\0%d" % (seed, what.encode(), i))
    return int.from_bytes(h.digest(n), "little")


def _fr(seed: int, what: str, i: int) -> bytes:
    """A canonical Fr element over the whole range (sector keys, comm_c)."""
    return (_draw(seed, what, i) % R).to_bytes(NODE, "little")


def _fr32(seed: int, what: str, i: int) -> bytes:
    """A 254-bit value: an fr32 data node."""
    return (_draw(seed, what, i, NODE) & ((1 << 254) - 1)).to_bytes(NODE, "little")


@dataclass(frozen=True)
class SparseUpdate:
    """A blockwise update (module docstring): its trees, its challenges and the proofs made of them.
    ``proof_type`` is None for Rust's test-only sizes (constants, no proof id), as in
    :class:`porep.snap.update.SectorUpdate`."""

    constants: UpdateConstants
    proof_type: UpdateProofType | None
    seed: int
    blocks: int
    comm_c: bytes
    keys: tuple[bytes, ...]  # per block: the old replica (sector key)
    data: tuple[bytes, ...]  # per block: the fr32 data node
    phi: int
    tree_r_old: SparseMerkleTree
    tree_d_new: SparseMerkleTree
    tree_r_new: SparseMerkleTree
    challenges: np.ndarray  # int64[P, n]

    @property
    def comm_r_old(self) -> bytes:
        return hash2(self.comm_c, self.tree_r_old.root)

    @property
    def comm_d_new(self) -> bytes:
        return self.tree_d_new.root

    @property
    def comm_r_new(self) -> bytes:
        return hash2(self.comm_c, self.tree_r_new.root)

    @cached_property
    def _all_proofs(self) -> tuple[list[MerkleProof], list[MerkleProof], list[MerkleProof]]:
        c = self.constants
        flat = self.challenges.reshape(-1)
        segs, variant = c.tree_r_segments(), c.tree_r_variant
        return (
            _proofs(self.tree_r_old, flat, segs, variant),
            _proofs(self.tree_d_new, flat, [(2, c.challenge_bits)], SINGLE),
            _proofs(self.tree_r_new, flat, segs, variant),
        )

    def partition_proof(self, k: int) -> PartitionProof:
        """Partition ``k``'s vanilla proof: comm_c, tree D's apex row [k·A, (k+1)·A), per challenge the
        tree R old, tree D and tree R new proofs."""
        c = self.constants
        if not 0 <= k < c.partitions:
            raise ValueError(f"partition {k} out of range [0, {c.partitions})")
        a, n = c.apex_leaves, c.challenges
        apex = self.tree_d_new.nodes(c.apex_height, np.arange(k * a, (k + 1) * a))
        r_old, d_new, r_new = (p[k * n : (k + 1) * n] for p in self._all_proofs)
        return PartitionProof(
            self.comm_c,
            tuple(row.tobytes() for row in apex),
            tuple(ChallengeProof(*t) for t in zip(r_old, d_new, r_new, strict=True)),
        )

    def partition_proofs(self) -> list[PartitionProof]:
        return [self.partition_proof(k) for k in range(self.constants.partitions)]

    def request(self) -> SynthRequest:
        """The request as the market carries it: the bincode partition proofs and raw commitments."""
        if self.proof_type is None:
            raise ValueError(f"the {self.constants.nodes}-node test size has no update proof id")
        return SynthRequest(
            proof_type=int(self.proof_type.id),
            old_r=self.comm_r_old,
            new_r=self.comm_r_new,
            new_d=self.comm_d_new,
            proofs=tuple(p.to_bytes() for p in self.partition_proofs()),
        )


@dataclass
class SynthRequest:
    """The fields of the market's ``ProofData.Snap`` (``market.proofdata.Snap``; porep does not import
    market): ``porep.snap.circuit.SnapRequest``, what the strict check and the prover entries read (not
    frozen: that protocol declares plain attributes)."""

    proof_type: int
    old_r: bytes
    new_r: bytes
    new_d: bytes
    proofs: tuple[bytes, ...]


def _proofs(
    tree: SparseMerkleTree, indices: np.ndarray, segments: list[tuple[int, int]], variant: int
) -> list[MerkleProof]:
    """Merkle proofs of leaves ``indices``, the tree's levels cut into the proof's base/sub/top segments."""
    levels = tree.paths(indices)
    leaves = tree.nodes(0, indices)
    root = tree.root
    per_level: list[list[PathElement]] = []
    for hashes, pos in levels:
        per_level.append(
            [PathElement(tuple(bytes(h) for h in hashes[i]), int(pos[i])) for i in range(indices.size)]
        )
    out = []
    for i in range(indices.size):
        path = [per_level[lvl][i] for lvl in range(len(levels))]
        cut, segs = 0, []
        for _, length in segments:
            segs.append(tuple(path[cut : cut + length]))
            cut += length
        base, sub, top = (*segs, (), ())[:3]
        out.append(MerkleProof(variant, root, leaves[i].tobytes(), base, sub, top))
    return out


def sparse_update(
    proof_type: ProofTypeArg | UpdateConstants,
    seed: int = 0,
    *,
    blocks: int | None = None,
    progress: Progress | None = None,
) -> SparseUpdate:
    """The blockwise update of ``proof_type`` for ``seed`` (module docstring): keys, data and comm_c drawn
    from the seed, then tree R old, tree D → comm_d_new, phi, the new replica, tree R new → comm_r_new, the
    challenges of every partition. Deterministic: the same arguments give the same bytes. Constants of
    one of Rust's test-only sizes (``porep.snap.params.constants_for_nodes``) make an update without a
    proof id (for tests of the Sub/Top shapes against dense trees)."""
    pt: UpdateProofType | None
    if isinstance(proof_type, UpdateConstants):
        pt, c = None, proof_type
    else:
        pt = resolve_proof_type(proof_type)
        c = pt.constants
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise SparseUpdateError(f"seed must be an integer from 0 to 2^64-1, got {seed!r}")
    b = min(DEFAULT_BLOCKS, c.nodes) if blocks is None else int(blocks)
    if b & (b - 1) or not (1 << c.h) <= b <= c.nodes:
        raise SparseUpdateError(
            f"blocks must be a power of two from 2^h = {1 << c.h} to N = {c.nodes}, got {blocks}"
        )

    def report(stage: str, done: int, total: int) -> None:
        if progress is not None:
            progress(stage, done, total)

    arities_r = tuple(a for a, n in c.tree_r_segments() for _ in range(n))
    arities_d = (2,) * c.challenge_bits
    report("trees", 0, 3)
    comm_c = _fr(seed, "comm_c", 0)
    keys = tuple(_fr(seed, "key", i) for i in range(b))
    data = tuple(_fr32(seed, "data", i) for i in range(b))
    tree_r_old = SparseMerkleTree.build("poseidon", arities_r, keys, {})
    report("trees", 1, 3)
    tree_d = SparseMerkleTree.build("sha254", arities_d, data, {})
    report("trees", 2, 3)
    phi_value = make_phi(tree_d.root, hash2(comm_c, tree_r_old.root))
    rho = rhos(phi_value, c.h)
    per_rho = b >> c.h  # blocks per rho value
    new = tuple(
        (
            (int.from_bytes(keys[i], "little") + int.from_bytes(data[i], "little") * rho[i // per_rho]) % R
        ).to_bytes(NODE, "little")
        for i in range(b)
    )
    tree_r_new = SparseMerkleTree.build("poseidon", arities_r, new, {})
    report("trees", 3, 3)
    comm_r_new = hash2(comm_c, tree_r_new.root)
    report("challenges", 0, c.partitions)
    chal = []
    for k in range(c.partitions):
        chal.append(partition_challenges(c, comm_r_new, k))
        report("challenges", k + 1, c.partitions)
    return SparseUpdate(
        constants=c,
        proof_type=pt,
        seed=seed,
        blocks=b,
        comm_c=comm_c,
        keys=keys,
        data=data,
        phi=phi_value,
        tree_r_old=tree_r_old,
        tree_d_new=tree_d,
        tree_r_new=tree_r_new,
        challenges=np.array(chal, dtype=np.int64),
    )


def synth_request(
    proof_type: ProofTypeArg,
    seed: int = 0,
    *,
    blocks: int | None = None,
    progress: Progress | None = None,
) -> SynthRequest:
    """A valid Snap request of any size in one call (e.g. ``synth_request("32GiB")``): the sparse update's
    commitments and bincode partition proofs, ready for ``porep.snap.verify.check_request`` and
    ``porep.snap.partition.update_assignment(request, k)``."""
    upd = sparse_update(proof_type, seed, blocks=blocks, progress=progress)
    if progress is not None:
        progress("proofs", 0, 1)
    req = upd.request()
    if progress is not None:
        progress("proofs", 1, 1)
    return req
