"""The pre-compiled update circuit (porep.snap.pce): the tiled matrices equal the blank direct synthesis'
array for array (2KiB here, 8MiB in the long suite), its counts and densities equal partition_stats, the
header window refuses a shift that would reorder rows, and the disk cache reloads, rebuilds and re-keys."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest
from _snap_cases import long_only

from gpu.groth16.r1cs import R1CS, CompactCSR
from porep.circuit import pce as porep_pce
from porep.circuit.pce import PartitionTemplate
from porep.snap import pce
from porep.snap.circuit import blank_system
from porep.snap.params import update_proof_type
from porep.snap.partition import UpdateCircuit, update_r1cs


@pytest.fixture(scope="module")
def template_2kib() -> PartitionTemplate:
    return pce.record(update_proof_type(0))


def _arrays(r: R1CS) -> dict[str, np.ndarray]:
    mats = {"A": r.a, "B": r.b, "C": r.c}
    return {f"{n}.{f}": getattr(m, f) for n, m in mats.items() for f in ("row_ptr", "cols", "vals")}


def _assert_same(got: R1CS, want: R1CS) -> None:
    """Counts, then every matrix array (dtype and values); the PCE's matrices are compact."""
    for count in ("num_inputs", "num_aux", "num_constraints"):
        assert getattr(got, count) == getattr(want, count), count
    assert all(isinstance(m, CompactCSR) for m in (got.a, got.b, got.c))
    x, y = _arrays(got), _arrays(want)
    for key in x:
        assert x[key].dtype == y[key].dtype and np.array_equal(x[key], y[key]), key


def _assert_stats(t: PartitionTemplate, want: R1CS) -> None:
    s, d = t.stats(), want.density()
    assert (s.num_constraints, s.num_inputs) == (want.num_constraints, want.num_inputs)
    assert s.num_aux == want.num_aux
    assert s.nnz == (want.a.nnz, want.b.nnz, want.c.nnz)
    assert (s.a_aux, s.b_input, s.b_aux) == (int(d.a_aux.sum()), int(d.b_input.sum()), int(d.b_aux.sum()))


@pytest.mark.slow
def test_2kib_tiled_matrices_equal_the_blank_synthesis(template_2kib: PartitionTemplate) -> None:
    """10 challenges tiled from one (each reading its own 6 digest bits through the window): every row
    pointer, column and coefficient of ``blank_system(2KiB).to_r1cs()``; 1,705,039 rows (Rust's count)."""
    want = blank_system(update_proof_type(0)).to_r1cs()
    got = template_2kib.r1cs()
    assert got.num_constraints == 1_705_039 and got.num_inputs == 5
    _assert_same(got, want)
    _assert_stats(template_2kib, want)
    # the window: challenge 0's random bits; challenges 1..9 read the next chunks of digest 0 (42 per digest)
    lo, hi = template_2kib.window
    assert hi - lo == update_proof_type(0).constants.random_bits == 6
    assert template_2kib.window_shift is not None
    assert template_2kib.window_shift.tolist() == [6 * i for i in range(10)]


def test_window_that_would_reorder_rows_is_refused(template_2kib: PartitionTemplate) -> None:
    """A shift past the header's end, or a window above which challenges still read header aux, is not
    tileable: the template refuses it instead of producing unsorted rows."""
    shift = template_2kib.window_shift
    assert shift is not None
    past = shift.copy()
    past[-1] = template_2kib.layout.h_aux
    far = dataclasses.replace(template_2kib, window_shift=past)
    with pytest.raises(ValueError, match="not tileable"):
        far.matrix(0)
    lo, _ = template_2kib.window
    narrow = dataclasses.replace(template_2kib, window=(lo, lo + 1))
    with pytest.raises(ValueError, match="not tileable"):
        narrow.check()


def test_cache_round_trip_corruption_and_staleness(
    template_2kib: PartitionTemplate, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorded: list[object] = []

    def fake_record(pt: object) -> PartitionTemplate:
        recorded.append(pt)
        return template_2kib

    monkeypatch.setattr(pce, "record", fake_record)
    pt = update_proof_type(0)
    key = pce.cache_key(pt)
    assert key.startswith("snap-n64-c10-") and key.endswith(porep_pce.files_version(pce.CODE_FILES))
    t1 = pce.cached_template(pt, tmp_path)
    assert len(recorded) == 1 and t1 is template_2kib
    entry = tmp_path / "pce" / key
    t2 = pce.cached_template(pt, tmp_path)  # from disk: window and shifts round-trip
    assert len(recorded) == 1 and t2.digest() == template_2kib.digest()
    assert t2.window == template_2kib.window
    assert np.array_equal(t2.window_shift, template_2kib.window_shift)  # type: ignore[arg-type]
    # the seam with a cache directory gives the same matrices
    _assert_same(UpdateCircuit(tmp_path).r1cs(pt), template_2kib.r1cs())
    assert len(recorded) == 1
    # a corrupt shift array is caught by the digest, logged and recorded again
    np.save(entry / "window_shift.npy", np.zeros(10, np.int64))
    with caplog.at_level(logging.WARNING, logger="porep.circuit.pce"):
        pce.cached_template(pt, tmp_path)
    assert len(recorded) == 2 and "digest mismatch" in caplog.text
    # an entry of another code version of the same size is removed when the current one is saved
    stale = tmp_path / "pce" / "snap-n64-c10-0000000000000000"
    stale.mkdir()
    (entry / "meta.json").unlink()
    pce.cached_template(pt, tmp_path)
    assert len(recorded) == 3 and not stale.exists() and (entry / "meta.json").exists()


def test_update_r1cs_routes_through_the_pce(
    template_2kib: PartitionTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    """update_r1cs(pt) (no cache) is the PCE's R1CS, by id, name or proof type."""
    monkeypatch.setattr(pce, "record", lambda pt: template_2kib)
    for pt in (0, "StackedDrg2KiBV1", update_proof_type(0)):
        r = update_r1cs(pt)
        assert isinstance(r.a, CompactCSR) and r.num_constraints == 1_705_039


# ------------------------------------------------------------------------------------------------ long


@long_only
def test_8mib_tiled_matrices_equal_the_blank_synthesis() -> None:
    """8MiB: 4 partitions (2 partition bits on top of each challenge), 128 apex leaves, 10 challenges from
    one digest of 15 chunks of 16 bits, hs [7..12]: 10,007,503 rows."""
    pt = update_proof_type(1)
    t = pce.record(pt)
    got = t.r1cs()
    assert got.num_constraints == 10_007_503
    want = blank_system(pt).to_r1cs()
    _assert_same(got, want)
    _assert_stats(t, want)


@long_only
def test_32gib_counts_from_the_pce() -> None:
    """Rust's published 81,049,499 per partition, from the template alone (no tiling, no direct synthesis
    of the 86 challenges): one 2^27 domain."""
    t = pce.record(update_proof_type(3))
    s = t.stats()
    assert (s.num_constraints, s.num_inputs) == (81_049_499, 5)
    assert (s.num_constraints + s.num_inputs - 1).bit_length() == 27
