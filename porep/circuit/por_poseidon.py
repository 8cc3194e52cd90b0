"""Vectorised witness of Poseidon Merkle PoR levels (trees C and R, circuit.md §7.3): one template per
arity — index bits, siblings, insert, Poseidon: 530 rows / 537 aux for arity 8, 314 / 315 for arity 2 —
solved for all paths of a partition at once, level by level (the hash of one level is the running node of
the next). The rows themselves are ``porep.circuit.por.auth_path``'s; the tail of a PoR (index packed into
a public input, root equality) allocates no aux beyond the inputs and is left to the synthesis.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from gpu.arith.fields import fr_encode
from porep.circuit.cs import ConstraintSystem
from porep.circuit.por import PathLevel, auth_path, poseidon_node
from porep.circuit.template import Template, record
from porep.circuit.template_witness import Program, program, solve


@cache
def level_template(arity: int) -> tuple[Template, Program]:
    """One PoR level of ``arity`` over its running node (the template's only input)."""

    def level(cs: ConstraintSystem, ins: list[int]) -> object:
        return auth_path(cs, ins[0], [PathLevel(arity)], poseidon_node)

    t = record(level, 1)
    return t, program(t)


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
        _, p = level_template(arity)
        idx = np.asarray(indices)[:, h].astype(np.int64)
        if (idx < 0).any() or (idx >= arity).any():
            raise ValueError(f"level {h}: index outside [0, {arity})")
        bits = bit[(idx[:, None] >> np.arange(nbits)[None, :]) & 1]
        free = np.ascontiguousarray(np.concatenate([bits, sib], axis=1))
        aux = solve(p, cur, free)
        out.append(aux)
        cur = np.ascontiguousarray(aux[:, -1:])
    return out, cur.reshape(n, 8)
