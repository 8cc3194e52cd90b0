"""The chunked satisfiability check (``R1CS.unsatisfied``: one row block at a time, a*b == c fused, the
witness converted to Montgomery once, in place if asked) gives the answer of the full-length ``evaluate``
path, for plain and compact matrices, satisfied and mutated witnesses, every chunk size (1, odd, larger than
the system)."""

from __future__ import annotations

import numpy as np
import pytest
from _circuits import random_circuit  # tests/gpu is on sys.path

from gpu.arith.fields import fr_decode, fr_from_ints, fr_mul_batch, fr_to_ints, fr_to_mont
from gpu.arith.fields.constants import R_MODULUS as R
from gpu.groth16.r1cs import R1CS, UnsatisfiedConstraint
from gpu.groth16.synthetic import SyntheticCircuit


def _bad_rows(r1cs: R1CS, w: np.ndarray) -> np.ndarray:
    """The oracle: every circuit row whose full-length products disagree (the existing evaluate path)."""
    a, b, c = r1cs.evaluate(w)
    m = r1cs.num_constraints
    return np.flatnonzero(np.any(fr_mul_batch(a, b) != c, axis=1)[:m])


def _bump(w: np.ndarray, cols: list[int]) -> np.ndarray:
    """A copy of ``w`` with each of ``cols`` replaced by its value + 1 (mod r)."""
    bad = w.copy()
    for j in cols:
        bad[j] = fr_from_ints([(fr_to_ints(w[j : j + 1])[0] + 1) % R])[0]
    return bad


def _chunks(m: int) -> list[int]:
    return [1, 2, 7, m // 2 + 1, m, m + 5, 1 << 20]


@pytest.mark.parametrize("form", ["plain", "compact"])
def test_chunked_check_equals_the_full_evaluation(form: str, seed: int) -> None:
    plain, w, _ = random_circuit(seed, num_constraints=40)
    r1cs = plain if form == "plain" else plain.compact()
    m = r1cs.num_constraints
    rng = np.random.default_rng(seed)
    mutants = [_bump(w, [int(j)]) for j in rng.choice(np.arange(1, r1cs.num_vars), 3, replace=False)]
    mutants.append(_bump(w, list(range(r1cs.num_inputs, r1cs.num_vars, 5))))  # failures in many blocks
    assert _bad_rows(r1cs, w).size == 0
    for rows in _chunks(m):
        msg = f"seed {seed}, {form}, rows_per_chunk {rows}"
        assert r1cs.unsatisfied(w, rows_per_chunk=rows, first_only=False).size == 0, msg
        assert r1cs.first_unsatisfied(w, rows_per_chunk=rows) is None, msg
        for bad in mutants:
            want = _bad_rows(r1cs, bad)
            assert want.size, msg  # every mutated variable is used by some row
            got = r1cs.unsatisfied(bad, rows_per_chunk=rows, first_only=False)
            np.testing.assert_array_equal(got, want, err_msg=msg)
            np.testing.assert_array_equal(r1cs.unsatisfied(bad, rows_per_chunk=rows), want[:1], err_msg=msg)
            assert r1cs.first_unsatisfied(bad, rows_per_chunk=rows) == r1cs.first_unsatisfied(bad), msg


def test_failure_is_named_with_its_values(seed: int) -> None:
    r1cs, w, _ = random_circuit(seed, num_constraints=12)
    bad = _bump(w, [r1cs.num_vars - 1])  # z of the last row: only that row uses it
    with pytest.raises(UnsatisfiedConstraint) as full:
        r1cs.check(bad)
    for rows in (1, 5, 100):
        with pytest.raises(UnsatisfiedConstraint) as chunked:
            r1cs.compact().check(bad, rows_per_chunk=rows)
        got, want = chunked.value, full.value
        assert (got.index, got.a, got.b, got.c) == (want.index, want.a, want.b, want.c) and got.index == 11
        assert got.a * got.b % R != got.c
    r1cs.check(w, rows_per_chunk=3)  # a satisfied witness raises nothing
    a, b, c = r1cs.row_values(4, fr_to_mont(w))
    assert a * b % R == c
    ea, eb, ec = r1cs.evaluate(w)
    assert [fr_decode(x[4:5])[0] for x in (ea, eb, ec)] == [a, b, c]


def test_in_place_and_reused_work_buffer(seed: int) -> None:
    sc = SyntheticCircuit(5000, num_public=3, seed=seed)  # blocks above parallel_for's split: rows in threads
    r1cs = sc.r1cs().compact()
    w = sc.witness()
    bad = _bump(w, [r1cs.num_inputs + 16 * 200 + 15, r1cs.num_inputs + 16 * 301 + 4])  # z of group 200, a bit
    want = _bad_rows(r1cs, bad)
    assert want.size >= 2
    work = np.full_like(w, 0xFFFFFFFF)
    for rows in (4099, 1023, 2048):
        for wit, expect in ((w, []), (bad, want)):
            got = r1cs.unsatisfied(wit, rows_per_chunk=rows, first_only=False, work=work)
            np.testing.assert_array_equal(got, expect, err_msg=f"seed {seed}, rows {rows}")
            np.testing.assert_array_equal(work, fr_to_mont(wit))
    buf = bad.copy()
    got = r1cs.unsatisfied(buf, rows_per_chunk=3000, work=buf)  # in place: buf now holds Montgomery values
    np.testing.assert_array_equal(got, want[:1])
    np.testing.assert_array_equal(buf, fr_to_mont(bad))
    np.testing.assert_array_equal(r1cs.unsatisfied_mont(buf, 777, first_only=False), want)


def test_bad_arguments_are_refused() -> None:
    r1cs, w, _ = random_circuit(3, num_constraints=6)
    with pytest.raises(ValueError, match="rows_per_chunk"):
        r1cs.unsatisfied(w, rows_per_chunk=0)
    with pytest.raises(ValueError, match="work"):
        r1cs.unsatisfied(w, work=np.empty((r1cs.num_vars + 1, 8), np.uint32))
    with pytest.raises(ValueError, match="ONE"):
        r1cs.unsatisfied(np.zeros_like(w))
    with pytest.raises(ValueError, match="Montgomery witness"):
        r1cs.unsatisfied_mont(w[:-1])
    empty = R1CS(1, 0, *(type(r1cs.a).from_rows([]) for _ in range(3)))
    assert empty.unsatisfied(w[:1]).size == 0
