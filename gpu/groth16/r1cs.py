"""Rank-1 constraint systems over Fr: A, B, C as CSR matrices, evaluation A.w, B.w, C.w, density, a
satisfiability check that names the first failing constraint, and an on-disk cache of numpy files.

Variables use bellperson's unified numbering (cuzk's PCE layout, cuzk.md §1.6): columns 0..num_inputs-1 are
the public inputs with ONE at column 0, then the aux (private) variables. The matrices hold the circuit's own
constraints; bellperson then appends one input constraint per input, ``x_i * 0 = 0`` (A row = x_i, B = C = 0),
so that the IC query is fully dense: ``evaluate`` appends those rows too, and ``num_constraints_total`` counts
them.
Coefficients are canonical Fr limbs ((nnz, 8) uint32); a Montgomery copy is made once for evaluation.
A matrix may instead be a ``CompactCSR``: per entry an index into a small table of distinct coefficients
(a circuit has few: ~1,500 in a PoRep partition), 6 bytes per entry instead of 36, so a 32GiB PoRep partition
(722 M entries) takes ~7.5 GB instead of ~26 GB; ``R1CS`` evaluates either form with the same results.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import (
    fr_add,
    fr_eq,
    fr_from_ints,
    fr_load,
    fr_mul,
    fr_store,
    fr_to_mont,
    fr_zero,
)
from gpu.arith.fields.constants import R_MODULUS
from gpu.files import atomic_dir

FORMAT = "psagent-r1cs"
FORMAT_VERSION = 1


class UnsatisfiedConstraint(AssertionError):
    """A.w * B.w != C.w at ``index`` (a circuit constraint; input constraints always hold)."""

    def __init__(self, index: int, a: int, b: int, c: int) -> None:
        super().__init__(f"constraint {index} is not satisfied: (A.w)(B.w) = {a}*{b} != C.w = {c}")
        self.index, self.a, self.b, self.c = index, a, b, c


@dataclass
class CSR:
    """One constraint matrix: row_ptr (m+1,) int64, cols (nnz,) uint32 unified indices, vals (nnz, 8)
    canonical."""

    row_ptr: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    _mont: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def nnz(self) -> int:
        return int(self.cols.shape[0])

    def mont_vals(self) -> np.ndarray:
        if self._mont is None:
            self._mont = fr_to_mont(np.ascontiguousarray(self.vals)) if self.nnz else self.vals.copy()
        return self._mont

    @staticmethod
    def from_rows(rows: list[list[tuple[int, int]]]) -> CSR:
        """From per-row lists of (column, coefficient as a Python int)."""
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(r) for r in rows])
        cols = np.array([c for r in rows for c, _ in r], dtype=np.uint32)
        vals = fr_from_ints([v % R_MODULUS for r in rows for _, v in r]).reshape(-1, 8)
        return CSR(ptr, cols, vals)


@dataclass
class CompactCSR:
    """One constraint matrix with interned coefficients: row_ptr (m+1,) int64, cols (nnz,) uint32 unified
    indices, coeff (nnz,) unsigned index into ``table`` ((k, 8) canonical limbs, distinct values)."""

    row_ptr: np.ndarray
    cols: np.ndarray
    coeff: np.ndarray
    table: np.ndarray
    _mont_table: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def nnz(self) -> int:
        return int(self.cols.shape[0])

    @property
    def vals(self) -> np.ndarray:
        """The (nnz, 8) canonical coefficients, materialised (32 B per entry: small circuits, tests)."""
        return self.table[self.coeff]

    def mont_table(self) -> np.ndarray:
        if self._mont_table is None:
            t = np.ascontiguousarray(self.table, dtype=np.uint32)
            self._mont_table = fr_to_mont(t) if len(t) else t.copy()
        return self._mont_table

    def mont_vals(self) -> np.ndarray:
        return self.mont_table()[self.coeff]

    def one_index(self) -> int:
        """The table row holding 1 (entries multiplied by it are plain additions), or -1."""
        one = np.zeros(8, dtype=np.uint32)
        one[0] = 1
        hit = np.flatnonzero((self.table == one).all(axis=1))
        return int(hit[0]) if len(hit) else -1

    @staticmethod
    def from_csr(csr: CSR) -> CompactCSR:
        """Intern a CSR's coefficients (the smallest unsigned index type that fits the table)."""
        table, inv = np.unique(np.ascontiguousarray(csr.vals), axis=0, return_inverse=True)
        return CompactCSR(csr.row_ptr, csr.cols, inv.reshape(-1).astype(index_dtype(len(table))), table)

    def to_csr(self) -> CSR:
        return CSR(self.row_ptr, self.cols, np.ascontiguousarray(self.vals))


