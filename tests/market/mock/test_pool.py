"""Challenges from the pool: real C1s for miner 1000 / sector 1, each with a fresh raw random seed."""

from __future__ import annotations

from market.cid import RequestCid
from market.mock.pool import ChallengePool
from market.proofdata import ProofData
from porep.sdr.vanilla_verify import verify_c1


def test_challenges_are_fresh_real_c1s(challenge_pool: ChallengePool) -> None:
    raws = [challenge_pool.take() for _ in range(8)]
    assert len({str(RequestCid.of(r)) for r in raws}) == 8
    seeds = []
    for raw in raws:
        pd = ProofData.parse(raw)
        assert (pd.sector_id.miner, pd.sector_id.number) == (1000, 1) and pd.porep is not None
        seeds.append(bytes(pd.porep.seed))
        assert b'"comm_d":' in raw[:200]  # Go field order: comm_d first, as Curio re-marshals C1s
    # raw random seeds: a seed reduced to a field element would always have its top two bits clear
    assert any(s[31] >= 0x40 for s in seeds)
    sealed = challenge_pool._sectors[0]  # noqa: SLF001
    info = sealed.info
    c1 = ProofData.parse(raws[0]).porep
    assert c1 is not None
    report = verify_c1(c1, prover_id=info.prover_id, sector=info.sector, porep_id=info.porep_id)
    assert report.ok, report.failures[:3]
