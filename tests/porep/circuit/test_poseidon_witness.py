"""The batched Poseidon witness kernel gives, instance by instance, exactly the aux values that the
row-by-row gadget (porep.circuit.poseidon) allocates — so it can fill the assignment of every Poseidon
gadget in a partition at once."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpu.arith.fields import fr_decode, fr_encode
from porep.circuit import poseidon as pc
from porep.circuit.cs import ConstraintSystem
from porep.circuit.poseidon_witness import poseidon_witness_mont
from porep.hashes import poseidon as P


@pytest.mark.slow  # the first call compiles the kernel
@pytest.mark.parametrize("arity", [2, 8, 11])
def test_kernel_equals_gadget(arity: int) -> None:
    rng = random.Random(arity)
    n = 4
    vals = [[rng.randrange(P.R) for _ in range(arity)] for _ in range(n)]
    vals[0] = [0] * arity
    vals[1][0] = P.R - 1
    out = poseidon_witness_mont(fr_encode([x for v in vals for x in v]).reshape(n, arity, 8))
    assert out.shape == (n, pc.constraint_count(arity), 8)
    for i in range(n):
        cs = ConstraintSystem()
        pc.poseidon_hash(cs, [cs.alloc(x) for x in vals[i]])
        assert fr_decode(out[i]) == cs.aux_values[arity:]
        assert fr_decode(out[i, -1:]) == [P.hash_ints(vals[i])]


def test_shape_checks() -> None:
    with pytest.raises(ValueError, match="inputs"):
        poseidon_witness_mont(np.zeros((1, 2, 4), dtype=np.uint32))
    with pytest.raises(ValueError, match="out"):
        poseidon_witness_mont(np.zeros((1, 2, 8), dtype=np.uint32), out=np.zeros((1, 5, 8), dtype=np.uint32))
