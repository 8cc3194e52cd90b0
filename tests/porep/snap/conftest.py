"""A 2KiB CC sector sealed by porep.sdr.seal and one update of it, shared by the snap tests (sealing compiles
the labelling kernels once per session); a Snap request made of it by ``psagent snap make`` and its
synthesised update circuit."""

from __future__ import annotations

import random

import pytest

from gpu.groth16.r1cs import R1CS
from market.proofdata import ProofData, Snap
from porep.circuit.cs import ConstraintSystem
from porep.fr32 import pad_to_sector, unpadded_size
from porep.ids import prover_id
from porep.sdr.seal import SealedSector, seal
from porep.snap.circuit import synthesize_request
from porep.snap.update import SectorUpdate, update_sector


@pytest.fixture(scope="session")
def cc_2kib() -> SealedSector:
    return seal("StackedDrg2KiBV1_1", prover_id(1000), 7, bytes(range(32)), piece=b"", miner=1000)


@pytest.fixture(scope="session")
def piece_2kib() -> bytes:
    return random.Random(2048).randbytes(unpadded_size(2048))


@pytest.fixture(scope="session")
def update_2kib(cc_2kib: SealedSector, piece_2kib: bytes) -> SectorUpdate:
    return update_sector(cc_2kib, pad_to_sector(piece_2kib, 2048))


@pytest.fixture(scope="session")
def request_2kib(cc_2kib: SealedSector, tmp_path_factory: pytest.TempPathFactory) -> Snap:
    """The Snap ProofData that ``psagent snap make`` writes for the CC sector above, parsed as the agent
    parses a market request."""
    from typer.testing import CliRunner

    from agent.cli import app

    base = tmp_path_factory.mktemp("snap-make")
    cc_2kib.save(base / "cc")
    (base / "piece").write_bytes(random.Random(2049).randbytes(unpadded_size(2048)))
    res = CliRunner().invoke(
        app, ["snap", "make", str(base / "cc"), "--piece", str(base / "piece"), "--out", str(base / "u")]
    )
    assert res.exit_code == 0, res.output
    pd = ProofData.parse((base / "u" / "proofdata.json").read_bytes())
    assert pd.snap is not None
    return pd.snap


@pytest.fixture(scope="session")
def synth_request_2kib(request_2kib: Snap) -> tuple[ConstraintSystem, R1CS]:
    """Partition 0 of that request synthesised with its witness (~20-40 s of Python on 2 cores), once."""
    cs = synthesize_request(request_2kib, 0)
    return cs, cs.to_r1cs()
