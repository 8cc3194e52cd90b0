"""The EmptySectorUpdate circuit: Rust's published constraint counts (snap.md §6.4), the public inputs of the
§8.3 example, a 2KiB update made by ``psagent snap make`` whose witness satisfies the R1CS with the inputs
porep.snap derives without the circuit, and mutated requests refused by a named constraint or a named
synthesis-time assertion (Rust's ``assert!``s)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _host_memory import available_gib
from _snap_cases import HEADER_ASSERTIONS, Synth, long_only, random_update
from xorshift import XorShift

from gpu.groth16.r1cs import R1CS
from market.proofdata import Snap
from porep.circuit.cs import ConstraintSystem
from porep.hashes.merkle import build_poseidon_tree
from porep.snap.circuit import (
    PartitionWitness,
    UpdateWitnessError,
    blank_witness,
    partition_stats,
    partition_witness,
    proof_witness,
    synthesize,
    synthesize_challenge,
    synthesize_header,
)
from porep.snap.params import UPDATE_PROOF_TYPES, constants_for_nodes, update_proof_type
from porep.snap.partition import update_assignment, update_public_inputs
from porep.snap.proof import PartitionProof, PathElement, decode_partition_proof
from porep.snap.update import update

# ------------------------------------------------------------------------------------------------ counts

# Rust storage-proofs-update tests/circuit.rs (TestConstraintSystem / BenchCS num_constraints): the
# test-only sizes 1KiB (8-4-0), 4KiB (8-2-0), 8KiB (8-4-0), 16KiB (8-8-0), 32KiB (8-8-2), and 2KiB, 32GiB.
PUBLISHED = {32: 1_248_389, 64: 1_705_039, 128: 2_165_109, 256: 2_620_359, 512: 6_300_021, 1024: 6_760_091}
# Derived by the same synthesis, found in no source (snap.md §6.4 lists the same figures).
DERIVED = {1 << 18: 10_007_503, 1 << 24: 57_450_479, 1 << 31: 85_006_101}


@pytest.mark.slow
@pytest.mark.parametrize("nodes", [32, 128, 256])
def test_published_counts_of_small_test_sizes(nodes: int) -> None:
    s = partition_stats(constants_for_nodes(nodes))
    assert (s.num_constraints, s.num_inputs) == (PUBLISHED[nodes], 5)


@pytest.mark.slow
def test_32gib_count_without_materialising() -> None:
    """81,049,499 per partition (Rust's ignored BenchCS test), from the header + one challenge × 86
    (~30 s of CPU and 2.0 GB peak RSS on the 2-core machine: the 128-leaf apex tree is 5.9 M rows)."""
    if available_gib() < 3:
        pytest.skip(f"needs ~2 GiB free for the 32GiB header, {available_gib():.1f} GiB available")
    s = partition_stats(update_proof_type("StackedDrg32GiBV1"))
    assert (s.num_constraints, s.num_inputs) == (81_049_499, 5)
    assert (s.num_constraints_total - 1).bit_length() == 27  # one 2^27 domain per partition


@long_only
@pytest.mark.parametrize("nodes", [512, 1024, *DERIVED])
def test_long_counts(nodes: int) -> None:
    s = partition_stats(constants_for_nodes(nodes))
    assert s.num_constraints == {**PUBLISHED, **DERIVED}[nodes]


@pytest.mark.slow
def test_2kib_request_witness_satisfies(synth_request_2kib: Synth, request_2kib: Snap) -> None:
    cs, r1cs = synth_request_2kib
    assert (r1cs.num_constraints, r1cs.num_inputs) == (1_705_039, 5)
    assert r1cs.domain_log == 21
    r1cs.check(cs.witness_array())
    # the input assignment is the verifier's vector, computed from the request without the circuit
    assert cs.inputs()[1:] == update_public_inputs(request_2kib)[0]
    # the prover's entry gives the same vector, written into a caller's buffer
    out = np.full((r1cs.num_vars, 8), 7, np.uint32)
    assert update_assignment(request_2kib, 0, out=out) is out
    assert np.array_equal(out, cs.witness_array())


@pytest.mark.slow
def test_blank_counts_equal_the_witness_circuit(synth_request_2kib: Synth) -> None:
    """Parameters come from the blank circuit: its counts, nnz and densities (header + 10 × one challenge)
    are the request's (the full matrices are compared in the long suite)."""
    s = partition_stats(update_proof_type(0))
    r = synth_request_2kib[1]
    d = r.density()
    assert (s.num_constraints, s.num_inputs, s.num_aux) == (r.num_constraints, r.num_inputs, r.num_aux)
    assert s.nnz == (r.a.nnz, r.b.nnz, r.c.nnz)
    assert (s.a_aux, s.b_input, s.b_aux) == (int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum()))


