"""The constraint system the PoRep gadgets synthesise into, with bellperson's semantics (circuit.md §1).

Why its own: the official parameters fix every variable index and every constraint row, so synthesis must
number exactly as bellperson's ``KeypairAssembly`` / ``ProvingAssignment`` do.

Variables are plain ints:
- ``Aux(j)`` is ``j`` (j >= 0);
- ``Input(i)`` is ``~i`` (= -i-1), so ``ONE = Input(0) = -1``. ONE is pre-allocated by the constructor.

``alloc`` / ``alloc_input`` number in call order and add no constraint; ``enforce(a, b, c)`` appends one row.
A linear combination (``LCLike``) is either a dict ``{var: coeff}`` or an iterable of ``(var, coeff)`` pairs;
coefficients are Python ints (negative allowed, reduced mod r when converted). Duplicate variables are merged
by adding coefficients, and a sum that cancels stays as an explicit zero entry — bellpepper's sorted LC does
the same (circuit.md §1.3), so nnz matches. The order of terms within a row is irrelevant.

Modes:
- ``witness=True``: every alloc carries its value (an int mod r); ``value`` / ``lc_value`` read them back,
  ``unsatisfied`` checks rows in Python, ``witness_array`` gives the canonical (num_vars, 8) assignment for
  ``gpu.groth16`` (unified numbering: inputs first, ONE at column 0, then aux).
- ``witness=False``: shape only (parameter generation, counting); values passed to alloc are ignored and
  gadgets should not compute them (test ``cs.witness``).
- ``record=False``: rows are counted (constraints, nnz per matrix) but not stored.

``namespace(name)`` is a context manager that labels the rows emitted inside it; ``label(row)`` gives the
path ("challenge_0/tree_d/level_3/sha256/...") of the innermost namespace that contains a row, which is how
an unsatisfied constraint is named. Namespaces never change numbering (as in bellperson).

``to_r1cs()`` returns ``gpu.groth16.r1cs.R1CS`` with the circuit's own rows; the R1CS (and the prover) append
bellperson's one input constraint per input themselves, so ``R1CS.num_constraints_total`` is the total
bellperson proves with.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

if TYPE_CHECKING:
    from gpu.groth16.r1cs import R1CS

R = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001
ONE = -1

LCLike: TypeAlias = Mapping[int, int] | Iterable[tuple[int, int]]


def Input(i: int) -> int:  # noqa: N802 - named after bellperson's Index::Input
    """The variable of input i (Input(0) is ONE)."""
    return ~i


def Aux(j: int) -> int:  # noqa: N802 - named after bellperson's Index::Aux
    """The variable of aux j."""
    return j


def is_input(var: int) -> bool:
    return var < 0


def merge(lc: LCLike) -> dict[int, int]:
    """An LC as a dict with duplicate variables merged (coefficients added, zeros kept)."""
    t = type(lc)
    if t is dict:
        return lc  # type: ignore[return-value]
    if t is list or t is tuple:
        d = dict(lc)
        if len(d) == len(lc):  # type: ignore[arg-type]
            return d
    elif isinstance(lc, Mapping):
        return dict(lc)
    out: dict[int, int] = {}
    for v, c in lc:  # type: ignore[misc]
        out[v] = out.get(v, 0) + c
    return out


def ints_to_limbs(values: Iterable[int]) -> np.ndarray:
    """Canonical little-endian (n, 8) uint32 limbs of ints reduced mod r."""
    data = b"".join((v % R).to_bytes(32, "little") for v in values)
    return np.frombuffer(data, dtype="<u4").astype(np.uint32).reshape(-1, 8)


class _Matrix:
    """Rows appended flat: row lengths, variables and coefficients (ints, unreduced)."""

    __slots__ = ("lens", "vars", "coeffs", "nnz")

    def __init__(self) -> None:
        self.lens: list[int] = []
        self.vars: list[int] = []
        self.coeffs: list[int] = []
        self.nnz = 0


class ConstraintSystem:
    """bellperson-numbered constraint system (see the module docstring)."""

    def __init__(self, witness: bool = True, record: bool = True) -> None:
        self.witness = witness
        self.record = record
        self.num_inputs = 1  # ONE
        self.num_aux = 0
        self.num_constraints = 0
        self.input_values: list[int] = [1]
        self.aux_values: list[int] = []
        self._m = (_Matrix(), _Matrix(), _Matrix())
        self._ns: list[tuple[str, int]] = []  # open namespaces: (path, first row)
        self._ranges: list[tuple[int, int, str]] = []  # closed namespaces: (first row, end row, path)

    # ------------------------------------------------------------------ variables

    def alloc(self, value: int | None = None) -> int:
        """A new aux variable (bellperson ``alloc``); in witness mode ``value`` is required."""
        j = self.num_aux
        self.num_aux = j + 1
        if self.witness:
            if value is None:
                raise ValueError(f"aux {j} allocated without a value in witness mode ({self.path()})")
            self.aux_values.append(value % R)
        return j

    def alloc_input(self, value: int | None = None) -> int:
        """A new public input (bellperson ``alloc_input``)."""
        i = self.num_inputs
        self.num_inputs = i + 1
        if self.witness:
            if value is None:
                raise ValueError(f"input {i} allocated without a value in witness mode ({self.path()})")
            self.input_values.append(value % R)
        return ~i

    def value(self, var: int) -> int:
        """The value of a variable (witness mode)."""
        return self.input_values[~var] if var < 0 else self.aux_values[var]

    def lc_value(self, lc: LCLike) -> int:
        """The value of a linear combination mod r (witness mode)."""
        items = lc.items() if isinstance(lc, Mapping) else lc
        iv, av = self.input_values, self.aux_values
        return sum(c * (iv[~v] if v < 0 else av[v]) for v, c in items) % R

    # ------------------------------------------------------------------ constraints

    def enforce(self, a: LCLike, b: LCLike, c: LCLike) -> None:
        """Append the row a * b = c."""
        self.num_constraints += 1
        ma, mb, mc = self._m
        da, db, dc = merge(a), merge(b), merge(c)
        ma.nnz += len(da)
        mb.nnz += len(db)
        mc.nnz += len(dc)
        if self.record:
            for d, m in ((da, ma), (db, mb), (dc, mc)):
                m.lens.append(len(d))
                m.vars.extend(d)
                m.coeffs.extend(d.values())

    @property
    def nnz(self) -> tuple[int, int, int]:
        """Entries of A, B, C (circuit rows only, merged duplicates counted once)."""
        return self._m[0].nnz, self._m[1].nnz, self._m[2].nnz

    # ------------------------------------------------------------------ names

    @contextmanager
    def namespace(self, name: str) -> Iterator[None]:
        """Label the rows enforced inside (for error messages; numbering is unaffected)."""
        path = f"{self._ns[-1][0]}/{name}" if self._ns else name
        self._ns.append((path, self.num_constraints))
        try:
            yield
        finally:
            p, start = self._ns.pop()
            if self.num_constraints > start:
                self._ranges.append((start, self.num_constraints, p))

    def path(self) -> str:
        """The current namespace path."""
        return self._ns[-1][0] if self._ns else ""

    def label(self, row: int) -> str:
        """The path of the innermost namespace that emitted ``row`` (or ``constraint <row>``)."""
        best: tuple[int, str] | None = None
        for start, end, p in self._ranges:
            if start <= row < end and (best is None or end - start < best[0]):
                best = (end - start, p)
        if best is None:  # still open (label asked during synthesis): the innermost that contains row
            for p, start in self._ns:
                if start <= row < self.num_constraints:
                    best = (self.num_constraints - start, p)
        return f"{best[1]} (constraint {row})" if best else f"constraint {row}"

    # ------------------------------------------------------------------ checking

    def rows(self, row: int) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
        """The three LCs of one recorded row (slow; for messages and tests)."""
        if not self.record:
            raise ValueError("rows are not recorded")
        out = []
        for m in self._m:
            offsets = self._offsets(m)
            lo, hi = offsets[row], offsets[row + 1]
            out.append(dict(zip(m.vars[lo:hi], m.coeffs[lo:hi], strict=True)))
        return out[0], out[1], out[2]

    def _offsets(self, m: _Matrix) -> np.ndarray:
        off = np.zeros(len(m.lens) + 1, dtype=np.int64)
        off[1:] = np.cumsum(m.lens)
        return off

    def unsatisfied(self) -> int | None:
        """The first row whose a*b != c in the current witness (pure Python; fine up to ~10^5 rows)."""
        if not (self.witness and self.record):
            raise ValueError("needs witness and recorded rows")
        iv, av = self.input_values, self.aux_values
        pos = [0, 0, 0]
        lens = [m.lens for m in self._m]
        vs = [m.vars for m in self._m]
        cs = [m.coeffs for m in self._m]
        for row in range(self.num_constraints):
            vals = []
            for k in range(3):
                n = lens[k][row]
                p = pos[k]
                s = 0
                for t in range(p, p + n):
                    v = vs[k][t]
                    s += cs[k][t] * (iv[~v] if v < 0 else av[v])
                pos[k] = p + n
                vals.append(s)
            if (vals[0] * vals[1] - vals[2]) % R:
                return row
        return None

    def is_satisfied(self) -> bool:
        return self.unsatisfied() is None

    # ------------------------------------------------------------------ conversion

    def column_of(self, var: int) -> int:
        """Unified column of a variable (inputs first, then aux), valid once synthesis is finished."""
        return ~var if var < 0 else self.num_inputs + var

    def to_r1cs(self) -> R1CS:
        """The recorded rows as gpu.groth16's R1CS (unified numbering, canonical coefficients, columns
        sorted within each row: inputs ascending, then aux ascending — bellpepper's LC order)."""
        from gpu.groth16.r1cs import CSR, R1CS

        if not self.record:
            raise ValueError("rows are not recorded")
        mats = []
        for m in self._m:
            v = np.fromiter(m.vars, dtype=np.int64, count=len(m.vars))
            cols = np.where(v < 0, ~v, v + self.num_inputs)
            rowlen = np.fromiter(m.lens, dtype=np.int64, count=len(m.lens))
            ptr = np.zeros(len(m.lens) + 1, dtype=np.int64)
            ptr[1:] = np.cumsum(rowlen)
            rowid = np.repeat(np.arange(len(m.lens), dtype=np.int64), rowlen)
            order = np.lexsort((cols, rowid))
            # coefficients: intern the (few) distinct raw values, reduce and convert each once
            table: dict[int, int] = {}
            idx = np.fromiter(
                (table.setdefault(c, len(table)) for c in m.coeffs), dtype=np.int64, count=len(m.coeffs)
            )
            limbs = ints_to_limbs(table.keys()) if table else np.zeros((0, 8), dtype=np.uint32)
            vals = limbs[idx[order]] if len(idx) else np.zeros((0, 8), dtype=np.uint32)
            mats.append(CSR(ptr, cols[order].astype(np.uint32), np.ascontiguousarray(vals)))
        return R1CS(self.num_inputs, self.num_aux, mats[0], mats[1], mats[2])

    def witness_array(self) -> np.ndarray:
        """The full assignment, canonical (num_inputs + num_aux, 8) uint32, ONE at row 0."""
        if not self.witness:
            raise ValueError("shape-only constraint system has no witness")
        return ints_to_limbs(self.input_values + self.aux_values)

    def inputs(self) -> list[int]:
        """Public input values including ONE."""
        return list(self.input_values)
