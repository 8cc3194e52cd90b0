"""The witness of many instances of one gadget template at once (Numba, Montgomery Fr), by solving its rows.

Why: most gadget rows *define* the aux they follow — a Poseidon S-box, an LC's allocation, a pick, an
and/nor/xor bit: exactly one variable of C is still unknown when the row is reached, and A and B are
known. Solving each such row for that variable (v = (A·B − rest of C) / its coefficient), in row order and
for all instances together, is a gadget-agnostic vectorised witness. The other aux are *free*: their value
is not fixed by their own row (index bits, siblings, addmany's result bits) and the caller supplies them;
rows with nothing unknown are checks and are skipped.
"""

from __future__ import annotations

import hashlib
import logging
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from gpu.arith.fields import fr_add, fr_encode, fr_load, fr_load2, fr_mul, fr_store2, fr_sub, fr_zero
from gpu.files import atomic_file
from porep.circuit.cs import R
from porep.circuit.template import Template

log = logging.getLogger(__name__)


def _signed(c: int) -> int:
    """A coefficient mod r as the signed integer of least absolute value."""
    return c - R if c > R // 2 else c


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
    def_coeff: np.ndarray  # per defining row (in order): that coefficient as a signed int


def program(t: Template) -> Program:
    """Find the aux each row defines: an aux is defined by the row where it first appears in C if no
    earlier-or-same row has it in A or B; otherwise (or if it never appears in C) it is free. A row
    defining two aux is refused."""
    n_vals = 1 + t.n_inputs + t.n_aux
    never = np.int64(t.rows)
    ptr = tuple(np.concatenate(([0], np.cumsum(t.lens[k]))) for k in range(3))
    idx = tuple(t.slots[k] + 1 for k in range(3))
    rows = tuple(np.repeat(np.arange(t.rows, dtype=np.int64), t.lens[k]) for k in range(3))
    first_ab = np.full(n_vals, never, dtype=np.int64)
    first_c = np.full(n_vals, never, dtype=np.int64)
    for k, first in ((0, first_ab), (1, first_ab), (2, first_c)):
        # entries are row-major, so a variable's first entry is its first row
        vs, at = np.unique(idx[k], return_index=True)
        first[vs] = np.minimum(first[vs], rows[k][at])
    own = np.arange(n_vals) > t.n_inputs
    defined = own & (first_c < first_ab)
    pos = np.flatnonzero(defined[idx[2]] & (rows[2] == first_c[idx[2]]))
    def_rows = rows[2][pos]
    if len(np.unique(def_rows)) != len(def_rows):
        raise ValueError("a row has more than one unknown in C")
    order = np.argsort(def_rows)
    pos, def_rows = pos[order], def_rows[order]
    defines = np.full(t.rows, -1, dtype=np.int64)
    defines[def_rows] = idx[2][pos]
    def_cidx = t.coeff[2][pos]
    inv = np.zeros((t.rows, 8), dtype=np.uint32)
    if len(def_rows):  # one inversion per distinct coefficient
        inv[def_rows] = fr_encode([pow(c, R - 2, R) for c in t.coeffs])[def_cidx]
    free = np.flatnonzero(own & ~defined) - 1 - t.n_inputs
    return Program(
        template=t,
        free=tuple(free.tolist()),
        defines=defines,
        ptr=(ptr[0], ptr[1], ptr[2]),
        idx=(idx[0], idx[1], idx[2]),
        coeff=fr_encode(list(t.coeffs)),
        inv=inv,
        def_coeff=np.asarray([_signed(c) for c in t.coeffs], dtype=object)[def_cidx],
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


# ---------------------------------------------------------------------- bit-valued gadgets (SHA-256)

SMALL = 1 << 20


@njit(nogil=True, cache=cache_enabled())
def _lc_int(vals, r, ptr, idx, cidx, coeff, row, skip):
    acc = 0
    for p in range(ptr[row], ptr[row + 1]):
        v = idx[p]
        if v != skip:
            acc += coeff[cidx[p]] * vals[r, v]
    return acc


@njit(nogil=True, cache=cache_enabled())
def _solve_small_rows(lo, hi, vals, defines, small, dsign, pa, ia, ca, pb, ib, cb, pc, ic, cc, coeff):
    for r in range(lo, hi):
        for row in range(defines.shape[0]):
            d = defines[row]
            if d < 0 or not small[row]:
                continue
            a = _lc_int(vals, r, pa, ia, ca, coeff, row, -1)
            b = _lc_int(vals, r, pb, ib, cb, coeff, row, -1)
            c = _lc_int(vals, r, pc, ic, cc, coeff, row, d)
            vals[r, d] = (a * b - c) * dsign[row]


def solve_small(p: Program, inputs: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """Integer witness of N instances of a gadget whose values are small (bits: SHA-256's xor / and / ch /
    maj rows): ``int64[N, n_aux]`` and the rows it left unsolved (a defining row with a coefficient of
    2^20 or more, e.g. a final packing; the caller fills its aux, which no later row may read)."""
    t = p.template
    n = inputs.shape[0]
    if inputs.shape != (n, t.n_inputs) or free.shape != (n, len(p.free)):
        raise ValueError(f"inputs [N, {t.n_inputs}] and free [N, {len(p.free)}] expected")
    signed = np.asarray([_signed(c) if abs(_signed(c)) < SMALL else 0 for c in t.coeffs], dtype=np.int64)
    big = np.asarray([abs(_signed(c)) >= SMALL for c in t.coeffs], dtype=bool)
    small = np.ones(t.rows, dtype=bool)
    for k in range(3):
        row_of = np.repeat(np.arange(t.rows), t.lens[k])
        small[np.unique(row_of[big[t.coeff[k]]])] = False
    dsign = np.zeros(t.rows, dtype=np.int64)
    rows_def = np.flatnonzero(p.defines >= 0)
    unit = np.asarray([c in (1, -1) for c in p.def_coeff.tolist()], dtype=bool)
    dsign[rows_def[unit]] = p.def_coeff[unit].astype(np.int64)
    small[rows_def[~unit]] = False
    unsolved = [int(r) for r in rows_def if not small[r]]
    for row in unsolved:
        d = p.defines[row]
        if any((p.idx[k][p.ptr[k][row + 1] :] == d).any() for k in range(3)):
            raise ValueError(f"row {row} defines a large value that later rows read")
    vals = np.zeros((n, 1 + t.n_inputs + t.n_aux), dtype=np.int64)
    vals[:, 0] = 1
    vals[:, 1 : 1 + t.n_inputs] = inputs
    vals[:, [1 + t.n_inputs + f for f in p.free]] = free
    parallel_for(
        _solve_small_rows, n, vals, p.defines, small, dsign, p.ptr[0], p.idx[0], t.coeff[0], p.ptr[1],
        p.idx[1], t.coeff[1], p.ptr[2], p.idx[2], t.coeff[2], signed, min_chunk=1,
    )
    return np.ascontiguousarray(vals[:, 1 + t.n_inputs :]), unsolved


# ---------------------------------------------------------------------- bit programs (truth tables)


@dataclass(frozen=True)
class BitProgram:
    """A bit-valued template (SHA-256's rows) compiled to table lookups: op m sets value ``dst[m]`` to
    ``table[m, x]`` where x packs the values of ``src[m, 0..3]`` (bit j of x = value of src[m, j]). Every
    solvable row has at most 4 variables besides ONE and the one it defines, so its row — whatever its
    coefficients (xor, and, nor, ch, maj, …) — is a function of those 4 bits, tabulated once. ``free`` are
    the value indices the caller fills (allocation order); ``last`` is the value index of the one defining
    row left to the caller (a final packing), or −1. Value index 0 is ONE, 1..n_inputs the inputs."""

    n_inputs: int
    n_aux: int
    free: np.ndarray  # int32[F]
    dst: np.ndarray  # int32[M]
    src: np.ndarray  # int32[M, 4]
    table: np.ndarray  # uint8[M, 16]
    last: int


def bit_program(p: Program, inputs_read: bool = True) -> BitProgram:
    """Compile ``p`` (a template whose variables are bits, apart from at most one final defining row with
    large coefficients) to a ``BitProgram``. ``inputs_read=False`` asserts no solved row reads an input
    (the tree-D node: its inputs are field elements, only read by the unpacking checks)."""
    t = p.template
    n_vals = 1 + t.n_inputs + t.n_aux
    signed = np.asarray([_signed(c) if abs(_signed(c)) < SMALL else 0 for c in t.coeffs], dtype=np.int64)
    big = np.asarray([abs(_signed(c)) >= SMALL for c in t.coeffs], dtype=bool)
    row_of = tuple(np.repeat(np.arange(t.rows, dtype=np.int64), t.lens[k]) for k in range(3))
    big_row = np.zeros(t.rows, dtype=bool)
    for k in range(3):
        big_row[row_of[k][big[t.coeff[k]]]] = True
    rows_def = np.flatnonzero(p.defines >= 0)
    def_coeff = np.asarray([c if abs(c) < SMALL else 0 for c in p.def_coeff.tolist()], dtype=np.int64)
    ok = (np.abs(def_coeff) == 1) & ~big_row[rows_def]
    left = rows_def[~ok]
    if len(left) > 1:
        raise ValueError(f"{len(left)} defining rows are not bit rows")
    last = int(p.defines[left[0]]) if len(left) else -1
    if last not in (-1, n_vals - 1):
        raise ValueError("the row left to the caller must define the last aux")
    if last >= 0 and any((p.idx[k][p.ptr[k][left[0] + 1] :] == last).any() for k in range(3)):
        raise ValueError(f"row {left[0]} defines a large value that later rows read")
    rows = rows_def[ok]
    m_of = np.full(t.rows, -1, dtype=np.int64)
    m_of[rows] = np.arange(len(rows))
    dst = p.defines[rows]
    dsign = def_coeff[ok]
    # every entry of a solvable row: (op, variable, coefficient, matrix); the defined variable's C entry
    # is dropped and ONE's entries go to the constant column
    ops, vs, cs, ks = [], [], [], []
    for k in range(3):
        m = m_of[row_of[k]]
        sel = m >= 0
        ops.append(m[sel])
        vs.append(p.idx[k][sel])
        cs.append(signed[t.coeff[k][sel]])
        ks.append(np.full(int(sel.sum()), k))
    op, var, coef, mat = (np.concatenate(x) for x in (ops, vs, cs, ks))
    keep = ~((mat == 2) & (var == dst[op]))
    op, var, coef, mat = op[keep], var[keep], coef[keep], mat[keep]
    if ((mat < 2) & (var == dst[op])).any():
        raise AssertionError("a defined variable read by its own row's A or B")
    operand = var != 0
    keys = np.sort(op[operand] * n_vals + var[operand])  # sort-based unique: ops are in row order
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys
    op_u, var_u = keys // n_vals, keys % n_vals
    pos_u = np.arange(len(keys)) - np.searchsorted(op_u, op_u, side="left")
    if len(pos_u) and pos_u.max() >= 4:
        raise ValueError("a bit row reads more than 4 variables")
    if not inputs_read and ((var_u >= 1) & (var_u <= t.n_inputs)).any():
        raise ValueError("a solved row reads an input")
    src = np.zeros((len(rows), 4), dtype=np.int32)
    src[op_u, pos_u] = var_u
    pos = np.full(len(op), 4)
    pos[operand] = pos_u[np.searchsorted(keys, op[operand] * n_vals + var[operand])]
    # coefficient of (matrix, op, operand position); duplicates cannot occur (LCs are merged)
    coeffs = np.zeros((3, len(rows), 5), dtype=np.int64)
    coeffs[mat, op, pos] = coef
    table = np.zeros((len(rows), 16), dtype=np.int64)
    for x in range(16):
        bit = [(x >> j) & 1 for j in range(4)]
        a, b, c = (coeffs[k, :, 4] + sum(coeffs[k, :, j] for j in range(4) if bit[j]) for k in range(3))
        table[:, x] = (a * b - c) * dsign
    return BitProgram(
        n_inputs=t.n_inputs,
        n_aux=t.n_aux,
        free=np.asarray([1 + t.n_inputs + f for f in p.free], dtype=np.int32),
        dst=dst.astype(np.int32),
        src=src,
        table=(table & 0xFF).astype(np.uint8),
        last=last,
    )


@njit(nogil=True, cache=cache_enabled())
def _run_bits(lo, hi, inputs, free, free_idx, dst, src, table, n_vals, out, rows, n_write):
    vals = np.zeros(n_vals, np.uint8)
    n_in = inputs.shape[1]
    first_own = 1 + n_in
    for i in range(lo, hi):
        vals[0] = 1
        for j in range(n_in):
            vals[1 + j] = inputs[i, j]
        for f in range(free_idx.shape[0]):
            vals[free_idx[f]] = free[i, f]
        for m in range(dst.shape[0]):
            x = vals[src[m, 0]] | (vals[src[m, 1]] << 1) | (vals[src[m, 2]] << 2) | (vals[src[m, 3]] << 3)
            vals[dst[m]] = table[m, x]
        r0 = rows[i]
        for j in range(n_write):
            out[r0 + j, 0] = vals[first_own + j]
            for limb in range(1, 8):
                out[r0 + j, limb] = 0


def solve_bits(
    bp: BitProgram, inputs: np.ndarray, free: np.ndarray, out: np.ndarray, rows: np.ndarray
) -> None:
    """Write N instances' own aux as canonical Fr rows: instance i's aux j goes to ``out[rows[i] + j]``
    (uint32[·, 8]); ``inputs`` uint8[N, n_inputs] and ``free`` uint8[N, F] are bits. The aux of
    ``bp.last`` (the last one) is not written: the caller has its value."""
    n = inputs.shape[0]
    if inputs.shape != (n, bp.n_inputs) or free.shape != (n, len(bp.free)):
        raise ValueError(f"inputs [N, {bp.n_inputs}] and free [N, {len(bp.free)}] expected")
    if out.dtype != np.uint32 or out.ndim != 2 or out.shape[1] != 8:
        raise ValueError("out must be uint32[rows, 8]")
    n_write = bp.n_aux - (bp.last >= 0)
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) != n or (n and (rows.min() < 0 or rows.max() + n_write > out.shape[0])):
        raise ValueError("rows outside out")
    parallel_for(
        _run_bits, n, np.ascontiguousarray(inputs, dtype=np.uint8),
        np.ascontiguousarray(free, dtype=np.uint8), bp.free,
        bp.dst, bp.src, bp.table, 1 + bp.n_inputs + bp.n_aux, out, rows, n_write, min_chunk=1,
    )


# ---------------------------------------------------------------------- on-disk cache of bit programs

# the files whose code decides a bit program: the gadgets' rows and this compilation
_PROGRAM_CODE = (
    "boolean.py", "create_label.py", "cs.py", "multipack.py", "num.py", "por.py", "sha256.py", "uint32.py",
    "uint64.py", "template.py", "template_witness.py", "create_label_witness.py", "sha256_witness.py",
)
CACHE_SUBDIR = "witness"


@cache
def program_version() -> str:
    """Digest of the code that shapes a bit program (``_PROGRAM_CODE``): the key's version part."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in _PROGRAM_CODE:
        h.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _save(bp: BitProgram, path: Path) -> None:
    with atomic_file(path) as f:
        np.savez(
            f, free=bp.free, dst=bp.dst, src=bp.src, table=bp.table,
            meta=np.asarray([bp.n_inputs, bp.n_aux, bp.last], dtype=np.int64),
        )


def _load(path: Path) -> BitProgram:
    with open(path, "rb") as f, np.load(f) as z:
        n_inputs, n_aux, last = (int(x) for x in z["meta"])
        bp = BitProgram(n_inputs, n_aux, z["free"], z["dst"], z["src"], z["table"], last)
    n_vals = 1 + n_inputs + n_aux
    ok = (
        bp.dst.dtype == np.int32 and bp.src.dtype == np.int32 and bp.free.dtype == np.int32
        and bp.table.dtype == np.uint8 and bp.src.shape == (len(bp.dst), 4)
        and bp.table.shape == (len(bp.dst), 16)
        and all(len(a) == 0 or (a.min() >= 0 and a.max() < n_vals) for a in (bp.dst, bp.src.ravel(), bp.free))
    )
    if not ok:
        raise ValueError("inconsistent arrays")
    return bp


def cached_bit_program(
    name: str, build: Callable[[], BitProgram], cache_dir: str | os.PathLike[str] | None
) -> BitProgram:
    """``build()``, or its copy from ``cache_dir/witness/<name>-<program_version>.npz`` (recording a
    create_label template takes seconds of Python; a 32GiB partition needs 11 of them). An unreadable or
    inconsistent file is rebuilt; files of other code versions are removed."""
    if cache_dir is None:
        return build()
    root = Path(cache_dir) / CACHE_SUBDIR
    path = root / f"{name}-{program_version()}.npz"
    if path.exists():
        try:
            return _load(path)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            log.warning("witness cache entry %s is unusable (%s): building it again", path, exc)
    bp = build()
    for old in root.glob(f"{name}-*.npz") if root.is_dir() else ():
        if old != path:
            old.unlink(missing_ok=True)
    _save(bp, path)
    return bp
