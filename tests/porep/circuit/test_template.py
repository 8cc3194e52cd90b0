"""Gadget templates: tiling one recorded instance reproduces, row for row, what synthesising each instance
directly gives (Poseidon 8 and 11, insert_8, a whole oct PoR level)."""

from __future__ import annotations

import numpy as np
import pytest

from porep.circuit import poseidon as pc
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ConstraintSystem
from porep.circuit.insertion import insert
from porep.circuit.num import inputize
from porep.circuit.por import PathLevel, auth_path, poseidon_node
from porep.circuit.template import RowRecorder, Template, record, tile


def _insert8(cs: ConstraintSystem, ins: list[int]) -> object:
    return insert(cs, ins[0], [Boolean(v) for v in ins[8:11]], ins[1:8])


def _oct_level(cs: ConstraintSystem, ins: list[int]) -> object:
    return auth_path(cs, ins[0], [PathLevel(8)], poseidon_node)


GADGETS = {
    "poseidon8": (lambda cs, ins: pc.poseidon_hash(cs, ins), 8, 505, 505),
    "poseidon11": (lambda cs, ins: pc.poseidon_hash(cs, ins), 11, 598, 598),
    "insert8": (_insert8, 11, 22, 22),
    "oct_level": (_oct_level, 1, 530, 537),
}


def _direct(gadget: object, inputs: np.ndarray, pool: int) -> RowRecorder:
    cs = RowRecorder()
    for _ in range(pool):
        cs.alloc()
    for row in inputs:
        gadget(cs, [int(v) for v in row])  # type: ignore[operator]
    return cs


def _rows(t: Template, inputs: np.ndarray, first_aux: int) -> list[tuple[dict[int, int], ...]]:
    tl = tile(t, inputs, first_aux)
    out = []
    pos = [0, 0, 0]
    for r in range(len(tl.lens[0])):
        row = []
        for k in range(3):
            n = int(tl.lens[k][r])
            vs, cs_ = tl.vars[k][pos[k] : pos[k] + n], tl.coeff[k][pos[k] : pos[k] + n]
            row.append({int(v): t.coeffs[int(c)] for v, c in zip(vs, cs_, strict=True)})
            pos[k] += n
        out.append(tuple(row))
    return out


@pytest.mark.parametrize("name", sorted(GADGETS))
def test_tile_equals_direct(name: str) -> None:
    gadget, n_in, rows, aux = GADGETS[name]
    t = record(gadget, n_in)
    assert (t.rows, t.n_aux) == (rows, aux)
    rng = np.random.default_rng(len(name))
    pool, n = 40, 3
    inputs = np.stack([rng.permutation(pool)[:n_in] for _ in range(n)])
    inputs[1, 0] = -2  # an instance may read a public input
    direct = _direct(gadget, inputs, pool)
    assert direct.num_aux == pool + n * aux
    norm = [tuple({v: c % pc.R for v, c in lc.items()} for lc in row) for row in direct.captured]
    assert _rows(t, inputs, pool) == norm


def test_inputs_refused() -> None:
    with pytest.raises(ValueError, match="public inputs"):
        record(lambda cs, ins: inputize(cs, ins[0]), 1)


def test_repeated_inputs_refused() -> None:
    t = record(lambda cs, ins: pc.poseidon_hash(cs, ins), 2)
    with pytest.raises(ValueError, match="distinct"):
        tile(t, np.array([[5, 5]]), 10)
