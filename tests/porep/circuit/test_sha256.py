"""SHA-256 gadgets: bellperson's and storage-proofs' published constraint counts, values against hashlib and
porep.hashes.sha254, and the boolean folding rules."""

from __future__ import annotations

import hashlib
import random

import pytest

from porep.circuit import boolean as bl
from porep.circuit import num
from porep.circuit import sha256 as sh
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ConstraintSystem
from porep.hashes.sha254 import node


def _bits(cs: ConstraintSystem, data: bytes) -> list[Boolean]:
    return [Boolean(bl.alloc_bit(cs, (byte >> (7 - k)) & 1)) for byte in data for k in range(8)]


def _digest(cs: ConstraintSystem, bits: list[Boolean]) -> bytes:
    v = bl.bools_value(cs, bits)
    return bytes(sum(v[8 * i + k] << (7 - k) for k in range(8)) for i in range(len(v) // 8))


@pytest.mark.parametrize("witness", [True, False])
def test_full_block_25840(witness: bool) -> None:
    rng = random.Random(1)
    cs = ConstraintSystem(witness=witness)
    bits = [Boolean(bl.alloc_bit(cs, rng.getrandbits(1) if witness else None)) for _ in range(512)]
    sh.compression(cs, bits, sh.iv())
    assert cs.num_constraints - 512 == 25_840
    assert cs.num_aux - 512 == 25_840 - 26  # every row but the 26 packed additions allocates one bit
    if witness:
        assert cs.is_satisfied()


@pytest.mark.parametrize("length", [0, 1, 31, 55, 56, 64, 100])
def test_hash_matches_hashlib(length: int) -> None:
    data = random.Random(length).randbytes(length)
    cs = ConstraintSystem()
    out = sh.sha256(cs, _bits(cs, data))
    assert _digest(cs, out) == hashlib.sha256(data).digest()
    assert cs.is_satisfied()


def test_hash_counts() -> None:
    cs = ConstraintSystem(witness=False)
    bits = [Boolean(bl.alloc_bit(cs, None)) for _ in range(512)]
    sh.sha256(cs, bits)
    assert cs.num_constraints - 512 == 44_874
    blank = ConstraintSystem(witness=False)
    sh.sha256(blank, [])
    assert blank.num_constraints == 0


def test_util_rs_45387_and_tree_d_node_45379() -> None:
    rng = random.Random(7)
    cs = ConstraintSystem()
    left = [Boolean(bl.alloc_bit(cs, rng.getrandbits(1))) for _ in range(256)]
    right = [Boolean(bl.alloc_bit(cs, rng.getrandbits(1))) for _ in range(256)]
    sh.hash_leaf_bits(cs, left, right)
    assert cs.num_constraints == 45_387 and cs.is_satisfied()

    a = rng.randbytes(31) + b"\x1f"
    b = rng.randbytes(31) + b"\x3f"
    cs = ConstraintSystem()
    va = num.alloc(cs, int.from_bytes(a, "little"))
    vb = num.alloc(cs, int.from_bytes(b, "little"))
    h = sh.hash_multi_leaf(cs, [va, vb])
    assert (cs.num_constraints, cs.num_aux - 2) == (45_379, 45_331)
    assert cs.value(h) == int.from_bytes(node(a, b), "little")
    assert cs.is_satisfied()
    # a wrong child bit breaks a named row
    cs.aux_values[2 + 5] ^= 1
    row = cs.unsatisfied()
    assert row is not None and "0_num_into_bits" in cs.label(row)


@pytest.mark.parametrize("x", [0, 1])
@pytest.mark.parametrize("y", [0, 1])
@pytest.mark.parametrize("z", [0, 1])
def test_ch_maj_all_variants(x: int, y: int, z: int) -> None:
    """Every mix of Is / Not / Constant operands gives the right value and a satisfied system."""
    for kinds in [(p, q, s) for p in "inc" for q in "inc" for s in "inc"]:
        cs = ConstraintSystem()
        ops = []
        for kind, v in zip(kinds, (x, y, z), strict=True):
            if kind == "c":
                ops.append(Boolean.constant(bool(v)))
            else:
                var = bl.alloc_bit(cs, v ^ (kind == "n"))
                ops.append(Boolean(var, kind == "n"))
        ch = bl.sha256_ch(cs, *ops)
        maj = bl.sha256_maj(cs, *ops)
        xo = bl.xor(cs, ops[0], ops[1])
        an = bl.and_(cs, ops[1], ops[2])
        assert bl.bools_value(cs, [ch, maj, xo, an]) == [
            (x & y) ^ ((1 - x) & z), int(x + y + z >= 2), x ^ y, y & z
        ]
        assert cs.is_satisfied()
