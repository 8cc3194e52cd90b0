"""porep.circuit.cs: bellperson numbering, LC merging, labels, conversion to gpu.groth16's R1CS."""

from __future__ import annotations

import pytest

from gpu.groth16.r1cs import UnsatisfiedConstraint
from porep.circuit.cs import ONE, ConstraintSystem, Input, R, merge


def _cube(cs: ConstraintSystem, x: int | None) -> None:
    """x^3 + x + 5 = out (out public): the classic toy circuit."""
    w = cs.witness
    with cs.namespace("cube"):
        xv = cs.alloc(x)
        x2 = cs.alloc(x * x if w and x is not None else None)
        cs.enforce([(xv, 1)], [(xv, 1)], [(x2, 1)])
        x3 = cs.alloc(x * x * x if w and x is not None else None)
        with cs.namespace("x3"):
            cs.enforce({xv: 1}, {x2: 1}, {x3: 1})
    out = cs.alloc_input(x**3 + x + 5 if w and x is not None else None)
    # (x3 + x + 5) * 1 = out, written with a duplicate term that merges
    cs.enforce([(x3, 1), (xv, 2), (xv, -1), (ONE, 5)], [(ONE, 1)], [(out, 1)])


def test_numbering_and_merge() -> None:
    cs = ConstraintSystem()
    assert cs.num_inputs == 1 and ONE == Input(0)
    _cube(cs, 3)
    assert (cs.num_inputs, cs.num_aux, cs.num_constraints) == (2, 3, 3)
    assert cs.nnz == (1 + 1 + 3, 1 + 1 + 1, 1 + 1 + 1)
    a, b, c = cs.rows(2)
    assert a == {2: 1, 0: 1, ONE: 5} and b == {ONE: 1} and c == {Input(1): 1}
    assert cs.inputs() == [1, 35]
    assert cs.is_satisfied()


def test_zero_sum_is_kept() -> None:
    assert merge([(3, 1), (3, -1), (4, 2)]) == {3: 0, 4: 2}


def test_r1cs_conversion_and_check() -> None:
    cs = ConstraintSystem()
    _cube(cs, 3)
    r1cs = cs.to_r1cs()
    assert (r1cs.num_inputs, r1cs.num_aux, r1cs.num_constraints, r1cs.num_constraints_total) == (2, 3, 3, 5)
    # unified columns: ONE 0, out 1, aux j at 2 + j; row 2 sorted by column
    assert list(r1cs.a.cols[r1cs.a.row_ptr[2] : r1cs.a.row_ptr[3]]) == [0, 2, 4]
    w = cs.witness_array()
    r1cs.check(w)
    # a wrong x^3 is named by its namespace
    cs.aux_values[2] = (cs.aux_values[2] + 1) % R
    assert cs.unsatisfied() == 1 and cs.label(1) == "cube/x3 (constraint 1)"
    with pytest.raises(UnsatisfiedConstraint) as e:
        r1cs.check(cs.witness_array())
    assert e.value.index == 1


def test_shape_only_matches_witness_shape() -> None:
    a, b = ConstraintSystem(), ConstraintSystem(witness=False)
    _cube(a, 3)
    _cube(b, None)
    ra, rb = a.to_r1cs(), b.to_r1cs()
    for x, y in ((ra.a, rb.a), (ra.b, rb.b), (ra.c, rb.c)):
        assert (x.row_ptr == y.row_ptr).all() and (x.cols == y.cols).all() and (x.vals == y.vals).all()
    with pytest.raises(ValueError):
        b.witness_array()
    c = ConstraintSystem(witness=False, record=False)
    _cube(c, None)
    assert c.nnz == b.nnz and c.num_constraints == 3


def test_witness_mode_needs_values() -> None:
    cs = ConstraintSystem()
    with cs.namespace("n"), pytest.raises(ValueError, match="aux 0"):
        cs.alloc(None)
