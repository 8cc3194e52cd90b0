"""The witness of many in-circuit create_label gadgets at once (the bulk of a PoRep partition: 522,269 rows
each, 2·(layers) per challenge).

Why: row-by-row Python synthesis does ~10^5 rows/s; here the gadget is a template (recorded once per
parent count and layer, ``porep.circuit.template``) and its aux come from two vectorised passes:
1. a numpy SHA-256 over all messages that records every ``addmany``'s full integer sum in bellperson's
   order (48 schedule additions, then per round the e- and a-additions, then the 8 final ones; circuit.md
   §4.2) — its bits are the template's free aux (the result bits, carries included);
2. the integer row solver (``template_witness.solve_small``) for the xor / and / ch / maj bits, each
   defined by its row; the last row (the 254-bit packing) is the label itself, from the digest.
Inputs are the bits of the replica id (255), the challenge (64, LSB first) and the 6 or 14 parents (255
each), which is how the StackedDRG circuit feeds them (to_bits_le + reverse_bit_numbering).
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from functools import cache

import numpy as np

from porep.circuit.boolean import Boolean, reverse_bit_numbering
from porep.circuit.create_label import TOTAL_PARENTS, create_label
from porep.circuit.cs import ConstraintSystem
from porep.circuit.sha256 import IV, ROUND_CONSTANTS
from porep.circuit.template import Template, record
from porep.circuit.template_witness import Program, program, solve_small
from porep.circuit.uint64 import UInt64

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


# create_label's message: words 8 (the layer) and 11..15 (zero padding) are constants
LABEL_CONSTANT_WORDS = frozenset({8, 11, 12, 13, 14, 15})


def n_inputs(n_parents: int) -> int:
    return FIELD_BITS + 64 + n_parents * FIELD_BITS


def expand_parents(parents: list) -> list:  # type: ignore[type-arg]
    """The 37 label inputs from the 6 (layer 1) or 14 parents (circuit.md §9.1)."""
    if len(parents) == 6:
        return parents * 6 + [parents[0]]
    return parents + parents + parents[: TOTAL_PARENTS - 2 * len(parents)]


def _gadget(n_parents: int, layer: int):  # type: ignore[no-untyped-def]
    def run(cs: ConstraintSystem, ins: list[int]) -> object:
        rid = reverse_bit_numbering([Boolean(v) for v in ins[:FIELD_BITS]])
        node = UInt64([Boolean(v) for v in ins[FIELD_BITS : FIELD_BITS + 64]], None)
        base = FIELD_BITS + 64
        parents = []
        for k in range(n_parents):
            lo = base + k * FIELD_BITS
            parents.append(reverse_bit_numbering([Boolean(v) for v in ins[lo : lo + FIELD_BITS]]))
        return create_label(cs, rid, expand_parents(parents), layer, node)

    return run


@cache
def label_template(n_parents: int, layer: int) -> tuple[Template, Program]:
    """The recorded create_label of one layer (6 parents for layer 1, 14 after) and its witness program."""
    t = record(_gadget(n_parents, layer), n_inputs(n_parents))
    return t, program(t)


def _bits_le(values: np.ndarray, nbits: int) -> np.ndarray:
    """uint8[N, 32] little-endian field elements → their first nbits bits, LSB first."""
    return np.unpackbits(values, axis=1, bitorder="little")[:, :nbits]


def label_witness(
    replica_id: bytes, layer: int, nodes: np.ndarray, parents: np.ndarray
) -> tuple[np.ndarray, list[int]]:
    """create_label's own aux for N challenges: ``nodes`` uint64[N], ``parents`` uint8[N, P, 32] (P = 6 for
    layer 1, else 14; canonical Fr reprs < 2^254). Returns (int64[N, n_aux]: every aux but the last as its
    0/1 value, the last left 0; the N labels as ints, which are that last aux)."""
    n, n_par = parents.shape[0], parents.shape[1]
    t, p = label_template(n_par, layer)
    rid = np.frombuffer(bytes(replica_id), np.uint8)
    head = np.zeros((n, 64), np.uint8)
    head[:, :32] = rid
    head[:, 32:36] = np.frombuffer(layer.to_bytes(4, "big"), np.uint8)
    head[:, 36:44] = nodes.astype(">u8").view(np.uint8).reshape(n, 8)
    idx = np.asarray(expand_parents(list(range(n_par))))
    msg = np.concatenate([head, parents[:, idx].reshape(n, -1)], axis=1)
    digest, free = sha256_addition_bits(msg, LABEL_CONSTANT_WORDS)
    inputs = np.concatenate(
        [
            np.broadcast_to(_bits_le(rid[None, :], FIELD_BITS), (n, FIELD_BITS)),
            ((nodes[:, None] >> np.arange(64, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.uint8),
            _bits_le(np.ascontiguousarray(parents.reshape(n * n_par, 32)), FIELD_BITS).reshape(n, -1),
        ],
        axis=1,
    ).astype(np.int64)
    if free.shape[1] != len(p.free):
        raise AssertionError(f"{free.shape[1]} addition bits for {len(p.free)} free aux")
    vals, unsolved = solve_small(p, inputs, free.astype(np.int64))
    assert len(unsolved) == 1 and p.defines[unsolved[0]] == 1 + t.n_inputs + t.n_aux - 1
    d = digest.copy()
    d[:, 31] &= 0x3F
    labels = [int.from_bytes(row.tobytes(), "little") for row in d]
    return vals, labels
