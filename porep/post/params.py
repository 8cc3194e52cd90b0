"""PoSt proof types (``RegisteredPoStProof`` ids 0–14) and the shape each one gives the FallbackPoSt circuit.

Two counts describe a PoSt: what the vanilla proofs carry (Curio sends one bincode ``FallbackPoStSectorProof``
per challenged sector) and what the circuit's public parameters say (``fallback::PublicParams``: sectors per
partition and challenges per sector). They differ for WinningPoSt: its one sector carries 66 inclusion proofs,
but rust-fil-proofs' ``winning_post_setup_params`` shapes the circuit as 66 "sectors" of 1 challenge each
(``param_sector_count = challenge_count / sector_count``), each repeating the sector's comm_r check.
WindowPoSt keeps the vanilla shape: ``WINDOW_POST_SECTOR_COUNT[size]`` sectors of 10 challenges per
partition (docs post.md §1).

The parameter file stem is derived here from the public parameters' ``identifier()`` (SHA-256, as
``parameter_cache.rs`` does) and checked in the tests against Filecoin's ``parameters.json``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from porep.prooftypes import PARAMETER_CACHE_VERSION, GiB, KiB, MiB, TreeShape

__all__ = [
    "POST_PROOF_TYPES",
    "PoStKind",
    "PoStProofType",
    "RegisteredPoStProof",
    "WINDOW_CHALLENGES",
    "WINDOW_SECTORS",
    "WINNING_CHALLENGES",
    "WINNING_SECTORS",
    "post_proof_type",
]

NODE_SIZE = 32
WINNING_CHALLENGES = 66  # WINNING_POST_CHALLENGE_COUNT: inclusion proofs of the one winning sector
WINNING_SECTORS = 1  # WINNING_POST_SECTOR_COUNT
WINDOW_CHALLENGES = 10  # WINDOW_POST_CHALLENGE_COUNT: per sector
# WINDOW_POST_SECTOR_COUNT: sectors per WindowPoSt partition (must match the miner actor's scheduling)
WINDOW_SECTORS = {2 * KiB: 2, 8 * MiB: 2, 512 * MiB: 2, 32 * GiB: 2349, 64 * GiB: 2300}
_SIZES = ((2 * KiB, "2KiB", TreeShape(8, 0, 0)), (8 * MiB, "8MiB", TreeShape(8, 0, 0)),
          (512 * MiB, "512MiB", TreeShape(8, 0, 0)), (32 * GiB, "32GiB", TreeShape(8, 8, 0)),
          (64 * GiB, "64GiB", TreeShape(8, 8, 2)))


class RegisteredPoStProof(IntEnum):
    """go-state-types ``abi.RegisteredPoStProof`` (the number Curio's engine call carries). Go's Window
    ``V1_1`` ids are rust-filecoin-proofs-api's ``V1_2`` (the grindability fix, API version 1.2.0)."""

    StackedDrgWinning2KiBV1 = 0
    StackedDrgWinning8MiBV1 = 1
    StackedDrgWinning512MiBV1 = 2
    StackedDrgWinning32GiBV1 = 3
    StackedDrgWinning64GiBV1 = 4
    StackedDrgWindow2KiBV1 = 5
    StackedDrgWindow8MiBV1 = 6
    StackedDrgWindow512MiBV1 = 7
    StackedDrgWindow32GiBV1 = 8
    StackedDrgWindow64GiBV1 = 9
    StackedDrgWindow2KiBV1_1 = 10
    StackedDrgWindow8MiBV1_1 = 11
    StackedDrgWindow512MiBV1_1 = 12
    StackedDrgWindow32GiBV1_1 = 13
    StackedDrgWindow64GiBV1_1 = 14


class PoStKind(StrEnum):
    WINNING = "winning"
    WINDOW = "window"


@dataclass(frozen=True)
class PoStProofType:
    """One ``RegisteredPoStProof``: its kind, sector size, tree shape, API version and both shapes (what a
    request carries, what the circuit proves). A request proves one partition: ``partitions`` is 1."""

    id: RegisteredPoStProof
    kind: PoStKind
    sector_size: int
    size_label: str
    tree: TreeShape
    api_version: str  # "1.0.0" or "1.2.0": only WindowPoSt's challenge index depends on it

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def nodes(self) -> int:
        return self.sector_size // NODE_SIZE

    @property
    def partitions(self) -> int:
        """Partitions one engine request proves: WinningPoSt has one; Curio sends each WindowPoSt partition
        as its own request."""
        return 1

    # -- what a request carries ------------------------------------------------------------------------

    @property
    def vanilla_sectors(self) -> int:
        """Vanilla sector proofs a request carries at most (WinningPoSt: exactly one)."""
        return WINNING_SECTORS if self.kind is PoStKind.WINNING else WINDOW_SECTORS[self.sector_size]

    @property
    def vanilla_challenges(self) -> int:
        """Inclusion proofs in each vanilla sector proof."""
        return WINNING_CHALLENGES if self.kind is PoStKind.WINNING else WINDOW_CHALLENGES

    # -- what the circuit proves (fallback::PublicParams) -----------------------------------------------

    @property
    def circuit_sectors(self) -> int:
        """``sector_count`` of the circuit: WinningPoSt 66 (one per challenge), WindowPoSt the partition's."""
        if self.kind is PoStKind.WINNING:
            return WINNING_CHALLENGES // WINNING_SECTORS
        return WINDOW_SECTORS[self.sector_size]

    @property
    def circuit_challenges(self) -> int:
        """``challenge_count`` of the circuit: per circuit sector (WinningPoSt 1, WindowPoSt 10)."""
        if self.kind is PoStKind.WINNING:
            return WINNING_CHALLENGES // self.circuit_sectors
        return WINDOW_CHALLENGES

    @property
    def base_depth(self) -> int:
        """Levels of one base tree of tree R_last."""
        leaves, depth = self.nodes // self.tree.base_tree_count, 0
        while self.tree.base**depth < leaves:
            depth += 1
        assert self.tree.base**depth == leaves
        return depth

    @property
    def path_arities(self) -> tuple[int, ...]:
        """Arity of every level of a tree-R_last path: base levels, then sub, then top."""
        t = self.tree
        return (t.base,) * self.base_depth + ((t.sub,) if t.sub else ()) + ((t.top,) if t.top else ())

    @property
    def parameter_identifier(self) -> str:
        """``fallback::PublicParams::identifier``; its SHA-256 names the parameter files (no API version in
        it: a size's Window V1 and V1_1 share one file pair)."""
        return (
            f"FallbackPoSt::PublicParams{{sector_size: {self.sector_size}, challenge_count: "
            f"{self.circuit_challenges}, sector_count: {self.circuit_sectors}}}"
        )

    @property
    def param_stem(self) -> str:
        """File name without ``.params`` / ``.vk`` (``FallbackPoStCompound::cache_prefix`` + the digest)."""
        digest = hashlib.sha256(self.parameter_identifier.encode()).hexdigest()
        return (
            f"v{PARAMETER_CACHE_VERSION}-proof-of-spacetime-fallback-merkletree-poseidon_hasher-"
            f"{self.tree}-{digest}"
        )


def _build() -> tuple[PoStProofType, ...]:
    out = []
    for p in RegisteredPoStProof:
        kind = PoStKind.WINNING if "Winning" in p.name else PoStKind.WINDOW
        size, label, tree = next(s for s in _SIZES if f"{kind.value.capitalize()}{s[1]}V" in p.name)
        version = "1.2.0" if p.name.endswith("V1_1") else "1.0.0"
        out.append(PoStProofType(p, kind, size, label, tree, version))
    return tuple(out)


POST_PROOF_TYPES: tuple[PoStProofType, ...] = _build()
"""Indexed by RegisteredPoStProof id."""


def post_proof_type(proof: RegisteredPoStProof | int | str) -> PoStProofType:
    """By id (0–14) or Go name; ValueError for anything else."""
    if isinstance(proof, str):
        for t in POST_PROOF_TYPES:
            if t.name == proof:
                return t
        raise ValueError(f"unknown RegisteredPoStProof name {proof[:80]!r}")
    if isinstance(proof, bool) or not isinstance(proof, int) or not 0 <= proof < len(POST_PROOF_TYPES):
        raise ValueError(f"unknown RegisteredPoStProof id {proof!r} (valid: 0..{len(POST_PROOF_TYPES) - 1})")
    return POST_PROOF_TYPES[int(proof)]


def for_kind_and_size(kind: PoStKind | str, sector_size: int) -> PoStProofType:
    """The newest proof type of a kind and size (WindowPoSt: the V1_1 id); ValueError without one."""
    kind = PoStKind(kind)
    found = [t for t in POST_PROOF_TYPES if t.kind is kind and t.sector_size == sector_size]
    if not found:
        raise ValueError(f"no {kind.value} PoSt for sector size {sector_size}")
    return found[-1]
