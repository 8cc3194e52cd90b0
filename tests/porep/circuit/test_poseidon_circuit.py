"""neptune's legacy Poseidon circuit: published counts (neptune circuit.rs tests, SPP circuit/hash.rs), the
compressed constants against supraseal's copy of neptune's, witness values against porep.hashes.poseidon and
neptune's own hash vectors, and a real comm_r = H(comm_c, comm_r_last)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from porep.circuit import poseidon as pc
from porep.circuit.cs import ConstraintSystem
from porep.hashes import poseidon as P

PUBLISHED = {2: 311, 4: 377, 8: 505, 11: 598, 16: 761}
# circuit.md §8.3 (model-derived there): nnz of A / B / C
NNZ = {2: (2119, 313, 386), 8: (3598, 513, 624), 11: (4462, 609, 738)}


def _supraseal(fixtures_dir: Path, arity: int) -> list[int]:
    raw = (fixtures_dir / "curio" / "supraseal-poseidon-constants" / f"constants_{arity}").read_bytes()
    r_inv = pow(1 << 256, -1, P.R)
    return [int.from_bytes(raw[i : i + 32], "little") * r_inv % P.R for i in range(0, len(raw), 32)]


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_compressed_constants_are_neptunes(fixtures_dir: Path, arity: int) -> None:
    """supraseal stores neptune's compressed round constants, then M, then the pre-sparse matrix (rows)."""
    vals = _supraseal(fixtures_dir, arity)
    k = pc.circuit_constants(arity)
    t, n = k.width, len(k.compressed)
    assert n == 8 * t + k.partial_rounds
    assert vals[:n] == list(k.compressed)
    assert vals[n + t * t : n + 2 * t * t] == [x for row in k.pre_sparse for x in row]


def _hash(arity: int, values: list[int] | None) -> tuple[ConstraintSystem, int]:
    cs = ConstraintSystem(witness=values is not None)
    pre = [cs.alloc(None if values is None else values[i]) for i in range(arity)]
    return cs, pc.poseidon_hash(cs, pre)


@pytest.mark.parametrize("arity", sorted(PUBLISHED))
def test_published_counts_shape_only(arity: int) -> None:
    cs, out = _hash(arity, None)
    assert cs.num_constraints == PUBLISHED[arity] == pc.constraint_count(arity)
    assert cs.num_aux - arity == PUBLISHED[arity]
    assert out == cs.num_aux - 1
    if arity in NNZ:
        assert cs.nnz == NNZ[arity]


@pytest.mark.parametrize("arity", sorted(PUBLISHED))
def test_witness_satisfies_and_equals_reference(arity: int) -> None:
    rng = random.Random(arity)
    values = [rng.randrange(P.R) for _ in range(arity)]
    values[0] = P.R - 1
    cs, out = _hash(arity, values)
    assert cs.num_constraints == PUBLISHED[arity]
    assert cs.unsatisfied() is None
    assert cs.value(out) == P.hash_ints(values)
    # the witness is determined: any changed aux breaks a row
    cs.aux_values[arity + rng.randrange(PUBLISHED[arity] - 1)] += 1
    assert cs.unsatisfied() is not None


@pytest.mark.parametrize("arity", [2, 4, 8, 11])
def test_neptune_vectors(fixtures_dir: Path, arity: int) -> None:
    golden = json.loads((fixtures_dir / "golden_vectors.json").read_text())
    (v,) = [v for v in golden["poseidon_neptune_standard"]["vectors"] if v["arity"] == arity]
    cs, out = _hash(arity, list(range(arity)))
    assert P.fr_to_le(cs.value(out)).hex() == v["output_le_hex"]
    assert cs.is_satisfied()


def test_real_comm_r(fixtures_dir: Path) -> None:
    """A real 32GiB sector's comm_r = Poseidon-2(comm_c, comm_r_last), as the header of the circuit does."""
    g = json.loads((fixtures_dir / "golden_vectors.json").read_text())["curio_32GiB_sector_f01000_s1"]
    cs = ConstraintSystem()
    comm_c = cs.alloc(P.fr_from_le(bytes.fromhex(g["comm_c_le_hex"])))
    comm_r_last = cs.alloc(P.fr_from_le(bytes.fromhex(g["comm_r_last_le_hex"])))
    out = pc.poseidon_hash(cs, [comm_c, comm_r_last])
    assert P.fr_to_le(cs.value(out)).hex() == g["comm_r_le_hex"]
    assert cs.is_satisfied()


def test_rows_use_inputs_and_ones_as_neptune() -> None:
    """First-round S-box of input 1 (neptune square_sum / mul_sum): (x+a)² = s, s² = q, (x+a)·q = y − k."""
    k = pc.circuit_constants(2)
    cs, _ = _hash(2, None)
    a, post = k.compressed[1], k.compressed[k.width + 1]
    x = 0  # first preimage variable
    assert cs.rows(0) == ({x: 1, -1: a}, {x: 1, -1: a}, {2: 1})
    assert cs.rows(1) == ({2: 1}, {2: 1}, {3: 1})
    assert cs.rows(2) == ({x: 1, -1: a}, {3: 1}, {4: 1, -1: -post % P.R})


def test_column_hash() -> None:
    for rows in (2, 11):
        cs = ConstraintSystem(witness=False)
        vars_ = [cs.alloc(None) for _ in range(rows)]
        pc.column_hash(cs, vars_)
        assert cs.num_constraints == PUBLISHED[rows]
    with pytest.raises(ValueError, match="rows"):
        pc.column_hash(ConstraintSystem(witness=False), [0, 1, 2])
