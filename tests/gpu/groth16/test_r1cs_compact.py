"""Compact R1CS matrices (interned coefficients, gpu.groth16.r1cs.CompactCSR): the same evaluation, density,
satisfiability check, column sums and assignment as the plain CSR they came from."""

from __future__ import annotations

import numpy as np
import pytest
from _circuits import random_circuit  # tests/gpu is on sys.path

from gpu.groth16.prover import Assignment
from gpu.groth16.r1cs import R1CS, CompactCSR, index_dtype
from gpu.transfer import PinnedPool


def test_compact_matrices_behave_like_plain_ones(seed: int) -> None:
    plain, w, _ = random_circuit(seed, num_constraints=40)
    compact = plain.compact()
    for x, y in zip((compact.a, compact.b, compact.c), (plain.a, plain.b, plain.c), strict=True):
        assert isinstance(x, CompactCSR) and x.coeff.dtype == np.uint8
        assert np.array_equal(x.vals, y.vals) and len(x.table) == len(np.unique(y.vals, axis=0))
    assert compact.a.one_index() >= 0  # the circuit's "make sure it is used" entries have coefficient 1
    want = plain.evaluate(w)
    rows = plain.num_constraints_total
    dirty = tuple(np.full((rows, 8), 0xFFFFFFFF, dtype=np.uint32) for _ in range(3))
    got = compact.evaluate(w, out=dirty)
    assert all(np.array_equal(g, x) for g, x in zip(got, want, strict=True))
    da, dp = compact.density(), plain.density()
    pairs = ((da.a_aux, dp.a_aux), (da.b_input, dp.b_input), (da.b_aux, dp.b_aux))
    assert all(np.array_equal(x, y) for x, y in pairs)
    lag = np.ascontiguousarray(want[0][:rows])  # any Montgomery values will do
    sums = zip(compact.column_sums(lag), plain.column_sums(lag), strict=True)
    assert all(np.array_equal(x, y) for x, y in sums)
    pool = PinnedPool()
    asg = Assignment.from_r1cs(compact, w, pool=pool)
    assert all(np.array_equal(g, x) for g, x in zip((asg.a, asg.b, asg.c), want, strict=True))
    asg.release(pool)
    bad = w.copy()
    bad[-1, 0] ^= 1
    assert compact.first_unsatisfied(bad) == plain.first_unsatisfied(bad) is not None
    back = compact.expanded()
    mats = ((back.a, plain.a), (back.b, plain.b), (back.c, plain.c))
    assert all(np.array_equal(x.vals, y.vals) for x, y in mats)


def test_compact_matrices_are_checked() -> None:
    plain, _, _ = random_circuit(1)
    c = plain.compact()
    bad = CompactCSR(c.a.row_ptr, c.a.cols, c.a.coeff, c.a.table[:1])
    with pytest.raises(ValueError, match="coefficient index"):
        R1CS(plain.num_inputs, plain.num_aux, bad, c.b, c.c)
    dtypes = [index_dtype(k) for k in (1, 256, 257, 65536, 65537)]
    assert dtypes == [np.uint8, np.uint8, np.uint16, np.uint16, np.uint32]
