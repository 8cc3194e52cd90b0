"""Challenge derivation: the synthetic vector of rust-fil-proofs (porep.md §5) and the interactive
challenges / parents of the first published 2KiB V1_1 seal record (porep.md §9.3)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from porep.ids import porep_id, replica_id
from porep.prooftypes import proof_type
from porep.sdr import challenges as ch
from porep.sdr.graph import StackedGraph

FR = lambda n: n.to_bytes(32, "little")  # noqa: E731


def test_synthetic_vector(fixtures_dir: Path) -> None:
    g = json.loads((fixtures_dir / "golden_vectors.json").read_text())["synthetic_porep_challenges"]
    synth = ch.SynthChallenges(g["sector_nodes"], FR(55), FR(101), count=21)
    assert synth.all() == g["expected_synth_challenges"]
    assert [synth.challenge(i) for i in range(21)] == g["expected_synth_challenges"]
    rand = bytes.fromhex(g["porep_challenge_randomness_hex"])
    assert synth.porep_challenges(rand, 0, 10) == g["expected_porep_challenges"]
    # porep.md §5 quotes the same lists
    assert g["expected_porep_challenges"] == [176, 781, 801, 986, 290, 211, 692, 856, 986, 332]


def test_synthetic_partitions_continue_the_stream() -> None:
    synth = ch.SynthChallenges(1024, FR(55), FR(101), count=21)
    rand = bytes([1]) * 32
    whole = synth.selected_indexes(rand, 0, 40)
    parts = [synth.selected_indexes(rand, k, 8) for k in range(5)]
    assert sum(parts, []) == whole  # partition k starts at challenge 8k, across 64-byte blocks


# porep.md §9.3: first 2KiB V1_1 record of seal_regression_records-v16.json
PROVER = bytes.fromhex("101cbe4b9c42604f04c703c396f788c6cb2d6d7d58f45430b12eb2edd640076c")
SECTOR = 9259733836259213201
TICKET = bytes.fromhex("e8867f2000d5597a0a5f4382c52b8b89890019df5320d486a067f38e6c68624b")
SEED = bytes.fromhex("56964257e0d6c11e074117b36172fff3ebd1a6ec18fa79555e58df5a9d889dcb")
COMM_D = bytes.fromhex("7e45f0925dc72593d6b296100e6ca63e3341c92a50c0e7a9461883a3c959ea28")
COMM_R = bytes.fromhex("d67d57ea6808fd67bdedb331388b5005d3f837b6153c37ff90e720f10f34fc29")


def test_record_values_are_in_the_fixture(fixtures_dir: Path) -> None:
    path = fixtures_dir / "rust-fil-proofs" / "seal_regression_records-v16.json"
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["porep_config"]["sector_size"] == 2048 and rec["porep_config"]["porep_id"][0] == 5:
            assert bytes(rec["comm_d"]) == COMM_D and bytes(rec["comm_r"]) == COMM_R
            assert (bytes(rec["prover_id"]), rec["sector_id"]) == (PROVER, SECTOR)
            assert (bytes(rec["ticket"]), bytes(rec["seed"])) == (TICKET, SEED)
            return
    pytest.fail("no 2KiB V1_1 record")


def test_record_challenges_and_parents() -> None:
    pt = proof_type("StackedDrg2KiBV1_1")
    rid = replica_id(PROVER, SECTOR, TICKET, COMM_D, porep_id(5))
    assert rid.hex() == "da838d3efe2e28665cd17ebfa274f67af8c3b51dfb01e8c6bf8892e712d62006"
    assert int.from_bytes(rid, "little") == 0x0620D612E79288BFC6E801FB1DB5C3F87AF674A2BF7ED15C66282EFE3E8D83DA
    assert ch.derive(pt, rid, SEED, None, 0) == [57, 58]
    # the public inputs x_2, x_3 of porep.md §9.3 are comm_d and comm_r read as little-endian Fr
    assert (
        int.from_bytes(COMM_D, "little") == 0x28EA59C9A3831846A9E7C0502AC941333EA66C0E1096B2D69325C75D92F0457E
    )
    assert (
        int.from_bytes(COMM_R, "little") == 0x29FC340FF120E790FF373C15B637F8D305508B3831B3EDBD67FD0868EA577DD6
    )
    g = StackedGraph.for_proof(pt)
    assert g.drg_parents(57) == [56, 56, 48, 50, 42, 55]
    assert g.exp_parents(57) == [46, 41, 13, 46, 44, 31, 3, 15]
    assert g.drg_parents(58) == [57, 45, 11, 54, 56, 57]
    assert g.exp_parents(58) == [51, 52, 38, 18, 33, 8, 54, 40]


def test_interactive_is_one_list_across_partitions() -> None:
    pt = proof_type("StackedDrg32GiBV1_1")
    rid, seed = FR(7), bytes([9]) * 32
    per = pt.challenges_per_partition
    flat = ch.interactive(pt.nodes, rid, seed, 0, per * pt.partitions)
    assert sum(ch.derive_all(pt, rid, seed, None), []) == flat
    assert all(1 <= c < pt.nodes for c in flat)


def test_non_interactive_definition() -> None:
    pt = proof_type("StackedDrg2KiBV1_2_Feat_NonInteractivePoRep")
    rid, comm_r = FR(11), FR(12)
    got = ch.derive(pt, rid, bytes(32), comm_r, 3)
    want = []
    for i in range(2):
        j = 2 * 3 + i
        h = hashlib.sha256(b"filecoin.io|PoRep|1|NonInteractive|1" + rid + comm_r + j.to_bytes(4, "little"))
        want.append(int.from_bytes(h.digest(), "little") % 63 + 1)
    assert got == want
    assert ch.derive(pt, rid, bytes([5]) * 32, comm_r, 3) == got  # the seed is not used
    with pytest.raises(ValueError, match="comm_r"):
        ch.derive(pt, rid, bytes(32), None, 0)


def test_synthetic_proof_type_uses_synthetic_set() -> None:
    pt = proof_type("StackedDrg2KiBV1_1_Feat_SyntheticPoRep")
    rid, comm_r, seed = FR(55), FR(101), bytes([1]) * 32
    synth = ch.SynthChallenges(64, rid, comm_r)
    assert synth.count == 64
    assert ch.derive(pt, rid, seed, comm_r, 0) == synth.porep_challenges(seed, 0, 2)


def test_hash_to_challenge_never_zero() -> None:
    assert ch.hash_to_challenge(bytes(32), 64) == 1
    assert ch.hash_to_challenge((62).to_bytes(32, "little"), 64) == 63
    assert ch.hash_to_challenge((63).to_bytes(32, "little"), 64) == 1
