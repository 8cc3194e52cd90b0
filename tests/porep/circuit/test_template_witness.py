"""Solving a template's rows for many instances at once gives exactly the aux that direct synthesis
allocates: Poseidon-11 (every row defines its aux) and a whole oct PoR level (index bits and siblings
free, picks and Poseidon solved)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpu.arith.fields import fr_decode, fr_encode
from porep.circuit import poseidon as pc
from porep.circuit.cs import ConstraintSystem
from porep.circuit.por import PathLevel, auth_path, poseidon_node
from porep.circuit.template import record
from porep.circuit.template_witness import program, solve
from porep.hashes import poseidon as P


def _oct_level(cs: ConstraintSystem, ins: list[int]) -> object:
    return auth_path(cs, ins[0], [PathLevel(8)], poseidon_node)


@pytest.mark.slow  # compiles the solver
def test_poseidon_and_oct_level() -> None:
    rng = random.Random(4)
    p = program(record(lambda cs, ins: pc.poseidon_hash(cs, ins), 11))
    assert p.free == () and (p.defines >= 0).all()
    vals = [[rng.randrange(P.R) for _ in range(11)] for _ in range(3)]
    out = solve(p, fr_encode([x for v in vals for x in v]).reshape(3, 11, 8), np.zeros((3, 0, 8), np.uint32))
    for i, v in enumerate(vals):
        cs = ConstraintSystem()
        pc.poseidon_hash(cs, [cs.alloc(x) for x in v])
        assert fr_decode(out[i]) == cs.aux_values[11:]

    lvl = program(record(_oct_level, 1))
    assert lvl.free == tuple(range(10))  # 3 index bits, then 7 siblings
    n = 8
    cur = [rng.randrange(P.R) for _ in range(n)]
    sibs = [[rng.randrange(P.R) for _ in range(7)] for _ in range(n)]
    free = [[(i >> k) & 1 for k in range(3)] + sibs[i] for i in range(n)]
    free_mont = fr_encode([x for f in free for x in f]).reshape(n, 10, 8)
    out = solve(lvl, fr_encode(cur).reshape(n, 1, 8), free_mont)
    for i in range(n):
        cs = ConstraintSystem()
        auth_path(cs, cs.alloc(cur[i]), [PathLevel(8, sibs[i], i)], poseidon_node)
        assert fr_decode(out[i]) == cs.aux_values[1:]


def test_shapes_checked() -> None:
    p = program(record(lambda cs, ins: pc.poseidon_hash(cs, ins), 2))
    with pytest.raises(ValueError, match="expected"):
        solve(p, np.zeros((1, 3, 8), np.uint32), np.zeros((1, 0, 8), np.uint32))