@long_only
def test_blank_matrices_equal_the_witness_ones(synth_request_2kib: Synth) -> None:
    cs = ConstraintSystem(witness=False)
    synthesize(cs, update_proof_type(0).constants)
    blank, real = cs.to_r1cs(), synth_request_2kib[1]
    for x, y in ((blank.a, real.a), (blank.b, real.b), (blank.c, real.c)):
        assert np.array_equal(x.row_ptr, y.row_ptr) and np.array_equal(x.cols, y.cols)
        assert np.array_equal(x.vals, y.vals)


def test_parameter_file_names() -> None:
    """snap.md §6.5 (Filecoin's parameters.json), every size."""
    want = {
        "2KiB": "8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194",
        "8MiB": "8-0-0-92180959e1918d26350b8e6cfe217bbdd0a2d8de51ebec269078b364b715ad63",
        "512MiB": "8-0-0-61fa69f38b9cc771ba27b670124714b4ea77fbeae05e377fb859c4a43b73a30c",
        "32GiB": "8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18",
        "64GiB": "8-8-2-102e1444a7e9a97ebf1e3d6855dcc77e66c011ea66f936d9b2c508f87f2f83a7",
    }
    got = {t.size_label: t.param_stem for t in UPDATE_PROOF_TYPES}
    assert got == {k: f"v28-empty-sector-update-merkletree-poseidon_hasher-{v}" for k, v in want.items()}


# ------------------------------------------------------------------------------------------------ §8.3


def test_derived_example_public_inputs() -> None:
    """The inputs of Rust's test_empty_sector_update_circuit_2kib (snap.md §8.3): the circuit's input
    assignment (all inputs are allocated by the header) is the listed vector."""
    rng = XorShift()

    def nodes(n: int) -> np.ndarray:
        return np.frombuffer(b"".join(rng.fr_bytes() for _ in range(n)), np.uint8).reshape(n, 32)

    labels_r_old = nodes(64)
    comm_c = rng.fr_bytes()
    labels_d_new = nodes(64)
    pt = update_proof_type(0)
    u = update(pt, build_poseidon_tree(labels_r_old, 8), comm_c, labels_d_new, h=1)
    w = proof_witness(pt.constants, 0, u.comm_r_old, u.comm_d_new, u.comm_r_new, u.partition_proof(0), h=1)
    cs = ConstraintSystem(witness=True)
    synthesize_header(cs, pt.constants, w)
    assert cs.inputs()[1:] == [
        1,
        1745991147847915380700379386088912049497689394538765984563676043035069698666,
        19884680569080748363012228300147704696147031530083636341526810475782843282738,
        22820550511068317971398111838796018487107839993797275914881918555093120662379,
    ]
    assert cs.unsatisfied() is None  # the header's own rows (phi, comm_r checks, apex tree, challenge bits)


# ------------------------------------------------------------------------------------------------ mutations


def _proof(snap: Snap, k: int = 0) -> PartitionProof:
    return decode_partition_proof(snap.proofs[k])[0]


