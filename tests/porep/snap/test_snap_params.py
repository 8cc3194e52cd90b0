"""Update proof types and per-size constants against the table of docs snap.md §1.2, and the derived
bincode sizes of §4.2 (a zero proof of each size's exact shape, encoded)."""

from __future__ import annotations

import pytest

from porep.snap.params import (
    UPDATE_PROOF_TYPES,
    RegisteredUpdateProof,
    constants_for_nodes,
    for_sector_size,
    h_select,
    update_proof_type,
)
from porep.snap.proof import ChallengeProof, MerkleProof, PartitionProof, PathElement

Z = bytes(32)

# id: (N, P, n, A, apex height, rb, ch/digest, digests/partition, h, h_select, k_and_h_select(0),
#      tree-R segments (arity, elements), bincode bytes per partition)
TABLE = {
    0: (2**6, 1, 10, 8, 3, 6, 42, 1, 1, 1, 1, [(8, 2)], 15_064),
    1: (2**18, 4, 10, 128, 9, 16, 15, 1, 10, 8, 32, [(8, 6)], 43_864),
    2: (2**24, 16, 86, 128, 13, 20, 12, 8, 10, 8, 128, [(8, 8)], 453_064),
    3: (2**30, 16, 86, 128, 19, 26, 9, 10, 10, 8, 128, [(8, 9), (8, 1)], 561_768),
    4: (2**31, 16, 86, 128, 20, 27, 9, 10, 10, 8, 128, [(8, 9), (8, 1), (2, 1)], 575_528),
}
SIZES = {0: 2048, 1: 8 << 20, 2: 512 << 20, 3: 32 << 30, 4: 64 << 30}


def _zero_proof(segments: list[tuple[int, int]], variant: int) -> MerkleProof:
    segs = [tuple(PathElement((Z,) * (a - 1), 0) for _ in range(n)) for a, n in segments]
    return MerkleProof(variant, Z, Z, *segs)  # type: ignore[arg-type]


@pytest.mark.parametrize("pid", range(5))
def test_constants_match_the_table(pid: int) -> None:
    n_nodes, p, n, a, apex_h, rb, cpd, dpp, h, hsel, khs, segs, size = TABLE[pid]
    t = update_proof_type(pid)
    c = t.constants
    assert t.id == RegisteredUpdateProof(pid) and t.sector_size == SIZES[pid] == n_nodes * 32
    assert (c.nodes, c.partitions, c.challenges, c.apex_leaves) == (n_nodes, p, n, a)
    assert (c.apex_height, c.random_bits, c.challenges_per_digest, c.digests_per_partition) == (
        apex_h,
        rb,
        cpd,
        dpp,
    )
    assert (c.h, c.h_select, c.k_and_h_select(0), c.k_and_h_select(p - 1)) == (h, hsel, khs, khs + p - 1)
    assert c.tree_r_segments() == segs
    r_proof = _zero_proof(segs, c.tree_r_variant)
    d_proof = _zero_proof([(2, c.challenge_bits)], 0)
    proof = PartitionProof(Z, (Z,) * a, (ChallengeProof(r_proof, d_proof, r_proof),) * n)
    assert len(proof.to_bytes()) == size
    assert for_sector_size(SIZES[pid]) is t and update_proof_type(t.name) is t


def test_lookup_errors_and_h_select() -> None:
    assert [t.name for t in UPDATE_PROOF_TYPES] == [
        "StackedDrg2KiBV1",
        "StackedDrg8MiBV1",
        "StackedDrg512MiBV1",
        "StackedDrg32GiBV1",
        "StackedDrg64GiBV1",
    ]
    for bad in (5, -1, True, "StackedDrg2KiBV1_1"):
        with pytest.raises(ValueError):
            update_proof_type(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        for_sector_size(4096)
    with pytest.raises(ValueError):
        constants_for_nodes(1 << 20)
    # hs all 1 for small sizes: h_select picks the first entry, not hs[3]
    assert h_select(64, 1) == 1 and h_select(1 << 30, 7) == 1 and h_select(1 << 30, 12) == 32


@pytest.mark.slow
def test_a_32gib_shaped_request_is_checked_whole() -> None:
    """Sixteen 561,768-byte partitions of the 32GiB shape (all zero values): every check runs, nothing
    crashes, and the failures are named per partition (the shapes themselves are right)."""
    from porep.snap.verify import check_partitions

    c = update_proof_type(3).constants
    r_proof = _zero_proof(c.tree_r_segments(), c.tree_r_variant)
    d_proof = _zero_proof([(2, c.challenge_bits)], 0)
    raw = PartitionProof(
        Z, (Z,) * c.apex_leaves, (ChallengeProof(r_proof, d_proof, r_proof),) * c.challenges
    ).to_bytes()
    report = check_partitions(3, Z, Z, Z, [raw] * 16)
    failed = report.checks_failed()
    assert not any(name.startswith(("shape.", "format", "header.")) for name in failed)
    assert {"commitments.comm_r_old", "tree_d.index", "tree_r_old.path", "apex.root"} <= failed
    assert {f.partition for f in report.failures} == set(range(16))


def test_public_inputs_per_partition() -> None:
    from porep.snap.public_inputs import public_inputs

    one, two, three = (bytes([i]) + bytes(31) for i in (1, 2, 3))
    c = update_proof_type(3).constants
    assert [public_inputs(c, k, one, two, three)[0] for k in (0, 15)] == [128, 143]
    assert public_inputs(update_proof_type(1).constants, 3, one, two, three) == [35, 1, 2, 3]
    assert public_inputs(update_proof_type(0).constants, 0, one, two, three) == [1, 1, 2, 3]
    with pytest.raises(ValueError):
        public_inputs(c, 16, one, two, three)
    with pytest.raises(ValueError):
        public_inputs(c, 0, b"\xff" * 32, two, three)
