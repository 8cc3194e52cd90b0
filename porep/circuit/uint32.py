"""bellperson's UInt32 and MultiEq (circuit.md §3): 32 Booleans least significant first, free rotations
and shifts, bitwise xor / ch / maj, and ``addmany`` whose result bits (carries included) are tied to the sum
through MultiEq's packed equalities (up to 254 bits of equalities per constraint)."""

from __future__ import annotations

from collections.abc import Sequence

from porep.circuit import boolean as bl
from porep.circuit.boolean import FALSE, Boolean
from porep.circuit.cs import ONE, ConstraintSystem

CAPACITY = 254  # Fr::CAPACITY


class MultiEq:
    """Accumulates equalities ``lhs = rhs`` of known bit length and emits them packed, (Σ lhs)·1 = Σ rhs,
    when the next one would reach the capacity, and on ``flush`` (bellperson drops the wrapper there)."""

    def __init__(self, cs: ConstraintSystem) -> None:
        self.cs = cs
        self.lhs: dict[int, int] = {}
        self.rhs: dict[int, int] = {}
        self.bits_used = 0

    def enforce_equal(
        self, num_bits: int, lhs: Sequence[tuple[int, int]], rhs: Sequence[tuple[int, int]]
    ) -> None:
        if CAPACITY <= self.bits_used + num_bits:
            self.flush()
        shift = 1 << self.bits_used
        for v, c in lhs:
            self.lhs[v] = self.lhs.get(v, 0) + c * shift
        for v, c in rhs:
            self.rhs[v] = self.rhs.get(v, 0) + c * shift
        self.bits_used += num_bits

    def flush(self) -> None:
        if self.bits_used > 0:
            self.cs.enforce(self.lhs, [(ONE, 1)], self.rhs)
            self.lhs, self.rhs, self.bits_used = {}, {}, 0


class UInt32:
    """32 Booleans, least significant first; ``value`` is known for constants and in witness mode."""

    __slots__ = ("bits", "value")

    def __init__(self, bits: list[Boolean], value: int | None) -> None:
        self.bits = bits
        self.value = value

    @staticmethod
    def constant(v: int) -> UInt32:
        return UInt32([Boolean.constant(bool((v >> i) & 1)) for i in range(32)], v)

    @staticmethod
    def alloc(cs: ConstraintSystem, v: int | None) -> UInt32:
        bits = [Boolean(bl.alloc_bit(cs, (v >> i) & 1 if v is not None else None)) for i in range(32)]
        return UInt32(bits, v if cs.witness else None)

    @staticmethod
    def from_bits_be(cs: ConstraintSystem, bits: Sequence[Boolean]) -> UInt32:
        assert len(bits) == 32
        le = list(reversed(bits))
        return UInt32(le, _value(cs, le))

    def into_bits_be(self) -> list[Boolean]:
        return list(reversed(self.bits))

    def rotr(self, n: int) -> UInt32:
        n %= 32
        bits = self.bits[n:] + self.bits[:n]
        v = None if self.value is None else ((self.value >> n) | (self.value << (32 - n))) & 0xFFFFFFFF
        return UInt32(bits, v)

    def shr(self, n: int) -> UInt32:
        bits = self.bits[n:] + [FALSE] * n
        return UInt32(bits, None if self.value is None else self.value >> n)

    def xor(self, cs: ConstraintSystem, other: UInt32) -> UInt32:
        bits = [bl.xor(cs, a, b) for a, b in zip(self.bits, other.bits, strict=True)]
        v = None if self.value is None or other.value is None else self.value ^ other.value
        return UInt32(bits, v)

    @staticmethod
    def sha256_ch(cs: ConstraintSystem, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        bits = [bl.sha256_ch(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits, strict=True)]
        v = None if None in (a.value, b.value, c.value) else _ch(a.value, b.value, c.value)  # type: ignore[arg-type]
        return UInt32(bits, v)

    @staticmethod
    def sha256_maj(cs: ConstraintSystem, a: UInt32, b: UInt32, c: UInt32) -> UInt32:
        bits = [bl.sha256_maj(cs, x, y, z) for x, y, z in zip(a.bits, b.bits, c.bits, strict=True)]
        v = None if None in (a.value, b.value, c.value) else _maj(a.value, b.value, c.value)  # type: ignore[arg-type]
        return UInt32(bits, v)

    @staticmethod
    def addmany(cs: ConstraintSystem, meq: MultiEq, ops: Sequence[UInt32]) -> UInt32:
        """Sum mod 2^32 of 2..10 operands; all-constant operands fold to a constant."""
        assert 2 <= len(ops) <= 10
        max_value = len(ops) * 0xFFFFFFFF
        total: int | None = 0
        lhs: list[tuple[int, int]] = []
        all_constants = True
        for op in ops:
            if op.value is None or total is None:
                total = None
            else:
                total += op.value
            for j, bit in enumerate(op.bits):
                lhs.extend(bit.lc(1 << j))
                if bit.var is not None:
                    all_constants = False
        if all_constants and total is not None:
            return UInt32.constant(total & 0xFFFFFFFF)
        nbits = max_value.bit_length()
        if cs.witness and total is None:
            raise ValueError("addmany: operand value missing in witness mode")
        result: list[Boolean] = []
        rhs: list[tuple[int, int]] = []
        for i in range(nbits):
            b = bl.alloc_bit(cs, (total >> i) & 1 if total is not None else None)
            rhs.append((b, 1 << i))
            result.append(Boolean(b))
        meq.enforce_equal(nbits, lhs, rhs)
        return UInt32(result[:32], None if total is None else total & 0xFFFFFFFF)


def _ch(a: int, b: int, c: int) -> int:
    return (a & b) ^ (~a & c) & 0xFFFFFFFF


def _maj(a: int, b: int, c: int) -> int:
    return (a & b) ^ (a & c) ^ (b & c)


def _value(cs: ConstraintSystem, le: Sequence[Boolean]) -> int | None:
    v = 0
    for i, b in enumerate(le):
        x = b.value(cs)
        if x is None:
            return None
        v |= int(x) << i
    return v
