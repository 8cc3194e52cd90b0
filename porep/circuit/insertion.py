"""storage-proofs' insertion permutation (SPC ``gadgets/insertion.rs``, circuit.md §7.2): put the running
node among its siblings at the position given by the level's index bits (LSB first), in the hand-made pick
sequences of insert_2 / insert_4 / insert_8 (2 / 8 / 22 rows), else the general select-based one
(size·(size−1) rows).

Each row defines the one aux allocated just before it (a pick result, or the nor/and bit of insert_8), so
every insert of one arity is a fixed template over (ONE, cur, siblings, bits, its own aux) — tileable.
"""

from __future__ import annotations

from collections.abc import Sequence

from porep.circuit import boolean as bl
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ConstraintSystem


def pick(cs: ConstraintSystem, cond: Boolean, a: int, b: int) -> int:
    """a if cond else b: c; (b − a)·cond = b − c."""
    val = None
    if cs.witness:
        val = cs.value(a) if cond.value(cs) else cs.value(b)
    c = cs.alloc(val)
    cs.enforce([(b, 1), (a, -1)], cond.lc(1), [(b, 1), (c, -1)])
    return c


def insert_2(cs: ConstraintSystem, cur: int, bits: Sequence[Boolean], sibs: Sequence[int]) -> list[int]:
    """Row for row bellpepper's conditionally_reverse(cur, sib, b0)."""
    (b0,) = bits
    (s,) = sibs
    return [pick(cs, b0, s, cur), pick(cs, b0, cur, s)]


def insert_4(cs: ConstraintSystem, cur: int, bits: Sequence[Boolean], sibs: Sequence[int]) -> list[int]:
    b0, b1 = bits
    a = cur
    b, c, d = sibs
    p0 = pick(cs, b1, b, pick(cs, b0, b, a))
    p1 = pick(cs, b1, c, pick(cs, b0, a, b))
    p2 = pick(cs, b1, pick(cs, b0, d, a), c)
    p3 = pick(cs, b1, pick(cs, b0, a, d), d)
    return [p0, p1, p2, p3]


def insert_8(cs: ConstraintSystem, cur: int, bits: Sequence[Boolean], sibs: Sequence[int]) -> list[int]:
    b0, b1, b2 = bits
    if b0.var is None or b1.var is None or b0.neg or b1.neg:
        raise ValueError("insert_8: bits must be allocated and unnegated")
    nor = Boolean(bl.nor_bits(cs, b0.var, b1.var))
    both = Boolean(bl.and_bits(cs, b0.var, b1.var))
    a = cur
    b, c, d, e, f, g, h = sibs
    p0 = pick(cs, b2, b, pick(cs, nor, a, b))
    p1 = pick(cs, b2, c, pick(cs, b1, c, pick(cs, b0, a, b)))
    p2 = pick(cs, b2, d, pick(cs, b1, pick(cs, b0, d, a), c))
    p3 = pick(cs, b2, e, pick(cs, both, a, d))
    p4 = pick(cs, b2, pick(cs, nor, a, f), e)
    p5 = pick(cs, b2, pick(cs, b1, g, pick(cs, b0, a, f)), f)
    p6 = pick(cs, b2, pick(cs, b1, pick(cs, b0, h, a), g), g)
    p7 = pick(cs, b2, pick(cs, both, a, h), h)
    return [p0, p1, p2, p3, p4, p5, p6, p7]


def select(cs: ConstraintSystem, choices: Sequence[int], bits: Sequence[Boolean]) -> int:
    """choices[n] for n given by bits (LSB first); size − 1 picks, most significant bit first."""
    assert len(choices) == 1 << len(bits)
    state = list(choices)
    half = len(state) // 2
    for bit in reversed(bits):
        state = [pick(cs, bit, state[half + j], state[j]) for j in range(half)]
        half //= 2
    return state[0]


def insert(cs: ConstraintSystem, cur: int, bits: Sequence[Boolean], sibs: Sequence[int]) -> list[int]:
    """The arity children with ``cur`` at position bits (LSB first) among ``sibs`` (JSON order)."""
    size = len(sibs) + 1
    if size != 1 << len(bits):
        raise ValueError(f"{len(sibs)} siblings need {size.bit_length() - 1} index bits, got {len(bits)}")
    if size == 2:
        return insert_2(cs, cur, bits, sibs)
    if size == 4:
        return insert_4(cs, cur, bits, sibs)
    if size == 8:
        return insert_8(cs, cur, bits, sibs)
    out = []
    for pos in range(size):
        # the value at ``pos`` when cur sits at ``index``
        choices = [sibs[pos - 1] if index < pos else cur if index == pos else sibs[pos]
                   for index in range(size)]
        out.append(select(cs, choices, bits))
    return out
