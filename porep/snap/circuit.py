"""The EmptySectorUpdate circuit of one partition (rust-fil-proofs ``storage-proofs-update/src/circuit.rs``,
``gadgets.rs``; docs snap.md §6) in bellperson's exact allocation and constraint order, and the
ProofData → witness mapping.

Why a module of its own over ``porep.circuit``'s gadgets: the update circuit is a different composition of
the same pieces (neptune Poseidon with the SnapDeals tag 2^40 for phi, rho and the challenge digests; the
MerkleTree-tag Poseidon for comm_r and tree R; the sha254 node for tree D and the apex tree; insertion,
``select``, pack_bits), with one PoR form PoRep does not use: ``por_no_challenge_input``, whose index bits
are the challenge's existing bits and whose siblings are allocated before the path is hashed.

``synthesize(cs, consts, witness)`` runs the header (public inputs, phi, the comm_r checks, the apex PoR,
the challenge bits), then each challenge; ``witness=None`` gives the blank circuit (parameters, counting).
With a witness, the native assertions Rust makes before synthesis (step 0 of snap.md §6.2) raise
:class:`UpdateWitnessError`; an unsatisfied row is named by its namespace (``ConstraintSystem.label``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from porep.circuit import num
from porep.circuit.boolean import Boolean, alloc_bit, field_into_allocated_bits_le
from porep.circuit.cs import ONE, ConstraintSystem, R
from porep.circuit.insertion import insert, select
from porep.circuit.multipack import pack_bits
from porep.circuit.por import Hasher, poseidon_node, sha256_node
from porep.circuit.poseidon import poseidon_hash
from porep.circuit.stacked import PartitionStats, _used
from porep.snap.params import H_SELECT_BITS, UpdateConstants, hs, update_proof_type
from porep.snap.proof import PartitionProof, decode_partition_proof
from porep.snap.randomness import GEN_RANDOMNESS_TAG

__all__ = [
    "ChallengeWitness",
    "PartitionWitness",
    "UpdateWitnessError",
    "blank_system",
    "blank_witness",
    "partition_stats",
    "partition_witness",
    "synthesize",
    "synthesize_request",
]


class UpdateWitnessError(ValueError):
    """A witness that Rust's synthesis would refuse before any constraint (an ``assert!`` there)."""


# ---------------------------------------------------------------------- witness


@dataclass
class ChallengeWitness:
    """One challenge's three Merkle proofs as the circuit takes them: leaves and, per path level, the
    siblings (tree R: base, sub, top levels; tree D: one sibling per level, all cbl of them)."""

    leaf_r_old: int | None
    path_r_old: list[list[int | None]]
    leaf_d_new: int | None
    path_d_new: list[int | None]
    leaf_r_new: int | None
    path_r_new: list[list[int | None]]


@dataclass
class PartitionWitness:
    """Public inputs (``k_and_h_select`` and the three commitments) and private inputs of a partition."""

    k_and_h_select: int | None
    comm_r_old: int | None
    comm_d_new: int | None
    comm_r_new: int | None
    comm_c: int | None
    root_r_old: int | None
    root_r_new: int | None
    apex_leafs: list[int | None]
    challenges: list[ChallengeWitness] = field(default_factory=list)

    def public_inputs(self) -> list[int | None]:
        """The four inputs after ONE, in the circuit's order (snap.md §6.1)."""
        return [self.k_and_h_select, self.comm_r_old, self.comm_d_new, self.comm_r_new]


def tree_r_arities(consts: UpdateConstants) -> list[int]:
    """The arity of each tree-R path level: base levels, then sub, then top."""
    return [arity for arity, levels in consts.tree_r_segments() for _ in range(levels)]


