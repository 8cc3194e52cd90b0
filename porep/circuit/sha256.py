"""bellperson's SHA-256 gadget (circuit.md §4) in its exact operation order, and storage-proofs' wrappers
(the tree-D node ``hash_multi_leaf``, ``hash_leaf_bits``, ``hash_circuit``)."""

from __future__ import annotations

from collections.abc import Sequence

from porep.circuit import num
from porep.circuit.boolean import FALSE, TRUE, Boolean, reverse_bit_numbering
from porep.circuit.cs import ConstraintSystem
from porep.circuit.multipack import pack_bits
from porep.circuit.uint32 import CAPACITY, MultiEq, UInt32

ROUND_CONSTANTS = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip
IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)


def iv() -> list[UInt32]:
    return [UInt32.constant(v) for v in IV]


def compression(cs: ConstraintSystem, block: Sequence[Boolean], state: Sequence[UInt32]) -> list[UInt32]:
    """One compression of 512 bits (SHA bit order) from ``state``; additions are deferred as bellperson's
    ``Maybe`` does, and the MultiEq is flushed at the end."""
    assert len(block) == 512 and len(state) == 8
    w = [UInt32.from_bits_be(cs, block[i : i + 32]) for i in range(0, 512, 32)]
    meq = MultiEq(cs)
    for i in range(16, 64):
        x = w[i - 15]
        s0 = x.rotr(7).xor(cs, x.rotr(18)).xor(cs, x.shr(3))
        y = w[i - 2]
        s1 = y.rotr(17).xor(cs, y.rotr(19)).xor(cs, y.shr(10))
        w.append(UInt32.addmany(cs, meq, [w[i - 16], s0, w[i - 7], s1]))

    a: UInt32 | list[UInt32] = state[0]
    b, c, d = state[1], state[2], state[3]
    e: UInt32 | list[UInt32] = state[4]
    f, g, h = state[5], state[6], state[7]
    for i in range(64):
        new_e = e if isinstance(e, UInt32) else UInt32.addmany(cs, meq, e)
        s1 = new_e.rotr(6).xor(cs, new_e.rotr(11)).xor(cs, new_e.rotr(25))
        ch = UInt32.sha256_ch(cs, new_e, f, g)
        temp1 = [h, s1, ch, UInt32.constant(ROUND_CONSTANTS[i]), w[i]]
        new_a = a if isinstance(a, UInt32) else UInt32.addmany(cs, meq, a)
        s0 = new_a.rotr(2).xor(cs, new_a.rotr(13)).xor(cs, new_a.rotr(22))
        maj = UInt32.sha256_maj(cs, new_a, b, c)
        h, g, f = g, f, new_e
        e = [*temp1, d]
        d, c, b = c, b, new_a
        a = [*temp1, s0, maj]

    assert isinstance(a, list) and isinstance(e, list)
    out = [
        UInt32.addmany(cs, meq, [*a, state[0]]),
        UInt32.addmany(cs, meq, [state[1], b]),
        UInt32.addmany(cs, meq, [state[2], c]),
        UInt32.addmany(cs, meq, [state[3], d]),
        UInt32.addmany(cs, meq, [*e, state[4]]),
        UInt32.addmany(cs, meq, [state[5], f]),
        UInt32.addmany(cs, meq, [state[6], g]),
        UInt32.addmany(cs, meq, [state[7], h]),
    ]
    meq.flush()
    return out


def sha256(cs: ConstraintSystem, bits: Sequence[Boolean]) -> list[Boolean]:
    """Padded SHA-256 of whole bytes (each byte MSB first); the digest bits in the same order."""
    assert len(bits) % 8 == 0
    n = len(bits)
    padded = [*bits, TRUE]
    while (len(padded) + 64) % 512:
        padded.append(FALSE)
    padded.extend(Boolean.constant(bool((n >> i) & 1)) for i in range(63, -1, -1))
    cur = iv()
    for k in range(0, len(padded), 512):
        with cs.namespace(f"block_{k // 512}"):
            cur = compression(cs, padded[k : k + 512], cur)
    return [bit for word in cur for bit in word.into_bits_be()]


def hash_circuit(cs: ConstraintSystem, bits: Sequence[Boolean]) -> int:
    """storage-proofs ``hash_circuit``: sha256, bits of each digest byte reversed, the first 254 packed
    (one aux)."""
    with cs.namespace("hash"):
        be = sha256(cs, bits)
    le = [bit for k in range(0, 256, 8) for bit in reversed(be[k : k + 8])][:CAPACITY]
    with cs.namespace("pack_le"):
        return pack_bits(cs, le)


def hash_multi_leaf(cs: ConstraintSystem, leaves: Sequence[int]) -> int:
    """The tree-D node (``hash_multi_leaf_circuit``): each leaf to_bits_le (255 bits + unpacking), padded and
    byte-reversed, then ``hash_circuit``."""
    bits: list[Boolean] = []
    for i, leaf in enumerate(leaves):
        with cs.namespace(f"{i}_num_into_bits"):
            bits.extend(reverse_bit_numbering(num.to_bits_le(cs, leaf)))
    return hash_circuit(cs, bits)


def hash_leaf_bits(cs: ConstraintSystem, left: Sequence[Boolean], right: Sequence[Boolean]) -> int:
    """``hash_leaf_bits_circuit``: both bit vectors padded and byte-reversed, then ``hash_circuit``."""
    return hash_circuit(cs, reverse_bit_numbering(left) + reverse_bit_numbering(right))
