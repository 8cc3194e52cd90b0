"""Shared fixtures for the circuit tests: one sealed 2KiB sector and its C1, synthesised once per session."""

from __future__ import annotations

import random

import pytest
from circuit_c1 import PROVER, SECTOR, SEED, TICKET, Synthesised

from porep.c1 import SealCommitPhase1Output
from porep.circuit.stacked import synthesize_c1
from porep.sdr.seal import SealedSector, seal
from porep.sdr.vanilla import make_c1


@pytest.fixture(scope="session")
def sealed_2kib() -> SealedSector:
    piece = random.Random(5).randbytes(2032)
    return seal("StackedDrg2KiBV1_1", PROVER, SECTOR, TICKET, piece=piece)


@pytest.fixture(scope="session")
def c1_2kib(sealed_2kib: SealedSector) -> SealCommitPhase1Output:
    return make_c1(sealed_2kib, SEED)


@pytest.fixture(scope="session")
def synth_2kib(c1_2kib: SealCommitPhase1Output) -> Synthesised:
    cs = synthesize_c1(c1_2kib, 0)
    return Synthesised(cs, cs.to_r1cs())