def blank_witness(consts: UpdateConstants, challenges: int | None = None) -> PartitionWitness:
    """The blank circuit's inputs (no values), with the structure of a real one."""
    n = consts.challenges if challenges is None else challenges
    r_path = [[None] * (a - 1) for a in tree_r_arities(consts)]

    def challenge() -> ChallengeWitness:
        return ChallengeWitness(
            None, [list(s) for s in r_path], None, [None] * consts.challenge_bits, None,
            [list(s) for s in r_path],
        )

    return PartitionWitness(
        None, None, None, None, None, None, None, [None] * consts.apex_leaves, [challenge() for _ in range(n)]
    )


# ---------------------------------------------------------------------- gadgets


def snap_poseidon(cs: ConstraintSystem, a: int, b: int) -> int:
    """neptune's Poseidon-2 circuit with the gen-randomness tag (``POSEIDON_CONSTANTS_GEN_RANDOMNESS``)."""
    return poseidon_hash(cs, [a, b], domain_tag=GEN_RANDOMNESS_TAG)


def allocated_num_to_allocated_bits(cs: ConstraintSystem, var: int) -> list[int]:
    """255 LE AllocatedBits of ``var``, then (Σ 2^i·b_i)·ONE = var (one linear check, not strict)."""
    bits = field_into_allocated_bits_le(cs, cs.value(var) if cs.witness else None)
    cs.enforce([(b, 1 << i) for i, b in enumerate(bits)], [(ONE, 1)], [(var, 1)])
    return bits


def por_no_challenge_input(
    cs: ConstraintSystem,
    c_bits: Sequence[int],
    leaf: int,
    path: Sequence[Sequence[int]],
    root: int,
    hasher: Hasher,
) -> None:
    """SPC ``por_no_challenge_input``: per level, ``insert`` the running node among the (already allocated)
    siblings at the position given by the next log2(arity) challenge bits, hash; then computed·ONE = root."""
    cur = leaf
    pos = 0
    for height, sibs in enumerate(path):
        nbits = (len(sibs) + 1).bit_length() - 1
        bits = [Boolean(b) for b in c_bits[pos : pos + nbits]]
        if len(bits) != nbits:
            raise ValueError("challenge bit-length and tree arity do not agree")
        pos += nbits
        with cs.namespace(f"height_{height}"):
            cur = hasher(cs, insert(cs, cur, bits, list(sibs)))
    if pos != len(c_bits):
        raise ValueError("challenge bit-length and tree arity do not agree")
    with cs.namespace("root"):
        num.equal(cs, cur, root)


def get_challenge_high_bits(
    cs: ConstraintSystem, c_bits: Sequence[int], h_select_bits: Sequence[int], h_values: Sequence[int]
) -> int:
    """The ``h`` high bits of the challenge packed, for the h picked by the one-hot ``h_select`` bits:
    per h, pack_bits + c_high·h_select_bit = c_high_or_zero; then their sum (13 rows)."""
    n = len(c_bits)
    terms = []
    for h, hbit in zip(h_values, h_select_bits, strict=True):
        c_high = pack_bits(cs, [Boolean(b) for b in c_bits[n - h :]])
        val = None
        if cs.witness:
            val = cs.value(c_high) if cs.value(hbit) else 0
        c_high_or_zero = cs.alloc(val)
        cs.enforce([(c_high, 1)], [(hbit, 1)], [(c_high_or_zero, 1)])
        terms.append(c_high_or_zero)
    sel = cs.alloc(sum(cs.value(t) for t in terms) if cs.witness else None)
    cs.enforce([(t, 1) for t in terms], [(ONE, 1)], [(sel, 1)])
    return sel


def _alloc_all(cs: ConstraintSystem, values: Sequence[int | None]) -> list[int]:
    return [num.alloc(cs, v) for v in values]


# ---------------------------------------------------------------------- synthesis


@dataclass
class Header:
    """What the per-challenge part needs from the header: variables and the challenges' random bits."""

    partition_bits: list[int]
    h_select_bits: list[int]
    phi: int
    root_r_old: int
    root_r_new: int
    apex_leafs: list[int]
    generated_bits: list[list[int]]


