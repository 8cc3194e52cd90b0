"""The StackedDRG circuit: published and modelled counts (circuit.md §10), a sealed 2KiB C1's witness
satisfies the R1CS, its input assignment equals the independently derived public inputs, and C1 mutations
are caught by a named constraint (or are provably not read by the circuit)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from _c1_mutations import add, flip
from _host_memory import available_gib
from circuit_c1 import PROVER, SECTOR, TICKET, Synthesised, long_only

from porep.c1 import C1Arrays, SealCommitPhase1Output
from porep.circuit.cs import ConstraintSystem
from porep.circuit.stacked import (
    CircuitShape,
    partition_stats,
    partition_witness,
    synthesize,
    synthesize_c1,
)
from porep.prooftypes import proof_type
from porep.sdr import public_inputs


def _count(shape: CircuitShape) -> ConstraintSystem:
    cs = ConstraintSystem(witness=False, record=False)
    synthesize(cs, shape)
    return cs


# RFP storage-proofs-porep/tests/stacked_circuit.rs: nodes = 8 per base tree, 2 layers, 1 challenge
@pytest.mark.slow
@pytest.mark.parametrize(
    ("tree", "nodes", "constraints", "aux"),
    [
        ((2, 0, 0), 8, 1_206_212, 1_205_053),
        ((8, 0, 0), 8, 1_199_620, 1_198_525),
        ((8, 4, 0), 32, 1_296_576, 1_295_435),
        ((8, 4, 2), 64, 1_346_982, 1_345_810),
    ],
)
def test_one_challenge_circuits(tree: tuple[int, int, int], nodes: int, constraints: int, aux: int) -> None:
    cs = _count(CircuitShape.for_tree(nodes, *tree, layers=2, challenges=1))
    assert (cs.num_constraints, cs.num_inputs) == (constraints, 22)
    assert cs.num_aux == aux  # model-derived (circuit.md §10)


@pytest.mark.slow
def test_2kib_c1_witness_satisfies(synth_2kib: Synthesised, c1_2kib: SealCommitPhase1Output) -> None:
    cs, r1cs = synth_2kib.cs, synth_2kib.r1cs
    # circuit.md §10, 2KiB: rows incl. the 40 input constraints, aux, inputs, nnz, densities
    assert (r1cs.num_constraints_total, r1cs.num_aux, r1cs.num_inputs) == (2_687_961, 2_685_673, 40)
    assert r1cs.domain_log == 22
    assert (r1cs.a.nnz, r1cs.b.nnz, r1cs.c.nnz) == (6_420_965, 2_689_006, 5_824_682)
    d = r1cs.density()
    assert (int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum())) == (2_674_908, 1, 685_521)
    r1cs.check(cs.witness_array())
    # the input assignment is the verifier's vector, derived without the circuit (porep.sdr.public_inputs)
    pt = proof_type("StackedDrg2KiBV1_1")
    want = public_inputs.record_inputs(
        pt, prover_id=PROVER, sector_id=SECTOR, ticket=TICKET, seed=c1_2kib.seed, comm_d=c1_2kib.comm_d,
        comm_r=c1_2kib.comm_r,
    )[0]
    assert cs.inputs()[1:] == want


@pytest.mark.slow
def test_blank_circuit_has_the_witness_shape(synth_2kib: Synthesised) -> None:
    """Parameters come from the blank circuit: same counts and nnz as the C1's (the full matrices are
    compared in the long suite)."""
    blank = _count(CircuitShape.for_proof_type(proof_type("StackedDrg2KiBV1_1")))
    cs = synth_2kib.cs
    assert (blank.num_constraints, blank.num_aux, blank.num_inputs, blank.nnz) == (
        cs.num_constraints, cs.num_aux, cs.num_inputs, cs.nnz
    )


@long_only
def test_blank_circuit_matrices_equal_the_witness_ones(synth_2kib: Synthesised) -> None:
    cs = ConstraintSystem(witness=False)
    synthesize(cs, CircuitShape.for_proof_type(proof_type("StackedDrg2KiBV1_1")))
    blank, real = cs.to_r1cs(), synth_2kib.r1cs
    for x, y in ((blank.a, real.a), (blank.b, real.b), (blank.c, real.c)):
        assert np.array_equal(x.row_ptr, y.row_ptr) and np.array_equal(x.cols, y.cols)
        assert np.array_equal(x.vals, y.vals)


@long_only
@pytest.mark.parametrize(
    ("name", "total", "aux"),
    [("StackedDrg8MiBV1_1", 3_844_969, 3_842_449), ("StackedDrg512MiBV1_1", 4_423_473, 4_420_837)],
)
def test_partition_totals(name: str, total: int, aux: int) -> None:
    cs = _count(CircuitShape.for_proof_type(proof_type(name)))
    assert (cs.num_constraints + cs.num_inputs, cs.num_aux, cs.num_inputs) == (total, aux, 40)


@long_only
def test_partition_stats_equal_the_full_synthesis(synth_2kib: Synthesised) -> None:
    """Header + challenges x one challenge reproduces every count of the fully synthesised 2KiB circuit."""
    s = partition_stats(CircuitShape.for_proof_type(proof_type("StackedDrg2KiBV1_1")))
    r = synth_2kib.r1cs
    d = r.density()
    assert (s.num_constraints, s.num_inputs, s.num_aux) == (r.num_constraints, r.num_inputs, r.num_aux)
    assert s.nnz == (r.a.nnz, r.b.nnz, r.c.nnz)
    assert (s.a_aux, s.b_input, s.b_aux) == (int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum()))


@long_only
def test_32gib_partition_shape_is_cuzks_pce() -> None:
    """cuzk's measured PCE of a 32GiB partition (cuzk.md §1.6). Its nnz A counts the 328 input rows' A
    entries; ours are the circuit rows', so A differs by exactly num_inputs."""
    if available_gib() < 4:
        pytest.skip(f"needs ~3 GiB free for one 32GiB challenge, {available_gib():.1f} GiB available")
    s = partition_stats(CircuitShape.for_proof_type(proof_type("StackedDrg32GiBV1_1")))
    assert (s.num_inputs, s.num_aux, s.num_constraints_total) == (328, 130_169_893, 130_278_869)
    assert (s.a_aux, s.b_aux, s.b_input) == (129_753_292, 33_112_281, 1)
    assert (s.nnz[0] + s.num_inputs, s.nnz[1], s.nnz[2]) == (309_405_051, 130_327_340, 282_656_500)


