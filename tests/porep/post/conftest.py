"""Real 2KiB sealed sectors for the PoSt tests (the fixtures' rust-fil-proofs sector 255 and venus' two
genesis sectors of miner 106, each with its p_aux), Curio's golden 32GiB vanilla proof and its public data."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from _postdata import Golden

from porep.commcid import cid_to_comm_r
from porep.post.vanilla import SealedReplica


@pytest.fixture(scope="session")
def sector_255(fixtures_dir: Path) -> SealedReplica:
    d = fixtures_dir / "rust-fil-proofs" / "winning_post"
    return SealedReplica(255, (d / ".tmp9BsHuZ").read_bytes(), (d / ".tmp0dbYDb" / "p_aux").read_bytes()[:32])


@pytest.fixture(scope="session")
def venus_sectors(fixtures_dir: Path) -> list[SealedReplica]:
    d = fixtures_dir / "venus-genesis-sectors"
    return [
        SealedReplica(i, (d / "sealed" / f"s-t0106-{i}").read_bytes(),
                      (d / "cache" / f"s-t0106-{i}" / "p_aux").read_bytes()[:32])
        for i in (0, 1)
    ]


@pytest.fixture(scope="session")
def golden(fixtures_dir: Path) -> Golden:
    d = fixtures_dir / "curio" / "testgolden"
    pub = json.loads((d / "postpub.json").read_text())
    (sector,) = pub["ChallengedSectors"]
    return Golden(
        (d / "post.vproof").read_bytes(), base64.b64decode(pub["Randomness"]), pub["Proofs"][0]["PoStProof"],
        sector["SectorNumber"], cid_to_comm_r(sector["SealedCID"]["/"]), pub["Prover"],
    )
