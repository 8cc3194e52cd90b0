"""SHA-256 for the vectorised witness: a numpy SHA-256 over many messages that records every ``addmany``'s
full integer sum in bellperson's order (the free aux of a SHA template: result bits, carries included), and
the tree-D node (``hash_multi_leaf``: two children's ``to_bits_le``, SHA-256 of their 64 bytes, the digest's
first 254 bits packed) as a compiled bit template, for all nodes of a partition at once.

Order of the additions (circuit.md §4.2): 48 schedule additions, then per round the e- and a-additions, then
the 8 final ones; an addition whose operands are all constants folds and allocates nothing.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from functools import cache

import numpy as np
from numba import njit

from gpu.arith.cpupool import parallel_for
from gpu.arith.cudashim import cache_enabled
from porep.circuit.por import sha256_node
from porep.circuit.sha256 import IV, ROUND_CONSTANTS
from porep.circuit.template import record
from porep.circuit.template_witness import BitProgram, bit_program, cached_bit_program, program, solve_bits

MASK = np.uint64(0xFFFFFFFF)
FIELD_BITS = 255


Word = tuple[np.ndarray, bool]
"""A 32-bit word of N messages (uint64[N]) and whether it is a constant in the circuit."""


def _rotr(x: Word, n: int) -> Word:
    return ((x[0] >> np.uint64(n)) | (x[0] << np.uint64(32 - n))) & MASK, x[1]


def _shr(x: Word, n: int) -> Word:
    return x[0] >> np.uint64(n), x[1]


def _xor(*ws: Word) -> Word:
    v = ws[0][0]
    for w in ws[1:]:
        v = v ^ w[0]
    return v, all(w[1] for w in ws)


Sum = tuple[np.ndarray, int, bool]
"""An addition of N messages: full sums (uint64[N]), operand count, whether its bits are allocated."""


def _sum(ops: list[Word], sums: list[Sum]) -> Word:
    """addmany: the full sum's bits are allocated unless every operand is a constant (then it folds)."""
    total = ops[0][0].copy()
    for o in ops[1:]:
        total += o[0]
    const = all(o[1] for o in ops)
    sums.append((total, len(ops), not const))
    return total & MASK, const


def compression_sums(state: list[Word], block: list[Word], sums: list[Sum]) -> list[Word]:
    """One compression of 16 message words from ``state`` (8 words), with bellperson's deferred additions
    and constant folding; appends every addition (182: 48 + 63 + 63 + 8) to ``sums``."""
    w = list(block)
    for i in range(16, 64):
        x, y = w[i - 15], w[i - 2]
        s0 = _xor(_rotr(x, 7), _rotr(x, 18), _shr(x, 3))
        s1 = _xor(_rotr(y, 17), _rotr(y, 19), _shr(y, 10))
        w.append(_sum([w[i - 16], s0, w[i - 7], s1], sums))
    a: Word | list[Word] = state[0]
    b, c, d = state[1], state[2], state[3]
    e: Word | list[Word] = state[4]
    f, g, h = state[5], state[6], state[7]
    for i in range(64):
        new_e = e if isinstance(e, tuple) else _sum(e, sums)
        s1 = _xor(_rotr(new_e, 6), _rotr(new_e, 11), _rotr(new_e, 25))
        ch = (new_e[0] & f[0]) ^ (~new_e[0] & MASK & g[0]), new_e[1] and f[1] and g[1]
        k = np.full_like(new_e[0], ROUND_CONSTANTS[i]), True
        temp1 = [h, s1, ch, k, w[i]]
        new_a = a if isinstance(a, tuple) else _sum(a, sums)
        s0 = _xor(_rotr(new_a, 2), _rotr(new_a, 13), _rotr(new_a, 22))
        maj = (new_a[0] & b[0]) ^ (new_a[0] & c[0]) ^ (b[0] & c[0]), new_a[1] and b[1] and c[1]
        h, g, f = g, f, new_e
        e = [*temp1, d]
        d, c, b = c, b, new_a
        a = [*temp1, s0, maj]
    assert isinstance(a, list) and isinstance(e, list)
    return [
        _sum([*a, state[0]], sums),
        _sum([state[1], b], sums),
        _sum([state[2], c], sums),
        _sum([state[3], d], sums),
        _sum([*e, state[4]], sums),
        _sum([state[5], f], sums),
        _sum([state[6], g], sums),
        _sum([state[7], h], sums),
    ]


def _padded_words(messages: np.ndarray) -> np.ndarray:
    n, length = messages.shape
    pad = bytearray(b"\x80") + bytes((-length - 9) % 64) + (8 * length).to_bytes(8, "big")
    tail = np.broadcast_to(np.frombuffer(bytes(pad), np.uint8), (n, len(pad)))
    msg = np.concatenate([messages, tail], axis=1)
    return msg.reshape(n, -1, 4).view(">u4")[..., 0].astype(np.uint64)


