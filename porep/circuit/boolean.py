"""bellpepper-core's boolean gadgets (circuit.md §2): AllocatedBit and Boolean (Is / Not / Constant) with
the exact constant folding and match-arm order, so that the rows and variables come out as bellperson's.

An allocated bit is just its aux variable (an int); a ``Boolean`` wraps a variable with a negation flag, or is
a constant. Values are read from the constraint system in witness mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from porep.circuit.cs import ONE, ConstraintSystem


class Boolean:
    """``Is(var)``, ``Not(var)`` (``neg``) or ``Constant(const)`` (``var is None``)."""

    __slots__ = ("var", "neg", "const")

    def __init__(self, var: int | None, neg: bool = False, const: bool = False) -> None:
        self.var = var
        self.neg = neg
        self.const = const

    @staticmethod
    def constant(b: bool) -> Boolean:
        return TRUE if b else FALSE

    @property
    def is_constant(self) -> bool:
        return self.var is None

    def not_(self) -> Boolean:
        if self.var is None:
            return FALSE if self.const else TRUE
        return Boolean(self.var, not self.neg)

    def lc(self, k: int = 1) -> list[tuple[int, int]]:
        """The Boolean's linear combination times k (bellpepper ``Boolean::lc``)."""
        if self.var is None:
            return [(ONE, k)] if self.const else []
        if self.neg:
            return [(ONE, k), (self.var, -k)]
        return [(self.var, k)]

    def value(self, cs: ConstraintSystem) -> bool | None:
        if self.var is None:
            return self.const
        if not cs.witness:
            return None
        return bool(cs.aux_values[self.var]) != self.neg

    def __repr__(self) -> str:
        if self.var is None:
            return f"Constant({self.const})"
        return f"{'Not' if self.neg else 'Is'}({self.var})"


TRUE = Boolean(None, const=True)
FALSE = Boolean(None, const=False)


# ---------------------------------------------------------------------- AllocatedBit (variables are ints)


def _bit(cs: ConstraintSystem, var: int) -> int:
    return cs.aux_values[var]


def alloc_bit(cs: ConstraintSystem, value: bool | int | None) -> int:
    """v; (1 - v) * v = 0."""
    v = cs.alloc(int(bool(value)) if cs.witness else None)
    cs.enforce([(ONE, 1), (v, -1)], [(v, 1)], [])
    return v


def xor_bits(cs: ConstraintSystem, a: int, b: int) -> int:
    """r; (2a) * b = a + b - r."""
    r = cs.alloc(_bit(cs, a) ^ _bit(cs, b) if cs.witness else None)
    cs.enforce([(a, 2)], [(b, 1)], [(a, 1), (b, 1), (r, -1)])
    return r


def and_bits(cs: ConstraintSystem, a: int, b: int) -> int:
    """r; a * b = r."""
    r = cs.alloc(_bit(cs, a) & _bit(cs, b) if cs.witness else None)
    cs.enforce([(a, 1)], [(b, 1)], [(r, 1)])
    return r


def and_not_bits(cs: ConstraintSystem, a: int, b: int) -> int:
    """r = a AND NOT b; a * (1 - b) = r."""
    r = cs.alloc(_bit(cs, a) & (1 - _bit(cs, b)) if cs.witness else None)
    cs.enforce([(a, 1)], [(ONE, 1), (b, -1)], [(r, 1)])
    return r


def nor_bits(cs: ConstraintSystem, a: int, b: int) -> int:
    """r = NOT a AND NOT b; (1 - a) * (1 - b) = r."""
    r = cs.alloc((1 - _bit(cs, a)) & (1 - _bit(cs, b)) if cs.witness else None)
    cs.enforce([(ONE, 1), (a, -1)], [(ONE, 1), (b, -1)], [(r, 1)])
    return r


# ---------------------------------------------------------------------- Boolean operations


def xor(cs: ConstraintSystem, a: Boolean, b: Boolean) -> Boolean:
    """Boolean::xor with bellpepper's folding."""
    if a.var is None and not a.const:
        return b
    if b.var is None and not b.const:
        return a
    if a.var is None:
        return b.not_()
    if b.var is None:
        return a.not_()
    assert b.var is not None
    if a.neg != b.neg:
        is_, not_ = (a, b) if not a.neg else (b, a)
        assert is_.var is not None and not_.var is not None
        return Boolean(xor_bits(cs, is_.var, not_.var), True)
    return Boolean(xor_bits(cs, a.var, b.var))