def index_dtype(k: int) -> type[np.unsignedinteger]:
    """The smallest unsigned dtype that indexes a table of ``k`` coefficients."""
    return np.uint8 if k <= 1 << 8 else np.uint16 if k <= 1 << 16 else np.uint32


Matrix = CSR | CompactCSR


@njit(nogil=True, cache=cache_enabled())
def _spmv_idx_n(lo, hi, ptr, cols, coeff, table, one, w, out):
    # as _spmv_n with vals[e] = table[coeff[e]]; entries with coefficient 1 are plain additions
    for i in range(lo, hi):
        acc = fr_zero()
        for e in range(ptr[i], ptr[i + 1]):
            k = coeff[e]
            if k == one:
                acc = fr_add(acc, fr_load(w, cols[e]))
            else:
                acc = fr_add(acc, fr_mul(fr_load(table, k), fr_load(w, cols[e])))
        fr_store(out, i, acc)


@njit(nogil=True, cache=cache_enabled())
def _column_sums_idx_n(lo, hi, ptr, cols, coeff, table, lag, out):
    for i in range(lo, hi):
        li = fr_load(lag, i)
        for e in range(ptr[i], ptr[i + 1]):
            c = cols[e]
            fr_store(out, c, fr_add(fr_load(out, c), fr_mul(fr_load(table, coeff[e]), li)))


def spmv(mat: Matrix, wm: np.ndarray, out: np.ndarray) -> None:
    """out[:m] = mat . wm (Montgomery witness), rows in parallel, for either matrix form."""
    m = mat.row_ptr.shape[0] - 1
    if isinstance(mat, CompactCSR):
        parallel_for(
            _spmv_idx_n, m, mat.row_ptr, mat.cols, mat.coeff, mat.mont_table(), mat.one_index(), wm, out,
            min_chunk=1024,
        )
    else:
        parallel_for(_spmv_n, m, mat.row_ptr, mat.cols, mat.mont_vals(), wm, out, min_chunk=1024)


@njit(nogil=True, cache=cache_enabled())
def _spmv_n(lo, hi, ptr, cols, vals, w, out):
    for i in range(lo, hi):
        acc = fr_zero()
        for e in range(ptr[i], ptr[i + 1]):
            acc = fr_add(acc, fr_mul(fr_load(vals, e), fr_load(w, cols[e])))
        fr_store(out, i, acc)


@njit(nogil=True, cache=cache_enabled())
def _column_sums_n(lo, hi, ptr, cols, vals, lag, out):
    # out[col] += vals[e] * lag[row] for rows [lo, hi) (serial: columns collide across rows)
    for i in range(lo, hi):
        li = fr_load(lag, i)
        for e in range(ptr[i], ptr[i + 1]):
            c = cols[e]
            fr_store(out, c, fr_add(fr_load(out, c), fr_mul(fr_load(vals, e), li)))


CHECK_ROWS = 1 << 20
"""Rows per block of the chunked satisfiability check (``R1CS.unsatisfied``): a few MB of coefficient
indices per matrix, hundreds of blocks at 32GiB (progress and an early stop between them)."""


@njit(nogil=True, cache=cache_enabled())
def _row_dot(r, ptr, cols, coeff, e0, table, one, w):
    # row r of a matrix . w (Montgomery); coefficient of entry e is table[coeff[e - e0]], 1 is an addition
    acc = fr_zero()
    for e in range(ptr[r], ptr[r + 1]):
        k = coeff[e - e0]
        if k == one:
            acc = fr_add(acc, fr_load(w, cols[e]))
        else:
            acc = fr_add(acc, fr_mul(fr_load(table, k), fr_load(w, cols[e])))
    return acc


