"""The full assignment of one PoRep partition, vectorised: every gadget instance of a kind computed at once
(all tree-D SHA-256 nodes together, all create_labels of a layer together, all Poseidon hashes together)
and written straight into the canonical ``(num_inputs + num_aux, 8)`` uint32 vector, ONE first — the same
array as ``synthesize_c1(c1, k).witness_array()``, without per-constraint Python.

Why a layout instead of a synthesis: every challenge of a partition is the same sequence of gadgets over its
own aux (circuit.md §9.3), so the aux offset of each gadget instance inside a challenge follows from the
gadgets' aux counts (their templates), and challenge i's aux start at ``header + i · per_challenge``. The
values come from three kernels: the bit programs of ``sha256_witness`` (tree-D nodes) and
``create_label_witness`` (labels), the Poseidon kernel (column hashes) and the template solver of
``por_poseidon`` (tree C/R levels); the rest are copies (siblings, picks, column rows) and bit
decompositions.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cache

import numpy as np

from gpu.arith.fields import fr_from_mont, fr_to_mont
from porep.circuit.create_label_witness import FIELD_BITS, label_program, write_labels
from porep.circuit.cs import R, ints_to_limbs
from porep.circuit.por import PathLevel
from porep.circuit.por_poseidon import level_template, paths_witness
from porep.circuit.poseidon import constraint_count
from porep.circuit.poseidon_witness import poseidon_witness_mont
from porep.circuit.sha256_witness import bits_le, node_program, node_witness
from porep.circuit.stacked import DRG_DEGREE, EXP_DEGREE, CircuitShape, PartitionWitness, partition_witness

COLUMNS = DRG_DEGREE + EXP_DEGREE
INPUTS_PER_CHALLENGE = 1 + COLUMNS + 3  # tree D index, the columns' indices, challenge, tree R, c_x
SHA_LEVEL_HEAD = 4  # a tree-D level's index bit, sibling and two picks, before the node's aux


@dataclass(frozen=True)
class Layout:
    """Aux offsets of every gadget instance inside one challenge (relative to the challenge's first aux),
    the header's size and the totals. Lists of levels hold each level's first aux."""

    shape: CircuitShape
    header_aux: int
    per_challenge: int
    data_leaf: int
    tree_d: tuple[int, ...]
    col_rows: tuple[int, ...]
    col_hash: tuple[int, ...]
    col_por: tuple[tuple[int, ...], ...]
    challenge_bits: int
    parent_bits: tuple[tuple[int, ...], ...]  # per layer, per parent (6 in layer 1, 14 after)
    label: tuple[int, ...]
    encode: int
    tree_r: tuple[int, ...]
    cx_hash: int
    cx_por: tuple[int, ...]

    @property
    def num_inputs(self) -> int:
        return 4 + INPUTS_PER_CHALLENGE * self.shape.challenges

    @property
    def num_aux(self) -> int:
        return self.header_aux + self.per_challenge * self.shape.challenges

    def challenge_base(self) -> np.ndarray:
        """Row of each challenge's first aux in the full assignment."""
        first = self.num_inputs + self.header_aux
        return first + self.per_challenge * np.arange(self.shape.challenges, dtype=np.int64)


def _parents(layer: int) -> int:
    return DRG_DEGREE if layer == 1 else COLUMNS


@cache
def layout(shape: CircuitShape, cache_dir: str | None = None) -> Layout:
    """Walk one challenge in ``stacked.synthesize_challenge``'s order, adding each gadget's aux count (the
    bit programs are built here, or read from ``cache_dir``)."""
    off = 0

    def take(n: int) -> int:
        nonlocal off
        start, off = off, off + n
        return start

    def por(arities: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(take(level_template(a)[0].n_aux) for a in arities)

    hash_aux = constraint_count(shape.layers)
    data_leaf = take(1)
    node_aux = node_program(cache_dir).n_aux
    tree_d = tuple(take(SHA_LEVEL_HEAD + node_aux) for _ in range(shape.tree_d_depth))
    col_rows, col_hash, col_por = [], [], []
    for _ in range(COLUMNS):
        col_rows.append(take(shape.layers))
        col_hash.append(take(hash_aux))
        col_por.append(por(shape.tree_arities))
    challenge_bits = take(64)
    parent_bits, label = [], []
    for layer in range(1, shape.layers + 1):
        parent_bits.append(tuple(take(FIELD_BITS) for _ in range(_parents(layer))))
        label.append(take(label_program(_parents(layer), layer, cache_dir).n_aux))
    encode = take(1)
    tree_r = por(shape.tree_arities)
    cx_hash = take(hash_aux)
    cx_por = por(shape.tree_arities)
    return Layout(
        shape=shape,
        header_aux=1 + FIELD_BITS + 4 + constraint_count(2),
        per_challenge=off,
        data_leaf=data_leaf,
        tree_d=tree_d,
        col_rows=tuple(col_rows),
        col_hash=tuple(col_hash),
        col_por=tuple(col_por),
        challenge_bits=challenge_bits,
        parent_bits=tuple(parent_bits),
        label=tuple(label),
        encode=encode,
        tree_r=tree_r,
        cx_hash=cx_hash,
        cx_por=cx_por,
    )


# ---------------------------------------------------------------------- writing values


def _le(values: list[int]) -> np.ndarray:
    """ints → uint8[n, 32] little-endian, reduced mod r (as ``ConstraintSystem.alloc`` stores a value)."""
    return np.frombuffer(b"".join((v % R).to_bytes(32, "little") for v in values), np.uint8).reshape(-1, 32)


def _put(out: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """out[rows] = values (uint8[..., 32] LE or uint32[..., 8] canonical limbs)."""
    v = values.view("<u4") if values.dtype == np.uint8 else values
    out[np.asarray(rows, dtype=np.int64).reshape(-1)] = v.reshape(-1, 8)


def _put_bits(out: np.ndarray, starts: np.ndarray, bits: np.ndarray) -> None:
    """Bit vectors ``bits[i]`` (uint8[N, m]) at rows ``starts[i] ..`` as canonical Fr."""
    n, m = bits.shape
    rows = (np.asarray(starts, dtype=np.int64)[:, None] + np.arange(m)).reshape(-1)
    block = np.zeros((n * m, 8), np.uint32)
    block[:, 0] = bits.reshape(-1)
    out[rows] = block


def _put_mont(out: np.ndarray, starts: np.ndarray, mont: np.ndarray) -> None:
    """Montgomery blocks ``mont[i]`` (uint32[N, m, 8]) at rows ``starts[i] ..``, canonical."""
    m = mont.shape[1]
    rows = (np.asarray(starts, dtype=np.int64)[:, None] + np.arange(m)).reshape(-1)
    out[rows] = fr_from_mont(np.ascontiguousarray(mont).reshape(-1, 8))


def _position(lv: PathLevel) -> int:
    """The position the circuit takes from a level's index: its low log2(arity) bits (``auth_path``
    allocates exactly those; a C1 index out of range is not an error here, its bits are what is proven)."""
    assert lv.index is not None
    return lv.index & (lv.arity - 1)


def _index(path: list[PathLevel]) -> int:
    """The node index that ``pack_into_inputs`` makes of a path's index bits (LSB first, level by level)."""
    value, shift = 0, 0
    for lv in path:
        value |= _position(lv) << shift
        shift += lv.arity.bit_length() - 1
    return value


def _mont(values: np.ndarray) -> np.ndarray:
    """uint8[..., 32] canonical LE → uint32[..., 8] Montgomery."""
    lead = values.shape[:-1]
    return fr_to_mont(np.ascontiguousarray(values).view("<u4").reshape(-1, 8)).reshape(*lead, 8)


def _tree_d(
    out: np.ndarray, lay: Layout, base: np.ndarray, w: PartitionWitness, cache_dir: str | None
) -> None:
    """Every tree-D level of every challenge: the node chain with hashlib (the same function the circuit
    computes), then all SHA-256 nodes in one bit-program pass."""
    depth, n = lay.shape.tree_d_depth, lay.shape.challenges
    heads = np.zeros((n, depth, 4, 32), np.uint8)
    for i, ch in enumerate(w.challenges):
        assert ch.data_leaf is not None
        cur = (ch.data_leaf % R).to_bytes(32, "little")
        for h, lv in enumerate(ch.comm_d_path):
            assert lv.siblings is not None
            bit = _position(lv)
            sib = (lv.siblings[0] % R).to_bytes(32, "little")
            left, right = (sib, cur) if bit else (cur, sib)
            heads[i, h, 0, 0] = bit
            heads[i, h, 1:] = np.frombuffer(sib + left + right, np.uint8).reshape(3, 32)
            d = bytearray(hashlib.sha256(left + right).digest())
            d[31] &= 0x3F
            cur = bytes(d)
    starts = base[:, None] + np.asarray(lay.tree_d, dtype=np.int64)[None, :]
    _put(out, starts[..., None] + np.arange(4), heads)
    children = heads[:, :, 2:].reshape(n * depth, 2, 32)
    node_witness(out, (starts + SHA_LEVEL_HEAD).reshape(-1), children, cache_dir)


def assignment(
    shape: CircuitShape, w: PartitionWitness, out: np.ndarray | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> np.ndarray:
    """The full assignment of a partition circuit with witness ``w`` (``stacked.partition_witness``):
    canonical uint32[num_inputs + num_aux, 8], ONE at row 0. ``out`` (C-contiguous, that shape) is
    written in full and returned, e.g. a pinned buffer of the proving loop. ``cache_dir``: where the
    compiled gadget templates are kept (``template_witness.cached_bit_program``)."""
    if cache_dir is not None:
        cache_dir = os.fspath(cache_dir)
    lay = layout(shape, cache_dir)
    n, layers = shape.challenges, shape.layers
    if len(w.challenges) != n:
        raise ValueError(f"{len(w.challenges)} challenges, the shape has {n}")
    total = lay.num_inputs + lay.num_aux
    if out is None:
        out = np.empty((total, 8), np.uint32)
    elif out.shape != (total, 8) or out.dtype != np.uint32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint32[{total}, 8] array")
    assert None not in (w.replica_id, w.comm_d, w.comm_r, w.comm_r_last, w.comm_c)
    rid, comm_d, comm_r = int(w.replica_id), int(w.comm_d), int(w.comm_r)  # type: ignore[arg-type]
    comm_r_last, comm_c = int(w.comm_r_last), int(w.comm_c)  # type: ignore[arg-type]
    chs = w.challenges

    # public inputs, in allocation order
    inputs = [1, rid, comm_d, comm_r]
    for ch in chs:
        assert ch.challenge is not None
        inputs += [_index(ch.comm_d_path)]
        inputs += [_index(c.path) for c in ch.drg_parents + ch.exp_parents]
        inputs += [ch.challenge, _index(ch.comm_r_last_path), _index(ch.comm_c_path)]
    out[: lay.num_inputs] = ints_to_limbs(inputs)

    # header: replica id, its bits, the commitments, Poseidon-2(comm_c, comm_r_last)
    a0 = lay.num_inputs
    rid_le = _le([rid])
    _put(out, np.array([a0]), rid_le)
    _put_bits(out, np.array([a0 + 1]), bits_le(rid_le))
    _put(out, a0 + 256 + np.arange(4), _le([comm_d, comm_r, comm_r_last, comm_c]))
    comm_mont = _mont(_le([comm_c, comm_r_last])).reshape(1, 2, 8)
    _put_mont(out, np.array([a0 + 260]), poseidon_witness_mont(comm_mont))

    base = lay.challenge_base()
    _put(out, base + lay.data_leaf, _le([ch.data_leaf for ch in chs]))  # type: ignore[misc]
    _tree_d(out, lay, base, w, cache_dir)

    # parents' columns: rows (layer 1 first), then hash and path (filled with the other Poseidon work)
    cols = [c for ch in chs for c in ch.drg_parents + ch.exp_parents]
    rows_le = _le([r for c in cols for r in c.rows]).reshape(n, COLUMNS, layers, 32)  # type: ignore[misc]
    col_base = base[:, None] + np.asarray(lay.col_rows, dtype=np.int64)[None, :]
    _put(out, col_base[..., None] + np.arange(layers), rows_le)

    # the challenge's 64 bits, then per layer the parents' bits and create_label
    nodes = np.asarray([ch.challenge for ch in chs], dtype=np.uint64)
    node_bits = ((nodes[:, None] >> np.arange(64, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.uint8)
    _put_bits(out, base + lay.challenge_bits, node_bits)
    rid_bytes = rid_le[0].tobytes()
    labels = np.zeros((n, layers, 32), np.uint8)
    for layer in range(1, layers + 1):
        parents = rows_le[:, :DRG_DEGREE, layer - 1]
        if layer > 1:
            parents = np.concatenate([parents, rows_le[:, DRG_DEGREE:, layer - 2]], axis=1)
        parents = np.ascontiguousarray(parents)
        p = parents.shape[1]
        starts = base[:, None] + np.asarray(lay.parent_bits[layer - 1], dtype=np.int64)[None, :]
        _put_bits(out, starts.reshape(-1), bits_le(parents.reshape(n * p, 32)))
        at = base + lay.label[layer - 1]
        labels[:, layer - 1] = write_labels(out, at, rid_bytes, layer, nodes, parents, cache_dir)

    # encode: the last label + the data leaf
    last = [int.from_bytes(labels[i, -1].tobytes(), "little") for i in range(n)]
    encoded = _le([(x + int(ch.data_leaf)) % R for x, ch in zip(last, chs, strict=True)])  # type: ignore[arg-type]
    _put(out, base + lay.encode, encoded)

    # Poseidon: the 14 parents' column hashes and c_x's (the computed labels), then all 16 paths
    hashes = poseidon_witness_mont(
        _mont(np.concatenate([rows_le, labels[:, None]], axis=1).reshape(n * (COLUMNS + 1), layers, 32))
    ).reshape(n, COLUMNS + 1, -1, 8)
    hash_at = np.asarray([*lay.col_hash, lay.cx_hash], dtype=np.int64)
    _put_mont(out, (base[:, None] + hash_at[None, :]).reshape(-1), hashes.reshape(n * (COLUMNS + 1), -1, 8))
    leaves = np.concatenate(
        [hashes[:, :COLUMNS, -1], _mont(encoded)[:, None], hashes[:, COLUMNS:, -1]], axis=1
    ).reshape(-1, 8)
    paths = [[*(c.path for c in ch.drg_parents + ch.exp_parents), ch.comm_r_last_path, ch.comm_c_path]
             for ch in chs]
    flat = [p for per in paths for p in per]
    levels = len(shape.tree_arities)
    sibs_le = [_le([s for p in flat for s in (p[h].siblings or [])]).reshape(len(flat), a - 1, 32)
               for h, a in enumerate(shape.tree_arities)]
    idx = np.asarray([[_position(lv) for lv in p] for p in flat], dtype=np.int64).reshape(len(flat), levels)
    per_level, _ = paths_witness(leaves, [_mont(s) for s in sibs_le], idx)
    por_at = np.asarray([*lay.col_por, lay.tree_r, lay.cx_por], dtype=np.int64)  # [16, levels]
    for h in range(levels):
        _put_mont(out, (base[:, None] + por_at[None, :, h]).reshape(-1), per_level[h])
    return out


def partition_assignment(
    c1: object, k: int, out: np.ndarray | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> np.ndarray:
    """Partition ``k`` of a C1 (``porep.c1.SealCommitPhase1Output``): see ``assignment``."""
    shape, w = partition_witness(c1, k)
    return assignment(shape, w, out=out, cache_dir=cache_dir)