def _native_checks(consts: UpdateConstants, w: PartitionWitness) -> None:
    """Rust's assertions before synthesis (snap.md §6.2 step 0), on a witness with values."""
    pbl, cbl = consts.partition_bits, consts.challenge_bits
    if len(w.apex_leafs) != consts.apex_leaves:
        raise UpdateWitnessError(f"{len(w.apex_leafs)} apex leaves, the size has {consts.apex_leaves}")
    if not w.challenges:
        raise UpdateWitnessError("no challenge proofs")
    arities = tree_r_arities(consts)
    for i, ch in enumerate(w.challenges):
        if len(ch.path_d_new) != cbl:
            raise UpdateWitnessError(f"challenge {i}: tree-D path of {len(ch.path_d_new)} levels, want {cbl}")
        for name, p in (("tree-R old", ch.path_r_old), ("tree-R new", ch.path_r_new)):
            if [len(s) + 1 for s in p] != arities:
                raise UpdateWitnessError(f"challenge {i}: {name} path arities {[len(s) + 1 for s in p]}, "
                                         f"want {arities}")
    if w.k_and_h_select is not None:
        v = w.k_and_h_select
        k = v & ((1 << pbl) - 1)
        hsel = (v >> pbl) & ((1 << H_SELECT_BITS) - 1)
        if k >= consts.partitions:
            raise UpdateWitnessError(f"partition index {k} exceeds the partition count {consts.partitions}")
        if bin(hsel).count("1") != 1:
            raise UpdateWitnessError(f"h_select {hsel:#x} does not have exactly one bit set")
        if v >> (pbl + H_SELECT_BITS):
            raise UpdateWitnessError(f"k_and_h_select {v} has bits above k and h_select")
    top = w.challenges[0].path_d_new[cbl - pbl :]
    for i, ch in enumerate(w.challenges[1:], 1):
        if ch.path_d_new[cbl - pbl :] != top:
            raise UpdateWitnessError(f"challenge {i}: its partition path differs from challenge 0's")


def synthesize_header(cs: ConstraintSystem, consts: UpdateConstants, w: PartitionWitness) -> Header:
    """Steps 1–9 of snap.md §6.2: inputs, bit split, phi, private header values, comm_r checks, apex PoR,
    challenge bits. ``len(w.challenges)`` challenges' bits are generated (the digests of a partition)."""
    pbl, cbl = consts.partition_bits, consts.challenge_bits
    wit = cs.witness
    if wit:
        _native_checks(consts, w)
    with cs.namespace("k_and_h_select"):
        khs = num.alloc(cs, w.k_and_h_select)
        num.inputize(cs, khs)
        kv = w.k_and_h_select if wit else None
        bits = [alloc_bit(cs, (kv >> i) & 1 if kv is not None else None) for i in range(pbl + H_SELECT_BITS)]
        cs.enforce([(b, 1 << i) for i, b in enumerate(bits)], [(ONE, 1)], [(khs, 1)])
    partition_bits, h_select_bits = bits[:pbl], bits[pbl:]
    with cs.namespace("pack partition bits"):
        partition = pack_bits(cs, [Boolean(b) for b in partition_bits])
    commitments = []
    named = (("comm_r_old", w.comm_r_old), ("comm_d_new", w.comm_d_new), ("comm_r_new", w.comm_r_new))
    for name, value in named:
        with cs.namespace(f"{name}_input"):
            var = num.alloc(cs, value)
            num.inputize(cs, var)
            commitments.append(var)
    comm_r_old, comm_d_new, comm_r_new = commitments
    with cs.namespace("phi"):
        phi = snap_poseidon(cs, comm_d_new, comm_r_old)

    comm_c = num.alloc(cs, w.comm_c)
    root_r_old = num.alloc(cs, w.root_r_old)
    root_r_new = num.alloc(cs, w.root_r_new)
    apex_leafs = _alloc_all(cs, w.apex_leafs)
    partition_path = _alloc_all(cs, w.challenges[0].path_d_new[cbl - pbl :] if w.challenges else [None] * pbl)

    for name, root, comm_r in (("comm_r_old_calc", root_r_old, comm_r_old),
                               ("comm_r_new_calc", root_r_new, comm_r_new)):
        with cs.namespace(name):
            calc = poseidon_node(cs, [comm_c, root])
            num.equal(cs, calc, comm_r)

    with cs.namespace("apex_gadget"):
        row = apex_leafs
        while len(row) > 1:
            row = [sha256_node(cs, [row[i], row[i + 1]]) for i in range(0, len(row), 2)]
        with cs.namespace("partition-tree por"):
            por_no_challenge_input(cs, partition_bits, row[0], [[s] for s in partition_path], comm_d_new,
                                   sha256_node)

    with cs.namespace("gen_challenge_bits"):
        generated = _gen_challenge_bits(cs, consts, comm_r_new, partition, len(w.challenges))
    return Header(partition_bits, h_select_bits, phi, root_r_old, root_r_new, apex_leafs, generated)


