"""Snap requests in the mock's pool: with ``snap_every`` the pool mixes SnapDeals update requests (a CC sector
updated with fresh random data, as ``psagent snap make`` does) into its PoRep challenges; each passes the
strict Snap check, and the stand-in checker takes the right number of partitions for either kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from market.cid import RequestCid
from market.mock.checker import DigestStandInChecker, stand_in_proof
from market.mock.pool import SNAP_SECTOR, ChallengePool
from market.proofdata import ProofData
from porep.snap.verify import check_partitions


@pytest.mark.slow
def test_pool_mixes_snap_requests(challenge_pool: ChallengePool) -> None:
    """Reuses the session pool's sealed sector; seals one CC sector beside it (~6-12 s)."""
    pool = ChallengePool.open(challenge_pool.directory, snap_every=2)
    raws = [pool.make() for _ in range(4)]
    kinds = [ProofData.parse(r).kind for r in raws]
    assert kinds == ["PoRep", "Snap", "PoRep", "Snap"]
    assert len({str(RequestCid.of(r)) for r in raws}) == 4
    checker = DigestStandInChecker()
    for raw in raws[1::2]:
        pd = ProofData.parse(raw)
        s = pd.snap
        assert s is not None and (pd.sector_id.miner, pd.sector_id.number) == (1000, SNAP_SECTOR)
        assert s.proof_type == 0 and len(s.proofs) == 1 and len(s.proofs[0]) == 15_064
        assert check_partitions(s.proof_type, s.old_r, s.new_r, s.new_d, list(s.proofs)).ok
        assert pd.deci_cost == 16
        assert checker.check("Snap", raw, stand_in_proof(raw)).ok
        assert not checker.check("Snap", raw, stand_in_proof(raw, 2)).ok
    # the same CC sector each time (comm_r_old), new data each time (comm_d_new)
    snaps = [ProofData.parse(r).snap for r in raws[1::2]]
    assert snaps[0] is not None and snaps[1] is not None
    assert snaps[0].old_r == snaps[1].old_r and snaps[0].new_d != snaps[1].new_d
    assert sorted(p.name for p in Path(pool.directory).glob("cc-*")) == ["cc-0"]


def test_snap_every_needs_a_cc_sector(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="CC sector"):
        ChallengePool(tmp_path, [], "StackedDrg2KiBV1_1", snap_every=3)
    with pytest.raises(ValueError, match="no CC sector"):
        ChallengePool(tmp_path, [], "StackedDrg2KiBV1_1").make_snap()
