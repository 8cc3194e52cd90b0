"""SDR's label in the circuit (SPP ``circuit/create_label.rs``, circuit.md §9.1): SHA-256 of
replica_id ‖ u32_be(layer) ‖ u64_be(node) ‖ zero padding to 64 bytes ‖ 37 parent labels, the digest's bits
byte-reversed and its first 254 bits packed into one aux (= the label as Fr, porep.sdr.labels.create_label).

The caller decomposes the replica id and the parents (``to_bits_le`` + ``reverse_bit_numbering``); the
gadget itself costs 522,269 rows with an allocated node (20 compressions + 1 pack), 522,297 with a constant
node (the create_label test). The 37 vectors repeat the 6 or 14 parents' Booleans (the same variables).
"""

from __future__ import annotations

from collections.abc import Sequence

from porep.circuit.boolean import FALSE, Boolean, reverse_bit_numbering
from porep.circuit.cs import ConstraintSystem
from porep.circuit.multipack import pack_bits
from porep.circuit.sha256 import sha256
from porep.circuit.uint32 import CAPACITY, UInt32
from porep.circuit.uint64 import UInt64

TOTAL_PARENTS = 37
MESSAGE_BITS = (2 + TOTAL_PARENTS) * 256


def create_label(
    cs: ConstraintSystem,
    replica_id: Sequence[Boolean],
    parents: Sequence[Sequence[Boolean]],
    layer: int,
    node: UInt64 | int,
) -> int:
    """The label variable. ``node`` is the challenge's UInt64 (in the PoRep circuit) or a constant."""
    if not 32 <= len(replica_id) <= 256:
        raise ValueError(f"replica id of {len(replica_id)} bits")
    if len(parents) != TOTAL_PARENTS:
        raise ValueError(f"a label hashes {TOTAL_PARENTS} parents, got {len(parents)}")
    msg = list(replica_id) + [FALSE] * (256 - len(replica_id))
    msg += UInt32.constant(layer).into_bits_be()
    if isinstance(node, UInt64):
        msg += node.to_bits_be()
    else:
        msg += [Boolean.constant(bool((node >> i) & 1)) for i in range(63, -1, -1)]
    msg += [FALSE] * (512 - len(msg))
    for p in parents:
        msg += p
        msg += [FALSE] * (-len(msg) % 256)
    assert len(msg) == MESSAGE_BITS
    with cs.namespace("hash"):
        digest = sha256(cs, msg)
    with cs.namespace("result_num"):
        return pack_bits(cs, reverse_bit_numbering(digest)[:CAPACITY])