# ------------------------------------------------------------------------------------------------ mutations


# The sealing issue's C1 mutations (tests/porep/test_vanilla.py); column k of a challenge is c_x (0),
# DRG parent k-1 (1..6) or expander parent k-7 (7..14). "row": the witness fails a constraint in the
# named namespace. "ignored": the circuit does not read the field (C2 in Rust does not either; the strict
# vanilla verifier rejects it before proving), so the partition witness is identical. "inputs": the witness is
# identical but the verifier's public inputs differ from the circuit's, so no proof can verify.
ROW, IGNORED, INPUTS = "row", "ignored", "inputs"
MUTATIONS: dict[str, tuple[str, Callable[[np.ndarray], None], str, str]] = {
    "tree D sibling": ("d.base.hashes", flip((0, 0, 3, 0)), ROW, "challenge_0/comm_d_inclusion/enforce_"),
    "tree D leaf": ("d.leaf", flip((0, 1)), ROW, "challenge_1/comm_d_inclusion/enforce_root"),
    "tree D root": ("d.root", flip((0, 0)), IGNORED, "comm_d comes from the C1 header"),
    "tree D position": ("d.base.index", add((0, 0, 2)), ROW, "challenge_0/comm_d_inclusion/enforce_root"),
    "tree R sibling": (
        "r.base.hashes", flip((0, 1, 1, 4)), ROW, "challenge_1/comm_r_last_data_inclusion/enforce_root"
    ),
    "tree R leaf": ("r.leaf", flip((0, 0)), IGNORED, "the circuit computes the replica node"),
    "tree R root": ("r.root", flip((0, 1)), IGNORED, "comm_r_last is proof 0's root"),
    "tree R position": (
        "r.base.index", add((0, 1, 0), -1), ROW, "challenge_1/comm_r_last_data_inclusion/enforce_root"
    ),
    "column sibling": ("col.base.hashes", flip((0, 0, 9, 1, 2)), ROW, "challenge_0/exp_parent_2_inclusion"),
    "column leaf": ("col.leaf", flip((0, 1, 4)), IGNORED, "the circuit hashes the column itself"),
    "column root": ("col.root", flip((0, 1, 12)), IGNORED, "comm_c is proof 0's c_x root"),
    "c_x row": ("col.rows", flip((0, 0, 0, 1)), IGNORED, "the circuit computes the challenged labels"),
    "drg parent row (layer 1)": ("col.rows", flip((0, 1, 3, 0)), ROW, "challenge_1/drg_parent_2_inclusion"),
    "drg parent row (layer 2)": ("col.rows", flip((0, 1, 3, 1)), ROW, "challenge_1/drg_parent_2_inclusion"),
    "exp parent row (layer 1)": ("col.rows", flip((0, 0, 10, 0)), ROW, "challenge_0/exp_parent_3_inclusion"),
    "exp parent row (layer 2)": ("col.rows", flip((0, 0, 10, 1)), ROW, "challenge_0/exp_parent_3_inclusion"),
    "column node index": ("col.index", add((0, 0, 5)), IGNORED, "indices come from the paths"),
    "column path position": ("col.base.index", add((0, 1, 8, 1)), ROW, "challenge_1/exp_parent_1_inclusion"),
    "labeling parent (layer 1)": ("lab.parents", flip((0, 0, 0, 17)), IGNORED, "parents come from columns"),
    "labeling parent (layer 2)": ("lab.parents", flip((0, 1, 1, 30)), IGNORED, "parents come from columns"),
    "labeling node": ("lab.node", add((0, 1, 0)), ROW, "challenge_1/comm_r_last_data_inclusion/enforce"),
    "labeling layer": ("lab.layer_index", add((0, 0, 1)), IGNORED, "layers are constants of the circuit"),
    "encoding parent": ("enc.parents", flip((0, 0, 36)), IGNORED, "the key is the computed last label"),
    "encoding node": ("enc.node", add((0, 0)), IGNORED, "the challenge is labeling proof 0's node"),
    "encoding layer": ("enc.layer_index", add((0, 1), -1), IGNORED, "layers are constants of the circuit"),
    "comm_r": ("comm_r", flip(()), ROW, "enforce comm_r = H(comm_c || comm_r_last)"),
    "seed": ("seed", flip(()), INPUTS, "challenges"),
    "ticket": ("ticket", flip(()), INPUTS, "replica_id"),
    "comm_d": ("comm_d", flip(()), ROW, "challenge_0/comm_d_inclusion/enforce_root"),
}
IN_CI = {"drg parent row (layer 1)", "c_x row", "seed"}


