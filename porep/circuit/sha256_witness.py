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

from porep.circuit.por import sha256_node
from porep.circuit.sha256 import IV, ROUND_CONSTANTS
from porep.circuit.template import record
from porep.circuit.template_witness import BitProgram, bit_program, program, solve_bits

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


def _sum(ops: list[Word], sums: list[tuple[np.ndarray, int]]) -> Word:
    """addmany: the full sum's bits are allocated unless every operand is a constant (then it folds)."""
    total = ops[0][0].copy()
    for o in ops[1:]:
        total += o[0]
    const = all(o[1] for o in ops)
    if not const:
        sums.append((total, len(ops)))
    return total & MASK, const


def compression_sums(state: list[Word], block: list[Word], sums: list[tuple[np.ndarray, int]]) -> list[Word]:
    """One compression of 16 message words from ``state`` (8 words), with bellperson's deferred additions
    and constant folding; appends (full sum, operand count) per allocated addition to ``sums``."""
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


def sha256_addition_bits(
    messages: np.ndarray, constant_words: AbstractSet[int] = frozenset()
) -> tuple[np.ndarray, np.ndarray]:
    """SHA-256 of N equal-length messages (uint8[N, L]): the digests (uint8[N, 32]) and every allocated
    addition's result bits, in allocation order (uint8[N, Σ widths]). Message words are taken as allocated
    except those listed in ``constant_words``; padding words are constants (an addition of constants only
    folds and allocates nothing, e.g. the schedule of a padding-only block)."""
    n, length = messages.shape
    if length % 4:
        raise ValueError("the message must be whole 32-bit words")
    pad = bytearray(b"\x80") + bytes((-length - 9) % 64) + (8 * length).to_bytes(8, "big")
    tail = np.broadcast_to(np.frombuffer(bytes(pad), np.uint8), (n, len(pad)))
    msg = np.concatenate([messages, tail], axis=1)
    words = msg.reshape(n, -1, 4).view(">u4")[..., 0].astype(np.uint64)
    const = [j >= length // 4 or j in constant_words for j in range(words.shape[1])]
    state: list[Word] = [(np.full(n, v, dtype=np.uint64), True) for v in IV]
    sums: list[tuple[np.ndarray, int]] = []
    for blk in range(words.shape[1] // 16):
        block = [(words[:, j].copy(), const[j]) for j in range(16 * blk, 16 * blk + 16)]
        state = compression_sums(state, block, sums)
    parts = []
    for total, ops in sums:
        width = (ops * 0xFFFFFFFF).bit_length()
        shifts = np.arange(width, dtype=np.uint64)[None, :]
        parts.append(((total[:, None] >> shifts) & np.uint64(1)).astype(np.uint8))
    digest = np.stack([x[0] for x in state], axis=1).astype(">u4").view(np.uint8).reshape(n, 32)
    bits = np.concatenate(parts, axis=1) if parts else np.zeros((n, 0), np.uint8)
    return digest, bits



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
def node_program() -> BitProgram:
    """The tree-D node's bit program (45,379 rows / 45,331 aux over its two children)."""
    t = record(lambda cs, ins: sha256_node(cs, ins), 2)
    return bit_program(program(t), inputs_read=False)


def node_witness(out: np.ndarray, rows: np.ndarray, children: np.ndarray) -> np.ndarray:
    """Write N tree-D nodes' aux (``out[rows[i] + j]``, canonical Fr rows) from their children
    (uint8[N, 2, 32] LE): the 510 child bits, every SHA-256 aux and the packed hash. Returns the hashes
    (uint8[N, 32] LE), which are also the last aux."""
    n = children.shape[0]
    bp = node_program()
    msg = np.ascontiguousarray(children, dtype=np.uint8).reshape(n, 64)
    digest, sums = sha256_addition_bits(msg)
    free = np.concatenate([bits_le(children[:, 0]), bits_le(children[:, 1]), sums], axis=1)
    solve_bits(bp, np.zeros((n, 2), np.uint8), free, out, rows)
    node = truncate254(digest)
    out[np.asarray(rows, dtype=np.int64) + bp.n_aux - 1] = node.view("<u4")
    return node