def _with_proof(snap: Snap, proof: PartitionProof, k: int = 0) -> Snap:
    proofs = list(snap.proofs)
    proofs[k] = proof.to_bytes()
    return dataclasses.replace(snap, proofs=tuple(proofs))


def _flip(b: bytes) -> bytes:
    return bytes([b[0] ^ 1]) + b[1:]


def _set_challenge(p: PartitionProof, i: int, **fields: object) -> PartitionProof:
    cps = list(p.challenge_proofs)
    cps[i] = dataclasses.replace(cps[i], **fields)  # type: ignore[arg-type]
    return dataclasses.replace(p, challenge_proofs=tuple(cps))


def _sibling(mp: object, level: int) -> object:
    """A MerkleProof with the first sibling of base level ``level`` changed."""
    base = list(mp.base)  # type: ignore[attr-defined]
    el = base[level]
    base[level] = PathElement((_flip(el.hashes[0]), *el.hashes[1:]), el.index)
    return dataclasses.replace(mp, base=tuple(base))  # type: ignore[type-var]


def _failing_labels(r1cs: R1CS, cs: ConstraintSystem, witness: np.ndarray) -> set[str]:
    from gpu.arith.fields import fr_mul_batch

    a, b, c = r1cs.evaluate(witness)
    rows = np.flatnonzero(np.any(fr_mul_batch(a, b) != c, axis=1))
    return {cs.label(int(row)).split(" (constraint")[0] for row in rows}


@pytest.mark.slow
def test_mutations_fail_named_constraints(request_2kib: Snap, synth_request_2kib: Synth) -> None:
    """Several independent single-field mutations in one request: exactly the rows that compare a computed
    value with a given one fail, each named (comm_c; an apex leaf; a tree-R old, tree-R new and tree-D
    sibling in three different challenges), and none for a tree-D sibling above the apex row."""
    cs, r1cs = synth_request_2kib
    p = _proof(request_2kib)
    j = 5
    p = dataclasses.replace(p, comm_c=_flip(p.comm_c))
    apex = list(p.apex_leafs)
    apex[j] = _flip(apex[j])
    p = dataclasses.replace(p, apex_leafs=tuple(apex))
    cps = p.challenge_proofs
    p = _set_challenge(p, 1, proof_r_old=_sibling(cps[1].proof_r_old, 1))
    p = _set_challenge(p, 2, proof_r_new=_sibling(cps[2].proof_r_new, 0))
    p = _set_challenge(p, 3, proof_d_new=_sibling(cps[3].proof_d_new, 2))
    # a tree-D sibling at the apex row or above is not read by the circuit (only Rust's vanilla
    # membership check looks at it): no row fails for it
    p = _set_challenge(p, 4, proof_d_new=_sibling(cps[4].proof_d_new, 4))
    bad = update_assignment(_with_proof(request_2kib, p), 0)
    s = update_proof_type(0).constants.apex_height
    selecting = {i for i, cp in enumerate(cps) if (cp.proof_d_new.path_index((2,)) >> s) == j}
    want = {
        "comm_r_old_calc",
        "comm_r_new_calc",
        "apex_gadget/partition-tree por/root",
        "challenge_1/por tree_r_old/root",
        "challenge_2/por tree_r_new/root",
        "challenge_3/por to_apex_leaf/root",
        *(f"challenge_{i}/por to_apex_leaf/root" for i in selecting),
    }
    assert _failing_labels(r1cs, cs, bad) == want


def _witness(snap: Snap) -> PartitionWitness:
    return partition_witness(snap, 0)[1]


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("leaf_r_old", "leaf_r_new is not leaf_r_old"),
        ("leaf_d_new", "leaf_r_new is not leaf_r_old"),
        ("leaf_r_new", "leaf_r_new is not leaf_r_old"),
    ],
)
def test_leaf_mutations_stop_synthesis(request_2kib: Snap, field: str, message: str) -> None:
    """Rust asserts the computed leaf_r_new equals the proof's (circuit.rs); so do we, before the PoRs."""
    w = _witness(request_2kib)
    ch = dataclasses.replace(w.challenges[0], **{field: getattr(w.challenges[0], field) ^ 1})
    w.challenges[0] = ch
    with pytest.raises(UpdateWitnessError, match=message):
        synthesize(ConstraintSystem(witness=True, record=False), update_proof_type(0).constants, w)