@njit(nogil=True, cache=cache_enabled())
def _unsat_rows_n(
    lo, hi, row0, pa, ca, ka, ea, ta, oa, pb, cb, kb, eb, tb, ob, pc, cc, kc, ec, tc, oc, w, bad
):
    # bad[i] = (A.w)(B.w) != C.w for row row0 + i, i in [lo, hi): one row of each product, nothing stored
    for i in range(lo, hi):
        r = row0 + i
        a = _row_dot(r, pa, ca, ka, ea, ta, oa, w)
        b = _row_dot(r, pb, cb, kb, eb, tb, ob, w)
        c = _row_dot(r, pc, cc, kc, ec, tc, oc, w)
        bad[i] = 0 if fr_eq(fr_mul(a, b), c) else 1


def _block_operands(mat: Matrix, lo: int, hi: int) -> tuple[object, ...]:
    """(row_ptr, cols, coeff block as uint32, its first entry, Montgomery table, index of 1) for rows
    [lo, hi): the coefficient indices of the block are widened to uint32 (a copy of the block only) so one
    compiled kernel serves every index width and the plain form (its own entry numbers as indices)."""
    e0, e1 = int(mat.row_ptr[lo]), int(mat.row_ptr[hi])
    if isinstance(mat, CompactCSR):
        coeff = np.ascontiguousarray(mat.coeff[e0:e1], dtype=np.uint32)
        return mat.row_ptr, mat.cols, coeff, e0, mat.mont_table(), np.int64(mat.one_index())
    if mat.nnz >= 1 << 32:
        raise ValueError("a plain CSR of 2^32 entries or more: compact() it first")
    coeff = np.arange(e0, e1, dtype=np.uint32)
    return mat.row_ptr, mat.cols, coeff, e0, mat.mont_vals(), np.int64(-1)


def _row_ints(mat: Matrix, i: int, wm: np.ndarray) -> int:
    """Row ``i`` of ``mat`` times the Montgomery witness, in Python integers (the failure report: an
    evaluation independent of the kernels)."""
    from gpu.arith.fields import fr_decode, fr_to_ints

    lo, hi = int(mat.row_ptr[i]), int(mat.row_ptr[i + 1])
    if lo == hi:
        return 0
    cols = np.asarray(mat.cols[lo:hi], dtype=np.int64)
    if isinstance(mat, CompactCSR):
        coef = fr_to_ints(np.ascontiguousarray(mat.table[np.asarray(mat.coeff[lo:hi], dtype=np.int64)]))
    else:
        coef = fr_to_ints(np.ascontiguousarray(mat.vals[lo:hi]))
    vals = fr_decode(np.ascontiguousarray(wm[cols]))
    return sum(c * v for c, v in zip(coef, vals, strict=True)) % R_MODULUS


class SystemSizes:
    """The sizes a constraint system derives from its inputs (ONE included), aux and circuit constraints:
    shared by the host R1CS and its device-resident copy (gpu.groth16.spmv_cuda.DeviceR1CS)."""

    num_inputs: int
    num_aux: int
    if TYPE_CHECKING:  # the host R1CS derives it from its row pointers, the device copy stores it

        @property
        def num_constraints(self) -> int: ...

    @property
    def num_vars(self) -> int:
        return self.num_inputs + self.num_aux

    @property
    def num_constraints_total(self) -> int:
        """Circuit constraints plus bellperson's input constraints."""
        return self.num_constraints + self.num_inputs

    @property
    def domain_log(self) -> int:
        """log2 of the evaluation domain: the next power of two >= num_constraints_total."""
        return max(0, (self.num_constraints_total - 1).bit_length())


