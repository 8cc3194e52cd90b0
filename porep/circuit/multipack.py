"""bellperson's multipack (circuit.md §5): bits packed into field elements, 254 (CAPACITY) per element,
least significant first."""

from __future__ import annotations

from collections.abc import Sequence

from porep.circuit.boolean import Boolean, bools_value
from porep.circuit.cs import ONE, ConstraintSystem
from porep.circuit.uint32 import CAPACITY


def _lc(bits: Sequence[Boolean]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for j, b in enumerate(bits):
        out.extend(b.lc(1 << j))
    return out


def _value(cs: ConstraintSystem, bits: Sequence[Boolean]) -> int | None:
    if not cs.witness:
        return None
    return sum(v << j for j, v in enumerate(bools_value(cs, bits)))


def pack_bits(cs: ConstraintSystem, bits: Sequence[Boolean]) -> int:
    """The first 254 bits as one aux: (Σ 2^j b_j) * 1 = packed."""
    chunk = list(bits[:CAPACITY])
    x = cs.alloc(_value(cs, chunk))
    cs.enforce(_lc(chunk), [(ONE, 1)], [(x, 1)])
    return x


def pack_into_inputs(cs: ConstraintSystem, bits: Sequence[Boolean]) -> list[int]:
    """One public input per 254-bit chunk: (Σ 2^j b_j) * 1 = input."""
    out = []
    for i in range(0, len(bits), CAPACITY):
        chunk = list(bits[i : i + CAPACITY])
        x = cs.alloc_input(_value(cs, chunk))
        cs.enforce(_lc(chunk), [(ONE, 1)], [(x, 1)])
        out.append(x)
    return out
