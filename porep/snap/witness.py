"""The full assignment of one Snap partition, vectorised: all SHA-256 nodes of tree D (apex tree, partition
path, every challenge's path to its apex leaf) in one bit-program pass, all Poseidon hashes of a kind together
(phi with the digests, then the rhos; every tree-R level of the old and new paths), the encoding arithmetic
over arrays, written straight into the canonical ``(num_inputs + num_aux, 8)`` uint32 vector, ONE first: the
same array as ``porep.snap.circuit.synthesize_request(snap, k, record=False).witness_array()``.

Why a layout instead of a synthesis: as for PoRep (``porep.circuit.witness``), every challenge is the same
gadget sequence over its own aux, so each gadget instance's aux offset follows from the gadgets' aux counts,
and challenge i's aux start at ``header + i · per_challenge``. The values are computed forward the way the
circuit computes them (challenges from the digests, not from the proofs' indices), so a mutated request
gives the same vector as the direct synthesis: its wrong rows fail the R1CS; what Rust asserts before or
during synthesis raises the same ``UpdateWitnessError``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import cache

import numpy as np

from gpu.arith.fields import fr_add_batch, fr_encode, fr_from_mont, fr_mul_batch
from porep.circuit.cs import R, ints_to_limbs
from porep.circuit.por_poseidon import insert_hash, insert_program
from porep.circuit.poseidon import constraint_count
from porep.circuit.poseidon_witness import poseidon_witness_mont
from porep.circuit.sha256_witness import FIELD_BITS, bits_le, node_program, node_witness
from porep.circuit.witness import _le, _mont, _put, _put_bits, _put_mont
from porep.snap.circuit import (
    PartitionWitness,
    UpdateWitnessError,
    _constants,
    _native_checks,
    partition_witness,
    tree_r_arities,
)
from porep.snap.params import H_SELECT_BITS, UpdateConstants, hs
from porep.snap.randomness import GEN_RANDOMNESS_TAG

__all__ = ["Layout", "assignment", "layout", "update_assignment"]

NUM_INPUTS = 5  # ONE, k_and_h_select, comm_r_old, comm_d_new, comm_r_new
POSEIDON_2 = constraint_count(2)
DIGEST_AUX = 1 + POSEIDON_2 + FIELD_BITS  # digest_index, its Poseidon, the digest's bits
HIGH_AUX = 2 * H_SELECT_BITS + 1  # per h: c_high, c_high_or_zero; then the selected one
SHA_LEVEL_HEAD = 2  # a tree-D level's two picks (insert_2), before the node's aux


@dataclass(frozen=True)
class Layout:
    """Aux offsets of a partition: the header's (from aux 0) and, inside one challenge, each gadget's
    (from the challenge's first aux). Per-level tuples hold each level's first aux."""

    consts: UpdateConstants
    node_aux: int
    # header
    bits: int
    partition: int
    commitments: int
    phi: int
    private: int  # comm_c, root_r_old, root_r_new, then the apex leaves, then the partition path
    comm_r_calc: tuple[int, int]
    apex_nodes: int
    partition_por: tuple[int, ...]
    digests: int
    header_aux: int
    # one challenge
    rho: int
    leaves: int  # leaf_r_old, leaf_d_new, then prod, leaf_r_new
    r_old_sibs: int
    r_old_por: tuple[int, ...]
    r_new_sibs: int
    r_new_por: tuple[int, ...]
    select: int
    d_sibs: int
    d_por: tuple[int, ...]
    per_challenge: int

    @property
    def num_aux(self) -> int:
        return self.header_aux + self.per_challenge * self.consts.challenges

    @property
    def num_vars(self) -> int:
        return NUM_INPUTS + self.num_aux

    def challenge_base(self) -> np.ndarray:
        """Row of each challenge's first aux in the full assignment."""
        first = NUM_INPUTS + self.header_aux
        return first + self.per_challenge * np.arange(self.consts.challenges, dtype=np.int64)


def _level_aux(arity: int) -> int:
    """insert + Poseidon of one tree-R level (its siblings are allocated before the path)."""
    return insert_program(arity)[0].template.n_aux + constraint_count(arity)


@cache
def layout(consts: UpdateConstants, cache_dir: str | None = None) -> Layout:
    """Walk the header and one challenge in ``porep.snap.circuit``'s allocation order, adding each gadget's
    aux count (the tree-D node's bit program is built here, or read from ``cache_dir``)."""
    off = 0

    def take(n: int) -> int:
        nonlocal off
        start, off = off, off + n
        return start

    node_aux = node_program(cache_dir).n_aux
    pbl, a = consts.partition_bits, consts.apex_leaves
    take(1)  # k_and_h_select
    bits = take(pbl + H_SELECT_BITS)
    partition = take(1)
    commitments = take(3)
    phi = take(POSEIDON_2)
    private = take(3 + a + pbl)
    comm_r_calc = (take(POSEIDON_2), take(POSEIDON_2))
    apex_nodes = take((a - 1) * node_aux)
    partition_por = tuple(take(SHA_LEVEL_HEAD + node_aux) for _ in range(pbl))
    digests = take(consts.digests_per_partition * DIGEST_AUX)
    header_aux = off

    off = 0
    take(HIGH_AUX)
    rho = take(POSEIDON_2)
    leaves = take(4)
    arities = tree_r_arities(consts)
    r_old_sibs = take(sum(x - 1 for x in arities))
    r_old_por = tuple(take(_level_aux(x)) for x in arities)
    r_new_sibs = take(sum(x - 1 for x in arities))
    r_new_por = tuple(take(_level_aux(x)) for x in arities)
    select = take(a - 1)
    s = consts.apex_height
    d_sibs = take(s)
    d_por = tuple(take(SHA_LEVEL_HEAD + node_aux) for _ in range(s))
    return Layout(
        consts, node_aux, bits, partition, commitments, phi, private, comm_r_calc, apex_nodes, partition_por,
        digests, header_aux, rho, leaves, r_old_sibs, r_old_por, r_new_sibs, r_new_por, select, d_sibs, d_por,
        off,
    )


# ---------------------------------------------------------------------- pieces


def _sha_node(left: bytes, right: bytes) -> bytes:
    """The tree-D node (sha254): SHA-256 of the two 32-byte LE children, top two bits cleared."""
    d = bytearray(hashlib.sha256(left + right).digest())
    d[31] &= 0x3F
    return bytes(d)


def _b(value: int) -> bytes:
    return (value % R).to_bytes(32, "little")


def _ints(mont: np.ndarray) -> list[int]:
    """Montgomery rows → canonical ints."""
    raw = fr_from_mont(np.ascontiguousarray(mont).reshape(-1, 8))
    return [int.from_bytes(r.tobytes(), "little") for r in raw.astype("<u4")]


class _Nodes:
    """Every SHA-256 node of the partition, gathered while the chains are walked natively (hashlib), so
    that one ``node_witness`` pass writes all their aux."""

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.children: list[bytes] = []

    def add(self, row: int, left: bytes, right: bytes) -> bytes:
        self.rows.append(row)
        self.children.append(left + right)
        return _sha_node(left, right)

    def write(self, out: np.ndarray, cache_dir: str | None) -> None:
        if not self.rows:
            return
        ch = np.frombuffer(b"".join(self.children), np.uint8).reshape(-1, 2, 32)
        node_witness(out, np.asarray(self.rows, dtype=np.int64), ch, cache_dir)


def _insert2_path(
    out_heads: list[tuple[int, bytes, bytes]], nodes: _Nodes, at: list[int], leaf: bytes, sibs: list[bytes],
    bits: list[int],
) -> bytes:
    """A binary sha254 path (``por_no_challenge_input`` over insert_2): per level the two picks (left,
    right) at ``at[h]`` and the node after them. Returns the computed root."""
    cur = leaf
    for h, (sib, bit) in enumerate(zip(sibs, bits, strict=True)):
        left, right = (sib, cur) if bit else (cur, sib)
        out_heads.append((at[h], left, right))
        cur = nodes.add(at[h] + SHA_LEVEL_HEAD, left, right)
    return cur


# ---------------------------------------------------------------------- the assignment


def assignment(
    consts: UpdateConstants, w: PartitionWitness, out: np.ndarray | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> np.ndarray:
    """The full assignment of the update circuit with witness ``w`` (``porep.snap.circuit.proof_witness``):
    canonical uint32[num_inputs + num_aux, 8], ONE at row 0, written into ``out`` when given (C-contiguous,
    that shape). Raises ``UpdateWitnessError`` where the direct synthesis does (Rust's assertions)."""
    if len(w.challenges) != consts.challenges:
        raise UpdateWitnessError(f"{len(w.challenges)} challenge proofs, the size has {consts.challenges}")
    _native_checks(consts, w)
    cdir = os.fspath(cache_dir) if cache_dir is not None else None
    lay = layout(consts, cdir)
    total = lay.num_vars
    if out is None:
        out = np.empty((total, 8), np.uint32)
    elif out.shape != (total, 8) or out.dtype != np.uint32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous uint32[{total}, 8] array")
    fields = (
        w.k_and_h_select, w.comm_r_old, w.comm_d_new, w.comm_r_new, w.comm_c, w.root_r_old, w.root_r_new
    )
    if any(x is None for x in fields) or any(x is None for x in w.apex_leafs):
        raise UpdateWitnessError("a witness without values")
    khs, comm_r_old, comm_d_new, comm_r_new, comm_c, root_r_old, root_r_new = (int(x) for x in fields)  # type: ignore[arg-type]
    apex = [int(x) for x in w.apex_leafs]  # type: ignore[arg-type]
    n, pbl, cbl, rb = consts.challenges, consts.partition_bits, consts.challenge_bits, consts.random_bits
    s, abl = consts.apex_height, consts.apex_bits
    dpp, per = consts.digests_per_partition, consts.challenges_per_digest
    k, hsel = khs & ((1 << pbl) - 1), khs >> pbl
    part_path = [int(x) for x in w.challenges[0].path_d_new[cbl - pbl :]]  # type: ignore[arg-type]

    # inputs, then the header's plain values
    out[:NUM_INPUTS] = ints_to_limbs([1, khs, comm_r_old, comm_d_new, comm_r_new])
    a0 = NUM_INPUTS
    _put(out, np.array([a0]), _le([khs]))
    khs_bits = np.asarray([[(khs >> i) & 1 for i in range(pbl + H_SELECT_BITS)]], np.uint8)
    _put_bits(out, np.array([a0 + lay.bits]), khs_bits)
    _put(out, a0 + lay.partition + np.arange(4), _le([k, comm_r_old, comm_d_new, comm_r_new]))
    private = [comm_c, root_r_old, root_r_new, *apex, *part_path]
    _put(out, a0 + lay.private + np.arange(len(private)), _le(private))

    # Poseidon (SnapDeals tag): phi and the partition's digests together; comm_r with the MerkleTree tag
    di = [k * dpp + j for j in range(dpp)]
    pairs = [comm_d_new, comm_r_old] + [x for j in di for x in (comm_r_new, j)]
    pre = _mont(_le(pairs)).reshape(1 + dpp, 2, 8)
    snap = poseidon_witness_mont(pre, domain_tag=GEN_RANDOMNESS_TAG)
    _put_mont(out, np.array([a0 + lay.phi]), snap[:1])
    dig_at = a0 + lay.digests + DIGEST_AUX * np.arange(dpp, dtype=np.int64)
    _put(out, dig_at, _le(di))
    _put_mont(out, dig_at + 1, snap[1:])
    digests_le = fr_from_mont(np.ascontiguousarray(snap[1:, -1])).astype("<u4").view(np.uint8)
    _put_bits(out, dig_at + 1 + POSEIDON_2, bits_le(digests_le))
    digests = [int.from_bytes(d.tobytes(), "little") for d in digests_le]
    calc = poseidon_witness_mont(_mont(_le([comm_c, root_r_old, comm_c, root_r_new])).reshape(2, 2, 8))
    _put_mont(out, a0 + np.asarray(lay.comm_r_calc, dtype=np.int64), calc)

    # tree D: the apex tree, the partition path; nodes gathered for one bit-program pass at the end
    nodes = _Nodes()
    heads: list[tuple[int, bytes, bytes]] = []
    row = [_b(x) for x in apex]
    at = a0 + lay.apex_nodes
    while len(row) > 1:
        nxt = []
        for i in range(0, len(row), 2):
            nxt.append(nodes.add(at, row[i], row[i + 1]))
            at += lay.node_aux
        row = nxt
    _insert2_path(heads, nodes, [a0 + x for x in lay.partition_por], row[0], [_b(x) for x in part_path],
                  [(k >> h) & 1 for h in range(pbl)])

    # the challenges: index from the digests (the circuit's, not the proofs' indices), high bits, rho
    base = lay.challenge_base()
    mask = (1 << rb) - 1
    rand = [(digests[i // per] >> ((i % per) * rb)) & mask for i in range(n)]
    chal = np.asarray([x | (k << rb) for x in rand], np.int64)
    high = np.zeros((n, HIGH_AUX), np.int64)
    for j, h in enumerate(hs(consts.nodes)):
        high[:, 2 * j] = chal >> (cbl - h)
        high[:, 2 * j + 1] = high[:, 2 * j] * ((hsel >> j) & 1)
    high[:, -1] = high[:, 1:-1:2].sum(axis=1)
    block = np.zeros((n, HIGH_AUX, 8), np.uint32)
    block[..., 0] = high  # every value < 2^31 (h <= 12 bits)
    _put(out, base[:, None] + np.arange(HIGH_AUX), block)
    phi_m = snap[0, -1]
    sel_m = fr_encode([int(x) for x in high[:, -1]])
    rho = poseidon_witness_mont(
        np.stack([np.broadcast_to(phi_m, (n, 8)), sel_m], axis=1), domain_tag=GEN_RANDOMNESS_TAG
    )
    _put_mont(out, base + lay.rho, rho)

    # encoding: leaf_r_new = leaf_r_old + leaf_d_new · rho (Rust asserts it equals the proof's)
    chs = w.challenges
    leaf_old = _mont(_le([int(c.leaf_r_old) for c in chs]))  # type: ignore[arg-type]
    leaf_d = _mont(_le([int(c.leaf_d_new) for c in chs]))  # type: ignore[arg-type]
    prod = fr_mul_batch(leaf_d, np.ascontiguousarray(rho[:, -1]))
    leaf_new = fr_add_batch(leaf_old, prod)
    enc = np.stack([leaf_old, leaf_d, prod, leaf_new], axis=1)
    _put_mont(out, base + lay.leaves, enc)
    given = [c.leaf_r_new for c in chs]
    for i, (got, want) in enumerate(zip(_ints(leaf_new), given, strict=True)):
        if want is not None and got != want % R:
            raise UpdateWitnessError(f"leaf_r_new is not leaf_r_old + leaf_d_new · rho (challenge {i})")

    # tree R: the old and new paths of every challenge, level by level
    arities = tree_r_arities(consts)
    bit_m = fr_encode([0, 1])
    for which, sibs_at, por_at, leaf in (
        ("path_r_old", lay.r_old_sibs, lay.r_old_por, leaf_old),
        ("path_r_new", lay.r_new_sibs, lay.r_new_por, leaf_new),
    ):
        paths = [getattr(c, which) for c in chs]
        flat = [int(x) for p in paths for lvl in p for x in lvl]
        sib_m = _mont(_le(flat)).reshape(n, -1, 8)
        _put_mont(out, base + sibs_at, sib_m)
        cur, pos, first = leaf.reshape(n, 1, 8), 0, 0
        for h, a in enumerate(arities):
            nb = a.bit_length() - 1
            bits = bit_m[(chal[:, None] >> (pos + np.arange(nb))[None, :]) & 1]
            picks, hashed = insert_hash(cur, bits, np.ascontiguousarray(sib_m[:, first : first + a - 1]))
            _put_mont(out, base + por_at[h], np.concatenate([picks, hashed], axis=1))
            cur = np.ascontiguousarray(hashed[:, -1:])
            pos, first = pos + nb, first + a - 1

    # apex-leaf select (most significant bit first), then each challenge's tree-D path up to it
    apex_le = _le(apex)
    picks_sel = []
    state = np.broadcast_to(apex_le, (n, len(apex), 32))
    idx = (chal >> s) & ((1 << abl) - 1)
    for j in reversed(range(abl)):
        half = state.shape[1] // 2
        bit = ((idx >> j) & 1).astype(bool)[:, None, None]
        state = np.where(bit, state[:, half:], state[:, :half])
        picks_sel.append(state)
    if picks_sel:
        _put(out, base[:, None] + lay.select + np.arange(len(apex) - 1), np.concatenate(picks_sel, axis=1))
    d_sibs = [[int(x) for x in c.path_d_new[:s]] for c in chs]  # type: ignore[arg-type]
    if s:
        d_le = _le([x for p in d_sibs for x in p]).reshape(n, s, 32)
        _put(out, base[:, None] + lay.d_sibs + np.arange(s), d_le)
    for i, c in enumerate(chs):
        at_d = [int(base[i]) + x for x in lay.d_por]
        leaf = _b(int(c.leaf_d_new))  # type: ignore[arg-type]
        bits_d = [(int(chal[i]) >> h) & 1 for h in range(s)]
        _insert2_path(heads, nodes, at_d, leaf, [_b(x) for x in d_sibs[i]], bits_d)

    if heads:
        rows = np.asarray([r for r, _, _ in heads], dtype=np.int64)
        lr = np.frombuffer(b"".join(x + y for _, x, y in heads), np.uint8).reshape(-1, 2, 32)
        _put(out, rows[:, None] + np.arange(2), lr)
    nodes.write(out, cdir)
    return out


def update_assignment(
    snap: object, k: int, out: np.ndarray | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> np.ndarray:
    """Partition ``k`` of a Snap request (``market.proofdata.Snap``): see ``assignment``."""
    consts, w = partition_witness(snap, k)  # type: ignore[arg-type]
    return assignment(_constants(consts), w, out=out, cache_dir=cache_dir)
