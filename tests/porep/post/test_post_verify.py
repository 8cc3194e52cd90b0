"""The strict vanilla check: Curio's golden 32GiB proof passes against its public data (randomness 0, prover
1000, sector 1 and the SealedCID's comm_r), and every kind of bad request is refused with a named check."""

from __future__ import annotations

import dataclasses

import pytest
from _postdata import RANDOMNESS, Golden

from porep.post.challenges import sector_leaf_challenges
from porep.post.params import PoStKind, post_proof_type
from porep.post.proof import decode_sector_proof
from porep.post.vanilla import SealedReplica, post_request
from porep.post.verify import CHECKS, PoStProofError, check_post


def test_golden_passes(golden: Golden) -> None:
    assert golden.proof_type == 8  # StackedDrgWindow32GiBV1
    checked = check_post(
        golden.proof_type, golden.randomness, [golden.vproof], kind=PoStKind.WINDOW,
        expected=[(golden.sector, golden.comm_r)],
    ).checked()
    (p,) = checked.proofs
    assert checked.challenges[0] == tuple(mp.path_index((8, 8)) for mp in p.sectors[0].inclusion_proofs)
    # the first sector of a partition has the same challenges under both API versions
    assert check_post(13, golden.randomness, [golden.vproof]).ok
    assert checked.challenges[0] == tuple(
        sector_leaf_challenges(golden.randomness, 1, 1 << 30, api_version="1.0.0", sector_index=0, count=10)
    )


def _checks(report: object) -> set[str]:
    got = report.checks_failed()  # type: ignore[attr-defined]
    assert got <= set(CHECKS)
    return got


def test_changed_randomness_is_refused(golden: Golden) -> None:
    r = check_post(8, bytes([1]) + bytes(31), [golden.vproof])
    assert _checks(r) == {"tree_r.index"} and len(r.failures) == 10
    want = r"tree_r.index: sector 1 \(vanilla proof 0\): the path proves leaf"
    with pytest.raises(PoStProofError, match=want):
        check_post(8, bytes([1]) + bytes(31), [golden.vproof]).checked()


def test_flipped_merkle_node_is_refused(golden: Golden) -> None:
    p, _ = decode_sector_proof(golden.vproof)
    (sp,) = p.sectors
    mp = sp.inclusion_proofs[3]
    el = mp.base[4]
    sib = bytearray(el.hashes[2])
    sib[0] ^= 1
    el2 = dataclasses.replace(el, hashes=(*el.hashes[:2], bytes(sib), *el.hashes[3:]))
    mp2 = dataclasses.replace(mp, base=(*mp.base[:4], el2, *mp.base[5:]))
    bad = dataclasses.replace(p, sectors=(dataclasses.replace(sp, inclusion_proofs=(
        *sp.inclusion_proofs[:3], mp2, *sp.inclusion_proofs[4:])),))
    r = check_post(8, golden.randomness, [bad.to_bytes()])
    assert _checks(r) == {"tree_r.path"} and r.failures[0].challenge == 3


def test_other_refusals(golden: Golden) -> None:
    p, _ = decode_sector_proof(golden.vproof)
    (sp,) = p.sectors
    cases = {
        "header.randomness": check_post(8, b"\xff" * 32, [golden.vproof]),
        "header.sectors": check_post(8, golden.randomness, []),
        "header.proof_type": check_post(8, golden.randomness, [golden.vproof], kind=PoStKind.WINNING),
        "header.public": check_post(8, golden.randomness, [golden.vproof], expected=[(2, golden.comm_r)]),
        "format.trailing": check_post(8, golden.randomness, [golden.vproof + b"\0"]),
        "format": check_post(8, golden.randomness, [golden.vproof[:100]]),
        "commitments.comm_r": check_post(
            8, golden.randomness, [dataclasses.replace(p, comm_r=golden.comm_r[:-1] + b"\x00").to_bytes()]),
        "tree_r.root": check_post(8, golden.randomness, [dataclasses.replace(p, sectors=(
            dataclasses.replace(sp, comm_r_last=sp.comm_c),)).to_bytes()]),
        "shape.challenges": check_post(8, golden.randomness, [dataclasses.replace(p, sectors=(
            dataclasses.replace(sp, inclusion_proofs=sp.inclusion_proofs[:9]),)).to_bytes()]),
        "shape.sectors": check_post(
            8, golden.randomness, [dataclasses.replace(p, sectors=(sp, sp)).to_bytes()]),
        "header.sector_ids": check_post(8, golden.randomness, [golden.vproof, golden.vproof]),
        "shape.tree_r": check_post(9, golden.randomness, [golden.vproof]),  # a 64GiB proof is Top (8-8-2)
    }
    for check, report in cases.items():
        assert check in _checks(report), (check, report.failures[:3])
    assert "values.comm_c" in _checks(check_post(8, golden.randomness, [dataclasses.replace(p, sectors=(
        dataclasses.replace(sp, comm_c=b"\xff" * 32),)).to_bytes()]))


def test_winning_and_window_requests_of_sealed_sectors(
    sector_255: SealedReplica, venus_sectors: list[SealedReplica]
) -> None:
    """Requests made from the fixtures' real sealed 2KiB sectors pass; WinningPoSt takes one sector only and
    partition 0; a WindowPoSt partition's challenges depend on its index under API 1.0.0, not under 1.2.0."""
    assert sector_255.comm_r.hex() == "50fdbefac83c87a935f5d9edfcfe460723b2a3e6d4972f4b866f98cf26e7c43d"
    win = post_request(post_proof_type(0), RANDOMNESS, [sector_255])
    assert check_post(0, RANDOMNESS, win, kind=PoStKind.WINNING).ok
    assert "header.partition" in _checks(check_post(0, RANDOMNESS, win, partition_index=1))
    two = post_request(post_proof_type(0), RANDOMNESS, venus_sectors)
    assert "header.sectors" in _checks(check_post(0, RANDOMNESS, two))
    v10 = post_request(post_proof_type(5), RANDOMNESS, venus_sectors, partition_index=2)
    assert check_post(5, RANDOMNESS, v10, partition_index=2).ok
    assert "tree_r.index" in _checks(check_post(5, RANDOMNESS, v10, partition_index=0))
    v12 = post_request(post_proof_type(10), RANDOMNESS, venus_sectors, partition_index=2)
    assert check_post(10, RANDOMNESS, v12, partition_index=0).ok  # 1.2.0: the index is n alone
    assert check_post(10, RANDOMNESS, v12[::-1]).ok  # 1.2.0: nor on the sector's position
    # 1.0.0: the position does count
    assert "tree_r.index" in _checks(check_post(5, RANDOMNESS, v10[::-1], partition_index=2))
    assert "header.sectors" in _checks(check_post(5, RANDOMNESS, [*v10, v10[0]]))  # 3 > 2 per partition
