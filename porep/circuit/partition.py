"""One partition of a C1 as the prover consumes it: the circuit's R1CS (same for every C1 of a shape) and the
full assignment vector of one C1's partition.

Why a module of its own: every prover path (``psagent prove``, ``bench e2e``, the agent) asks these two
questions and nothing else of the circuit, so the pre-compiled circuit (PCE, ``porep.circuit.pce``) and the
vectorised witness (``porep.circuit.witness``) replace the row-by-row synthesis here, behind one seam.
The R1CS comes from the PCE (header + one challenge recorded, tiled over the challenges; cached on disk when
the caller passes its cache directory); the assignment from the vectorised witness
(``porep.circuit.witness``).
"""

from __future__ import annotations

import os

import numpy as np

from gpu.groth16.r1cs import R1CS
from porep.circuit.pce import PartitionTemplate, cached_template, partition_pce, record
from porep.circuit.stacked import CircuitShape


def partition_r1cs(pt: object, cache_dir: str | os.PathLike[str] | None = None) -> R1CS:
    """The R1CS of one partition of a ``porep.prooftypes.ProofType`` (bellperson's row and column order),
    with compact matrices (``gpu.groth16.r1cs.CompactCSR``). ``cache_dir`` (the agent passes
    ``agent.config.cache_dir()``) keeps the recorded template under ``cache_dir/pce``; without it the
    template is recorded afresh."""
    return partition_pce(CircuitShape.for_proof_type(pt), cache_dir)


def partition_template(pt: object, cache_dir: str | os.PathLike[str] | None = None) -> PartitionTemplate:
    """The recorded header + one challenge of ``pt``'s partition (cached like ``partition_r1cs``'s): its
    ``stats()`` give the partition's counts without tiling the matrices (a memory plan of a 32GiB proof)."""
    shape = CircuitShape.for_proof_type(pt)
    return cached_template(shape, cache_dir) if cache_dir is not None else record(shape)


def partition_assignment(
    c1: object, k: int, out: np.ndarray | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> np.ndarray:
    """Partition ``k``'s full assignment, canonical ``(num_inputs + num_aux, 8)`` uint32, ONE first: the
    vector ``R1CS.evaluate`` / ``Assignment.from_r1cs`` take with ``partition_r1cs``'s matrices. Computed by
    the vectorised witness (``porep.circuit.witness``), equal to ``synthesize_c1(c1, k).witness_array()``;
    ``out`` (C-contiguous, that shape; e.g. a pinned buffer) is written in full and returned; ``cache_dir``
    keeps the compiled gadget templates under ``cache_dir/witness`` (seconds each to record: 3 at 2KiB,
    12 at 32GiB)."""
    from porep.circuit.witness import partition_assignment as vectorised

    return vectorised(c1, k, out=out, cache_dir=cache_dir)
