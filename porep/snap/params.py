"""SnapDeals update proof types (``RegisteredUpdateProof`` ids 0–4) and their per-size constants.

The rules are those of rust-fil-proofs ``storage-proofs-update/src/constants.rs`` and
``vanilla.rs::PublicParams::from_sector_size`` (docs snap.md §1.2), written as functions of the node count N
so that the test-only sizes of Rust's challenge vectors (1KiB … 16MiB) use the same code. The API's own
``RegisteredUpdateProof::partitions()`` returns the PoRep count and is not what the update code uses.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import IntEnum
from functools import cache

from porep.prooftypes import PARAMETER_CACHE_VERSION, TreeShape

FR_CAPACITY = 254  # Fr::CAPACITY: bits of a digest that challenges may use
H_SELECT_BITS = 6  # len(hs(N)): h_select is one-hot over six h values


class RegisteredUpdateProof(IntEnum):
    """go-state-types ``abi.RegisteredUpdateProof`` (what the market's ``Snap.ProofType`` carries)."""

    StackedDrg2KiBV1 = 0
    StackedDrg8MiBV1 = 1
    StackedDrg512MiBV1 = 2
    StackedDrg32GiBV1 = 3
    StackedDrg64GiBV1 = 4


_SIZE_OF = {0: 2 << 10, 1: 8 << 20, 2: 512 << 20, 3: 32 << 30, 4: 64 << 30}

# Tree R shape (base, sub, top arity) per node count, production and test sizes (snap.md §1.2).
_TREE_R = {
    1 << 5: (8, 4, 0),
    1 << 6: (8, 0, 0),
    1 << 7: (8, 2, 0),
    1 << 8: (8, 4, 0),
    1 << 9: (8, 8, 0),
    1 << 10: (8, 8, 2),
    1 << 18: (8, 0, 0),
    1 << 19: (8, 2, 0),
    1 << 24: (8, 0, 0),
    1 << 30: (8, 8, 0),
    1 << 31: (8, 8, 2),
}


def partition_count(nodes: int) -> int:
    if nodes <= 1 << 8:
        return 1
    if nodes <= 1 << 10:
        return 2
    if nodes <= 1 << 19:
        return 4
    return 16


def challenge_count(nodes: int) -> int:
    return 10 if nodes <= 1 << 19 else 86


def apex_leaf_count(nodes: int) -> int:
    return 8 if nodes <= 1 << 8 else 128


def hs(nodes: int) -> tuple[int, ...]:
    """The six allowed values of h (high bits of a node index that select rho)."""
    return (1,) * 6 if nodes <= 1 << 10 else (7, 8, 9, 10, 11, 12)


def h_default(nodes: int) -> int:
    """The h the API always uses (``hs[3]``)."""
    return hs(nodes)[3]


def h_select(nodes: int, h: int) -> int:
    """2^(index of the first entry of hs equal to h): 1 for the small sizes, 8 for h = 10."""
    return 1 << hs(nodes).index(h)


@dataclass(frozen=True)
class UpdateConstants:
    """Everything fixed by the node count: partitions, challenges, apex tree, h and the tree-R shape."""

    nodes: int
    partitions: int
    challenges: int  # per partition
    apex_leaves: int
    h: int  # h_default
    tree_r: TreeShape

    @property
    def sector_size(self) -> int:
        return self.nodes * 32

    @property
    def challenge_bits(self) -> int:
        """cbl = log2 N: the tree-D path length."""
        return self.nodes.bit_length() - 1

    @property
    def partition_bits(self) -> int:
        return self.partitions.bit_length() - 1

    @property
    def apex_bits(self) -> int:
        return self.apex_leaves.bit_length() - 1

    @property
    def apex_height(self) -> int:
        """Height in tree D of the apex-leaf row."""
        return self.challenge_bits - self.partition_bits - self.apex_bits

    @property
    def random_bits(self) -> int:
        """Random bits per challenge (the partition index goes above them)."""
        return self.challenge_bits - self.partition_bits

    @property
    def challenges_per_digest(self) -> int:
        return FR_CAPACITY // self.random_bits

    @property
    def digests_per_partition(self) -> int:
        # Rust computes ceil in f32; exact for every allowed size.
        return -(-self.challenges // self.challenges_per_digest)

    @property
    def h_select(self) -> int:
        return h_select(self.nodes, self.h)

    @property
    def tree_r_variant(self) -> int:
        """MerkleProof ``ProofData`` variant of tree R proofs: 0 Single, 1 Sub, 2 Top."""
        return 2 if self.tree_r.top else 1 if self.tree_r.sub else 0

    def tree_r_segments(self) -> list[tuple[int, int]]:
        """(arity, path elements) of tree R proofs: base, then sub, then top."""
        base_leaves = self.nodes
        segs: list[tuple[int, int]] = []
        if self.tree_r.top:
            base_leaves //= self.tree_r.top
        if self.tree_r.sub:
            base_leaves //= self.tree_r.sub
        segs.append((self.tree_r.base, _log(base_leaves, self.tree_r.base)))
        if self.tree_r.sub:
            segs.append((self.tree_r.sub, 1))
        if self.tree_r.top:
            segs.append((self.tree_r.top, 1))
        return segs

    def k_and_h_select(self, k: int) -> int:
        """The circuit's first public input: k + h_select · 2^pbl."""
        return k + (self.h_select << self.partition_bits)


def _log(n: int, base: int) -> int:
    e = 0
    while n > 1:
        if n % base:
            raise ValueError(f"{n} is not a power of {base}")
        n //= base
        e += 1
    return e


@cache
def constants_for_nodes(nodes: int) -> UpdateConstants:
    """Constants of any size Rust's update code allows (including its test-only sizes)."""
    if nodes not in _TREE_R:
        raise ValueError(f"no SnapDeals update for a sector of {nodes} nodes")
    base, sub, top = _TREE_R[nodes]
    return UpdateConstants(
        nodes=nodes,
        partitions=partition_count(nodes),
        challenges=challenge_count(nodes),
        apex_leaves=apex_leaf_count(nodes),
        h=h_default(nodes),
        tree_r=TreeShape(base, sub, top),
    )


@dataclass(frozen=True)
class UpdateProofType:
    """One ``RegisteredUpdateProof`` with its constants."""

    id: RegisteredUpdateProof
    constants: UpdateConstants

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def sector_size(self) -> int:
        return self.constants.sector_size

    @property
    def partitions(self) -> int:
        return self.constants.partitions

    @property
    def challenges_per_partition(self) -> int:
        return self.constants.challenges

    @property
    def size_label(self) -> str:
        """2KiB, 8MiB, 512MiB, 32GiB, 64GiB."""
        return self.name.removeprefix("StackedDrg").removesuffix("V1")

    @property
    def parameter_identifier(self) -> str:
        """SPU ``PublicParams::identifier``; its SHA-256 names the parameter files (snap.md §6.5)."""
        return f"empty_sector_update::PublicParams{{ sector_nodes: {self.constants.nodes} }}"

    @property
    def param_stem(self) -> str:
        """File name without ``.params`` / ``.vk``, as in Filecoin's parameters.json (snap.md §6.5)."""
        digest = hashlib.sha256(self.parameter_identifier.encode()).hexdigest()
        return (
            f"v{PARAMETER_CACHE_VERSION}-empty-sector-update-merkletree-poseidon_hasher-"
            f"{self.constants.tree_r}-{digest}"
        )


UPDATE_PROOF_TYPES = tuple(
    UpdateProofType(p, constants_for_nodes(_SIZE_OF[int(p)] // 32)) for p in RegisteredUpdateProof
)


def update_proof_type(proof: RegisteredUpdateProof | int | str) -> UpdateProofType:
    """By id or name; raises ValueError for anything else."""
    if isinstance(proof, str):
        for t in UPDATE_PROOF_TYPES:
            if t.name == proof:
                return t
        raise ValueError(f"unknown update proof {proof!r}")
    if isinstance(proof, bool) or not 0 <= int(proof) < len(UPDATE_PROOF_TYPES):
        raise ValueError(f"unknown update proof id {proof!r} (valid: 0..{len(UPDATE_PROOF_TYPES) - 1})")
    return UPDATE_PROOF_TYPES[int(proof)]


def for_sector_size(sector_size: int) -> UpdateProofType:
    """The update proof of a seal proof's sector size (every seal flavour of a size maps to one id)."""
    for t in UPDATE_PROOF_TYPES:
        if t.sector_size == sector_size:
            return t
    raise ValueError(f"no update proof for sector size {sector_size}")
