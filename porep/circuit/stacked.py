"""The StackedDRG PoRep circuit of one partition (SPP ``circuit/proof.rs``, ``circuit/params.rs``) in
bellperson's exact allocation and constraint order (circuit.md §9.3), and the C1 → witness mapping.

``synthesize(cs, shape, witness)`` runs the header, then each challenge; ``witness=None`` synthesises the
blank circuit (parameter generation, counting). The node hashes, ``insert`` and ``create_label`` come from
the Poseidon side of the package (``poseidon.poseidon_hash``, ``insertion.insert``,
``create_label.create_label``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from porep.circuit import num
from porep.circuit.boolean import Boolean, reverse_bit_numbering
from porep.circuit.cs import ConstraintSystem
from porep.circuit.por import PathLevel, blank_path, por, poseidon_node, sha256_node
from porep.circuit.uint64 import UInt64

DRG_DEGREE = 6
EXP_DEGREE = 8


@dataclass(frozen=True)
class CircuitShape:
    """What fixes the R1CS: tree D depth, the tree C/R arities per level (base levels, then sub, then top),
    the number of layers and of challenges in the partition."""

    tree_d_depth: int
    tree_arities: tuple[int, ...]
    layers: int
    challenges: int

    @staticmethod
    def for_tree(nodes: int, base: int, sub: int, top: int, layers: int, challenges: int) -> CircuitShape:
        """Shape for ``nodes`` leaves and a base-sub-top tree (sub/top 0 when absent)."""
        base_trees = max(sub, 1) * max(top, 1)
        leaves = nodes // base_trees
        depth = 0
        while base**depth < leaves:
            depth += 1
        assert base**depth == leaves and nodes & (nodes - 1) == 0
        arities = (base,) * depth + ((sub,) if sub else ()) + ((top,) if top else ())
        return CircuitShape(nodes.bit_length() - 1, arities, layers, challenges)

    @staticmethod
    def for_proof_type(pt: object, challenges: int | None = None) -> CircuitShape:
        """Shape of one partition of a ``porep.prooftypes.ProofType``."""
        from porep.prooftypes import ProofType

        assert isinstance(pt, ProofType)
        t = pt.tree
        n = pt.challenges_per_partition if challenges is None else challenges
        return CircuitShape.for_tree(pt.nodes, t.base, t.sub, t.top, pt.layers, n)


@dataclass
class ColumnWitness:
    """A parent's column (rows[l] = label in layer l+1) and its tree-C path."""

    rows: list[int | None]
    path: list[PathLevel]


@dataclass
class ChallengeWitness:
    data_leaf: int | None
    comm_d_path: list[PathLevel]
    drg_parents: list[ColumnWitness]
    exp_parents: list[ColumnWitness]
    challenge: int | None
    comm_r_last_path: list[PathLevel]
    comm_c_path: list[PathLevel]


@dataclass
class PartitionWitness:
    replica_id: int | None
    comm_d: int | None
    comm_r: int | None
    comm_r_last: int | None
    comm_c: int | None
    challenges: list[ChallengeWitness] = field(default_factory=list)


def blank_witness(shape: CircuitShape) -> PartitionWitness:
    """The blank circuit's inputs (no values), same structure as a real one."""

    def column() -> ColumnWitness:
        return ColumnWitness([None] * shape.layers, blank_path(shape.tree_arities))

    ch = [
        ChallengeWitness(
            None,
            blank_path((2,) * shape.tree_d_depth),
            [column() for _ in range(DRG_DEGREE)],
            [column() for _ in range(EXP_DEGREE)],
            None,
            blank_path(shape.tree_arities),
            blank_path(shape.tree_arities),
        )
        for _ in range(shape.challenges)
    ]
    return PartitionWitness(None, None, None, None, None, ch)


# ---------------------------------------------------------------------- synthesis


def _column_hash(cs: ConstraintSystem, rows: list[int]) -> int:
    """hash_single_column: Poseidon of arity L (2 or 11) over the rows."""
    return poseidon_node(cs, rows)


