"""The vectorised partition witness (porep.circuit.witness) is the direct synthesis's assignment, array for
array: a sealed 2KiB C1 (CI) and 8MiB C1 (long suite); it satisfies the R1CS, a C1 mutation changes it and
the failing row is named; the layout's totals are circuit.md's; the tree-D node kernel against the gadget."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from circuit_c1 import Synthesised, long_only
from test_stacked import MUTATIONS, ROW

from porep.c1 import C1Arrays, SealCommitPhase1Output
from porep.circuit.create_label_witness import LABEL_CONSTANT_WORDS
from porep.circuit.cs import ConstraintSystem
from porep.circuit.partition import partition_assignment, partition_r1cs
from porep.circuit.por import sha256_node
from porep.circuit.sha256_witness import addition_bits, node_program, node_witness, sha256_addition_bits
from porep.circuit.stacked import CircuitShape, synthesize_c1
from porep.circuit.template_witness import BitProgram, cached_bit_program
from porep.circuit.witness import layout
from porep.prooftypes import proof_type


@pytest.fixture(scope="module")
def vector_2kib(c1_2kib: SealCommitPhase1Output) -> np.ndarray:
    return partition_assignment(c1_2kib, 0)


@pytest.mark.slow
def test_2kib_equals_direct_synthesis(vector_2kib: np.ndarray, synth_2kib: Synthesised) -> None:
    want = synth_2kib.cs.witness_array()
    assert vector_2kib.shape == want.shape == (2_685_713, 8) and vector_2kib.dtype == np.uint32
    bad = np.flatnonzero((vector_2kib != want).any(axis=1))
    assert len(bad) == 0, f"{len(bad)} rows differ, first {bad[:5]}"
    assert synth_2kib.r1cs.first_unsatisfied(vector_2kib) is None


@pytest.mark.slow
def test_out_buffer_is_written_in_full(c1_2kib: SealCommitPhase1Output, vector_2kib: np.ndarray) -> None:
    """A caller's buffer (e.g. pinned) full of garbage comes back equal: every row is written."""
    buf = np.full(vector_2kib.shape, 0xFFFFFFFF, dtype=np.uint32)
    assert partition_assignment(c1_2kib, 0, out=buf) is buf
    assert np.array_equal(buf, vector_2kib)
    with pytest.raises(ValueError, match="out must be"):
        partition_assignment(c1_2kib, 0, out=np.empty((10, 8), np.uint32))


def _mutated(
    c1: SealCommitPhase1Output, name: str, mutate: Callable[[np.ndarray], None]
) -> SealCommitPhase1Output:
    fields = dict(c1.arrays.fields)
    arr = fields[name].copy()
    mutate(arr)
    fields[name] = arr
    return SealCommitPhase1Output.from_arrays(C1Arrays(c1.arrays.proof_type, fields), validated=True)


def _flip(index: tuple[int, ...]) -> Callable[[np.ndarray], None]:
    def f(a: np.ndarray) -> None:
        a[index] ^= 1

    return f


# (C1 field, mutation, where the first failing row is): parents' rows feed create_label and the column
# hash, whose tree-C path then fails; a tree-D sibling breaks the comm_d path
CI_MUTATIONS = {
    "drg parent row (layer 1)": ("col.rows", _flip((0, 1, 3, 0, 0)), "challenge_1/drg_parent_2_inclusion"),
    "tree D sibling": ("d.base.hashes", _flip((0, 0, 3, 0, 0)), "challenge_0/comm_d_inclusion/enforce_"),
}


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(CI_MUTATIONS))
def test_mutation_changes_the_vector_and_names_a_row(
    label: str, c1_2kib: SealCommitPhase1Output, synth_2kib: Synthesised, vector_2kib: np.ndarray
) -> None:
    name, mutate, where = CI_MUTATIONS[label]
    bad = partition_assignment(_mutated(c1_2kib, name, mutate), 0)
    assert not np.array_equal(bad, vector_2kib)
    row = synth_2kib.r1cs.first_unsatisfied(bad)
    assert row is not None, f"{label}: the mutated vector still satisfies the circuit"
    assert where in synth_2kib.cs.label(row), f"{label}: first failure at {synth_2kib.cs.label(row)}"


@long_only
@pytest.mark.parametrize("label", sorted(k for k, v in MUTATIONS.items() if v[2] == ROW))
def test_row_mutation_equals_direct_synthesis(
    label: str, c1_2kib: SealCommitPhase1Output, synth_2kib: Synthesised
) -> None:
    """Every mutation of the sealing issue's list that the circuit reads (test_stacked.MUTATIONS, kind
    "row"): the vectorised vector equals the direct synthesis of the mutated C1, and the row is named."""
    name, mutate, _, where = MUTATIONS[label]
    bad = _mutated(c1_2kib, name, mutate)
    got = partition_assignment(bad, 0)
    assert np.array_equal(got, synthesize_c1(bad, 0, record=False).witness_array())
    row = synth_2kib.r1cs.first_unsatisfied(got)
    assert row is not None and where in synth_2kib.cs.label(row), synth_2kib.cs.label(row or 0)


