"""RegisteredSealProof ids 0–19 and everything a proof type fixes: sizes, layers, partitions, challenges,
tree shape, porep_id and the Groth16 parameter file names.

Sources (docs porep.md §1.7, §1.8, §7.4): rust-filecoin-proofs-api ``src/registry.rs`` (ids, versions,
features, partitions), rust-fil-proofs ``filecoin-proofs/src/constants.rs`` (layers, partitions, minimum
challenges, NI partitions, tree shapes) and ``parameters.rs`` (challenges per partition =
ceil(minimum / partitions)). The parameter file stem is derived here from first principles — SHA-256 of
the public-parameter identifier string (``stacked/vanilla/params.rs``) — and checked in the tests against
rust-fil-proofs ``parameters.json``, so a mistake in any dimension shows up as a wrong file name.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from enum import IntEnum

from porep.ids import porep_id as _porep_id

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
NODE_SIZE = 32
DRG_DEGREE = 6  # BASE_DEGREE: DRG parents per node
EXP_DEGREE = 8  # expander parents per node (layers ≥ 2)
TOTAL_PARENTS = 37  # parents hashed into each label (SPP vanilla/proof.rs)
SINGLE_PARTITION_PROOF_LEN = 192
PARAMETER_CACHE_VERSION = 28


class RegisteredSealProof(IntEnum):
    """Ids are append-only and equal go-state-types ``abi.RegisteredSealProof``; names are Rust's (JSON)."""

    StackedDrg2KiBV1 = 0
    StackedDrg8MiBV1 = 1
    StackedDrg512MiBV1 = 2
    StackedDrg32GiBV1 = 3
    StackedDrg64GiBV1 = 4
    StackedDrg2KiBV1_1 = 5
    StackedDrg8MiBV1_1 = 6
    StackedDrg512MiBV1_1 = 7
    StackedDrg32GiBV1_1 = 8
    StackedDrg64GiBV1_1 = 9
    StackedDrg2KiBV1_1_Feat_SyntheticPoRep = 10
    StackedDrg8MiBV1_1_Feat_SyntheticPoRep = 11
    StackedDrg512MiBV1_1_Feat_SyntheticPoRep = 12
    StackedDrg32GiBV1_1_Feat_SyntheticPoRep = 13
    StackedDrg64GiBV1_1_Feat_SyntheticPoRep = 14
    StackedDrg2KiBV1_2_Feat_NonInteractivePoRep = 15
    StackedDrg8MiBV1_2_Feat_NonInteractivePoRep = 16
    StackedDrg512MiBV1_2_Feat_NonInteractivePoRep = 17
    StackedDrg32GiBV1_2_Feat_NonInteractivePoRep = 18
    StackedDrg64GiBV1_2_Feat_NonInteractivePoRep = 19


@dataclass(frozen=True)
class TreeShape:
    """Arities of tree R_last / tree C: base trees of arity ``base``, joined by ``sub`` and ``top`` levels."""

    base: int
    sub: int
    top: int

    def __str__(self) -> str:
        return f"{self.base}-{self.sub}-{self.top}"

    @property
    def variant(self) -> str:
        """Which ``ProofData`` variant a merkle proof of this shape serialises as."""
        return "Single" if self.sub == 0 else ("Sub" if self.top == 0 else "Top")

    @property
    def base_tree_count(self) -> int:
        return max(self.sub, 1) * max(self.top, 1)


@dataclass(frozen=True)
class _SizeClass:
    size: int
    label: str
    layers: int
    partitions: int  # interactive (incl. synthetic)
    min_challenges: int
    ni_partitions: int
    ni_min_challenges: int
    tree: TreeShape


# RFP constants.rs: LAYERS, POREP_PARTITIONS, get_porep_{,non_}interactive_minimum_challenges,
# get_porep_non_interactive_partitions and the SectorShape* aliases, for the five published sizes.
_SIZES = (
    _SizeClass(2 * KiB, "2KiB", 2, 1, 2, 13, 26, TreeShape(8, 0, 0)),
    _SizeClass(8 * MiB, "8MiB", 2, 1, 2, 13, 26, TreeShape(8, 0, 0)),
    _SizeClass(512 * MiB, "512MiB", 2, 1, 2, 13, 26, TreeShape(8, 0, 0)),
    _SizeClass(32 * GiB, "32GiB", 11, 10, 176, 126, 2253, TreeShape(8, 8, 0)),
    _SizeClass(64 * GiB, "64GiB", 11, 10, 176, 126, 2253, TreeShape(8, 8, 2)),
)
_GROUPS = (  # (name suffix, api version, features), in id order
    ("V1", "1.0.0", ()),
    ("V1_1", "1.1.0", ()),
    ("V1_1_Feat_SyntheticPoRep", "1.2.0", ("SyntheticPoRep",)),
    ("V1_2_Feat_NonInteractivePoRep", "1.2.0", ("NonInteractivePoRep",)),
)


