"""The full assignment of one FallbackPoSt partition, vectorised: all Poseidon-2 comm_r checks in one kernel
call, all inclusion paths level by level (``porep.circuit.por_poseidon.paths_witness``), written straight into
the canonical ``(num_inputs + num_aux, 8)`` uint32 vector, ONE first — the same array as
``porep.post.circuit.synthesize_request(checked).witness_array()``, without per-constraint Python.

Layout (docs post.md §5.1): sector ``i``'s inputs are ``1 + i·(1 + c)`` onwards (comm_r, then the c packed
path indices); its aux start at ``num_inputs + i·per_sector``: comm_r_last, comm_c, comm_r, the 311 aux of
Poseidon-2, then per challenge the leaf and each path level's aux (index bits, siblings, insert's picks, the
node hash). A padded sector is a copy of the last real one, so only distinct sectors are computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from gpu.arith.fields import fr_from_mont, fr_to_mont
from porep.circuit.cs import R, ints_to_limbs
from porep.circuit.por_poseidon import level_template, paths_witness
from porep.circuit.poseidon import constraint_count
from porep.circuit.poseidon_witness import poseidon_witness_mont
from porep.post.circuit import PoStShape, SectorWitness, circuit_sectors

__all__ = ["Layout", "assignment", "layout", "post_assignment"]

HEAD_AUX = 3  # comm_r_last, comm_c, comm_r


@dataclass(frozen=True)
class Layout:
    """Aux offsets inside one sector (relative to its first aux) and the totals."""

    shape: PoStShape
    hash2: int
    challenge: tuple[int, ...]  # each challenge's leaf
    levels: tuple[int, ...]  # each path level's first aux, relative to its challenge's leaf + 1
    per_challenge: int
    per_sector: int

    @property
    def inputs_per_sector(self) -> int:
        return 1 + self.shape.challenges

    @property
    def num_inputs(self) -> int:
        return 1 + self.inputs_per_sector * self.shape.sectors

    @property
    def num_aux(self) -> int:
        return self.per_sector * self.shape.sectors


@cache
def layout(shape: PoStShape) -> Layout:
    levels, off = [], 0
    for a in shape.path_arities:
        levels.append(off)
        off += level_template(a)[0].n_aux
    per_challenge = 1 + off
    head = HEAD_AUX + constraint_count(2)
    challenge = tuple(head + j * per_challenge for j in range(shape.challenges))
    per_sector = head + shape.challenges * per_challenge
    return Layout(shape, HEAD_AUX, challenge, tuple(levels), per_challenge, per_sector)


def _le(values: list[int]) -> np.ndarray:
    """ints → uint32[n, 8] canonical limbs (reduced mod r, as the constraint system stores a value)."""
    return ints_to_limbs(v % R for v in values)


def _index(w: SectorWitness, j: int) -> int:
    """The packed index input of challenge j: its path positions, LSB first, level by level."""
    value, shift = 0, 0
    for lv in w.paths[j]:
        assert lv.index is not None
        value |= (lv.index & (lv.arity - 1)) << shift
        shift += lv.arity.bit_length() - 1
    return value


def assignment(shape: PoStShape, sectors: list[SectorWitness], out: np.ndarray | None = None) -> np.ndarray:
    """The full assignment of the circuit of ``shape`` over ``sectors`` (``circuit.circuit_sectors``):
    canonical uint32[num_inputs + num_aux, 8], ONE at row 0; ``out`` (C-contiguous, that shape) is written in
    full and returned."""
    lay = layout(shape)
    if len(sectors) != shape.sectors:
        raise ValueError(f"{len(sectors)} sectors, the circuit has {shape.sectors}")
    total = lay.num_inputs + lay.num_aux
    if out is None:
        out = np.empty((total, 8), np.uint32)
    elif out.shape != (total, 8) or out.dtype != np.uint32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint32[{total}, 8] array")
    # distinct sectors: the padding repeats the last one (the same object)
    n = len(sectors)
    while n > 1 and sectors[n - 1] is sectors[n - 2]:
        n -= 1
    own = sectors[:n]
    c, ipc = shape.challenges, lay.inputs_per_sector
    levels = len(shape.path_arities)

    out[0] = _le([1])[0]
    inputs = [x for w in own for x in (w.comm_r, *(_index(w, j) for j in range(c)))]
    out[1 : 1 + n * ipc] = _le(inputs)  # type: ignore[arg-type]

    a0 = lay.num_inputs
    base = a0 + lay.per_sector * np.arange(n, dtype=np.int64)
    head = _le([x for w in own for x in (w.comm_r_last, w.comm_c, w.comm_r)]).reshape(n, HEAD_AUX, 8)  # type: ignore[misc]
    out[(base[:, None] + np.arange(HEAD_AUX)).reshape(-1)] = head.reshape(-1, 8)
    pair = np.ascontiguousarray(head[:, [1, 0]])  # (comm_c, comm_r_last)
    mont = fr_to_mont(pair.reshape(-1, 8)).reshape(n, 2, 8)
    h2 = poseidon_witness_mont(mont)
    rows = (base[:, None] + lay.hash2 + np.arange(h2.shape[1])).reshape(-1)
    out[rows] = fr_from_mont(np.ascontiguousarray(h2).reshape(-1, 8))

    # every inclusion path at once: path p = sector p // c, challenge p % c
    leaves = _le([w.leaves[j] for w in own for j in range(c)])  # type: ignore[misc]
    leaf_at = (base[:, None] + np.asarray(lay.challenge, dtype=np.int64)[None, :]).reshape(-1)
    out[leaf_at] = leaves
    sibs = []
    for h, a in enumerate(shape.path_arities):
        vals = [s for w in own for j in range(c) for s in (w.paths[j][h].siblings or [])]
        sibs.append(fr_to_mont(_le(vals)).reshape(n * c, a - 1, 8))
    idx = np.asarray(
        [[lv.index & (lv.arity - 1) for lv in w.paths[j]] for w in own for j in range(c)],  # type: ignore[operator]
        dtype=np.int64,
    ).reshape(n * c, levels)
    per_level, _ = paths_witness(fr_to_mont(leaves), sibs, idx)
    for h in range(levels):
        block = per_level[h]
        rows = (leaf_at[:, None] + 1 + lay.levels[h] + np.arange(block.shape[1])).reshape(-1)
        out[rows] = fr_from_mont(np.ascontiguousarray(block).reshape(-1, 8))

    # the padding: copies of the last distinct sector's inputs and aux
    if n < shape.sectors:
        last_in = out[1 + (n - 1) * ipc : 1 + n * ipc]
        out[1 + n * ipc : lay.num_inputs] = np.tile(last_in, (shape.sectors - n, 1))
        last = out[a0 + (n - 1) * lay.per_sector : a0 + n * lay.per_sector]
        for i in range(n, shape.sectors):
            out[a0 + i * lay.per_sector : a0 + (i + 1) * lay.per_sector] = last
    return out


def post_assignment(checked: object, out: np.ndarray | None = None) -> np.ndarray:
    """The assignment of a checked request (``porep.post.verify.CheckedPoSt``): see :func:`assignment`."""
    pt = checked.proof_type  # type: ignore[attr-defined]
    return assignment(PoStShape.for_proof_type(pt), circuit_sectors(checked), out=out)
