"""storage-proofs' insertion gadget: published counts (test_insert: 2 → 2, 4 → 8, 8 → 22, else
size·(size−1)), every position against list.insert, insert_2 = conditionally_reverse row for row."""

from __future__ import annotations

import random

import pytest

from porep.circuit import boolean as bl
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ONE, ConstraintSystem, R
from porep.circuit.insertion import insert, select

COST = {2: 2, 4: 8, 8: 22, 16: 240}


Setup = tuple[ConstraintSystem, list[int], int, list[Boolean]]


def _setup(size: int, index: int | None, seed: int = 0) -> Setup:
    rng = random.Random(seed)
    w = index is not None
    cs = ConstraintSystem(witness=w)
    sibs = [cs.alloc(rng.randrange(R) if w else None) for _ in range(size - 1)]
    cur = cs.alloc(rng.randrange(R) if w else None)
    nbits = size.bit_length() - 1
    bits = [Boolean(bl.alloc_bit(cs, (index >> i) & 1 if index is not None else None)) for i in range(nbits)]
    return cs, sibs, cur, bits


@pytest.mark.parametrize("size", sorted(COST))
def test_counts(size: int) -> None:
    cs, sibs, cur, bits = _setup(size, None)
    c0, a0 = cs.num_constraints, cs.num_aux
    out = insert(cs, cur, bits, sibs)
    assert len(out) == size
    assert cs.num_constraints - c0 == COST[size]
    assert cs.num_aux - a0 == COST[size]


@pytest.mark.parametrize("size", sorted(COST))
def test_every_position(size: int) -> None:
    for index in range(size):
        cs, sibs, cur, bits = _setup(size, index, seed=index)
        out = insert(cs, cur, bits, sibs)
        expect = [cs.value(v) for v in sibs]
        expect.insert(index, cs.value(cur))
        assert [cs.value(v) for v in out] == expect
        assert cs.is_satisfied()
        # a pick that lies about its result is caught
        cs.aux_values[out[-1]] = (cs.aux_values[out[-1]] + 1) % R
        assert cs.unsatisfied() is not None


def test_insert_2_is_conditionally_reverse() -> None:
    """(cur − sib)·b = cur − out0; (sib − cur)·b = sib − out1 (bellpepper conditionally_reverse)."""
    cs, (sib,), cur, (b,) = _setup(2, None)
    row = cs.num_constraints
    out0, out1 = insert(cs, cur, [b], [sib])
    assert b.var is not None
    assert cs.rows(row) == ({cur: 1, sib: -1}, {b.var: 1}, {cur: 1, out0: -1})
    assert cs.rows(row + 1) == ({sib: 1, cur: -1}, {b.var: 1}, {sib: 1, out1: -1})


def test_insert_8_starts_with_nor_and() -> None:
    cs, sibs, cur, bits = _setup(8, None)
    row = cs.num_constraints
    insert(cs, cur, bits, sibs)
    b0, b1 = bits[0].var, bits[1].var
    assert b0 is not None and b1 is not None
    nor, both = cs.num_aux - 22, cs.num_aux - 21
    assert cs.rows(row) == ({ONE: 1, b0: -1}, {ONE: 1, b1: -1}, {nor: 1})
    assert cs.rows(row + 1) == ({b0: 1}, {b1: 1}, {both: 1})


@pytest.mark.parametrize("size", [2, 4, 8, 16])
def test_select(size: int) -> None:
    for index in range(size):
        cs, sibs, cur, bits = _setup(size, index, seed=size + index)
        choices = [*sibs, cur]
        c0 = cs.num_constraints
        got = select(cs, choices, bits)
        assert cs.num_constraints - c0 == size - 1
        assert cs.value(got) == cs.value(choices[index])
        assert cs.is_satisfied()


def test_bad_bits_refused() -> None:
    cs, sibs, cur, bits = _setup(8, None)
    with pytest.raises(ValueError, match="index bits"):
        insert(cs, cur, bits[:2], sibs)
