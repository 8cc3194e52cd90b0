"""The pre-compiled circuit (PCE) of a PoRep partition: its R1CS recorded once per proof shape, by tiling.

Why: the matrices A, B, C of a partition depend only on its shape (cuzk.md §1.6), and a partition is a
header plus N challenges that run the same code, each over its own inputs and aux plus the same header
variables (ONE, the replica-id bits, comm_d, comm_c, comm_r_last: ``stacked.synthesize``). So the header
and ONE challenge are recorded shape-only (a ``PartitionTemplate``: ~1/N of the rows, kept in the cache) and
the N challenges' rows come from it by index arithmetic. With the 1-challenge system's unified numbering
(inputs ``[0, h_in)`` header, ``[h_in, h_in + c_in)`` the challenge's; then aux: header, then the
challenge's), challenge ``i``'s entry at template column ``x`` sits at

- ``x`` for a header input, ``x + i·c_in`` for a challenge input,
- ``x + (N−1)·c_in`` for a header aux, ``x + (N−1)·c_in + i·c_aux`` for a challenge aux.

Each shift keeps the order of a row's columns (inputs, then aux, each ascending: bellpepper's LC order), so
a row sorted once is sorted for every challenge: the tiled matrices equal the direct synthesis'
``ConstraintSystem.to_r1cs()`` array for array (tests/porep/circuit/test_pce.py, at 2KiB).

A circuit whose challenges read *different* header variables of one kind (the Snap update circuit: challenge
``i`` reads its own chunk of the header's challenge-digest bits) gives the template a ``window``: header
columns ``[lo, hi)`` that challenge ``i`` reads at ``x + window_shift[i]`` instead (``porep.snap.pce``).

The result is a ``gpu.groth16.r1cs.R1CS`` of ``CompactCSR`` matrices (a uint16 index per entry into the
~1,500 distinct coefficients): a 32GiB partition's 722 M entries take ~7.5 GB instead of ~26 GB, and the
engine evaluates A·w, B·w, C·w from it directly.

The cache (``cached_template``) holds the template under a key of the shape and of a digest of the circuit
code that shapes the rows (``code_version``); it is checked on load by its recorded BLAKE2b digest, and a
stale, corrupt or unreadable entry is rebuilt (with a warning), never used.
"""

from __future__ import annotations

import array
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from gpu.arith.cpupool import parallel_map
from gpu.files import atomic_dir
from gpu.groth16.r1cs import R1CS, CompactCSR, index_dtype
from porep.circuit.cs import ConstraintSystem, R, ints_to_limbs
from porep.circuit.stacked import (
    CircuitShape,
    PartitionStats,
    blank_witness,
    synthesize_challenge,
    synthesize_header,
)

log = logging.getLogger(__name__)

FORMAT = "psagent-pce-template"
FORMAT_VERSION = 1
CACHE_SUBDIR = "pce"

# The modules whose code decides the rows (porep/...): a change to any of them changes the cache key.
CODE_FILES = (
    "circuit/boolean.py", "circuit/create_label.py", "circuit/cs.py", "circuit/insertion.py",
    "circuit/multipack.py", "circuit/num.py", "circuit/pce.py", "circuit/por.py", "circuit/poseidon.py",
    "circuit/sha256.py", "circuit/stacked.py", "circuit/uint32.py", "circuit/uint64.py", "hashes/poseidon.py",
)
_MATRICES = ("A", "B", "C")


@dataclass(frozen=True)
class Layout:
    """Counts of the header and of one challenge (inputs of the header include ONE)."""

    h_rows: int
    h_inputs: int
    h_aux: int
    c_rows: int
    c_inputs: int
    c_aux: int
    challenges: int

    @property
    def num_constraints(self) -> int:
        return self.h_rows + self.challenges * self.c_rows

    @property
    def num_inputs(self) -> int:
        return self.h_inputs + self.challenges * self.c_inputs

    @property
    def num_aux(self) -> int:
        return self.h_aux + self.challenges * self.c_aux