@dataclass(frozen=True)
class ProofType:
    """Everything fixed by a RegisteredSealProof. A C1 of this type has ``partitions`` × ``challenges``
    vanilla proofs, each with tree-D paths of ``tree_d_depth`` and tree-C/R paths of ``base_depth`` (+ one
    sub and one top level where the shape has them)."""

    proof: RegisteredSealProof
    sector_size: int
    size_label: str
    layers: int
    partitions: int
    challenges_per_partition: int
    minimum_challenges: int
    api_version: str
    features: tuple[str, ...]
    tree: TreeShape

    @property
    def id(self) -> int:
        return int(self.proof)

    @property
    def name(self) -> str:
        return self.proof.name

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def porep_id(self) -> bytes:
        return _porep_id(self.id)

    @property
    def is_synthetic(self) -> bool:
        return "SyntheticPoRep" in self.features

    @property
    def is_non_interactive(self) -> bool:
        return "NonInteractivePoRep" in self.features

    @property
    def uses_legacy_graph(self) -> bool:
        """API 1.0.0 graphs put the predecessor last among the DRG parents (porep.md §9.1)."""
        return self.api_version == "1.0.0"

    @property
    def vanilla_proofs_key(self) -> str:
        """The ``VanillaSealProof`` variant: every flavour of a size maps to ``StackedDrg<size>V1``."""
        return f"StackedDrg{self.size_label}V1"

    @property
    def tree_d_depth(self) -> int:
        """Levels of the binary tree D (= siblings in a comm_d path)."""
        return self.nodes.bit_length() - 1

    @property
    def base_depth(self) -> int:
        """Levels of one base tree of tree C / R_last."""
        leaves = self.nodes // self.tree.base_tree_count
        depth = round(math.log(leaves, self.tree.base))
        assert self.tree.base**depth == leaves
        return depth

    @property
    def sub_depth(self) -> int:
        return 1 if self.tree.sub else 0

    @property
    def top_depth(self) -> int:
        return 1 if self.tree.top else 0

    @property
    def total_challenges(self) -> int:
        return self.partitions * self.challenges_per_partition

    @property
    def proof_len(self) -> int:
        """Bytes of the C2 output: one 192-byte Groth16 proof per partition (NI ones get aggregated later)."""
        return SINGLE_PARTITION_PROOF_LEN * self.partitions

    @property
    def parameter_identifier(self) -> str:
        """``PublicParams::identifier`` of stacked/vanilla/params.rs; its SHA-256 names the parameter files.
        It has no porep_id, so all four flavours of a size share parameters."""
        graph = (
            f"stacked_graph::StackedGraph{{expansion_degree: {EXP_DEGREE} base_graph: "
            f"drgraph::BucketGraph{{size: {self.nodes}; degree: {DRG_DEGREE}; hasher: poseidon_hasher}} }}"
        )
        return (
            f"layered_drgporep::PublicParams{{ graph: {graph}, challenges: LayerChallenges {{ layers: "
            f"{self.layers}, max_count: {self.challenges_per_partition} }}, tree: merkletree-poseidon_hasher-"
            f"{self.tree} }}"
        )

    @property
    def param_stem(self) -> str:
        """File name without ``.params`` / ``.vk`` (parameter_cache.rs + circuit ``cache_prefix``)."""
        digest = hashlib.sha256(self.parameter_identifier.encode()).hexdigest()
        return (
            f"v{PARAMETER_CACHE_VERSION}-stacked-proof-of-replication-merkletree-poseidon_hasher-"
            f"{self.tree}-sha256_hasher-{digest}"
        )


def _build() -> tuple[ProofType, ...]:
    table = []
    for suffix, version, features in _GROUPS:
        for sc in _SIZES:
            proof = RegisteredSealProof[f"StackedDrg{sc.label}{suffix}"]
            ni = "NonInteractivePoRep" in features
            partitions = sc.ni_partitions if ni else sc.partitions
            minimum = sc.ni_min_challenges if ni else sc.min_challenges
            table.append(
                ProofType(
                    proof=proof,
                    sector_size=sc.size,
                    size_label=sc.label,
                    layers=sc.layers,
                    partitions=partitions,
                    challenges_per_partition=-(-minimum // partitions),
                    minimum_challenges=minimum,
                    api_version=version,
                    features=features,
                    tree=sc.tree,
                )
            )
    table.sort(key=lambda t: t.id)
    assert [t.id for t in table] == list(range(20))
    return tuple(table)


PROOF_TYPES: tuple[ProofType, ...] = _build()
"""Indexed by RegisteredSealProof id."""

_BY_NAME = {t.name: t for t in PROOF_TYPES}


def proof_type(proof: RegisteredSealProof | int | str) -> ProofType:
    """Look a proof type up by enum, id (0–19) or Rust name (``"StackedDrg32GiBV1_1"``)."""
    if isinstance(proof, str):
        try:
            return _BY_NAME[proof]
        except KeyError:
            raise ValueError(f"unknown RegisteredSealProof name {proof[:80]!r}") from None
    if isinstance(proof, bool) or not isinstance(proof, int) or not 0 <= proof < len(PROOF_TYPES):
        raise ValueError(f"unknown RegisteredSealProof id {proof!r}")
    return PROOF_TYPES[int(proof)]


SECTOR_SIZE_LABELS = tuple(sc.label for sc in _SIZES)
_UNITS = {"": 1, "k": KiB, "m": MiB, "g": GiB}


def parse_sector_size(text: str) -> str:
    """The label (``2KiB`` … ``64GiB``) of a sector size in any spelling Filecoin's tools use: ``2KiB``,
    ``2kib``, lotus's ``2K`` / ``32G`` (and ``2KB``: lotus reads every unit as binary), or bytes
    (``2048``, ``34359738368``). ValueError naming the sizes otherwise. One parser, so every command takes
    the same spellings."""
    m = re.fullmatch(r"(\d{1,20})(?:([kmg])(?:i?b)?|b)?", text.strip().replace(" ", "").lower())
    size = int(m[1]) * _UNITS[m[2] or ""] if m else None
    label = next((sc.label for sc in _SIZES if sc.size == size), None)
    if label is None:
        raise ValueError(
            f"must be one of {', '.join(SECTOR_SIZE_LABELS)} (or lotus's 2K / 32G, or bytes), "
            f"got {text[:40]!r}"
        )
    return label