def _gen_challenge_bits(
    cs: ConstraintSystem, consts: UpdateConstants, comm_r_new: int, partition: int, n: int
) -> list[list[int]]:
    """Per digest j: digest_index = dpp·partition + j, H_snap(comm_r_new, digest_index), its 255 bits;
    the challenges' random bits are consecutive rb-bit chunks. ``n`` may be below the size's count (the
    digests are always the size's: counting one challenge keeps the header exact)."""
    rb = consts.random_bits
    per = consts.challenges_per_digest
    dpp = consts.digests_per_partition
    out: list[list[int]] = []
    for j in range(dpp):
        with cs.namespace(f"digest_{j}"):
            di = cs.alloc((cs.value(partition) * dpp + j) if cs.witness else None)
            cs.enforce({partition: dpp, ONE: j}, {ONE: 1}, {di: 1})
            digest = snap_poseidon(cs, comm_r_new, di)
            bits = allocated_num_to_allocated_bits(cs, digest)
        take = consts.challenges - len(out) if j == dpp - 1 else per
        out.extend(bits[i * rb : (i + 1) * rb] for i in range(take))
    return out[:n]


def synthesize_challenge(
    cs: ConstraintSystem,
    consts: UpdateConstants,
    head: Header,
    c_random_bits: list[int],
    ch: ChallengeWitness,
) -> None:
    """Step 10 of snap.md §6.2 for one challenge."""
    c_bits = c_random_bits + head.partition_bits
    with cs.namespace("get_challenge_high_bits"):
        c_high = get_challenge_high_bits(cs, c_bits, head.h_select_bits, hs(consts.nodes))
    with cs.namespace("rho"):
        rho = snap_poseidon(cs, head.phi, c_high)
    leaf_r_old = num.alloc(cs, ch.leaf_r_old)
    leaf_d_new = num.alloc(cs, ch.leaf_d_new)
    with cs.namespace("leaf_r_new"):
        wit = cs.witness
        prod = cs.alloc(cs.value(leaf_d_new) * cs.value(rho) % R if wit else None)
        cs.enforce([(leaf_d_new, 1)], [(rho, 1)], [(prod, 1)])
        leaf_r_new = cs.alloc((cs.value(leaf_r_old) + cs.value(prod)) % R if wit else None)
        cs.enforce([(leaf_r_old, 1), (prod, 1)], [(ONE, 1)], [(leaf_r_new, 1)])
    if wit and ch.leaf_r_new is not None and cs.value(leaf_r_new) != ch.leaf_r_new % R:
        raise UpdateWitnessError("leaf_r_new is not leaf_r_old + leaf_d_new · rho")
    path_r_old = [_alloc_all(cs, s) for s in ch.path_r_old]
    with cs.namespace("por tree_r_old"):
        por_no_challenge_input(cs, c_bits, leaf_r_old, path_r_old, head.root_r_old, poseidon_node)
    path_r_new = [_alloc_all(cs, s) for s in ch.path_r_new]
    with cs.namespace("por tree_r_new"):
        por_no_challenge_input(cs, c_bits, leaf_r_new, path_r_new, head.root_r_new, poseidon_node)
    s = consts.apex_height
    with cs.namespace("select_apex_leaf"):
        apex_leaf = select(cs, head.apex_leafs, [Boolean(b) for b in c_bits[s : s + consts.apex_bits]])
    path_d = _alloc_all(cs, ch.path_d_new[:s])
    with cs.namespace("por to_apex_leaf"):
        por_no_challenge_input(cs, c_bits[:s], leaf_d_new, [[x] for x in path_d], apex_leaf, sha256_node)


