"""The vectorised Snap witness (porep.snap.witness, behind porep.snap.partition.update_assignment): equal to
the direct synthesis' assignment for a request made by ``psagent snap make`` (2KiB; 8MiB in the long suite),
also for a mutated request (so the same rows fail), and the same named errors where Rust's synthesis
asserts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _snap_cases import HEADER_ASSERTIONS, Synth, long_only
from test_snap_circuit import _flip, _proof, _set_challenge, _sibling, _with_proof

from market.proofdata import Snap
from porep.circuit.cs import ConstraintSystem
from porep.snap import witness
from porep.snap.circuit import (
    PartitionWitness,
    UpdateWitnessError,
    partition_witness,
    synthesize,
    synthesize_request,
)
from porep.snap.params import update_proof_type
from porep.snap.partition import UpdateCircuit, UpdateWork, update_assignment


@pytest.mark.slow
def test_2kib_equals_the_direct_synthesis_and_satisfies(
    request_2kib: Snap, synth_request_2kib: Synth
) -> None:
    cs, r1cs = synth_request_2kib
    got = update_assignment(request_2kib, 0)
    assert got.shape == (1_703_574, 8) and got.dtype == np.uint32
    assert np.array_equal(got, cs.witness_array())
    r1cs.check(got)
    # the proving loop's seam, with a cache directory for the node's bit program, gives the same vector
    out = np.full_like(got, 7)
    assert witness.update_assignment(request_2kib, 0, out=out) is out and np.array_equal(out, got)
    assert np.array_equal(UpdateCircuit().assignment(UpdateWork(request_2kib), 0), got)


@pytest.mark.slow
def test_mutated_request_gives_the_direct_vector(request_2kib: Snap, synth_request_2kib: Synth) -> None:
    """comm_c, an apex leaf, tree-R old / tree-R new / tree-D siblings of three challenges, one tree-D
    sibling above the apex row: the values are computed as the circuit computes them, so the vector equals
    the direct synthesis' and exactly its rows fail (the named rows: test_snap_circuit)."""
    p = _proof(request_2kib)
    apex = list(p.apex_leafs)
    apex[5] = _flip(apex[5])
    p = dataclasses.replace(p, comm_c=_flip(p.comm_c), apex_leafs=tuple(apex))
    cps = p.challenge_proofs
    p = _set_challenge(p, 1, proof_r_old=_sibling(cps[1].proof_r_old, 1))
    p = _set_challenge(p, 2, proof_r_new=_sibling(cps[2].proof_r_new, 0))
    p = _set_challenge(p, 3, proof_d_new=_sibling(cps[3].proof_d_new, 2))
    p = _set_challenge(p, 4, proof_d_new=_sibling(cps[4].proof_d_new, 4))
    bad = _with_proof(request_2kib, p)
    got = update_assignment(bad, 0)
    want = synthesize_request(bad, 0, record=False).witness_array()  # type: ignore[arg-type]
    assert np.array_equal(got, want)
    cs, r1cs = synth_request_2kib
    first = r1cs.first_unsatisfied(got)
    assert first is not None and cs.label(first).startswith("comm_r_old_calc")


def _w(snap: Snap) -> PartitionWitness:
    return partition_witness(snap, 0)[1]  # type: ignore[arg-type]


@pytest.mark.parametrize(("change", "message"), HEADER_ASSERTIONS)
def test_header_assertions_as_the_direct_path(
    request_2kib: Snap, change: dict[str, object], message: str
) -> None:
    c = update_proof_type(0).constants
    w = dataclasses.replace(_w(request_2kib), **change)  # type: ignore[arg-type]
    with pytest.raises(UpdateWitnessError, match=message) as vec:
        witness.assignment(c, w)
    with pytest.raises(UpdateWitnessError) as direct:
        synthesize(ConstraintSystem(witness=True, record=False), c, w)
    assert str(vec.value) == str(direct.value)


def test_shape_assertions_as_the_direct_path(request_2kib: Snap) -> None:
    c = update_proof_type(0).constants
    w = _w(request_2kib)
    with pytest.raises(UpdateWitnessError, match="9 challenge proofs"):
        witness.assignment(c, dataclasses.replace(w, challenges=w.challenges[:9]))
    w = _w(request_2kib)
    w.challenges[4].path_r_new = w.challenges[4].path_r_new[:1]
    with pytest.raises(UpdateWitnessError, match="challenge 4: tree-R new path arities"):
        witness.assignment(c, w)
    w = _w(request_2kib)
    w.challenges[2].path_d_new = w.challenges[2].path_d_new[:5]
    with pytest.raises(UpdateWitnessError, match="challenge 2: tree-D path of 5 levels"):
        witness.assignment(c, w)
    with pytest.raises(UpdateWitnessError, match="2 partition proofs"):
        update_assignment(dataclasses.replace(request_2kib, proofs=request_2kib.proofs * 2), 0)
    with pytest.raises(UpdateWitnessError, match="not a canonical field element"):
        update_assignment(dataclasses.replace(request_2kib, new_r=b"\xff" * 32), 0)