@dataclass
class R1CS(SystemSizes):
    """A constraint system: ``num_inputs`` includes ONE; ``a``, ``b``, ``c`` have one row per circuit
    constraint."""

    num_inputs: int
    num_aux: int
    a: Matrix
    b: Matrix
    c: Matrix

    def __post_init__(self) -> None:
        m = self.num_constraints
        nvars = self.num_vars
        if self.num_inputs < 1:
            raise ValueError("an R1CS has at least the input ONE")
        for name, mat in (("A", self.a), ("B", self.b), ("C", self.c)):
            if mat.row_ptr.shape != (m + 1,) or mat.row_ptr[0] != 0 or mat.row_ptr[-1] != mat.nnz:
                raise ValueError(f"{name}: row_ptr does not describe {m} rows of {mat.nnz} entries")
            if isinstance(mat, CompactCSR):
                t = mat.table
                bad_table = t.ndim != 2 or t.shape[1:] != (8,) or t.dtype != np.uint32
                if mat.coeff.shape != (mat.nnz,) or bad_table:
                    raise ValueError(f"{name}: coeff must be ({mat.nnz},) indices into a (k, 8) uint32 table")
                if mat.nnz and int(mat.coeff.max()) >= t.shape[0]:
                    raise ValueError(f"{name}: coefficient index {int(mat.coeff.max())} >= {t.shape[0]}")
            elif mat.vals.shape != (mat.nnz, 8) or mat.vals.dtype != np.uint32:
                raise ValueError(f"{name}: vals must be ({mat.nnz}, 8) uint32")
            if mat.nnz and int(mat.cols.max()) >= nvars:
                raise ValueError(f"{name}: column {int(mat.cols.max())} >= {nvars} variables")

    @property
    def num_constraints(self) -> int:
        return int(self.a.row_ptr.shape[0] - 1)

    # -------------------------------------------------------------- density (cuzk PCE: a_aux, b_input, b_aux)

    def density(self) -> Density:
        def used(mat: Matrix) -> np.ndarray:
            u = np.zeros(self.num_vars, dtype=bool)
            u[mat.cols] = True
            return u

        ua, ub = used(self.a), used(self.b)
        return Density(
            a_aux=ua[self.num_inputs :], b_input=ub[: self.num_inputs], b_aux=ub[self.num_inputs :]
        )

    # -------------------------------------------------------------- evaluation

    def evaluate(
        self, witness: np.ndarray, out: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A.w, B.w, C.w) in Montgomery form, each of num_constraints_total rows (input constraints appended:
        a = x_i, b = c = 0). ``witness`` is the full assignment, canonical (num_vars, 8) with
        witness[0] = 1. ``out``: three C-contiguous (rows, 8) uint32 arrays to write into (every row is
        written; e.g. page-locked buffers from gpu.transfer.PinnedPool), returned."""
        w = check_witness(witness, self.num_vars)
        wm = fr_to_mont(w)
        m, k = self.num_constraints, self.num_inputs
        if out is not None:
            if len(out) != 3 or any(
                o.shape != (m + k, 8) or o.dtype != np.uint32 or not o.flags.c_contiguous for o in out
            ):
                raise ValueError(f"out must be three C-contiguous ({m + k}, 8) uint32 arrays")
        outs = []
        for j, mat in enumerate((self.a, self.b, self.c)):
            out_j = out[j] if out is not None else np.empty((m + k, 8), dtype=np.uint32)
            out_j[m:] = 0
            spmv(mat, wm, out_j)
            outs.append(out_j)
        outs[0][m:] = wm[:k]
        return outs[0], outs[1], outs[2]

    def first_unsatisfied(self, witness: np.ndarray, rows_per_chunk: int | None = None) -> int | None:
        """Index of the first constraint with A.w * B.w != C.w, or None. ``rows_per_chunk``: by the chunked
        check (``unsatisfied``: no full-length products) instead of ``evaluate``."""
        if rows_per_chunk is not None:
            bad = self.unsatisfied(witness, rows_per_chunk=rows_per_chunk)
            return int(bad[0]) if len(bad) else None
        from gpu.arith.fields import fr_mul_batch

        a, b, c = self.evaluate(witness)
        bad = np.any(fr_mul_batch(a, b) != c, axis=1)
        return int(np.argmax(bad)) if bad.any() else None

    def unsatisfied(
        self,
        witness: np.ndarray,
        *,
        rows_per_chunk: int = CHECK_ROWS,
        first_only: bool = True,
        work: np.ndarray | None = None,
    ) -> np.ndarray:
        """Ascending indices of the circuit constraints with A.w * B.w != C.w (at most one, the first, with
        ``first_only``: the check stops after the block that holds it); empty when the witness satisfies
        the system (bellperson's input constraints, x_i * 0 = 0, always hold).

        Bounded memory for a 130 M-row partition: the witness is converted to Montgomery form once, into
        ``work`` ((num_vars, 8) uint32, C-contiguous; it may be ``witness`` itself: converted in place, the
        canonical values are gone — for a reused buffer that the next witness overwrites anyway) or a new
        array; then each block of ``rows_per_chunk`` rows computes a, b, c of a row and compares a*b with c
        in one pass (rows of a block in parallel on the CPU pool), storing one flag per row of the block,
        never the three products."""
        if rows_per_chunk < 1:
            raise ValueError(f"rows_per_chunk must be >= 1, got {rows_per_chunk}")
        return self.unsatisfied_mont(self.to_mont(witness, work), rows_per_chunk, first_only)

    def unsatisfied_mont(
        self, wm: np.ndarray, rows_per_chunk: int = CHECK_ROWS, first_only: bool = True
    ) -> np.ndarray:
        """``unsatisfied`` of a witness already in Montgomery form (``to_mont``)."""
        if rows_per_chunk < 1:
            raise ValueError(f"rows_per_chunk must be >= 1, got {rows_per_chunk}")
        if wm.shape != (self.num_vars, 8) or wm.dtype != np.uint32 or not wm.flags.c_contiguous:
            raise ValueError(f"a Montgomery witness is a C-contiguous ({self.num_vars}, 8) uint32 array")
        m = self.num_constraints
        found: list[np.ndarray] = []
        flags = np.empty(min(rows_per_chunk, m), dtype=np.uint8)
        for lo in range(0, m, rows_per_chunk):
            hi = min(m, lo + rows_per_chunk)
            ops = [x for mat in (self.a, self.b, self.c) for x in _block_operands(mat, lo, hi)]
            bad = flags[: hi - lo]
            parallel_for(_unsat_rows_n, hi - lo, lo, *ops, wm, bad, min_chunk=1024)
            hit = np.flatnonzero(bad)
            if len(hit):
                found.append(hit.astype(np.int64) + lo)
                if first_only:
                    return found[0][:1]
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def to_mont(self, witness: np.ndarray, work: np.ndarray | None = None) -> np.ndarray:
        """The checked canonical witness in Montgomery form, written into ``work`` (may be ``witness``: in
        place) or a new array."""
        w = check_witness(witness, self.num_vars)
        if work is not None and (
            work.shape != w.shape or work.dtype != np.uint32 or not work.flags.c_contiguous
        ):
            raise ValueError(f"work must be a C-contiguous ({self.num_vars}, 8) uint32 array")
        return fr_to_mont(w, out=work)

    def row_values(self, i: int, wm: np.ndarray) -> tuple[int, int, int]:
        """(A.w, B.w, C.w) of constraint ``i`` as integers, from a Montgomery witness (``to_mont``)."""
        return _row_ints(self.a, i, wm), _row_ints(self.b, i, wm), _row_ints(self.c, i, wm)

    def check(self, witness: np.ndarray, rows_per_chunk: int | None = None) -> None:
        """Raise UnsatisfiedConstraint naming the first failing constraint (``rows_per_chunk``: found by the
        chunked check, ``unsatisfied``)."""
        if rows_per_chunk is not None:
            wm = self.to_mont(witness)
            bad = self.unsatisfied_mont(wm, rows_per_chunk)
            if len(bad):
                raise UnsatisfiedConstraint(int(bad[0]), *self.row_values(int(bad[0]), wm))
            return
        i = self.first_unsatisfied(witness)
        if i is not None:
            from gpu.arith.fields import fr_decode

            a, b, c = self.evaluate(witness)
            av, bv, cv = (fr_decode(x[i : i + 1])[0] for x in (a, b, c))
            raise UnsatisfiedConstraint(i, av, bv, cv)

    def column_sums(self, lagrange: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """u_j, v_j, w_j = sum over constraints k of M[k, j] * lagrange[k] for M = A, B, C (Montgomery), with
        the input constraints included: the QAP polynomials of every variable evaluated at tau (setup)."""
        m, k = self.num_constraints, self.num_inputs
        if lagrange.shape[0] < m + k:
            raise ValueError("need one Lagrange coefficient per constraint (input constraints included)")
        outs = []
        for mat in (self.a, self.b, self.c):
            out = np.zeros((self.num_vars, 8), dtype=np.uint32)
            if isinstance(mat, CompactCSR):
                _column_sums_idx_n(0, m, mat.row_ptr, mat.cols, mat.coeff, mat.mont_table(), lagrange, out)
            else:
                _column_sums_n(0, m, mat.row_ptr, mat.cols, mat.mont_vals(), lagrange, out)
            outs.append(out)
        from gpu.arith.fields import fr_add_batch

        outs[0][:k] = fr_add_batch(outs[0][:k], np.ascontiguousarray(lagrange[m : m + k]))
        return outs[0], outs[1], outs[2]

    def compact(self) -> R1CS:
        """The same system with interned coefficients (``CompactCSR``)."""
        mats = [m if isinstance(m, CompactCSR) else CompactCSR.from_csr(m) for m in (self.a, self.b, self.c)]
        return R1CS(self.num_inputs, self.num_aux, *mats)

    def expanded(self) -> R1CS:
        """The same system with plain ``CSR`` matrices (32 B per coefficient)."""
        mats = [m.to_csr() if isinstance(m, CompactCSR) else m for m in (self.a, self.b, self.c)]
        return R1CS(self.num_inputs, self.num_aux, *mats)

    # -------------------------------------------------------------- on-disk cache

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write meta.json + one .npy per array, atomically (temporary directory, then rename)."""
        with atomic_dir(directory) as tmp:
            meta = {
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "num_inputs": self.num_inputs,
                "num_aux": self.num_aux,
                "num_constraints": self.num_constraints,
                "nnz": {"A": self.a.nnz, "B": self.b.nnz, "C": self.c.nnz},
                "vals": "canonical-le-u32x8",
            }
            for name, mat in (("A", self.a), ("B", self.b), ("C", self.c)):
                np.save(tmp / f"{name}_row_ptr.npy", np.ascontiguousarray(mat.row_ptr, dtype=np.int64))
                np.save(tmp / f"{name}_cols.npy", np.ascontiguousarray(mat.cols, dtype=np.uint32))
                np.save(tmp / f"{name}_vals.npy", np.ascontiguousarray(mat.vals, dtype=np.uint32))
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        return Path(directory)

    @staticmethod
    def load(directory: str | os.PathLike[str], mmap: bool = True) -> R1CS:
        """Read a saved R1CS (arrays memory-mapped unless mmap=False); checks the header and the shapes."""
        d = Path(directory)
        meta = json.loads((d / "meta.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{d}: not a {FORMAT} v{FORMAT_VERSION} directory")
        mode: Literal["r"] | None = "r" if mmap else None
        mats = []
        for name in ("A", "B", "C"):
            mats.append(
                CSR(
                    np.load(d / f"{name}_row_ptr.npy", mmap_mode=mode),
                    np.load(d / f"{name}_cols.npy", mmap_mode=mode),
                    np.load(d / f"{name}_vals.npy", mmap_mode=mode),
                )
            )
            if mats[-1].nnz != meta["nnz"][name]:
                raise ValueError(f"{d}: {name} has {mats[-1].nnz} entries, header says {meta['nnz'][name]}")
        r = R1CS(int(meta["num_inputs"]), int(meta["num_aux"]), *mats)
        if r.num_constraints != meta["num_constraints"]:
            raise ValueError(f"{d}: {r.num_constraints} rows, header says {meta['num_constraints']}")
        return r


@dataclass(frozen=True)
class Density:
    """Which variables each query needs (bellperson's DensityTracker; A-inputs are always full)."""

    a_aux: np.ndarray
    b_input: np.ndarray
    b_aux: np.ndarray


def check_witness(witness: np.ndarray, nvars: int) -> np.ndarray:
    w = np.ascontiguousarray(witness)
    if w.dtype != np.uint32 or w.shape != (nvars, 8):
        raise ValueError(f"witness must be ({nvars}, 8) uint32 canonical Fr, got {w.dtype} {w.shape}")
    if w[0, 0] != 1 or w[0, 1:].any():
        raise ValueError("witness[0] must be ONE (1)")
    return w