def test_layout_totals() -> None:
    """Header + challenges x the one-challenge layout gives circuit.md §9.3/§10's counts (2KiB, 8MiB)."""
    two = layout(CircuitShape.for_proof_type(proof_type("StackedDrg2KiBV1_1")))
    assert (two.header_aux, two.per_challenge, two.num_aux, two.num_inputs) == (571, 1_342_551, 2_685_673, 40)
    eight = layout(CircuitShape.for_proof_type(proof_type("StackedDrg8MiBV1_1")))
    assert (eight.num_aux, eight.num_inputs) == (3_842_449, 40)


@long_only
def test_layout_32gib() -> None:
    lay = layout(CircuitShape.for_proof_type(proof_type("StackedDrg32GiBV1_1")))
    assert (lay.num_inputs, lay.num_aux) == (328, 130_169_893)


@pytest.mark.slow
def test_node_kernel_equals_the_gadget() -> None:
    """Tree-D nodes (hash_multi_leaf: to_bits_le of both children, SHA-256, pack) for three child pairs,
    one with both children's top bits set: every aux as the gadget allocates it."""
    rng = random.Random(7)
    pairs = [[rng.randrange(1 << 254) for _ in range(2)] for _ in range(2)]
    pairs.append([(1 << 254) + 5, (1 << 254) - 1])
    children = np.frombuffer(b"".join(v.to_bytes(32, "little") for p in pairs for v in p), np.uint8)
    n_aux = node_program().n_aux
    out = np.full((3 * n_aux + 5, 8), 7, np.uint32)
    node_witness(out, np.array([0, n_aux, 2 * n_aux + 5]), children.reshape(3, 2, 32).copy())
    for i, p in enumerate(pairs):
        cs = ConstraintSystem()
        sha256_node(cs, [cs.alloc(v) for v in p])
        assert cs.num_aux - 2 == n_aux
        start = [0, n_aux, 2 * n_aux + 5][i]
        assert np.array_equal(out[start : start + n_aux], cs.witness_array()[1 + 2 :]), i


@pytest.mark.slow
def test_bit_program_disk_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A cached program reads back equal; a corrupt file is rebuilt (with a warning) and rewritten."""
    calls: list[int] = []

    def build() -> BitProgram:
        calls.append(1)
        return node_program()

    first = cached_bit_program("node", build, tmp_path)
    again = cached_bit_program("node", build, tmp_path)
    assert len(calls) == 1
    for f in ("free", "dst", "src", "table"):
        assert np.array_equal(getattr(first, f), getattr(again, f))
    assert (first.n_inputs, first.n_aux, first.last) == (again.n_inputs, again.n_aux, again.last)
    (path,) = (tmp_path / "witness").glob("node-*.npz")
    path.write_bytes(path.read_bytes()[:1000])
    cached_bit_program("node", build, tmp_path)
    assert len(calls) == 2 and "unusable" in caplog.text
    assert np.array_equal(cached_bit_program("node", build, tmp_path).src, first.src) and len(calls) == 2


@pytest.mark.parametrize("length", [0, 52, 56, 64, 1248])
def test_numba_sha256_sums_equal_the_numpy_reference(length: int) -> None:
    """The Numba SHA-256 behind the bit programs: hashlib's digest and the numpy reference's addition bits
    (create_label's message with its constant words too)."""
    msgs = np.frombuffer(random.Random(length).randbytes(3 * length), np.uint8).reshape(3, length)
    for constant in (frozenset(), LABEL_CONSTANT_WORDS if length == 1248 else frozenset()):
        digest, bits = addition_bits(msgs, constant)
        ref_digest, ref_bits = sha256_addition_bits(msgs, constant)
        assert np.array_equal(bits, ref_bits) and np.array_equal(digest, ref_digest)
        for i in range(3):
            assert digest[i].tobytes() == hashlib.sha256(msgs[i].tobytes()).digest()


@long_only
def test_8mib_equals_direct_synthesis() -> None:
    """A sealed 8MiB C1 (random data): the vectorised vector is the direct synthesis's, and satisfies."""
    from porep.ids import prover_id
    from porep.sdr.seal import seal
    from porep.sdr.vanilla import make_c1

    piece = random.Random(8).randbytes(8 * 2**20 * 127 // 128)
    sealed = seal("StackedDrg8MiBV1_1", prover_id(1000), 3, bytes([4]) * 32, piece=piece)
    c1 = make_c1(sealed, bytes([9]) * 32)
    got = partition_assignment(c1, 0)
    assert got.shape == (3_842_449 + 40, 8)
    assert np.array_equal(got, synthesize_c1(c1, 0, record=False).witness_array())
    partition_r1cs(c1.proof_type).check(got)  # the PCE's matrices (tested equal to the direct synthesis's)