def _create_label(
    cs: ConstraintSystem, replica_id_bits: list[Boolean], parents: list[list[Boolean]], layer: int,
    challenge: UInt64,
) -> int:
    from porep.circuit.create_label import create_label

    return create_label(cs, replica_id_bits, parents, layer, challenge)


def synthesize_header(cs: ConstraintSystem, w: PartitionWitness) -> tuple[list[Boolean], int, int, int]:
    """Inputs 1..3 and the comm_r check: (replica_id bits, comm_d, comm_c, comm_r_last) variables."""
    with cs.namespace("replica_id"):
        rid = num.alloc(cs, w.replica_id)
        num.inputize(cs, rid)
        rid_bits = reverse_bit_numbering(num.to_bits_le(cs, rid))
    comm_d = num.alloc(cs, w.comm_d)
    with cs.namespace("comm_d_input"):
        num.inputize(cs, comm_d)
    comm_r = num.alloc(cs, w.comm_r)
    with cs.namespace("comm_r_input"):
        num.inputize(cs, comm_r)
    comm_r_last = num.alloc(cs, w.comm_r_last)
    comm_c = num.alloc(cs, w.comm_c)
    with cs.namespace("H_comm_c_comm_r_last"):
        h = poseidon_node(cs, [comm_c, comm_r_last])
    with cs.namespace("enforce comm_r = H(comm_c || comm_r_last)"):
        num.equal(cs, comm_r, h)
    return rid_bits, comm_d, comm_c, comm_r_last


def synthesize_challenge(
    cs: ConstraintSystem, layers: int, ch: ChallengeWitness, comm_d: int, comm_c: int, comm_r_last: int,
    replica_id_bits: list[Boolean],
) -> None:
    """One challenge's proof (SPP circuit/params.rs ``Proof::synthesize``)."""
    data_leaf = num.alloc(cs, ch.data_leaf)
    with cs.namespace("comm_d_inclusion"):
        por(cs, data_leaf, comm_d, ch.comm_d_path, sha256_node)

    cols: dict[str, list[list[int]]] = {"drg": [], "exp": []}
    for kind, columns in (("drg", ch.drg_parents), ("exp", ch.exp_parents)):
        for i, col in enumerate(columns):
            assert len(col.rows) == layers
            rows = [num.alloc(cs, r) for r in col.rows]
            with cs.namespace(f"{kind}_parent_{i}_constraint"):
                h = _column_hash(cs, rows)
            with cs.namespace(f"{kind}_parent_{i}_inclusion"):
                por(cs, h, comm_c, col.path, poseidon_node)
            cols[kind].append(rows)

    with cs.namespace("challenge"):
        challenge = UInt64.alloc(cs, ch.challenge)
        challenge.pack_into_input(cs)

    labels: list[int] = []
    for layer in range(1, layers + 1):
        with cs.namespace(f"labeling_{layer}"):
            parents: list[list[Boolean]] = []
            for rows in cols["drg"]:
                with cs.namespace(f"drg_parent_{len(parents)}_bits"):
                    parents.append(reverse_bit_numbering(num.to_bits_le(cs, rows[layer - 1])))
            if layer > 1:
                for rows in cols["exp"]:
                    with cs.namespace(f"exp_parent_{len(parents)}_bits"):
                        parents.append(reverse_bit_numbering(num.to_bits_le(cs, rows[layer - 2])))
            if layer > 1:
                expanded = parents + parents + parents[:9]
            else:
                expanded = parents * 6 + [parents[0]]
            with cs.namespace("create_label"):
                labels.append(_create_label(cs, replica_id_bits, expanded, layer, challenge))

    with cs.namespace("encode_node"):
        encoded = num.add(cs, labels[-1], data_leaf)
    with cs.namespace("comm_r_last_data_inclusion"):
        por(cs, encoded, comm_r_last, ch.comm_r_last_path, poseidon_node)
    with cs.namespace("c_x_column_hash"):
        column_hash = _column_hash(cs, labels)
    with cs.namespace("c_x_inclusion"):
        por(cs, column_hash, comm_c, ch.comm_c_path, poseidon_node)


