"""One partition of a C1 as the prover consumes it: the circuit's R1CS (same for every C1 of a shape) and the
full assignment vector of one C1's partition.

Why a module of its own: every prover path (``psagent prove``, ``bench e2e``, the agent) asks these two
questions and nothing else of the circuit, so the pre-compiled circuit (PCE, ``porep.circuit.pce``) and the
vectorised witness (``porep.circuit.witness``) replace the row-by-row synthesis here, behind one seam.
Today both answers come from the direct synthesis of ``porep.circuit.stacked`` (exact, slow: ~10^5 rows/s).
"""

from __future__ import annotations

import numpy as np

from gpu.groth16.r1cs import R1CS
from porep.circuit.stacked import blank_system, synthesize_c1


def partition_r1cs(pt: object) -> R1CS:
    """The R1CS of one partition of a ``porep.prooftypes.ProofType`` (bellperson's row and column order)."""
    return blank_system(pt).to_r1cs()


def partition_assignment(c1: object, k: int) -> np.ndarray:
    """Partition ``k``'s full assignment, canonical ``(num_inputs + num_aux, 8)`` uint32, ONE first: the
    vector ``R1CS.evaluate`` / ``Assignment.from_r1cs`` take with ``partition_r1cs``'s matrices."""
    return synthesize_c1(c1, k, record=False).witness_array()
