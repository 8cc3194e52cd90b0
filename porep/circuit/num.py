"""bellpepper-core's AllocatedNum helpers and storage-proofs' constraint helpers (circuit.md §6, §7.1).

An AllocatedNum is just its variable (an int, see ``porep.circuit.cs``); values live in the constraint
system."""

from __future__ import annotations

from porep.circuit import boolean as bl
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ONE, ConstraintSystem


def alloc(cs: ConstraintSystem, value: int | None) -> int:
    """AllocatedNum::alloc: one aux, no constraint."""
    return cs.alloc(value if cs.witness else None)


def inputize(cs: ConstraintSystem, var: int) -> int:
    """A new input x with x * 1 = var."""
    x = cs.alloc_input(cs.value(var) if cs.witness else None)
    cs.enforce([(x, 1)], [(ONE, 1)], [(var, 1)])
    return x


def to_bits_le(cs: ConstraintSystem, var: int) -> list[Boolean]:
    """Non-strict decomposition: 255 allocated bits (LSB first), then C = Σ 2^i b_i − var with empty A, B."""
    bits = bl.field_into_allocated_bits_le(cs, cs.value(var) if cs.witness else None)
    lc = [(b, 1 << i) for i, b in enumerate(bits)]
    lc.append((var, -1))
    cs.enforce([], [], lc)
    return [Boolean(b) for b in bits]


def equal(cs: ConstraintSystem, a: int, b: int) -> None:
    """storage-proofs constraint::equal: a * 1 = b."""
    cs.enforce([(a, 1)], [(ONE, 1)], [(b, 1)])


def add(cs: ConstraintSystem, a: int, b: int) -> int:
    """storage-proofs constraint::add: r; (a + b) * 1 = r."""
    r = cs.alloc((cs.value(a) + cs.value(b)) if cs.witness else None)
    cs.enforce([(a, 1), (b, 1)], [(ONE, 1)], [(r, 1)])
    return r
