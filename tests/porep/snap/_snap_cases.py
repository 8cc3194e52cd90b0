"""What the snap tests share: the long-suite marker, the synthesised circuit's (constraint system, R1CS) pair,
the header assertions and a random dense update of a small sector."""

from __future__ import annotations

import os

import numpy as np
import pytest

from gpu.arith.fields import fr_random
from gpu.groth16.r1cs import R1CS
from porep.circuit.cs import ConstraintSystem
from porep.snap.params import constants_for_nodes
from porep.snap.tree_r import build_tree_r
from porep.snap.update import SectorUpdate, update

LONG = bool(os.environ.get("PSAGENT_SNAP_LONG"))
long_only = pytest.mark.skipif(not LONG, reason="long: set PSAGENT_SNAP_LONG=1 (make test-snap-long)")

Synth = tuple[ConstraintSystem, R1CS]

# (a change to the request's header, the error it raises): what the update circuit asserts of the header,
# on the synthesis path and on the direct witness path alike
HEADER_ASSERTIONS: list[tuple[dict[str, object], str]] = [
    ({"k_and_h_select": 3}, "h_select 0x3 does not have exactly one bit set"),
    ({"k_and_h_select": 0}, "exactly one bit"),
    ({"k_and_h_select": 1 | 1 << 7}, "bits above"),
    ({"apex_leafs": [0] * 7}, "7 apex leaves"),
]


def random_update(nodes: int, seed: int) -> SectorUpdate:
    """A sector of ``nodes`` nodes (random key, data and comm_c from ``seed``) updated densely."""
    rng = np.random.default_rng(seed)
    c = constants_for_nodes(nodes)
    key = fr_random(nodes, rng).astype("<u4").view(np.uint8).reshape(nodes, 32)
    data = rng.integers(0, 256, (nodes, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    comm_c = fr_random(1, rng).astype("<u4").view(np.uint8).tobytes()
    return update(c, build_tree_r(key, c.tree_r), comm_c, data)
