"""agent.proving.work: every input format recognised in one place, strictly checked, public inputs once.

A real 2KiB request (sealed once per session) in each of the four forms the agent and the CLI take: the
market's ProofData (PoRep and Snap), a bare C1, lotus-bench's c1out.json envelope."""

from __future__ import annotations

import base64
import json

import pytest

from agent.proving.work import InputFormat, JobId, Work, WorkError, WorkKind, recognise
from market.proofdata import ProofData
from porep.ids import prover_id
from porep.sdr.public_inputs import from_c1, record_inputs


@pytest.fixture(scope="module")
def c1_raw(work_bytes: bytes) -> bytes:
    raw = ProofData.parse(work_bytes).porep_raw
    assert raw is not None
    return raw


def _lotus(c1_raw: bytes, sector: int = 1, size: int = 2048) -> bytes:
    return json.dumps(
        {"SectorNum": sector, "Phase1Out": base64.b64encode(c1_raw).decode(), "SectorSize": size}
    ).encode()


def test_a_market_request_is_bound_to_its_sector(work_bytes: bytes) -> None:
    work = Work.from_bytes(work_bytes, request_only=True)
    assert work.kind is WorkKind.POREP and work.format is InputFormat.PROOFDATA
    assert (work.miner, work.sector) == (1000, 1) and work.bound and work.raw == work_bytes
    assert work.proof_type.name == "StackedDrg2KiBV1_1" and work.partitions == 1 and work.proof_bytes == 192
    c1 = work.c1
    assert c1 is not None and work.update is None
    want = record_inputs(
        c1.proof_type, prover_id=prover_id(1000), sector_id=1, ticket=c1.arrays.domain("ticket"),
        seed=c1.arrays.domain("seed"), comm_d=c1.arrays.domain("comm_d"), comm_r=c1.arrays.domain("comm_r"),
    )
    assert work.public_inputs == tuple(tuple(v) for v in want)
    assert JobId.for_request(work, 7, 2) == "ps-porep-1000-1-7-2"
    # another sector for the same C1: its replica_id is not that sector's, the strict check says so
    with pytest.raises(WorkError, match="the C1 failed the strict check: .*replica_id"):
        Work.from_bytes(work_bytes, miner=1000, sector=2)


def test_a_bare_c1_and_a_lotus_bench_envelope(c1_raw: bytes) -> None:
    bare = Work.from_bytes(c1_raw)
    assert bare.format is InputFormat.C1 and not bare.bound and bare.miner is None
    assert bare.c1 is not None and bare.public_inputs == tuple(tuple(v) for v in from_c1(bare.c1))
    bound = Work.from_bytes(c1_raw, miner=1000, sector=1)
    assert bound.bound and bound.public_inputs == bare.public_inputs  # an honest C1: the same vectors
    with pytest.raises(WorkError, match="both --miner and --sector"):
        Work.from_bytes(c1_raw, miner=1000)
    lotus = Work.from_bytes(_lotus(c1_raw))
    assert lotus.format is InputFormat.LOTUS_BENCH and not lotus.bound  # lotus-bench records no miner
    lotus = Work.from_bytes(_lotus(c1_raw), miner=1000)  # the sector number is the envelope's
    assert lotus.bound and lotus.sector == 1 and lotus.public_inputs == bound.public_inputs
    with pytest.raises(WorkError, match="replica_id"):
        Work.from_bytes(_lotus(c1_raw, sector=5), miner=1000)
    with pytest.raises(WorkError, match="SectorSize 8388608 is not that of a StackedDrg2KiBV1_1 C1"):
        recognise(_lotus(c1_raw, size=8 << 20))
    with pytest.raises(WorkError, match="not a valid ProofData"):  # the agent takes ProofData only
        Work.from_bytes(c1_raw, request_only=True)
    with pytest.raises(WorkError, match="neither a C1 JSON nor a ProofData"):
        Work.from_bytes(b'{"not": "a c1"}')


def test_a_snap_request(snap_bytes: bytes) -> None:
    from porep.snap.partition import update_public_inputs

    work = Work.from_bytes(snap_bytes)
    assert work.kind is WorkKind.SNAP and work.update is not None and work.c1 is None and work.bound
    assert work.proof_type.name == "StackedDrg2KiBV1" and work.partitions == 1
    assert work.public_inputs == tuple(tuple(v) for v in update_public_inputs(work.update.snap))
    with pytest.raises(WorkError, match="--miner/--sector are for a bare PoRep C1"):
        Work.from_bytes(snap_bytes, miner=1000, sector=1)
    got = recognise(snap_bytes)
    assert got.snap is not None and got.c1 is None and (got.miner, got.sector) == (work.miner, work.sector)
