"""The FallbackPoSt circuit at 2KiB over real sealed sectors: the direct synthesis is satisfied by the
request's witness; the pre-compiled circuit equals its R1CS array for array; the vectorised witness equals its
assignment; the verifier's public inputs (from public values only) equal the circuit's inputs; a wrong value
is caught by the R1CS."""

from __future__ import annotations

import numpy as np
import pytest
from _postdata import RANDOMNESS

from porep.post.circuit import PoStShape, circuit_sectors, synthesize_request
from porep.post.params import post_proof_type
from porep.post.partition import PoStCircuit, post_assignment, post_public_inputs, post_r1cs
from porep.post.vanilla import SealedReplica, post_request
from porep.post.verify import CheckedPoSt, check_post
from porep.post.witness import layout


def _checked(pid: int, sectors: list[SealedReplica], k: int = 0) -> CheckedPoSt:
    pt = post_proof_type(pid)
    return check_post(pt, RANDOMNESS, post_request(pt, RANDOMNESS, sectors, k), partition_index=k).checked()


def _same_r1cs(tiled: object, direct: object) -> bool:
    ex = tiled.expanded()  # type: ignore[attr-defined]
    return all(
        np.array_equal(getattr(getattr(ex, m), f), getattr(getattr(direct, m), f))
        for m in "abc" for f in ("row_ptr", "cols", "vals")
    ) and (ex.num_inputs, ex.num_aux) == (direct.num_inputs, direct.num_aux)  # type: ignore[attr-defined]


@pytest.mark.slow
def test_winning_2kib(sector_255: SealedReplica) -> None:
    checked = _checked(0, [sector_255])
    cs = synthesize_request(checked)
    assert (cs.num_constraints, cs.num_inputs, cs.num_aux) == (90_750, 133, 91_674)
    assert cs.is_satisfied()
    r1cs = post_r1cs(0)
    assert _same_r1cs(r1cs, cs.to_r1cs())
    w = post_assignment(checked)
    assert np.array_equal(w, cs.witness_array())
    assert len(r1cs.unsatisfied(w)) == 0
    assert post_public_inputs(checked) == cs.inputs()[1:]
    # 66 circuit sectors, one challenge each, all with the sector's comm_r (docs post.md §1)
    xs = post_public_inputs(checked)
    assert xs[0::2] == [int.from_bytes(sector_255.comm_r, "little")] * 66
    assert tuple(xs[1::2]) == checked.challenges[0]


@pytest.mark.parametrize(("pid", "k"), [(5, 3), (10, 0)])
def test_window_2kib(venus_sectors: list[SealedReplica], pid: int, k: int) -> None:
    checked = _checked(pid, venus_sectors, k)
    cs = synthesize_request(checked)
    assert (cs.num_constraints, cs.num_inputs, cs.num_aux) == (21_866, 23, 22_128)
    assert cs.is_satisfied()
    r1cs = PoStCircuit().r1cs(post_proof_type(pid))
    assert _same_r1cs(r1cs, cs.to_r1cs())
    w = PoStCircuit().assignment(checked, 0)
    assert np.array_equal(w, cs.witness_array())
    assert post_public_inputs(checked) == cs.inputs()[1:]
    lay = layout(PoStShape.for_proof_type(pid))
    assert (lay.num_inputs, lay.num_aux, lay.per_sector) == (23, 22_128, 11_064)


def test_a_short_partition_repeats_its_last_sector(sector_255: SealedReplica) -> None:
    checked = _checked(10, [sector_255], 1)
    sectors = circuit_sectors(checked)
    assert len(sectors) == 2 and sectors[1] is sectors[0]
    w = post_assignment(checked)
    assert len(post_r1cs(10).unsatisfied(w)) == 0
    xs = post_public_inputs(checked)
    assert xs[:11] == xs[11:]


def test_a_wrong_value_is_caught(venus_sectors: list[SealedReplica]) -> None:
    checked = _checked(10, venus_sectors)
    w = post_assignment(checked)
    r1cs = post_r1cs(10)
    lay = layout(PoStShape.for_proof_type(10))
    row = lay.num_inputs + lay.per_sector + lay.challenge[4] + 1 + 3  # sector 1, challenge 4: a sibling
    w[row, 0] ^= 1
    assert len(r1cs.unsatisfied(w)) == 1