def synthesize(
    cs: ConstraintSystem, consts: UpdateConstants, witness: PartitionWitness | None = None
) -> None:
    """The whole partition circuit; ``witness=None`` gives the blank circuit (use a shape-only ``cs``)."""
    w = witness if witness is not None else blank_witness(consts)
    if len(w.challenges) != consts.challenges:
        raise UpdateWitnessError(f"{len(w.challenges)} challenge proofs, the size has {consts.challenges}")
    head = synthesize_header(cs, consts, w)
    for i, (bits, ch) in enumerate(zip(head.generated_bits, w.challenges, strict=True)):
        with cs.namespace(f"challenge_{i}"):
            synthesize_challenge(cs, consts, head, bits, ch)


def _constants(pt: object) -> UpdateConstants:
    """UpdateConstants from constants, an ``UpdateProofType``, an update proof id or name, or a node count."""
    if isinstance(pt, UpdateConstants):
        return pt
    consts = getattr(pt, "constants", None)
    if isinstance(consts, UpdateConstants):
        return consts
    if isinstance(pt, (int, str)) and not isinstance(pt, bool):
        return update_proof_type(pt).constants
    raise TypeError(f"not an update proof type: {pt!r}")


def blank_system(pt: object) -> ConstraintSystem:
    """The blank circuit of one partition of an update proof type, rows recorded without values: what
    parameter generation needs (every partition of a size has the same R1CS)."""
    cs = ConstraintSystem(witness=False)
    synthesize(cs, _constants(pt))
    return cs


# ---------------------------------------------------------------------- ProofData -> witness


class SnapRequest(Protocol):
    """What the market's ``ProofData.Snap`` carries (``market.proofdata.Snap``; porep does not import it)."""

    proof_type: int
    old_r: bytes
    new_r: bytes
    new_d: bytes
    proofs: tuple[bytes, ...]


def _fr(value: bytes) -> int:
    x = int.from_bytes(value, "little")
    if x >= R:
        raise UpdateWitnessError(f"{value.hex()} is not a canonical field element")
    return x


def _r_path(proof: object) -> list[list[int | None]]:
    return [[_fr(h) for h in el.hashes] for seg in proof.segments for el in seg]  # type: ignore[attr-defined]


def proof_witness(
    consts: UpdateConstants, k: int, comm_r_old: bytes, comm_d_new: bytes, comm_r_new: bytes,
    proof: PartitionProof, h: int | None = None,
) -> PartitionWitness:
    """The circuit inputs of partition ``k`` (SPU ``PublicInputs::new`` / ``PrivateInputs::new``): roots
    from challenge proof 0, every challenge's leaves and sibling values."""
    from porep.snap.params import h_select

    if not 0 <= k < consts.partitions:
        raise UpdateWitnessError(f"partition {k} out of range [0, {consts.partitions})")
    if not proof.challenge_proofs:
        raise UpdateWitnessError(f"partition {k} has no challenge proofs")
    hsel = consts.h_select if h is None else h_select(consts.nodes, h)
    p0 = proof.challenge_proofs[0]
    w = PartitionWitness(
        k_and_h_select=k | (hsel << consts.partition_bits),
        comm_r_old=_fr(comm_r_old),
        comm_d_new=_fr(comm_d_new),
        comm_r_new=_fr(comm_r_new),
        comm_c=_fr(proof.comm_c),
        root_r_old=_fr(p0.proof_r_old.root),
        root_r_new=_fr(p0.proof_r_new.root),
        apex_leafs=[_fr(a) for a in proof.apex_leafs],
    )
    for cp in proof.challenge_proofs:
        w.challenges.append(
            ChallengeWitness(
                leaf_r_old=_fr(cp.proof_r_old.leaf),
                path_r_old=_r_path(cp.proof_r_old),
                leaf_d_new=_fr(cp.proof_d_new.leaf),
                path_d_new=[s[0] if len(s) == 1 else None for s in _r_path(cp.proof_d_new)],
                leaf_r_new=_fr(cp.proof_r_new.leaf),
                path_r_new=_r_path(cp.proof_r_new),
            )
        )
    if any(x is None for ch in w.challenges for x in ch.path_d_new):
        raise UpdateWitnessError(f"partition {k}: a tree-D path element without exactly one sibling")
    return w


