"""R1CS container: evaluation, satisfiability with the first failing constraint, density, on-disk cache; the
synthetic circuit family's direct evaluations against its matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _circuits import random_circuit  # tests/gpu is on sys.path

from gpu.arith.fields import fr_decode, fr_from_ints, fr_to_ints
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.groth16.prover import Assignment
from gpu.groth16.r1cs import CSR, R1CS, UnsatisfiedConstraint
from gpu.groth16.synthetic import SyntheticCircuit
from gpu.transfer import PinnedPool, is_pinned


def test_evaluate_matches_python_integers(seed: int) -> None:
    r1cs, w, _ = random_circuit(seed)
    wi = fr_to_ints(w)
    a, b, c = r1cs.evaluate(w)
    rows = (r1cs.a, r1cs.b, r1cs.c)
    for mat, got in zip(rows, (a, b, c), strict=True):
        vals = fr_to_ints(np.ascontiguousarray(mat.vals))
        want = [
            sum(vals[e] * wi[int(mat.cols[e])] for e in range(int(mat.row_ptr[i]), int(mat.row_ptr[i + 1])))
            % R
            for i in range(r1cs.num_constraints)
        ]
        assert fr_decode(got)[: r1cs.num_constraints] == want, f"seed {seed}"
    # bellperson's input constraints x_i * 0 = 0 are appended
    assert fr_decode(a)[r1cs.num_constraints :] == wi[: r1cs.num_inputs]
    assert not b[r1cs.num_constraints :].any() and not c[r1cs.num_constraints :].any()
    assert r1cs.first_unsatisfied(w) is None
    r1cs.check(w)


def test_evaluate_into_pooled_pinned_buffers(seed: int) -> None:
    """evaluate(out=...) writes every row of dirty buffers (a reused pool's are); Assignment.from_r1cs with a
    PinnedPool gives the plain evaluation's values in page-locked arrays, which go back to the pool and are
    reused for the next assignment."""
    r1cs, w, _ = random_circuit(seed)
    want = r1cs.evaluate(w)
    rows = r1cs.num_constraints + r1cs.num_inputs
    dirty = tuple(np.full((rows, 8), 0xFFFFFFFF, dtype=np.uint32) for _ in range(3))
    got = r1cs.evaluate(w, out=dirty)
    assert all(g is d for g, d in zip(got, dirty, strict=True))
    assert all(np.array_equal(g, x) for g, x in zip(got, want, strict=True))
    with pytest.raises(ValueError, match="C-contiguous"):
        r1cs.evaluate(w, out=(dirty[0], dirty[1], dirty[2][:-1]))
    with pytest.raises(ValueError, match="C-contiguous"):
        r1cs.evaluate(w, out=(dirty[0], dirty[1], np.zeros((rows, 8), dtype=np.uint64)))
    pool = PinnedPool()
    asg = Assignment.from_r1cs(r1cs, w, pool=pool)
    assert all(is_pinned(x) for x in (asg.witness, asg.a, asg.b, asg.c))
    assert np.array_equal(asg.witness, w)
    assert all(np.array_equal(g, x) for g, x in zip((asg.a, asg.b, asg.c), want, strict=True))
    held = pool.held_bytes
    ptrs = sorted(x.ctypes.data for x in (asg.witness, asg.a, asg.b, asg.c))
    asg.release(pool)
    asg2 = Assignment.from_r1cs(r1cs, w, pool=pool)  # the same four buffers again, nothing new pinned
    assert pool.held_bytes == held
    assert sorted(x.ctypes.data for x in (asg2.witness, asg2.a, asg2.b, asg2.c)) == ptrs
    assert all(np.array_equal(g, x) for g, x in zip((asg2.a, asg2.b, asg2.c), want, strict=True))
    with pytest.raises(ValueError):  # a bad witness: the error surfaces, the taken buffers go back
        Assignment.from_r1cs(r1cs, w[:-1], pool=pool)
    asg2.release(pool)
    with pytest.raises(ValueError, match="twice"):
        asg2.release(pool)


def test_first_failing_constraint_is_named(seed: int) -> None:
    r1cs, w, _ = random_circuit(seed, num_constraints=10)
    bad = w.copy()
    last = r1cs.num_vars - 1  # z of the last constraint: only that row uses it
    bad[last] = fr_from_ints([(fr_to_ints(w[last : last + 1])[0] + 1) % R])[0]
    assert r1cs.first_unsatisfied(bad) == r1cs.num_constraints - 1
    with pytest.raises(UnsatisfiedConstraint, match=f"constraint {r1cs.num_constraints - 1} "):
        r1cs.check(bad)
    with pytest.raises(ValueError, match="ONE"):
        r1cs.check(np.zeros_like(w))


def test_save_load_round_trip(tmp_path: Path, seed: int) -> None:
    r1cs, w, _ = random_circuit(seed)
    r1cs.save(tmp_path / "c")
    back = R1CS.load(tmp_path / "c")
    assert isinstance(back.a.vals, np.memmap)
    for x, y in zip((r1cs.a, r1cs.b, r1cs.c), (back.a, back.b, back.c), strict=True):
        np.testing.assert_array_equal(x.row_ptr, y.row_ptr)
        np.testing.assert_array_equal(x.cols, y.cols)
        np.testing.assert_array_equal(x.vals, y.vals)
    for x, y in zip(r1cs.evaluate(w), back.evaluate(w), strict=True):
        np.testing.assert_array_equal(x, y)
    (tmp_path / "c" / "meta.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a psagent-r1cs"):
        R1CS.load(tmp_path / "c")


def test_shape_validation() -> None:
    rows = CSR.from_rows([[(5, 1)]])
    with pytest.raises(ValueError, match="column 5"):
        R1CS(1, 1, rows, CSR.from_rows([[]]), CSR.from_rows([[]]))


@pytest.mark.parametrize("m", [37, 1000])
def test_synthetic_family(m: int, seed: int) -> None:
    sc = SyntheticCircuit(m, num_public=2, seed=seed)
    r1cs = sc.r1cs()
    w, a, b, c = sc.evaluations()
    for x, y in zip((a, b, c), r1cs.evaluate(w), strict=True):
        np.testing.assert_array_equal(x, y, err_msg=f"seed {seed}")
    assert r1cs.first_unsatisfied(w) is None
    aux = np.asarray(fr_to_ints(w[r1cs.num_inputs :]))
    boolean = np.mean([v in (0, 1) for v in aux])
    assert 0.85 <= boolean <= 0.97, boolean  # Filecoin-like: mostly bits
    assert fr_to_ints(w[1:3]) == sc.public_inputs()
    d = r1cs.density()
    sd = sc.density()
    for x, y in ((d.a_aux, sd.a_aux), (d.b_input, sd.b_input), (d.b_aux, sd.b_aux)):
        np.testing.assert_array_equal(x, y)
    assert d.b_input.all()
    if m >= 1000:
        assert (
            0.2 <= d.b_aux.mean() <= 0.35 and d.a_aux.mean() > 0.9
        )  # cuzk.md §1.6: b_aux 25 %, a_aux 99.7 %
    # flipping a derived (XOR) bit breaks its XOR row first
    bad = w.copy()
    bad[r1cs.num_inputs + 16 + 6, 0] ^= 1
    assert r1cs.first_unsatisfied(bad) == 16 + 6
