"""Constants and types shared by the circuit tests and their fixtures (conftest.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from gpu.groth16.r1cs import R1CS
from porep.circuit.cs import ConstraintSystem

PROVER, TICKET, SECTOR, SEED = bytes([1]) * 32, bytes([2]) * 32, 7, bytes([3]) * 32

# Long circuit tests (8MiB/512MiB/32GiB counts, every C1 mutation, CPU proving): `make test-circuit-long`.
LONG = os.environ.get("PSAGENT_CIRCUIT_LONG") == "1"
long_only = pytest.mark.skipif(
    not LONG, reason="long circuit test: run `make test-circuit-long` (PSAGENT_CIRCUIT_LONG=1); not in CI"
)


@dataclass
class Synthesised:
    cs: ConstraintSystem
    r1cs: R1CS
