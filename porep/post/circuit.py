"""The FallbackPoSt circuit (rust-fil-proofs ``storage-proofs-post/src/fallback/circuit.rs``) in bellperson's
exact allocation and constraint order, and the checked request → witness mapping (docs post.md §5).

The circuit is ``sectors`` copies of one sector gadget; nothing is shared between sectors but ONE:

1. alloc comm_r_last, comm_c, comm_r (aux); ``inputize`` comm_r (an input and ``x·1 = comm_r``);
2. Poseidon-2(comm_c, comm_r_last) (311 rows, PoRep's header hash) and ``comm_r·1 = hash``;
3. per challenge, storage-proofs' PoR with a private root: alloc the leaf, the tree-R_last path (per level:
   index bits, siblings, insert, Poseidon of the arity), the index bits packed into one input, and
   ``computed·1 = comm_r_last`` (``porep.circuit.por.por``: the same gadget as PoRep's tree-R proof).

rust-fil-proofs synthesises the sectors in parallel chunks (``synthesize_extendable``, one temporary ONE per
chunk, dropped when the chunks are joined); the joined system numbers inputs, aux and rows exactly as this
sequential synthesis does, chunk after chunk in sector order.

Witness (``FallbackPoStCompound::circuit``): WindowPoSt sector ``i`` is the request's ``i``-th vanilla proof,
and a partition with fewer sectors repeats its last one; WinningPoSt's one vanilla sector is unrolled into 66
circuit sectors of one inclusion proof each, every one with the sector's comm_r, comm_c and comm_r_last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from porep.circuit import num
from porep.circuit.cs import ConstraintSystem
from porep.circuit.por import PathLevel, blank_path, por, poseidon_node
from porep.post.params import PoStKind, PoStProofType, post_proof_type
from porep.post.proof import MerkleProof

__all__ = [
    "PoStShape",
    "SectorWitness",
    "blank_sector",
    "circuit_sectors",
    "synthesize",
    "synthesize_request",
    "synthesize_sector",
]


@dataclass(frozen=True)
class PoStShape:
    """What fixes the R1CS: the arity of every tree-R_last path level, sectors and challenges per sector."""

    path_arities: tuple[int, ...]
    sectors: int
    challenges: int

    @staticmethod
    def for_proof_type(pt: PoStProofType | int | str, sectors: int | None = None) -> PoStShape:
        """The circuit of ``pt`` (``sectors``: another sector count, for the tests' small shapes)."""
        t = pt if isinstance(pt, PoStProofType) else post_proof_type(pt)
        n = t.circuit_sectors if sectors is None else sectors
        return PoStShape(t.path_arities, n, t.circuit_challenges)


@dataclass
class SectorWitness:
    """One circuit sector's values (None: the blank circuit)."""

    comm_r: int | None
    comm_c: int | None
    comm_r_last: int | None
    leaves: list[int | None] = field(default_factory=list)
    paths: list[list[PathLevel]] = field(default_factory=list)


def blank_sector(shape: PoStShape) -> SectorWitness:
    return SectorWitness(
        None, None, None, [None] * shape.challenges,
        [blank_path(shape.path_arities) for _ in range(shape.challenges)],
    )


def synthesize_sector(cs: ConstraintSystem, shape: PoStShape, w: SectorWitness) -> None:
    """One sector (``impl Circuit for &Sector``)."""
    if len(w.leaves) != shape.challenges or len(w.paths) != shape.challenges:
        raise ValueError(f"a sector has {shape.challenges} challenges, got {len(w.leaves)} leaves")
    comm_r_last = num.alloc(cs, w.comm_r_last)
    comm_c = num.alloc(cs, w.comm_c)
    comm_r = num.alloc(cs, w.comm_r)
    with cs.namespace("comm_r_input"):
        num.inputize(cs, comm_r)
    with cs.namespace("H_comm_c_comm_r_last"):
        h = poseidon_node(cs, [comm_c, comm_r_last])
    with cs.namespace("enforce_comm_c_comm_r_last_hash_comm_r"):
        num.equal(cs, comm_r, h)
    for j, (leaf_value, path) in enumerate(zip(w.leaves, w.paths, strict=True)):
        if [lv.arity for lv in path] != list(shape.path_arities):
            raise ValueError(f"challenge {j}: path of arities {[lv.arity for lv in path]}")
        with cs.namespace(f"challenge_inclusion_{j}"):
            leaf = num.alloc(cs, leaf_value)
            por(cs, leaf, comm_r_last, path, poseidon_node)


def synthesize(cs: ConstraintSystem, shape: PoStShape, sectors: list[SectorWitness] | None = None) -> None:
    """The whole circuit; ``sectors=None`` gives the blank circuit (use a shape-only ``cs``)."""
    if sectors is None:
        sectors = [blank_sector(shape) for _ in range(shape.sectors)]
    if len(sectors) != shape.sectors:
        raise ValueError(f"the circuit has {shape.sectors} sectors, got {len(sectors)}")
    for i, w in enumerate(sectors):
        with cs.namespace(f"sector_{i}"):
            synthesize_sector(cs, shape, w)


# ---------------------------------------------------------------------- request → witness


def _int(value: bytes) -> int:
    return int.from_bytes(value, "little")


def path_levels(mp: MerkleProof, arities: tuple[int, ...]) -> list[PathLevel]:
    """A MerkleProof's levels (base, then sub, then top) as the circuit reads them."""
    elements = [el for seg in mp.segments for el in seg]
    if len(elements) != len(arities):
        raise ValueError(f"a path of {len(elements)} levels, the tree has {len(arities)}")
    return [
        PathLevel(a, [_int(h) for h in el.hashes], el.index) for el, a in zip(elements, arities, strict=True)
    ]


def circuit_sectors(checked: object) -> list[SectorWitness]:
    """The circuit's sectors of a checked request (``porep.post.verify.CheckedPoSt``), padded as Rust pads."""
    pt: PoStProofType = checked.proof_type  # type: ignore[attr-defined]
    proofs = checked.proofs  # type: ignore[attr-defined]
    arities = pt.path_arities
    out: list[SectorWitness] = []
    for p in proofs:
        sp = p.sectors[0]
        comm = (_int(p.comm_r), _int(sp.comm_c), _int(sp.comm_r_last))
        mps = list(sp.inclusion_proofs)
        if pt.kind is PoStKind.WINNING:  # one circuit sector per inclusion proof
            out += [SectorWitness(*comm, [_int(mp.leaf)], [path_levels(mp, arities)]) for mp in mps]
        else:
            leaves: list[int | None] = [_int(mp.leaf) for mp in mps]
            out.append(SectorWitness(*comm, leaves, [path_levels(mp, arities) for mp in mps]))
    if not out:
        raise ValueError("a PoSt request without sectors")
    while len(out) < pt.circuit_sectors:
        out.append(out[-1])
    if len(out) != pt.circuit_sectors:
        raise ValueError(f"{len(out)} circuit sectors, {pt.name} has {pt.circuit_sectors}")
    return out


def synthesize_request(checked: object, *, record: bool = True) -> ConstraintSystem:
    """The circuit with the request's witness (direct synthesis: the reference the vectorised witness and the
    pre-compiled circuit are checked against)."""
    pt: PoStProofType = checked.proof_type  # type: ignore[attr-defined]
    cs = ConstraintSystem(witness=True, record=record)
    synthesize(cs, PoStShape.for_proof_type(pt), circuit_sectors(checked))
    return cs
