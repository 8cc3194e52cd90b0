"""A 2KiB CC sector sealed by porep.seal and one update of it, shared by the snap tests (sealing compiles
the labelling kernels once per session)."""

from __future__ import annotations

import random

import pytest

from porep.fr32 import pad_to_sector, unpadded_size
from porep.ids import prover_id
from porep.seal import SealedSector, seal
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
