"""The pre-compiled partition circuit (porep.circuit.pce): the tiled matrices equal the direct synthesis'
array for array, its counts equal partition_stats, the compact matrices evaluate like the plain ones, and
the disk cache rebuilds what is stale or corrupt."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from circuit_c1 import Synthesised, long_only

from gpu.groth16.prover import Assignment
from gpu.groth16.r1cs import CompactCSR
from porep.circuit import pce
from porep.circuit.partition import partition_r1cs
from porep.circuit.stacked import CircuitShape, blank_system, partition_stats
from porep.prooftypes import proof_type

PT_2KIB = proof_type("StackedDrg2KiBV1_1")


@pytest.fixture(scope="module")
def template_2kib() -> pce.PartitionTemplate:
    return pce.record(CircuitShape.for_proof_type(PT_2KIB))


def _assert_same(got: object, want: object) -> None:
    from gpu.groth16.r1cs import R1CS

    assert isinstance(got, R1CS) and isinstance(want, R1CS)
    counts = (got.num_inputs, got.num_aux, got.num_constraints)
    assert counts == (want.num_inputs, want.num_aux, want.num_constraints)
    for name, x, y in (("A", got.a, want.a), ("B", got.b, want.b), ("C", got.c, want.c)):
        assert isinstance(x, CompactCSR)
        assert x.row_ptr.dtype == y.row_ptr.dtype and np.array_equal(x.row_ptr, y.row_ptr), name
        assert x.cols.dtype == y.cols.dtype and np.array_equal(x.cols, y.cols), name
        assert np.array_equal(x.vals, y.vals), name


@pytest.mark.slow
def test_2kib_tiled_matrices_equal_the_direct_synthesis(
    template_2kib: pce.PartitionTemplate, synth_2kib: Synthesised
) -> None:
    """2 challenges tiled from one: every row pointer, column and coefficient of the synthesised partition
    (the C1's; its matrices equal the blank circuit's: test_stacked, and the long test below)."""
    assert template_2kib.layout.challenges == 2
    _assert_same(template_2kib.r1cs(), synth_2kib.r1cs)
    r, s = synth_2kib.r1cs, template_2kib.stats()
    d = r.density()
    assert (s.num_constraints, s.num_inputs, s.num_aux) == (r.num_constraints, r.num_inputs, r.num_aux)
    assert s.nnz == (r.a.nnz, r.b.nnz, r.c.nnz)
    assert (s.a_aux, s.b_input, s.b_aux) == (int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum()))


@pytest.mark.slow
def test_2kib_compact_evaluation_equals_the_plain_one(
    template_2kib: pce.PartitionTemplate, synth_2kib: Synthesised
) -> None:
    """A.w, B.w, C.w from the compact PCE equal R1CS.evaluate's on the plain matrices, the C1's witness
    satisfies it, and Assignment.from_r1cs takes it."""
    compact, plain = template_2kib.r1cs(), synth_2kib.r1cs
    w = synth_2kib.cs.witness_array()
    got = Assignment.from_r1cs(compact, w)
    want = plain.evaluate(w)
    for x, y in zip((got.a, got.b, got.c), want, strict=True):
        assert np.array_equal(x, y)
    from gpu.arith.fields import fr_mul_batch

    assert np.array_equal(fr_mul_batch(got.a, got.b), got.c)
    assert [int(x.sum()) for x in (compact.density().a_aux, compact.density().b_aux)] == [
        int(x.sum()) for x in (plain.density().a_aux, plain.density().b_aux)
    ]


# ------------------------------------------------------------------------------------------------ cache


def test_cache_round_trip_corruption_and_staleness(
    template_2kib: pce.PartitionTemplate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    shape = CircuitShape.for_proof_type(PT_2KIB)
    calls: list[CircuitShape] = []

    def fake_record(s: CircuitShape) -> pce.PartitionTemplate:
        calls.append(s)
        return template_2kib

    monkeypatch.setattr(pce, "record", fake_record)
    t1 = pce.cached_template(shape, tmp_path)
    assert calls == [shape] and t1 is template_2kib
    entry = tmp_path / "pce" / pce.cache_key(shape)
    assert (entry / "meta.json").is_file()

    t2 = pce.cached_template(shape, tmp_path)  # from disk
    assert len(calls) == 1 and t2 is not template_2kib and t2.digest() == template_2kib.digest()
    assert t2.layout == template_2kib.layout

    # one flipped byte in a column array: detected by the digest, rebuilt (with a warning), not used
    f = entry / "B_cols.npy"
    raw = bytearray(f.read_bytes())
    raw[-5] ^= 0x40
    f.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="digest"):
        pce.PartitionTemplate.load(entry, pce.cache_key(shape))
    with caplog.at_level(logging.WARNING, logger="porep.circuit.pce"):
        pce.cached_template(shape, tmp_path)
    assert len(calls) == 2 and "unusable" in caplog.text
    assert pce.PartitionTemplate.load(entry, pce.cache_key(shape)).digest() == template_2kib.digest()

    # a truncated file and a missing file are rebuilt too
    (entry / "A_ptr.npy").write_bytes(b"\x93NUMPY")
    pce.cached_template(shape, tmp_path)
    (entry / "table.npy").unlink()
    pce.cached_template(shape, tmp_path)
    assert len(calls) == 4

    # another code version: a different entry; the old one is removed when the new one is saved
    monkeypatch.setattr(pce, "code_version", lambda: "0123456789abcdef")
    assert pce.cache_key(shape) != entry.name
    with pytest.raises(ValueError, match="recorded for"):
        pce.PartitionTemplate.load(entry, pce.cache_key(shape))
    pce.cached_template(shape, tmp_path)
    assert len(calls) == 5 and not entry.exists() and (tmp_path / "pce" / pce.cache_key(shape)).is_dir()


def test_code_version_covers_the_row_shaping_modules() -> None:
    root = Path(pce.__file__).resolve().parent.parent
    assert all((root / rel).is_file() for rel in pce.CODE_FILES)
    assert len(pce.code_version()) == 16
    assert pce.cache_key(CircuitShape(6, (8, 8), 2, 2)) == f"d6-a8.8-l2-c2-{pce.code_version()}"


def test_partition_r1cs_uses_the_cache(
    template_2kib: pce.PartitionTemplate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pce, "record", lambda s: template_2kib)
    r = partition_r1cs(PT_2KIB, tmp_path)
    assert isinstance(r.a, CompactCSR) and r.num_constraints_total == 2_687_961
    assert (tmp_path / "pce" / pce.cache_key(CircuitShape.for_proof_type(PT_2KIB))).is_dir()


# ------------------------------------------------------------------------------------------------ long


@long_only
def test_2kib_pce_equals_blank_system(template_2kib: pce.PartitionTemplate) -> None:
    _assert_same(template_2kib.r1cs(), blank_system(PT_2KIB).to_r1cs())


@long_only
@pytest.mark.parametrize("name", ["StackedDrg8MiBV1_1", "StackedDrg512MiBV1_1", "StackedDrg32GiBV1_1"])
def test_pce_counts_equal_partition_stats(name: str) -> None:
    """The template's counts equal partition_stats' (32GiB: cuzk's measured shape; one 32GiB challenge
    takes a few GB to record)."""
    shape = CircuitShape.for_proof_type(proof_type(name))
    assert pce.record(shape).stats() == partition_stats(shape)


@long_only
def test_8mib_pce_equals_blank_system() -> None:
    pt = proof_type("StackedDrg8MiBV1_1")
    t = pce.record(CircuitShape.for_proof_type(pt))
    r = t.r1cs()
    assert r.num_constraints_total == 3_844_969
    assert (r.a.nnz, r.b.nnz, r.c.nnz) == (9_388_413, 3_847_886, 8_234_882)
    _assert_same(r, blank_system(pt).to_r1cs())


@long_only
@pytest.mark.parametrize(("tree", "nodes"), [((8, 4, 2), 64), ((2, 0, 0), 8)])
def test_one_challenge_shapes_equal_the_direct_synthesis(tree: tuple[int, int, int], nodes: int) -> None:
    """The published one-challenge test circuits (sub and top levels, binary trees), N = 1."""
    from porep.circuit.cs import ConstraintSystem
    from porep.circuit.stacked import synthesize

    shape = CircuitShape.for_tree(nodes, *tree, layers=2, challenges=1)
    cs = ConstraintSystem(witness=False)
    synthesize(cs, shape)
    _assert_same(pce.record(shape).r1cs(), cs.to_r1cs())