def partition_witness(snap: SnapRequest, k: int) -> tuple[UpdateConstants, PartitionWitness]:
    """The circuit inputs of partition ``k`` of a market Snap request (bincode proofs decoded here; run the
    strict check, ``porep.snap.verify.check_partitions``, first: this only refuses what cannot be mapped)."""
    consts = update_proof_type(snap.proof_type).constants
    if len(snap.proofs) != consts.partitions:
        raise UpdateWitnessError(f"{len(snap.proofs)} partition proofs, the size has {consts.partitions}")
    if not 0 <= k < consts.partitions:
        raise UpdateWitnessError(f"partition {k} out of range [0, {consts.partitions})")
    proof, _ = decode_partition_proof(snap.proofs[k])
    return consts, proof_witness(consts, k, snap.old_r, snap.new_d, snap.new_r, proof)


def synthesize_request(snap: SnapRequest, k: int, record: bool = True) -> ConstraintSystem:
    """Synthesise partition ``k`` of a Snap request with its witness (the C1-like entry)."""
    consts, w = partition_witness(snap, k)
    cs = ConstraintSystem(witness=True, record=record)
    synthesize(cs, consts, w)
    return cs


# ---------------------------------------------------------------------- counting without materialising


def partition_stats(pt: object) -> PartitionStats:
    """Counts of a whole partition from the header plus ONE challenge, synthesised blank (the header always
    generates the size's digests): every challenge is the same code over its own variables and the header's,
    so totals are header + n × one challenge, as ``porep.circuit.stacked.partition_stats`` does for PoRep."""
    consts = _constants(pt)
    one = blank_witness(consts, 1)
    cs = ConstraintSystem(witness=False, record=True)
    head = synthesize_header(cs, consts, one)
    h_rows, h_aux, h_in, h_nnz = cs.num_constraints, cs.num_aux, cs.num_inputs, cs.nnz
    with cs.namespace("challenge_0"):
        synthesize_challenge(cs, consts, head, head.generated_bits[0], one.challenges[0])
    n = consts.challenges
    c_rows, c_aux, c_in = cs.num_constraints - h_rows, cs.num_aux - h_aux, cs.num_inputs - h_in
    c_nnz = tuple(x - y for x, y in zip(cs.nnz, h_nnz, strict=True))
    dens = []
    for matrix in (0, 1):
        head_used, _ = _used(cs, matrix, 0, h_aux)
        own, inputs = _used(cs, matrix, h_aux, cs.num_aux)
        dens.append((len(head_used) + n * len(own), len(inputs)))
    assert c_in == 0, "a challenge allocated an input"
    return PartitionStats(
        num_constraints=h_rows + n * c_rows,
        num_inputs=h_in,
        num_aux=h_aux + n * c_aux,
        nnz=(h_nnz[0] + n * c_nnz[0], h_nnz[1] + n * c_nnz[1], h_nnz[2] + n * c_nnz[2]),
        a_aux=dens[0][0],
        b_input=dens[1][1],
        b_aux=dens[1][0],
    )
