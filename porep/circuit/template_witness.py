"""The witness of many instances of one gadget template at once (Numba, Montgomery Fr), by solving its rows.

Why: most gadget rows *define* the aux they follow — a Poseidon S-box, an LC's allocation, a pick, an
and/nor/xor bit: exactly one variable of C is still unknown when the row is reached, and A and B are
known. Solving each such row for that variable (v = (A·B − rest of C) / its coefficient), in row order and
for all instances together, is a gadget-agnostic vectorised witness. The other aux are *free*: their value
is not fixed by their own row (index bits, siblings, addmany's result bits) and the caller supplies them;
rows with nothing unknown are checks and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_add, fr_encode, fr_load, fr_load2, fr_mul, fr_store2, fr_sub, fr_zero
from porep.circuit.cs import R
from porep.circuit.template import Template


@dataclass(frozen=True)
class Program:
    """A template prepared for solving: per row the value index it defines (−1: a check), the free aux
    (own-aux indices, allocation order) and Montgomery tables. Value index 0 is ONE, 1..n_inputs the
    inputs, then the own aux."""

    template: Template
    free: tuple[int, ...]
    defines: np.ndarray
    ptr: tuple[np.ndarray, np.ndarray, np.ndarray]
    idx: tuple[np.ndarray, np.ndarray, np.ndarray]
    coeff: np.ndarray
    inv: np.ndarray  # per defining row: 1 / (the defined variable's coefficient in C), Montgomery


def program(t: Template) -> Program:
    """Find, row by row, the aux each row defines; aux first met in A or B (or never defined) are free."""
    known = np.zeros(1 + t.n_inputs + t.n_aux, dtype=bool)
    known[: 1 + t.n_inputs] = True
    ptr = tuple(np.concatenate(([0], np.cumsum(t.lens[k]))) for k in range(3))
    idx = tuple(t.slots[k] + 1 for k in range(3))
    defines = np.full(t.rows, -1, dtype=np.int64)
    inv_vals: list[int] = []
    free: list[int] = []
    for r in range(t.rows):
        ab = np.unique(np.concatenate([idx[k][ptr[k][r] : ptr[k][r + 1]] for k in (0, 1)]))
        for v in ab[~known[ab]]:
            known[v] = True
            free.append(int(v) - 1 - t.n_inputs)
        c = idx[2][ptr[2][r] : ptr[2][r + 1]]
        cc = t.coeff[2][ptr[2][r] : ptr[2][r + 1]]
        unknown = np.flatnonzero(~known[c])
        if len(unknown) > 1:
            raise ValueError(f"row {r} has {len(unknown)} unknowns in C")
        if len(unknown) == 1:
            v = int(c[unknown[0]])
            defines[r] = v
            known[v] = True
            inv_vals.append(pow(t.coeffs[int(cc[unknown[0]])], R - 2, R))
    free += [int(v) - 1 - t.n_inputs for v in np.flatnonzero(~known)]
    inv = np.zeros((t.rows, 8), dtype=np.uint32)
    rows_def = np.flatnonzero(defines >= 0)
    if len(rows_def):
        inv[rows_def] = fr_encode(inv_vals)
    return Program(
        template=t,
        free=tuple(sorted(free)),
        defines=defines,
        ptr=(ptr[0], ptr[1], ptr[2]),
        idx=(idx[0], idx[1], idx[2]),
        coeff=fr_encode(list(t.coeffs)),
        inv=inv,
    )


@njit(nogil=True, cache=cache_enabled())
def _lc(vals, r, ptr, idx, cidx, coeff, row, skip):
    acc = fr_zero()
    for p in range(ptr[row], ptr[row + 1]):
        v = idx[p]
        if v != skip:
            acc = fr_add(acc, fr_mul(fr_load(coeff, cidx[p]), fr_load2(vals, r, v)))
    return acc


@njit(nogil=True, cache=cache_enabled())
def _solve_rows(lo, hi, vals, defines, pa, ia, ca, pb, ib, cb, pc, ic, cc, coeff, inv):
    for r in range(lo, hi):
        for row in range(defines.shape[0]):
            d = defines[row]
            if d < 0:
                continue
            a = _lc(vals, r, pa, ia, ca, coeff, row, -1)
            b = _lc(vals, r, pb, ib, cb, coeff, row, -1)
            c = _lc(vals, r, pc, ic, cc, coeff, row, d)
            fr_store2(vals, r, d, fr_mul(fr_sub(fr_mul(a, b), c), fr_load(inv, row)))


def solve(p: Program, inputs: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Own aux of N instances, ``uint32[N, n_aux, 8]`` Montgomery, from their inputs ``[N, n_inputs, 8]``
    and free aux ``[N, len(p.free), 8]`` (both Montgomery)."""
    t = p.template
    n = inputs.shape[0]
    if inputs.shape != (n, t.n_inputs, 8) or free.shape != (n, len(p.free), 8):
        raise ValueError(f"inputs [N, {t.n_inputs}, 8] and free [N, {len(p.free)}, 8] expected")
    vals = np.zeros((n, 1 + t.n_inputs + t.n_aux, 8), dtype=np.uint32)
    vals[:, 0] = fr_encode([1])[0]
    vals[:, 1 : 1 + t.n_inputs] = inputs
    vals[:, [1 + t.n_inputs + f for f in p.free]] = free
    parallel_for(
        _solve_rows, n, vals, p.defines, p.ptr[0], p.idx[0], p.template.coeff[0], p.ptr[1], p.idx[1],
        p.template.coeff[1], p.ptr[2], p.idx[2], p.template.coeff[2], p.coeff, p.inv, min_chunk=4,
    )
    return np.ascontiguousarray(vals[:, 1 + t.n_inputs :])
