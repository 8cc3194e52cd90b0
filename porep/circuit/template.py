"""Gadget templates: record a gadget's rows once, then tile them over many instances with numpy.

Why: a partition repeats a handful of gadgets thousands of times (a Poseidon of each arity, a PoR level,
insert_8, create_label's compressions). Each gadget's rows depend only on where its inputs live and where
its own aux start — never on values — so the recorded rows of one instance, over *slots*, give every other
instance by index arithmetic. That is the building block of a pre-compiled circuit (PCE) and of a
vectorised witness (the kernel fills ``aux[base : base + n_aux]`` per instance, e.g.
``porep.circuit.poseidon_witness``).

Slots: ``-1`` is ONE; ``0 .. n_inputs−1`` are the instance's inputs (any variables, inputs or aux);
``n_inputs ..`` are its own aux in allocation order. A gadget that allocates public inputs is not tileable
(its input numbering would interleave with the caller's) and is refused; an instance whose inputs repeat a
variable is refused too (direct synthesis would merge that variable's terms within a row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from porep.circuit.cs import ONE, ConstraintSystem, LCLike, R, merge

Gadget = Callable[[ConstraintSystem, list[int]], object]


class RowRecorder(ConstraintSystem):
    """A shape-only constraint system that also keeps every row (merged), flat per matrix: for templates
    and row-level comparisons (``captured``)."""

    def __init__(self) -> None:
        super().__init__(witness=False, record=False)
        self.flat: tuple[tuple[list[int], list[int], list[int]], ...] = tuple(([], [], []) for _ in range(3))

    def enforce(self, a: LCLike, b: LCLike, c: LCLike) -> None:
        lcs = (merge(a), merge(b), merge(c))
        super().enforce(*lcs)
        for d, (lens, vars_, coeffs) in zip(lcs, self.flat, strict=True):
            lens.append(len(d))
            vars_.extend(d)
            coeffs.extend(d.values())

    @property
    def captured(self) -> list[tuple[dict[int, int], dict[int, int], dict[int, int]]]:
        """Every row as three dicts (slow; for tests)."""
        out: list[list[dict[int, int]]] = [[] for _ in range(self.num_constraints)]
        for lens, vars_, coeffs in self.flat:
            pos = 0
            for r, n in enumerate(lens):
                out[r].append(dict(zip(vars_[pos : pos + n], coeffs[pos : pos + n], strict=True)))
                pos += n
        return [(r[0], r[1], r[2]) for r in out]


@dataclass(frozen=True)
class Template:
    """One gadget's rows over slots. Per matrix (A, B, C): ``lens[rows]``, ``slots[nnz]``, ``coeff[nnz]``
    (an index into ``coeffs``, the distinct coefficients mod r)."""

    n_inputs: int
    n_aux: int
    rows: int
    lens: tuple[np.ndarray, np.ndarray, np.ndarray]
    slots: tuple[np.ndarray, np.ndarray, np.ndarray]
    coeff: tuple[np.ndarray, np.ndarray, np.ndarray]
    coeffs: tuple[int, ...]

    @property
    def nnz(self) -> tuple[int, int, int]:
        return len(self.slots[0]), len(self.slots[1]), len(self.slots[2])


def record(gadget: Gadget, n_inputs: int) -> Template:
    """Run ``gadget(cs, inputs)`` once on a recorder whose inputs are aux 0..n_inputs−1."""
    cs = RowRecorder()
    inputs = [cs.alloc() for _ in range(n_inputs)]
    gadget(cs, inputs)
    if cs.num_inputs != 1:
        raise ValueError("a gadget that allocates public inputs cannot be tiled")
    table: dict[int, int] = {}
    lens, slots, coeff = [], [], []
    for k in range(3):
        ln, vs, cf = cs.flat[k]
        lens.append(np.asarray(ln, dtype=np.int64))
        slots.append(np.asarray(vs, dtype=np.int64))
        interned = (table.setdefault(c % R, len(table)) for c in cf)
        coeff.append(np.fromiter(interned, dtype=np.int64, count=len(cf)))
    return Template(
        n_inputs=n_inputs,
        n_aux=cs.num_aux - n_inputs,
        rows=cs.num_constraints,
        lens=(lens[0], lens[1], lens[2]),
        slots=(slots[0], slots[1], slots[2]),
        coeff=(coeff[0], coeff[1], coeff[2]),
        coeffs=tuple(table),
    )


@dataclass(frozen=True)
class Tiled:
    """Rows of N instances, instance-major (instance 0's rows, then instance 1's, …), per matrix: row
    lengths, variables (the ``porep.circuit.cs`` convention) and coefficient indices into the template's
    ``coeffs``."""

    lens: tuple[np.ndarray, np.ndarray, np.ndarray]
    vars: tuple[np.ndarray, np.ndarray, np.ndarray]
    coeff: tuple[np.ndarray, np.ndarray, np.ndarray]


def tile(t: Template, inputs: np.ndarray, first_aux: int | np.ndarray) -> Tiled:
    """The rows of ``len(inputs)`` instances: instance i reads ``inputs[i]`` (variables) and owns aux
    ``first_aux + i·n_aux ..`` (or ``first_aux[i] ..`` when an array is given)."""
    inputs = np.asarray(inputs, dtype=np.int64).reshape(-1, t.n_inputs)
    n = inputs.shape[0]
    srt = np.sort(inputs, axis=1)
    if (srt[:, 1:] == srt[:, :-1]).any() or (inputs == ONE).any():
        # direct synthesis would merge a repeated variable's terms; the template's rows have them apart
        raise ValueError("an instance's inputs must be distinct variables other than ONE")
    base = np.asarray(first_aux, dtype=np.int64)
    if base.ndim == 0:
        base = base + t.n_aux * np.arange(n, dtype=np.int64)
    lens, vars_, coeff = [], [], []
    for k in range(3):
        s = t.slots[k]
        # own aux are most entries: one broadcast add, then the few ONE / input columns overwritten
        out = base[:, None] + np.where(s >= t.n_inputs, s - t.n_inputs, 0)[None, :]
        out[:, np.flatnonzero(s == ONE)] = ONE
        inp = np.flatnonzero((s >= 0) & (s < t.n_inputs))
        out[:, inp] = inputs[:, s[inp]]
        lens.append(np.tile(t.lens[k], n))
        vars_.append(out.reshape(-1))
        coeff.append(np.tile(t.coeff[k], n))
    return Tiled((lens[0], lens[1], lens[2]), (vars_[0], vars_[1], vars_[2]), (coeff[0], coeff[1], coeff[2]))