def _mutated(
    c1: SealCommitPhase1Output, name: str, mutate: Callable[[np.ndarray], None]
) -> SealCommitPhase1Output:
    arrays = c1.arrays
    fields = dict(arrays.fields)
    arr = fields[name].copy()
    mutate(arr)
    fields[name] = arr
    return SealCommitPhase1Output.from_arrays(C1Arrays(arrays.proof_type, fields), validated=True)


def _check_mutation(label: str, c1: SealCommitPhase1Output, synth: Synthesised) -> None:
    name, mutate, kind, where = MUTATIONS[label]
    bad = _mutated(c1, name, mutate)
    if kind in (IGNORED, INPUTS):
        assert partition_witness(bad, 0) == partition_witness(c1, 0), f"{label}: the circuit reads {name}"
        if kind == INPUTS:
            pt = bad.proof_type
            want = public_inputs.record_inputs(
                pt, prover_id=PROVER, sector_id=SECTOR, ticket=bad.ticket, seed=bad.seed, comm_d=bad.comm_d,
                comm_r=bad.comm_r,
            )[0]
            assert synth.cs.inputs()[1:] != want
        return
    cs = synthesize_c1(bad, 0, record=False)
    row = synth.r1cs.first_unsatisfied(cs.witness_array())
    assert row is not None, f"{label}: witness still satisfies the circuit"
    assert where in synth.cs.label(row), f"{label}: first failure at {synth.cs.label(row)}"


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(IN_CI))
def test_mutation_ci(label: str, c1_2kib: SealCommitPhase1Output, synth_2kib: Synthesised) -> None:
    _check_mutation(label, c1_2kib, synth_2kib)


@long_only
@pytest.mark.parametrize("label", sorted(set(MUTATIONS) - IN_CI))
def test_mutation_long(label: str, c1_2kib: SealCommitPhase1Output, synth_2kib: Synthesised) -> None:
    _check_mutation(label, c1_2kib, synth_2kib)


@long_only
def test_8mib_c1_witness_satisfies() -> None:
    """A sealed 8MiB C1 (random data): 3,844,969 rows incl. inputs, witness satisfies, inputs = verifier's."""
    import random

    from porep.ids import prover_id
    from porep.sdr.seal import seal
    from porep.sdr.vanilla import make_c1

    piece = random.Random(8).randbytes(8 * 2**20 * 127 // 128)
    sealed = seal("StackedDrg8MiBV1_1", prover_id(1000), 3, bytes([4]) * 32, piece=piece)
    c1 = make_c1(sealed, bytes([9]) * 32)
    cs = synthesize_c1(c1, 0)
    r1cs = cs.to_r1cs()
    assert (r1cs.num_constraints_total, r1cs.num_aux, r1cs.num_inputs) == (3_844_969, 3_842_449, 40)
    assert (r1cs.a.nnz, r1cs.b.nnz, r1cs.c.nnz) == (9_388_413, 3_847_886, 8_234_882)
    r1cs.check(cs.witness_array())
    assert cs.inputs()[1:] == public_inputs.from_c1(c1)[0]