@dataclass(frozen=True)
class PartitionTemplate:
    """The header's and one challenge's rows, sorted, in the 1-challenge system's unified numbering: per
    matrix ``ptr`` (h_rows + c_rows + 1,) int64, ``cols`` uint32, ``coeff`` indices into ``table`` ((k, 8)
    canonical limbs, shared by A, B, C)."""

    layout: Layout
    ptr: tuple[np.ndarray, np.ndarray, np.ndarray]
    cols: tuple[np.ndarray, np.ndarray, np.ndarray]
    coeff: tuple[np.ndarray, np.ndarray, np.ndarray]
    table: np.ndarray
    window: tuple[int, int] = (0, 0)
    window_shift: np.ndarray | None = None  # int64[challenges]: where challenge i reads the window

    def _window(self, cc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Challenge entries in the header window (bool mask) and each challenge's shift (int64[n]); the
        shifted columns must keep every row's order: no challenge row reads a header aux above the window."""
        lay = self.layout
        lo, hi = self.window
        shift = self.window_shift if self.window_shift is not None else np.zeros(lay.challenges, np.int64)
        win = (cc >= lo) & (cc < hi)
        if lo == hi:
            return win, shift
        ni1 = lay.h_inputs + lay.c_inputs
        head_end = ni1 + lay.h_aux
        if not ni1 <= lo < hi <= head_end or shift.shape != (lay.challenges,) or shift[0] != 0:
            raise ValueError("the window is not a header aux range with one shift per challenge, 0 first")
        if (shift < 0).any() or hi + int(shift.max()) > head_end or ((cc >= hi) & (cc < head_end)).any():
            raise ValueError("a shifted window leaves the header or reorders a row: not tileable")
        return win, shift

    # ------------------------------------------------------------------ the full partition

    def _split(self, k: int) -> tuple[int, int]:
        """(header nnz, challenge nnz) of matrix k."""
        hn = int(self.ptr[k][self.layout.h_rows])
        return hn, int(self.ptr[k][-1]) - hn

    def _shifts(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Header columns (final), challenge columns as ``base + i * step (+ shift[i] where win)`` (uint32:
        every column of the partition fits, checked)."""
        lay = self.layout
        hn, _ = self._split(k)
        ni1 = lay.h_inputs + lay.c_inputs
        aux_shift = (lay.challenges - 1) * lay.c_inputs
        if lay.num_inputs + lay.num_aux > 2**32:
            raise ValueError("more than 2^32 variables")
        hc = self.cols[k][:hn].astype(np.int64)
        cc = self.cols[k][hn:].astype(np.int64)
        if ((hc >= lay.h_inputs) & (hc < ni1)).any() or (hc >= ni1 + lay.h_aux).any():
            raise ValueError("a header row reads a challenge variable: the partition is not tileable")
        head = hc + np.where(hc >= ni1, aux_shift, 0)
        base = cc + np.where(cc >= ni1, aux_shift, 0)
        own_in = (cc >= lay.h_inputs) & (cc < ni1)
        step = np.where(own_in, lay.c_inputs, np.where(cc >= ni1 + lay.h_aux, lay.c_aux, 0))
        win, shift = self._window(cc)
        return head.astype(np.uint32), base.astype(np.uint32), step.astype(np.uint32), win, shift

    def matrix(self, k: int) -> CompactCSR:
        """Matrix ``k`` (0 = A, 1 = B, 2 = C) of the whole partition, tiled over the challenges."""
        lay, n = self.layout, self.layout.challenges
        hn, cn = self._split(k)
        head, base, step, win, shift = self._shifts(k)
        at = np.flatnonzero(win)
        ptr, coeff = self.ptr[k], self.coeff[k]
        cols = np.empty(hn + n * cn, dtype=np.uint32)
        out_coeff = np.empty(hn + n * cn, dtype=coeff.dtype)
        out_ptr = np.empty(lay.num_constraints + 1, dtype=np.int64)
        cols[:hn] = head
        out_coeff[:hn] = coeff[:hn]
        out_ptr[: lay.h_rows + 1] = ptr[: lay.h_rows + 1]
        tail, own = ptr[lay.h_rows + 1 :], coeff[hn:]

        def challenge(i: int) -> None:  # numpy releases the GIL: the challenges fill in parallel
            lo = hn + i * cn
            np.multiply(step, np.uint32(i), out=cols[lo : lo + cn])
            np.add(cols[lo : lo + cn], base, out=cols[lo : lo + cn])
            if len(at) and shift[i]:
                cols[lo + at] += np.uint32(shift[i])
            out_coeff[lo : lo + cn] = own
            r = lay.h_rows + i * lay.c_rows
            np.add(tail, i * cn, out=out_ptr[r + 1 : r + lay.c_rows + 1])

        parallel_map(challenge, list(range(n)))
        return CompactCSR(out_ptr, cols, out_coeff, self.table)

    def r1cs(self) -> R1CS:
        """The partition's R1CS (compact matrices; ``.expanded()`` gives plain CSR)."""
        lay = self.layout
        return R1CS(lay.num_inputs, lay.num_aux, self.matrix(0), self.matrix(1), self.matrix(2))

    def stats(self) -> PartitionStats:
        """The partition's counts and densities from the template alone (no tiling): what ``partition_stats``
        reports, for shapes too large to materialise."""
        lay, n = self.layout, self.layout.challenges
        nnz = []
        for k in range(3):
            hn, cn = self._split(k)
            nnz.append(hn + n * cn)
        ni1 = lay.h_inputs + lay.c_inputs
        dens = []
        for k in (0, 1):
            hn, _ = self._split(k)
            c = self.cols[k].astype(np.int64)
            head_aux = np.unique(c[(c >= ni1) & (c < ni1 + lay.h_aux)])
            win, shift = self._window(c[hn:])
            if win.any():  # the header aux the other challenges read in the window's place
                moved = np.unique(c[hn:][win])[None, :] + shift[:, None]
                head_aux = np.union1d(head_aux, moved.reshape(-1))
            own_aux = np.unique(c[hn:][c[hn:] >= ni1 + lay.h_aux])
            head_in = np.unique(c[c < lay.h_inputs])
            own_in = np.unique(c[hn:][(c[hn:] >= lay.h_inputs) & (c[hn:] < ni1)])
            dens.append((len(head_aux) + n * len(own_aux), len(head_in) + n * len(own_in)))
        return PartitionStats(
            num_constraints=lay.num_constraints,
            num_inputs=lay.num_inputs,
            num_aux=lay.num_aux,
            nnz=(nnz[0], nnz[1], nnz[2]),
            a_aux=dens[0][0],
            b_input=dens[1][1],
            b_aux=dens[1][0],
        )

    # ------------------------------------------------------------------ disk

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"table": self.table}
        for k, name in enumerate(_MATRICES):
            out[f"{name}_ptr"], out[f"{name}_cols"] = self.ptr[k], self.cols[k]
            out[f"{name}_coeff"] = self.coeff[k]
        if self.window_shift is not None:
            out["window_shift"] = self.window_shift
        return out

    def digest(self) -> str:
        h = hashlib.blake2b(digest_size=32)
        for name, a in self.arrays().items():
            h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(np.ascontiguousarray(a).data)
        return h.hexdigest()

    def save(self, directory: str | os.PathLike[str], key: str) -> Path:
        """meta.json + one .npy per array, written to a temporary directory and renamed into place."""
        with atomic_dir(directory) as tmp:
            for name, a in self.arrays().items():
                np.save(tmp / f"{name}.npy", np.ascontiguousarray(a))
            meta = {
                "format": FORMAT, "version": FORMAT_VERSION, "key": key,
                "layout": self.layout.__dict__, "digest": self.digest(),
            }
            if self.window != (0, 0):
                meta["window"] = list(self.window)
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        return Path(directory)

    @staticmethod
    def load(directory: str | os.PathLike[str], key: str) -> PartitionTemplate:
        """Read a saved template; ValueError unless its key, format, digest and structure all check out."""
        d = Path(directory)
        meta = json.loads((d / "meta.json").read_text())
        if meta.get("format") != FORMAT or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{d}: not a {FORMAT} v{FORMAT_VERSION} directory")
        if meta.get("key") != key:
            raise ValueError(f"{d}: recorded for {meta.get('key')!r}, wanted {key!r}")
        arr = {p.stem: np.load(p, allow_pickle=False) for p in sorted(d.glob("*.npy"))}
        try:
            t = PartitionTemplate(
                Layout(**meta["layout"]),
                tuple(arr[f"{n}_ptr"] for n in _MATRICES),
                tuple(arr[f"{n}_cols"] for n in _MATRICES),
                tuple(arr[f"{n}_coeff"] for n in _MATRICES),
                arr["table"],
                tuple(meta.get("window", (0, 0))),
                arr.get("window_shift"),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{d}: incomplete template ({exc})") from exc
        if t.digest() != meta.get("digest"):
            raise ValueError(f"{d}: digest mismatch (corrupt file)")
        t.check()
        return t

    def check(self) -> None:
        """Structural checks (row pointers, index ranges)."""
        lay = self.layout
        rows = lay.h_rows + lay.c_rows
        nvars1 = lay.h_inputs + lay.c_inputs + lay.h_aux + lay.c_aux
        if self.table.ndim != 2 or self.table.shape[1:] != (8,) or self.table.dtype != np.uint32:
            raise ValueError("coefficient table must be (k, 8) uint32")
        for k, name in enumerate(_MATRICES):
            p, c, f = self.ptr[k], self.cols[k], self.coeff[k]
            bad_ptr = p.shape != (rows + 1,) or p[0] != 0 or p[-1] != len(c) or (np.diff(p) < 0).any()
            if bad_ptr or len(f) != len(c):
                raise ValueError(f"{name}: row pointers do not describe {rows} rows of {len(c)} entries")
            if len(c) and (int(c.max()) >= nvars1 or int(f.max()) >= len(self.table)):
                raise ValueError(f"{name}: column or coefficient index out of range")
            self._window(c[int(p[lay.h_rows]) :].astype(np.int64))


# ---------------------------------------------------------------------- recording


def _int64s(values: Iterable[int]) -> np.ndarray:
    """Python ints to int64 (array.array converts twice as fast as np.array / np.fromiter)."""
    return np.frombuffer(array.array("q", values), dtype=np.int64)


def record(shape: CircuitShape) -> PartitionTemplate:
    """Synthesise the header and one challenge of ``shape`` blank, and keep their rows sorted as
    ``ConstraintSystem.to_r1cs`` sorts them (32GiB: 7.2 M rows)."""
    one = CircuitShape(shape.tree_d_depth, shape.tree_arities, shape.layers, 1)
    cs = ConstraintSystem(witness=False, record=True)
    w = blank_witness(one)
    rid_bits, comm_d, comm_c, comm_r_last = synthesize_header(cs, w)
    h_rows, h_in, h_aux = cs.num_constraints, cs.num_inputs, cs.num_aux
    with cs.namespace("challenge_0"):
        synthesize_challenge(cs, one.layers, w.challenges[0], comm_d, comm_c, comm_r_last, rid_bits)
    layout = Layout(
        h_rows, h_in, h_aux, cs.num_constraints - h_rows, cs.num_inputs - h_in, cs.num_aux - h_aux,
        shape.challenges,
    )
    return template_of(cs, layout)


def template_of(
    cs: ConstraintSystem, layout: Layout, window: tuple[int, int] = (0, 0),
    window_shift: np.ndarray | None = None,
) -> PartitionTemplate:
    """The template of a recorded header + one challenge (``cs``, counted by ``layout``), rows sorted as
    ``ConstraintSystem.to_r1cs`` sorts them; ``window``: see ``PartitionTemplate``."""
    # intern the raw coefficients (few distinct ints), then merge raw values with the same residue
    raw = {c: i for i, c in enumerate(set().union(*(m.coeffs for m in cs._m)))}
    idx = [_int64s(map(raw.__getitem__, m.coeffs)) for m in cs._m]
    residues: dict[int, int] = {}
    to_table = _int64s(residues.setdefault(c % R, len(residues)) for c in raw)
    table = ints_to_limbs(residues) if residues else np.zeros((0, 8), dtype=np.uint32)
    dt = index_dtype(len(table))
    nin = cs.num_inputs
    ptrs, cols, coeffs = [], [], []
    for k, m in enumerate(cs._m):
        v = _int64s(m.vars)
        col = np.where(v < 0, ~v, v + nin)
        lens = _int64s(m.lens)
        ptr = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=ptr[1:])
        rowid = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
        order = np.argsort(rowid * (nin + cs.num_aux) + col, kind="stable")
        ptrs.append(ptr)
        cols.append(col[order].astype(np.uint32))
        coeffs.append(to_table[idx[k][order]].astype(dt) if len(order) else np.zeros(0, dtype=dt))
        del v, col, rowid, order
    t = PartitionTemplate(
        layout, (ptrs[0], ptrs[1], ptrs[2]), (cols[0], cols[1], cols[2]), (coeffs[0], coeffs[1], coeffs[2]),
        table, window, window_shift,
    )
    t.check()
    return t


# ---------------------------------------------------------------------- cache


@lru_cache(maxsize=8)
def files_version(files: tuple[str, ...]) -> str:
    """Digest of ``files`` (paths under porep/): a cache key's code version."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for rel in files:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def code_version() -> str:
    """Digest of the circuit code that shapes the rows (``CODE_FILES``)."""
    return files_version(CODE_FILES)


def shape_name(shape: CircuitShape) -> str:
    arities = ".".join(str(a) for a in shape.tree_arities) or "-"
    return f"d{shape.tree_d_depth}-a{arities}-l{shape.layers}-c{shape.challenges}"


def cache_key(shape: CircuitShape) -> str:
    """The cache entry's name: the shape and the code version."""
    return f"{shape_name(shape)}-{code_version()}"


def cached_template(shape: CircuitShape, cache_dir: str | os.PathLike[str]) -> PartitionTemplate:
    """The template of ``shape`` from ``cache_dir/pce/<key>``, recorded and saved there when absent, stale
    or corrupt (entries of the same shape from other code versions are removed)."""
    return cached(shape_name(shape), cache_key(shape), lambda: record(shape), cache_dir)


def cached(
    name: str, key: str, build: Callable[[], PartitionTemplate], cache_dir: str | os.PathLike[str]
) -> PartitionTemplate:
    """The template saved as ``cache_dir/pce/<key>`` (``key`` = ``name``-version), else ``build()`` saved
    there; an unusable entry is rebuilt with a warning, and other versions' entries of ``name`` removed."""
    root = Path(cache_dir) / CACHE_SUBDIR
    path = root / key
    if (path / "meta.json").exists():
        try:
            return PartitionTemplate.load(path, key)
        except (ValueError, OSError, KeyError, TypeError, EOFError) as exc:  # JSONDecodeError: a ValueError
            log.warning("PCE cache entry %s is unusable (%s): recording it again", path, exc)
    t = build()
    if root.is_dir():
        for old in root.glob(name + "-*"):
            if old.name != key and old.is_dir() and not old.name.startswith(key):
                shutil.rmtree(old, ignore_errors=True)
    try:
        t.save(path, key)
    except OSError as exc:  # a full or read-only cache costs the next start a recording, not this proof
        log.warning("cannot save the PCE to %s (%s)", path, exc)
    return t


def partition_pce(shape: CircuitShape, cache_dir: str | os.PathLike[str] | None = None) -> R1CS:
    """The R1CS (compact matrices) of a partition of ``shape``: tiled from the cached template when
    ``cache_dir`` is given, else from a fresh recording."""
    t = cached_template(shape, cache_dir) if cache_dir is not None else record(shape)
    return t.r1cs()
