"""storage-proofs' UInt64 (circuit.md §7.4): 64 allocated bits, LSB first, packed into one input."""

from __future__ import annotations

from porep.circuit.boolean import Boolean, u64_into_boolean_vec_le
from porep.circuit.cs import ConstraintSystem
from porep.circuit.multipack import pack_into_inputs


class UInt64:
    __slots__ = ("bits", "value")

    def __init__(self, bits: list[Boolean], value: int | None) -> None:
        self.bits = bits
        self.value = value

    @staticmethod
    def alloc(cs: ConstraintSystem, value: int | None) -> UInt64:
        return UInt64(u64_into_boolean_vec_le(cs, value), value if cs.witness else None)

    def to_bits_be(self) -> list[Boolean]:
        return list(reversed(self.bits))

    def pack_into_input(self, cs: ConstraintSystem) -> int:
        return pack_into_inputs(cs, self.bits)[0]