def synthesize(cs: ConstraintSystem, shape: CircuitShape, witness: PartitionWitness | None = None) -> None:
    """The whole partition circuit; ``witness=None`` gives the blank circuit (use a shape-only ``cs``)."""
    w = witness if witness is not None else blank_witness(shape)
    if len(w.challenges) != shape.challenges:
        raise ValueError(f"{len(w.challenges)} challenges, the shape has {shape.challenges}")
    rid_bits, comm_d, comm_c, comm_r_last = synthesize_header(cs, w)
    for i, ch in enumerate(w.challenges):
        with cs.namespace(f"challenge_{i}"):
            synthesize_challenge(cs, shape.layers, ch, comm_d, comm_c, comm_r_last, rid_bits)


def blank_system(pt: object) -> ConstraintSystem:
    """The blank circuit of one partition of a ``porep.prooftypes.ProofType``, rows recorded without values:
    what parameter generation needs (all flavours of a size share it)."""
    cs = ConstraintSystem(witness=False)
    synthesize(cs, CircuitShape.for_proof_type(pt))
    return cs


# ---------------------------------------------------------------------- C1 -> witness (circuit.md §9.3)


def _levels(proof: object) -> list[PathLevel]:
    """A C1 merkle proof's levels (base, then sub, then top) as PathLevels."""
    from porep.c1.models import SingleProof, SubProof, TopProof, domain_to_int

    if isinstance(proof, SingleProof):
        groups = [proof.path]
    elif isinstance(proof, SubProof):
        groups = [proof.base_proof, proof.sub_proof]
    elif isinstance(proof, TopProof):
        groups = [proof.base_proof, proof.sub_proof, proof.top_proof]
    else:
        raise TypeError(f"not a merkle proof: {type(proof).__name__}")
    return [
        PathLevel(len(e.hashes) + 1, [domain_to_int(h) for h in e.hashes], e.index) for g in groups for e in g
    ]


def partition_witness(c1: object, k: int) -> tuple[CircuitShape, PartitionWitness]:
    """The circuit inputs of partition ``k`` of a C1 (SPP ``StackedCompound::circuit`` and
    ``Proof::from(vanilla)``): header values from the C1 and proof 0, per challenge the data leaf, the
    challenge (labeling proof 0's node), the paths and the parents' columns."""
    from porep.c1.models import SealCommitPhase1Output, domain_to_int

    assert isinstance(c1, SealCommitPhase1Output)
    pt = c1.proof_type
    if not 0 <= k < len(c1.vanilla_proofs):
        raise ValueError(f"partition {k} out of range (the C1 has {len(c1.vanilla_proofs)})")
    proofs = c1.vanilla_proofs[k]
    shape = CircuitShape.for_proof_type(pt, len(proofs))
    p0 = proofs[0]
    w = PartitionWitness(
        replica_id=domain_to_int(c1.replica_id),
        comm_d=domain_to_int(c1.comm_d),
        comm_r=domain_to_int(c1.comm_r),
        comm_r_last=domain_to_int(p0.comm_r_last_proof.root),
        comm_c=domain_to_int(p0.replica_column_proofs.c_x.inclusion_proof.root),
    )

    def column(cp: object) -> ColumnWitness:
        return ColumnWitness(
            [domain_to_int(r) for r in cp.column.rows],  # type: ignore[attr-defined]
            _levels(cp.inclusion_proof),  # type: ignore[attr-defined]
        )

    for p in proofs:
        rc = p.replica_column_proofs
        w.challenges.append(
            ChallengeWitness(
                data_leaf=domain_to_int(p.comm_d_proofs.leaf),
                comm_d_path=_levels(p.comm_d_proofs),
                drg_parents=[column(c) for c in rc.drg_parents],
                exp_parents=[column(c) for c in rc.exp_parents],
                challenge=p.labeling_proofs[0].node,
                comm_r_last_path=_levels(p.comm_r_last_proof),
                comm_c_path=_levels(rc.c_x.inclusion_proof),
            )
        )
    return shape, w