@pytest.mark.parametrize("field", ["leaf_r_old", "leaf_d_new", "leaf_r_new"])
def test_leaf_mutations_stop_as_rust_asserts(request_2kib: Snap, field: str) -> None:
    """A challenge whose new leaf is not the encoding of the old one (Rust's assert in circuit.rs): named,
    with the challenge, before any tree is hashed."""
    w = _w(request_2kib)
    w.challenges[3] = dataclasses.replace(w.challenges[3], **{field: getattr(w.challenges[3], field) ^ 1})
    message = r"leaf_r_new is not leaf_r_old \+ leaf_d_new · rho \(challenge 3\)"
    with pytest.raises(UpdateWitnessError, match=message):
        witness.assignment(update_proof_type(0).constants, w)


@pytest.mark.parametrize("member", ["old_r", "new_d"])
def test_commitment_mutations_stop_at_challenge_0(request_2kib: Snap, member: str) -> None:
    bad = dataclasses.replace(request_2kib, **{member: _flip(getattr(request_2kib, member))})  # type: ignore[arg-type]
    with pytest.raises(UpdateWitnessError, match=r"\(challenge 0\)"):
        update_assignment(bad, 0)


def test_out_must_be_the_assignment_shape(request_2kib: Snap) -> None:
    n = witness.layout(update_proof_type(0).constants).num_vars
    for bad in (np.zeros((n - 1, 8), np.uint32), np.zeros((n, 8), np.uint64), np.zeros((8, n), np.uint32).T):
        with pytest.raises(ValueError, match="C-contiguous"):
            update_assignment(request_2kib, 0, out=bad)


# ------------------------------------------------------------------------------------------------ long


@long_only
def test_8mib_partition_equals_the_direct_synthesis_and_satisfies_the_pce() -> None:
    """The production rho path (h = 10 of hs [7..12], h_select 8, two partition bits) on an update of a CC
    sector sealed by porep.sdr.seal: partition 3's vector equals the direct synthesis' and satisfies the
    PCE."""
    import random

    from porep.fr32 import pad_to_sector, unpadded_size
    from porep.ids import prover_id
    from porep.sdr.seal import seal
    from porep.snap.pce import update_pce
    from porep.snap.update import update_sector

    size = 8 << 20
    sealed = seal("StackedDrg8MiBV1_1", prover_id(1000), 5, bytes([3]) * 32, piece=b"")
    u = update_sector(sealed, pad_to_sector(random.Random(81).randbytes(unpadded_size(size) // 2), size))
    proofs = tuple(p.to_bytes() for p in u.partition_proofs())
    snap = Snap(1, u.comm_r_old, u.comm_r_new, u.comm_d_new, proofs)
    k = 3
    got = update_assignment(snap, k)
    want = synthesize_request(snap, k, record=False).witness_array()  # type: ignore[arg-type]
    assert np.array_equal(got, want)
    r1cs = update_pce(1)
    assert r1cs.num_constraints == 10_007_503
    r1cs.check(got)


@long_only
def test_two_digest_shape_equals_the_direct_synthesis_and_the_pce() -> None:
    """Every real size up to 8MiB draws its challenges from one digest; 512MiB and up from 8-10. A 2KiB
    sector with 43 challenges (42 per digest) takes challenge 42 from digest 1: the PCE's window shift and
    the witness's digest layout meet there. Vector == direct synthesis', PCE == blank synthesis, satisfied."""
    from gpu.arith.fields import fr_random
    from porep.snap.circuit import blank_system, proof_witness
    from porep.snap.params import constants_for_nodes
    from porep.snap.pce import record
    from porep.snap.tree_r import build_tree_r
    from porep.snap.update import update

    c = dataclasses.replace(constants_for_nodes(64), challenges=43)
    assert (c.challenges_per_digest, c.digests_per_partition) == (42, 2)
    rng = np.random.default_rng(43)
    key = fr_random(64, rng).astype("<u4").view(np.uint8).reshape(64, 32)
    data = rng.integers(0, 256, (64, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    comm_c = fr_random(1, rng).astype("<u4").view(np.uint8).tobytes()
    u = update(c, build_tree_r(key, c.tree_r), comm_c, data)
    w = proof_witness(c, 0, u.comm_r_old, u.comm_d_new, u.comm_r_new, u.partition_proof(0))
    got = witness.assignment(c, w)
    cs = ConstraintSystem(witness=True, record=False)
    synthesize(cs, c, w)
    assert np.array_equal(got, cs.witness_array())
    t = record(c)
    assert t.window_shift is not None and t.window_shift[42] - t.window_shift[41] != 6
    r1cs = t.r1cs()
    r1cs.check(got)
    want = blank_system(c).to_r1cs()
    for x, y in ((r1cs.a, want.a), (r1cs.b, want.b), (r1cs.c, want.c)):
        assert np.array_equal(x.row_ptr, y.row_ptr) and np.array_equal(x.cols, y.cols)
        assert np.array_equal(x.vals, y.vals)