def sha256_addition_bits(
    messages: np.ndarray, constant_words: AbstractSet[int] = frozenset()
) -> tuple[np.ndarray, np.ndarray]:
    """SHA-256 of N equal-length messages (uint8[N, L]): the digests (uint8[N, 32]) and every allocated
    addition's result bits, in allocation order (uint8[N, Σ widths]). Message words are taken as allocated
    except those listed in ``constant_words``; padding words are constants (an addition of constants only
    folds and allocates nothing, e.g. the schedule of a padding-only block). The reference of the Numba
    kernel ``addition_bits`` (numpy, one vector operation per word operation: slow for few messages)."""
    n, length = messages.shape
    if length % 4:
        raise ValueError("the message must be whole 32-bit words")
    words = _padded_words(messages)
    const = [j >= length // 4 or j in constant_words for j in range(words.shape[1])]
    state: list[Word] = [(np.full(n, v, dtype=np.uint64), True) for v in IV]
    sums: list[Sum] = []
    for blk in range(words.shape[1] // 16):
        block = [(words[:, j].copy(), const[j]) for j in range(16 * blk, 16 * blk + 16)]
        state = compression_sums(state, block, sums)
    parts = []
    for total, ops, allocated in sums:
        if not allocated:
            continue
        width = (ops * 0xFFFFFFFF).bit_length()
        shifts = np.arange(width, dtype=np.uint64)[None, :]
        parts.append(((total[:, None] >> shifts) & np.uint64(1)).astype(np.uint8))
    digest = np.stack([x[0] for x in state], axis=1).astype(">u4").view(np.uint8).reshape(n, 32)
    bits = np.concatenate(parts, axis=1) if parts else np.zeros((n, 0), np.uint8)
    return digest, bits



# ---------------------------------------------------------------------- the same in one Numba pass

PER_BLOCK = 48 + 63 + 63 + 8
_M32 = np.uint64(0xFFFFFFFF)
_K = np.asarray(ROUND_CONSTANTS, dtype=np.uint64)
_IV = np.asarray(IV, dtype=np.uint64)
_U = tuple(np.uint64(i) for i in range(64))
_WIDTH_FINAL = np.asarray([35, 33, 33, 33, 35, 33, 33, 33], dtype=np.int64)


@njit(nogil=True, cache=cache_enabled())
def _rotr32(x: np.uint64, n: np.uint64) -> np.uint64:
    return ((x >> n) | (x << (_U[32] - n))) & _M32


@njit(nogil=True, cache=cache_enabled())
def _emit(free: np.ndarray, i: int, pos: int, total: np.uint64, width: int) -> int:
    for j in range(width):
        free[i, pos + j] = (total >> _U[j]) & _U[1]
    return pos + width


@njit(nogil=True, cache=cache_enabled())
def _sums_rows(
    lo: int, hi: int, words: np.ndarray, alloc: np.ndarray, free: np.ndarray, digest: np.ndarray
) -> None:
    nblocks = words.shape[1] // 16
    w = np.empty(64, np.uint64)
    st = np.empty(8, np.uint64)
    for i in range(lo, hi):
        for j in range(8):
            st[j] = _IV[j]
        pos = 0
        q = 0
        for blk in range(nblocks):
            for t in range(16):
                w[t] = words[i, blk * 16 + t]
            for t in range(16, 64):
                x = w[t - 15]
                y = w[t - 2]
                s0 = _rotr32(x, _U[7]) ^ _rotr32(x, _U[18]) ^ (x >> _U[3])
                s1 = _rotr32(y, _U[17]) ^ _rotr32(y, _U[19]) ^ (y >> _U[10])
                total = w[t - 16] + s0 + w[t - 7] + s1
                if alloc[q]:
                    pos = _emit(free, i, pos, total, 34)
                q += 1
                w[t] = total & _M32
            a, b, c, d = st[0], st[1], st[2], st[3]
            e, f, g, h = st[4], st[5], st[6], st[7]
            e_tot = a_tot = _U[0]
            for r in range(64):
                if r > 0:  # the deferred e- and a-additions of the previous round, in that order
                    if alloc[q]:
                        pos = _emit(free, i, pos, e_tot, 35)
                    if alloc[q + 1]:
                        pos = _emit(free, i, pos, a_tot, 35)
                    q += 2
                    e = e_tot & _M32
                    a = a_tot & _M32
                big_s1 = _rotr32(e, _U[6]) ^ _rotr32(e, _U[11]) ^ _rotr32(e, _U[25])
                ch = (e & f) ^ ((~e & _M32) & g)
                temp1 = h + big_s1 + ch + _K[r] + w[r]
                big_s0 = _rotr32(a, _U[2]) ^ _rotr32(a, _U[13]) ^ _rotr32(a, _U[22])
                maj = (a & b) ^ (a & c) ^ (b & c)
                h, g, f = g, f, e
                e_tot = temp1 + d
                d, c, b = c, b, a
                a_tot = temp1 + big_s0 + maj
            fin = (
                a_tot + st[0], st[1] + b, st[2] + c, st[3] + d, e_tot + st[4], st[5] + f, st[6] + g, st[7] + h
            )
            for j in range(8):
                if alloc[q]:
                    pos = _emit(free, i, pos, fin[j], _WIDTH_FINAL[j])
                q += 1
                st[j] = fin[j] & _M32
        for j in range(8):
            digest[i, j] = st[j]


@cache
def _plan(length: int, constant_words: frozenset[int]) -> tuple[np.ndarray, int]:
    """Which additions of a ``length``-byte message are allocated (uint8 per addition, 182 per block) and
    the number of result bits: the numpy reference run once on one message."""
    sums: list[Sum] = []
    words = _padded_words(np.zeros((1, length), np.uint8))
    const = [j >= length // 4 or j in constant_words for j in range(words.shape[1])]
    state: list[Word] = [(np.full(1, v, dtype=np.uint64), True) for v in IV]
    for blk in range(words.shape[1] // 16):
        block = [(words[:, j].copy(), const[j]) for j in range(16 * blk, 16 * blk + 16)]
        state = compression_sums(state, block, sums)
    alloc = np.asarray([s[2] for s in sums], dtype=np.uint8)
    return alloc, sum((s[1] * 0xFFFFFFFF).bit_length() for s in sums if s[2])


def addition_bits(
    messages: np.ndarray, constant_words: AbstractSet[int] = frozenset()
) -> tuple[np.ndarray, np.ndarray]:
    """``sha256_addition_bits`` in one Numba pass over the messages (threads over messages)."""
    n, length = messages.shape
    if length % 4:
        raise ValueError("the message must be whole 32-bit words")
    alloc, nbits = _plan(length, frozenset(constant_words))
    words = np.ascontiguousarray(_padded_words(messages))
    free = np.empty((n, nbits), np.uint8)
    digest = np.empty((n, 8), np.uint64)
    parallel_for(_sums_rows, n, words, alloc, free, digest, min_chunk=1)
    return digest.astype(">u4").view(np.uint8).reshape(n, 32), free


def bits_le(values: np.ndarray, nbits: int = FIELD_BITS) -> np.ndarray:
    """uint8[N, 32] little-endian field elements → uint8[N, nbits]: their first nbits bits, LSB first
    (``to_bits_le``'s allocated bits)."""
    return np.unpackbits(np.ascontiguousarray(values, dtype=np.uint8), axis=1, bitorder="little")[:, :nbits]


def truncate254(digest: np.ndarray) -> np.ndarray:
    """uint8[N, 32] digests → the packed value of their first 254 bits in storage-proofs' order (the digest
    read little-endian, top two bits cleared), uint8[N, 32] LE."""
    d = np.array(digest, dtype=np.uint8)
    d[:, 31] &= 0x3F
    return d


@cache
def node_program(cache_dir: str | None = None) -> BitProgram:
    """The tree-D node's bit program (45,379 rows / 45,331 aux over its two children)."""

    def build() -> BitProgram:
        return bit_program(program(record(lambda cs, ins: sha256_node(cs, ins), 2)), inputs_read=False)

    return cached_bit_program("tree_d_node", build, cache_dir)


def node_witness(
    out: np.ndarray, rows: np.ndarray, children: np.ndarray, cache_dir: str | None = None
) -> np.ndarray:
    """Write N tree-D nodes' aux (``out[rows[i] + j]``, canonical Fr rows) from their children
    (uint8[N, 2, 32] LE): the 510 child bits, every SHA-256 aux and the packed hash. Returns the hashes
    (uint8[N, 32] LE), which are also the last aux."""
    n = children.shape[0]
    bp = node_program(cache_dir)
    msg = np.ascontiguousarray(children, dtype=np.uint8).reshape(n, 64)
    digest, sums = addition_bits(msg)
    free = np.concatenate([bits_le(children[:, 0]), bits_le(children[:, 1]), sums], axis=1)
    solve_bits(bp, np.zeros((n, 2), np.uint8), free, out, rows)
    node = truncate254(digest)
    out[np.asarray(rows, dtype=np.int64) + bp.n_aux - 1] = node.view("<u4")
    return node