def synthesize_c1(c1: object, k: int, record: bool = True) -> ConstraintSystem:
    """Synthesise partition ``k`` of a C1 with its witness."""
    shape, w = partition_witness(c1, k)
    cs = ConstraintSystem(witness=True, record=record)
    synthesize(cs, shape, w)
    return cs


# ---------------------------------------------------------------------- counting without materialising


@dataclass(frozen=True)
class PartitionStats:
    """Shape of a partition's R1CS: rows (circuit only; bellperson adds ``num_inputs`` input rows), variables,
    nnz per matrix (circuit rows) and density (aux variables with an A / B entry; B inputs)."""

    num_constraints: int
    num_inputs: int
    num_aux: int
    nnz: tuple[int, int, int]
    a_aux: int
    b_input: int
    b_aux: int

    @property
    def num_constraints_total(self) -> int:
        return self.num_constraints + self.num_inputs


def _used(cs: ConstraintSystem, matrix: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """(aux variables in [lo, hi) with an entry in ``matrix``, input variables with one): sorted unique."""
    v = np.fromiter(cs._m[matrix].vars, dtype=np.int64, count=len(cs._m[matrix].vars))
    aux = np.unique(v[(v >= lo) & (v < hi)])
    inputs = np.unique(v[v < 0])
    return aux, inputs


def partition_stats(shape: CircuitShape) -> PartitionStats:
    """Counts of the whole partition from the header plus ONE challenge, synthesised blank: every challenge
    is the same code over its own variables and the same header variables, so the totals are header +
    challenges x one challenge, and a header variable's density is what the header and one challenge give
    it. Exact, with ~1/challenges of the memory and time of a full synthesis (32GiB: one challenge is 7.2 M
    rows)."""
    one = CircuitShape(shape.tree_d_depth, shape.tree_arities, shape.layers, 1)
    cs = ConstraintSystem(witness=False, record=True)
    w = blank_witness(one)
    rid_bits, comm_d, comm_c, comm_r_last = synthesize_header(cs, w)
    h_rows, h_aux, h_in, h_nnz = cs.num_constraints, cs.num_aux, cs.num_inputs, cs.nnz
    with cs.namespace("challenge_0"):
        synthesize_challenge(cs, one.layers, w.challenges[0], comm_d, comm_c, comm_r_last, rid_bits)
    n = shape.challenges
    c_rows, c_aux, c_in = cs.num_constraints - h_rows, cs.num_aux - h_aux, cs.num_inputs - h_in
    c_nnz = tuple(x - y for x, y in zip(cs.nnz, h_nnz, strict=True))
    dens = []
    for matrix in (0, 1):
        head, _ = _used(cs, matrix, 0, h_aux)
        own, inputs = _used(cs, matrix, h_aux, cs.num_aux)
        dens.append((len(head) + n * len(own), len(inputs)))
    # B inputs: only ONE appears in B in this circuit; per-challenge inputs would scale, so check it
    _, b_inputs = _used(cs, 1, 0, 0)
    assert list(b_inputs) == [-1], "an input other than ONE in B: per-challenge B inputs would need scaling"
    return PartitionStats(
        num_constraints=h_rows + n * c_rows,
        num_inputs=h_in + n * c_in,
        num_aux=h_aux + n * c_aux,
        nnz=(h_nnz[0] + n * c_nnz[0], h_nnz[1] + n * c_nnz[1], h_nnz[2] + n * c_nnz[2]),
        a_aux=dens[0][0],
        b_input=dens[1][1],
        b_aux=dens[1][0],
    )