@pytest.mark.parametrize(("change", "message"), HEADER_ASSERTIONS)
def test_header_assertions(request_2kib: Snap, change: dict[str, object], message: str) -> None:
    w = dataclasses.replace(_witness(request_2kib), **change)  # type: ignore[arg-type]
    with pytest.raises(UpdateWitnessError, match=message):
        synthesize(ConstraintSystem(witness=True, record=False), update_proof_type(0).constants, w)


def test_shape_assertions(request_2kib: Snap) -> None:
    c = update_proof_type(0).constants
    w = _witness(request_2kib)
    short = dataclasses.replace(w, challenges=w.challenges[:9])
    with pytest.raises(UpdateWitnessError, match="9 challenge proofs"):
        synthesize(ConstraintSystem(witness=True, record=False), c, short)
    w = _witness(request_2kib)
    w.challenges[4].path_r_new = w.challenges[4].path_r_new[:1]
    with pytest.raises(UpdateWitnessError, match="challenge 4: tree-R new path arities"):
        synthesize(ConstraintSystem(witness=True, record=False), c, w)
    w = _witness(request_2kib)
    w.challenges[2].path_d_new = w.challenges[2].path_d_new[:5]
    with pytest.raises(UpdateWitnessError, match="challenge 2: tree-D path of 5 levels"):
        synthesize(ConstraintSystem(witness=True, record=False), c, w)
    with pytest.raises(UpdateWitnessError, match="2 partition proofs"):
        partition_witness(dataclasses.replace(request_2kib, proofs=request_2kib.proofs * 2), 0)
    with pytest.raises(UpdateWitnessError, match="not a canonical field element"):
        partition_witness(dataclasses.replace(request_2kib, new_r=b"\xff" * 32), 0)


def test_fields_the_circuit_does_not_read(request_2kib: Snap) -> None:
    """Path indices (the circuit uses the challenge's bits) and the roots of challenge proofs after the first
    do not enter the witness: the strict vanilla check is what refuses them (test_snap_update.py)."""
    p = _proof(request_2kib)
    cp = p.challenge_proofs[2]
    d = cp.proof_d_new
    base = list(d.base)
    base[0] = PathElement(base[0].hashes, base[0].index ^ 1)
    mutated = _set_challenge(
        p, 2, proof_d_new=dataclasses.replace(d, base=tuple(base)),
        proof_r_new=dataclasses.replace(cp.proof_r_new, root=_flip(cp.proof_r_new.root)),
    )
    assert _witness(_with_proof(request_2kib, mutated)) == _witness(request_2kib)


def test_blank_witness_has_the_request_structure(request_2kib: Snap) -> None:
    c = update_proof_type(0).constants
    w, b = _witness(request_2kib), blank_witness(c)
    assert len(b.challenges) == len(w.challenges) == c.challenges
    assert len(b.apex_leafs) == len(w.apex_leafs) == c.apex_leaves
    for x, y in zip(b.challenges, w.challenges, strict=True):
        assert [len(s) for s in x.path_r_old] == [len(s) for s in y.path_r_old] == [7, 7]
        assert len(x.path_d_new) == len(y.path_d_new) == 6


# ------------------------------------------------------------------------------------------------ shapes


def _satisfies(nodes: int, seed: int) -> None:
    from porep.snap.public_inputs import public_inputs

    u = random_update(nodes, seed)
    c = u.constants  # type: ignore[attr-defined]
    k = c.partitions - 1  # the last partition: every partition bit set
    w = proof_witness(c, k, u.comm_r_old, u.comm_d_new, u.comm_r_new, u.partition_proof(k))  # type: ignore[attr-defined]
    cs = ConstraintSystem(witness=True)
    synthesize(cs, c, w)
    assert cs.num_constraints == PUBLISHED[nodes]
    cs.to_r1cs().check(cs.witness_array())
    assert cs.inputs()[1:] == public_inputs(c, k, u.comm_r_old, u.comm_d_new, u.comm_r_new)  # type: ignore[attr-defined]