def and_(cs: ConstraintSystem, a: Boolean, b: Boolean) -> Boolean:
    """Boolean::and with bellpepper's folding."""
    if (a.var is None and not a.const) or (b.var is None and not b.const):
        return FALSE
    if a.var is None:
        return b
    if b.var is None:
        return a
    if a.neg != b.neg:
        is_, not_ = (a, b) if not a.neg else (b, a)
        assert is_.var is not None and not_.var is not None
        return Boolean(and_not_bits(cs, is_.var, not_.var))
    if a.neg:
        return Boolean(nor_bits(cs, a.var, b.var))
    return Boolean(and_bits(cs, a.var, b.var))


def _val(cs: ConstraintSystem, x: Boolean) -> int:
    if x.var is None:
        return int(x.const)
    return cs.aux_values[x.var] ^ int(x.neg)


def sha256_ch(cs: ConstraintSystem, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a AND b) XOR (NOT a AND c), arms in bellpepper's order."""
    if a.var is None and b.var is None and c.var is None:
        return Boolean.constant((a.const and b.const) ^ ((not a.const) and c.const))
    if a.var is None and not a.const:
        return c
    if b.var is None and not b.const:
        return and_(cs, a.not_(), c)
    if c.var is None and not c.const:
        return and_(cs, a, b)
    if c.var is None:
        return and_(cs, a, b.not_()).not_()
    if b.var is None:
        return and_(cs, a.not_(), c.not_()).not_()
    if cs.witness:
        av, bv, cv = _val(cs, a), _val(cs, b), _val(cs, c)
        ch = cs.alloc((av & bv) ^ ((1 - av) & cv))
    else:
        ch = cs.alloc()
    cs.enforce(b.lc(1) + c.lc(-1), a.lc(1), [(ch, 1)] + c.lc(-1))
    return Boolean(ch)


def sha256_maj(cs: ConstraintSystem, a: Boolean, b: Boolean, c: Boolean) -> Boolean:
    """(a AND b) XOR (a AND c) XOR (b AND c), arms in bellpepper's order (maj allocated before bc)."""
    if a.var is None and b.var is None and c.var is None:
        return Boolean.constant((a.const + b.const + c.const) >= 2)
    if a.var is None and not a.const:
        return and_(cs, b, c)
    if b.var is None and not b.const:
        return and_(cs, a, c)
    if c.var is None and not c.const:
        return and_(cs, a, b)
    if c.var is None:
        return and_(cs, a.not_(), b.not_()).not_()
    if b.var is None:
        return and_(cs, a.not_(), c.not_()).not_()
    if a.var is None:
        return and_(cs, b.not_(), c.not_()).not_()
    if cs.witness:
        av, bv, cv = _val(cs, a), _val(cs, b), _val(cs, c)
        maj = cs.alloc(1 if av + bv + cv >= 2 else 0)
    else:
        maj = cs.alloc()
    bc = and_(cs, b, c)
    cs.enforce(bc.lc(2) + b.lc(-1) + c.lc(-1), a.lc(1), bc.lc(1) + [(maj, -1)])
    return Boolean(maj)


# ---------------------------------------------------------------------- decompositions


def field_into_allocated_bits_le(cs: ConstraintSystem, value: int | None) -> list[int]:
    """255 allocated bits, least significant first (bellpepper ``field_into_allocated_bits_le``)."""
    if cs.witness:
        assert value is not None
        return [alloc_bit(cs, (value >> i) & 1) for i in range(255)]
    return [alloc_bit(cs, None) for _ in range(255)]


def u64_into_boolean_vec_le(cs: ConstraintSystem, value: int | None) -> list[Boolean]:
    """64 allocated bits, least significant first."""
    if cs.witness:
        assert value is not None
        return [Boolean(alloc_bit(cs, (value >> i) & 1)) for i in range(64)]
    return [Boolean(alloc_bit(cs, None)) for _ in range(64)]


def reverse_bit_numbering(bits: Sequence[Boolean]) -> list[Boolean]:
    """Pad with constant false to a multiple of 8, then reverse the bits of each byte (storage-proofs
    util.rs): little-endian field bits become the byte string in SHA bit order (each byte MSB first)."""
    padded = list(bits)
    while len(padded) % 8:
        padded.append(FALSE)
    out: list[Boolean] = []
    for i in range(0, len(padded), 8):
        out.extend(reversed(padded[i : i + 8]))
    return out


def bools_value(cs: ConstraintSystem, bits: Sequence[Boolean]) -> list[int]:
    """Values of Booleans (witness mode, or all constant)."""
    return [_val(cs, b) for b in bits]
