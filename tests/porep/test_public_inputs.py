"""Public inputs of the PoRep circuit, derived without the circuit.

Oracles: the 39 values porep.md §9.3 lists for the first 2KiB V1_1 regression record (Filecoin's own
record, read from the fixtures), the C1's own paths (an independent route to the same indices), and the
per-partition layout of a 32GiB-shaped C1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from porep.c1 import C1Arrays, SealCommitPhase1Output
from porep.c1.synth import synth_arrays
from porep.prooftypes import proof_type
from porep.sdr import public_inputs as pi
from porep.sdr.seal import SealedSector, seal
from porep.sdr.vanilla import make_c1

# porep.md §9.3, "public inputs x_1..x_39" of the first 2KiB V1_1 record
RECORD_INPUTS = [
    0x0620D612E79288BFC6E801FB1DB5C3F87AF674A2BF7ED15C66282EFE3E8D83DA,
    0x28EA59C9A3831846A9E7C0502AC941333EA66C0E1096B2D69325C75D92F0457E,
    0x29FC340FF120E790FF373C15B637F8D305508B3831B3EDBD67FD0868EA577DD6,
    *(57, 56, 56, 48, 50, 42, 55, 46, 41, 13, 46, 44, 31, 3, 15, 57, 57, 57),
    *(58, 57, 45, 11, 54, 56, 57, 51, 52, 38, 18, 33, 8, 54, 40, 58, 58, 58),
]


def _first_record(fixtures_dir: Path, api: str) -> dict:
    path = fixtures_dir / "rust-fil-proofs" / "seal_regression_records-v16.json"
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        cfg = rec["porep_config"]
        if cfg["sector_size"] == 2048 and cfg["api_version"] == api and not cfg["api_features"]:
            return rec
    raise AssertionError(f"no 2KiB {api} record")


def _record_vectors(rec: dict, name: str) -> list[list[int]]:
    return pi.record_inputs(
        proof_type(name),
        prover_id=bytes(rec["prover_id"]),
        sector_id=rec["sector_id"],
        ticket=bytes(rec["ticket"]),
        seed=bytes(rec["seed"]),
        comm_d=bytes(rec["comm_d"]),
        comm_r=bytes(rec["comm_r"]),
        porep_id=bytes(rec["porep_config"]["porep_id"]),
    )


def test_first_v1_1_record_matches_porep_md(fixtures_dir: Path) -> None:
    rec = _first_record(fixtures_dir, "V1_1_0")
    assert bytes(rec["comm_r"]).hex().startswith("d67d57ea")
    vectors = _record_vectors(rec, "StackedDrg2KiBV1_1")
    assert len(vectors) == 1 and len(vectors[0]) == 39 == pi.num_inputs(proof_type("StackedDrg2KiBV1_1"))
    assert vectors[0] == RECORD_INPUTS, pi.differences(RECORD_INPUTS, vectors[0])


def test_legacy_graph_changes_the_parents(fixtures_dir: Path) -> None:
    """A V1 (api 1.0) record: same layout, predecessor last among the DRG parents (legacy graph)."""
    rec = _first_record(fixtures_dir, "V1_0_0")
    (vec,) = _record_vectors(rec, "StackedDrg2KiBV1")
    for c in range(2):
        base = 3 + 18 * c
        x = vec[base]
        assert vec[base + 15] == vec[base + 16] == vec[base + 17] == x and 1 <= x < 64
        assert vec[base + 6] == x - 1  # legacy: the predecessor is the 6th DRG parent
    assert vec[2] == int.from_bytes(bytes(rec["comm_r"]), "little")


def test_input_indices_follow_circuit_md() -> None:
    assert pi.input_index(0, 0) == 4 and pi.input_index(1, 0) == 22 and pi.input_index(1, 17) == 39
    assert pi.input_name(3) == "challenge 0: tree_d index"
    assert pi.input_name(3 + 18 + 7) == "challenge 1: expander parent 0"
    assert pi.input_name(38) == "challenge 1: c_x index"
    assert pi.num_inputs(proof_type("StackedDrg32GiBV1_1")) == 327  # vk.ic has 328 with ONE
    with pytest.raises(ValueError, match="offset"):
        pi.input_index(0, 18)


def test_non_canonical_comm_r_is_refused() -> None:
    bad = (pi.R_MODULUS).to_bytes(32, "little")
    with pytest.raises(ValueError, match="comm_r .* not a canonical Fr"):
        pi.assemble(bytes(32), bytes(32), bad, [5], np.zeros((1, 14), dtype=np.int64))


@pytest.fixture(scope="module")
def wp_c1(fixtures_dir: Path) -> tuple[SealCommitPhase1Output, SealedSector]:
    piece = (fixtures_dir / "rust-fil-proofs" / "winning_post" / ".tmpcCAjpp").read_bytes()
    sector = seal(
        "StackedDrg2KiBV1_1", bytes([1]) * 32, 255, bytes([2]) * 32, piece=piece, porep_id=bytes([0x80]) * 32
    )
    return make_c1(sector, bytes([3]) * 32), sector


def test_c1_derivation_equals_the_c1_paths(wp_c1: tuple[SealCommitPhase1Output, SealedSector]) -> None:
    c1, sector = wp_c1
    derived = pi.from_c1(c1, porep_id=sector.info.porep_id)
    seen = pi.from_c1_paths(c1)
    assert derived == seen
    # the same vector from the chain's view (prover, sector, ticket → replica_id)
    info = sector.info
    again = pi.record_inputs(
        c1.proof_type,
        prover_id=info.prover_id,
        sector_id=info.sector,
        ticket=info.ticket,
        seed=bytes([3]) * 32,
        comm_d=info.comm_d,
        comm_r=info.comm_r,
        porep_id=info.porep_id,
    )
    assert again == derived
    # with the proof type's own porep_id the graph differs, so the parents do too
    other = pi.from_c1(c1)
    assert other[0][:3] == derived[0][:3] and other[0] != derived[0]


def test_a_tampered_column_index_is_named(wp_c1: tuple[SealCommitPhase1Output, SealedSector]) -> None:
    c1, sector = wp_c1
    arr = c1.arrays
    fields = dict(arr.fields)
    idx = fields["col.base.index"].copy()
    idx[0, 1, 3, 0] ^= 1  # challenge 1, column 3 = DRG parent 2: flip its lowest octal digit's low bit
    fields["col.base.index"] = idx
    (seen,) = pi.from_c1_paths(C1Arrays(arr.proof_type, fields))
    (want,) = pi.from_c1(c1, porep_id=sector.info.porep_id)
    diff = pi.differences(want, seen)
    assert len(diff) == 1 and diff[0].startswith("challenge 1: drg parent 2:")


def test_32gib_partitions_layout() -> None:
    """Ten partitions of 18 challenges: each vector 327 long, challenge blocks from that partition's rows."""
    arr = synth_arrays("StackedDrg32GiBV1_1", seed=7)
    vectors = pi.from_c1_paths(arr)
    assert len(vectors) == 10 and {len(v) for v in vectors} == {327}
    cols = arr["col.index"]
    for k in (0, 9):
        for c in (0, 17):
            base = 3 + 18 * c
            x = int(arr["lab.node"][k, c, 0])
            assert vectors[k][base] == vectors[k][base + 15] == vectors[k][base + 16] == x
            assert vectors[k][base + 1 : base + 15] == [int(v) for v in cols[k, c, 1:]]
            assert vectors[k][base + 17] == int(cols[k, c, 0])
    assert all(v[:3] == vectors[0][:3] for v in vectors)


def test_32gib_derived_partitions() -> None:
    """The verifier's derivation per partition: partition k's challenges are those of porep.sdr.challenges."""
    from porep.sdr import challenges

    pt = proof_type("StackedDrg32GiBV1_1")
    rid, seed = bytes(range(32)), bytes(range(32, 64))
    rid = rid[:31] + bytes([rid[31] & 0x3F])
    comm = bytes(31) + b"\x01"
    some = pi.sector_inputs(pt, replica_id=rid, seed=seed, comm_d=comm, comm_r=comm, partitions=[3, 9])
    assert len(some) == 2
    for vec, k in zip(some, (3, 9), strict=True):
        want = challenges.interactive(pt.nodes, rid, seed, k, 18)
        assert [vec[3 + 18 * c] for c in range(18)] == want