@long_only
@pytest.mark.parametrize("nodes", [32, 512, 1024])
def test_compound_tree_r_witness_satisfies(nodes: int) -> None:
    """Rust's test-only sizes with the tree-R variants of 32GiB/64GiB requests: 1KiB 8-4-0 (Sub), 16KiB
    8-8-0 (Sub, 2 partitions: a partition path above the 128-leaf apex tree), 32KiB 8-8-2 (Top)."""
    _satisfies(nodes, nodes)


@pytest.mark.slow
@pytest.mark.parametrize("member", ["old_r", "new_d"])
def test_commitment_mutations_stop_synthesis(request_2kib: Snap, member: str) -> None:
    """comm_r_old / comm_d_new enter phi, so every rho changes and challenge 0's encoding assertion fails
    (comm_r_new is covered in the long suite: it moves the challenges)."""
    bad = dataclasses.replace(request_2kib, **{member: _flip(getattr(request_2kib, member))})
    with pytest.raises(UpdateWitnessError, match="leaf_r_new is not leaf_r_old"):
        update_assignment(bad, 0)


@long_only
def test_comm_r_new_mutation_fails_named_rows(request_2kib: Snap, synth_request_2kib: Synth) -> None:
    """A different comm_r_new: the comm_r_new check fails, and the challenges move (the paths no longer
    lead to the roots, or the encoding assertion stops synthesis first)."""
    cs, r1cs = synth_request_2kib
    bad = dataclasses.replace(request_2kib, new_r=_flip(request_2kib.new_r))
    try:
        w = update_assignment(bad, 0)
    except UpdateWitnessError as exc:
        assert "leaf_r_new" in str(exc)
        return
    labels = _failing_labels(r1cs, cs, w)
    assert "comm_r_new_calc" in labels and any("/por " in x for x in labels)


@long_only
def test_8mib_partition_rows_are_satisfied() -> None:
    """The production rho path (h = 10 of hs [7..12], h_select = 8, two partition bits) at 8MiB: partition 3
    of an update of a sealed CC sector, the header (128-leaf apex tree, partition path, digest) and its
    first two challenges synthesised with the witness (a prefix of the partition's rows, ~6.7 M; the whole
    10 M-row partition would need ~8 GB of recorded rows) satisfy their rows, inputs = porep.snap's."""
    import random

    from porep.fr32 import pad_to_sector, unpadded_size
    from porep.ids import prover_id
    from porep.sdr.seal import seal
    from porep.snap.public_inputs import public_inputs
    from porep.snap.update import update_sector

    size = 8 << 20
    sealed = seal("StackedDrg8MiBV1_1", prover_id(1000), 5, bytes([3]) * 32, piece=b"")
    u = update_sector(sealed, pad_to_sector(random.Random(81).randbytes(unpadded_size(size) // 2), size))
    c, k = u.constants, 3
    assert (c.h, c.h_select, c.partition_bits) == (10, 8, 2)
    w = proof_witness(c, k, u.comm_r_old, u.comm_d_new, u.comm_r_new, u.partition_proof(k))
    assert w.k_and_h_select == 35
    cs = ConstraintSystem(witness=True)
    head = synthesize_header(cs, c, w)
    for i in range(2):
        with cs.namespace(f"challenge_{i}"):
            synthesize_challenge(cs, c, head, head.generated_bits[i], w.challenges[i])
    cs.to_r1cs().check(cs.witness_array())
    assert cs.inputs()[1:] == public_inputs(c, k, u.comm_r_old, u.comm_d_new, u.comm_r_new)
