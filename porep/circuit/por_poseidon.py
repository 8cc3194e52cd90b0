"""Vectorised witness of Poseidon Merkle PoR levels (trees C and R, circuit.md §7.3): per level the index
bits, the siblings, ``insert`` and the Poseidon hash — 530 rows / 537 aux for arity 8, 314 / 315 for
arity 2 — for all paths of a partition at once, level by level (the hash of one level is the running node
of the next). ``insert`` is its recorded template solved row by row (``template_witness.solve``, 2 or 22
rows), the hash the batched Poseidon kernel (``poseidon_witness``; the generic solver on the whole level
template was 2/3 of an 8MiB partition's witness time). The rows themselves are
``porep.circuit.por.auth_path``'s; the tail of a PoR (index packed into a public input, root equality)
allocates no aux beyond the inputs and is left to the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from gpu.arith.fields import fr_encode
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ConstraintSystem
from porep.circuit.insertion import insert
from porep.circuit.por import PathLevel, auth_path, poseidon_node
from porep.circuit.poseidon_witness import poseidon_witness_mont
from porep.circuit.template import Template, record
from porep.circuit.template_witness import Program, program, solve


@cache
def level_template(arity: int) -> tuple[Template, Program]:
    """One PoR level of ``arity`` over its running node (the template's only input)."""

    def level(cs: ConstraintSystem, ins: list[int]) -> object:
        return auth_path(cs, ins[0], [PathLevel(arity)], poseidon_node)

    t = record(level, 1)
    return t, program(t)


@cache
def insert_program(arity: int) -> tuple[Program, np.ndarray]:
    """``insert`` over (running node, index bits, siblings) as inputs: its program (every aux defined by
    its row) and the positions, among its own aux, of the arity children it returns (in order)."""
    nbits = arity.bit_length() - 1
    returned: list[list[int]] = []

    def gadget(cs: ConstraintSystem, ins: list[int]) -> object:
        returned.append(insert(cs, ins[0], [Boolean(v) for v in ins[1 : 1 + nbits]], ins[1 + nbits :]))
        return None

    t = record(gadget, arity + nbits)
    p = program(t)
    children = np.asarray(returned[0], dtype=np.int64) - t.n_inputs
    if p.free or (children < 0).any():
        raise AssertionError("insert: a free aux, or a child that is not its own aux")
    return p, children


def insert_hash(cur: np.ndarray, bits: np.ndarray, sib: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One level of N paths after its bits and siblings: ``insert``'s aux (uint32[N, ·, 8]) and the
    Poseidon gadget's (the hash last), from the running node ``cur`` [N, 1, 8], the index bits [N, nbits, 8]
    (Montgomery 0/1) and the siblings [N, arity − 1, 8], all Montgomery."""
    n, arity = cur.shape[0], sib.shape[1] + 1
    p, children = insert_program(arity)
    ins = np.ascontiguousarray(np.concatenate([cur, bits, sib], axis=1))
    picks = solve(p, ins, np.zeros((n, 0, 8), np.uint32))
    return picks, poseidon_witness_mont(np.ascontiguousarray(picks[:, children]))


def paths_witness(
    leaves: np.ndarray, siblings: Sequence[np.ndarray], indices: np.ndarray
) -> tuple[list[np.ndarray], np.ndarray]:
    """N paths: ``leaves`` uint32[N, 8] Montgomery, per level ``siblings[h]`` uint32[N, arity_h − 1, 8]
    Montgomery and ``indices[:, h]`` the running node's position. Returns per level the aux
    uint32[N, n_aux, 8] (allocation order) and the roots uint32[N, 8] (Montgomery)."""
    n = leaves.shape[0]
    bit = fr_encode([0, 1])
    cur = np.ascontiguousarray(leaves).reshape(n, 1, 8)
    out = []
    for h, sib in enumerate(siblings):
        arity = sib.shape[1] + 1
        nbits = arity.bit_length() - 1
        idx = np.asarray(indices)[:, h].astype(np.int64)
        if (idx < 0).any() or (idx >= arity).any():
            raise ValueError(f"level {h}: index outside [0, {arity})")
        bits = bit[(idx[:, None] >> np.arange(nbits)[None, :]) & 1]
        picks, hashed = insert_hash(cur, bits, sib)
        out.append(np.concatenate([bits, sib, picks, hashed], axis=1))
        cur = np.ascontiguousarray(hashed[:, -1:])
    return out, cur.reshape(n, 8)
