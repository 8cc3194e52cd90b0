"""create_label in the circuit: SPP's create_label test (532,025 rows: 38 × 256 allocated bits, constant
node), the in-circuit cost (522,269 rows / 521,749 aux, circuit.md §9.1), and one real-form witness whose
label equals porep.sdr.labels.create_label and satisfies every row — and the vectorised witness
(create_label_witness) reproduces its aux."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest

from porep.circuit import boolean as bl
from porep.circuit import num
from porep.circuit.boolean import Boolean, reverse_bit_numbering
from porep.circuit.create_label import create_label
from porep.circuit.create_label_witness import label_witness
from porep.circuit.cs import ConstraintSystem
from porep.circuit.sha256 import sha256
from porep.circuit.sha256_witness import sha256_addition_bits
from porep.circuit.template import record
from porep.circuit.template_witness import program, solve_small
from porep.circuit.uint64 import UInt64
from porep.sdr.labels import create_label as reference_label


def _bytes_into_boolean_vec_be(cs: ConstraintSystem, data: bytes | None, n: int) -> list[Boolean]:
    """storage-proofs util ``bytes_into_boolean_vec_be``: one allocated bit per bit, each byte MSB first."""
    return [
        Boolean(bl.alloc_bit(cs, (data[i] >> (7 - k)) & 1 if data is not None else None))
        for i in range(n)
        for k in range(8)
    ]


def test_create_label_test_circuit_532025() -> None:
    """SPP create_label.rs test: 37 parent byte strings and the id as allocated bits, constant layer 3 and
    node 22."""
    cs = ConstraintSystem(witness=False, record=False)
    parents = [_bytes_into_boolean_vec_be(cs, None, 32) for _ in range(37)]
    rid = _bytes_into_boolean_vec_be(cs, None, 32)
    create_label(cs, rid, parents, 3, 22)
    assert cs.num_constraints == 532_025


def _fr_bytes(rng: random.Random) -> bytes:
    return rng.randbytes(31) + bytes([rng.randrange(64)])


@pytest.mark.slow
def test_in_circuit_label_equals_reference() -> None:
    """Layer 2 as the StackedDRG circuit builds it: replica id and 14 parents decomposed with to_bits_le,
    expanded to 37 (p0..p13, p0..p13, p0..p8), the challenge an allocated UInt64."""
    rng = random.Random(11)
    replica_id, node, layer = _fr_bytes(rng), 0x1234_5678_9ABC_DEF0 & ((1 << 63) - 1), 2
    parents = [_fr_bytes(rng) for _ in range(14)]
    cs = ConstraintSystem()

    def bits_of(data: bytes) -> list[Boolean]:
        return reverse_bit_numbering(num.to_bits_le(cs, num.alloc(cs, int.from_bytes(data, "little"))))

    rid_bits = bits_of(replica_id)
    pbits = [bits_of(p) for p in parents]
    challenge = UInt64.alloc(cs, node)
    c0, a0 = cs.num_constraints, cs.num_aux
    label = create_label(cs, rid_bits, pbits + pbits + pbits[:9], layer, challenge)
    assert (cs.num_constraints - c0, cs.num_aux - a0) == (522_269, 521_749)
    expanded = parents + parents + parents[:9]
    expect = reference_label(replica_id, layer, node, b"".join(expanded))
    assert cs.value(label) == int.from_bytes(expect, "little")
    assert cs.unsatisfied() is None

    # the vectorised witness (template + numpy SHA sums + row solver) gives the same aux, for this
    # challenge and another one next to it
    other = [_fr_bytes(rng) for _ in range(14)]
    nodes = np.array([node, 77], dtype=np.uint64)
    par = np.frombuffer(b"".join(parents + other), np.uint8).reshape(2, 14, 32)
    vals, labels = label_witness(replica_id, layer, nodes, par)
    assert vals[0, :-1].tolist() == cs.aux_values[a0:-1]
    assert labels == [cs.value(label), int.from_bytes(reference_label(replica_id, layer, 77, b"".join(
        other + other + other[:9])), "little")]

    # a wrong label value is caught by the packing row, which is named
    cs.aux_values[label] += 1
    row = cs.unsatisfied()
    assert row is not None and "result_num" in cs.label(row)


def test_message_checks() -> None:
    cs = ConstraintSystem(witness=False)
    with pytest.raises(ValueError, match="37 parents"):
        create_label(cs, [bl.FALSE] * 256, [[bl.FALSE] * 256] * 36, 1, 0)


@pytest.mark.parametrize("length", [0, 52, 56, 64, 1248])
def test_numpy_sha256_sums(length: int) -> None:
    """The numpy SHA-256 behind the vectorised witness: hashlib's digest, and the addition result bits per
    compression of circuit.md §4.3 (6,310; 4,678 for a padding-only block, whose schedule folds)."""
    msgs = np.frombuffer(random.Random(length).randbytes(3 * length), np.uint8).reshape(3, length)
    digest, bits = sha256_addition_bits(msgs)
    for i in range(3):
        assert digest[i].tobytes() == hashlib.sha256(msgs[i].tobytes()).digest()
    blocks = (length + 9 + 63) // 64
    padding_only = int(length % 64 == 0 or length % 64 > 55)  # a last block of padding only
    expect = 0 if length == 0 else 6_310 * (blocks - padding_only) + 4_678 * padding_only  # blank: all fold
    assert bits.shape == (3, expect)


def test_numpy_sums_are_the_gadgets_free_bits() -> None:
    """For a 64-byte allocated message (a block of data, then a padding-only block), the solver fed with
    the numpy addition bits reproduces bellperson-order SHA-256's aux exactly."""
    data = random.Random(64).randbytes(64)
    bits = [(byte >> (7 - k)) & 1 for byte in data for k in range(8)]

    def gadget(cs: ConstraintSystem, ins: list[int]) -> object:
        return sha256(cs, [Boolean(v) for v in ins])

    p = program(record(gadget, 512))
    _, free = sha256_addition_bits(np.frombuffer(data, np.uint8).reshape(1, 64))
    assert free.shape[1] == len(p.free)
    vals, unsolved = solve_small(p, np.array([bits], dtype=np.int64), free.astype(np.int64))
    assert unsolved == []
    cs = ConstraintSystem()
    gadget(cs, [cs.alloc(b) for b in bits])
    assert vals[0].tolist() == cs.aux_values[512:]
