"""One partition of a Snap request as the prover consumes it: the update circuit's R1CS (the same for every
request of a size) and the full assignment of one request's partition — the two questions
``porep.circuit.partition`` answers for PoRep, so a prover path treats both proof kinds alike.

The R1CS comes from the pre-compiled circuit (``porep.snap.pce``: header + one challenge recorded, tiled over
the challenges, cached on disk when the caller passes its cache directory), the assignment from the vectorised
witness (``porep.snap.witness``); the direct synthesis (``porep.snap.circuit``) stays as their reference.

Also the verifier's side, independent of the circuit: the public inputs of each partition from the request's
commitments (``porep.snap.public_inputs``), never from the synthesised assignment.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from porep.snap.circuit import SnapRequest
from porep.snap.params import UpdateProofType, update_proof_type
from porep.snap.public_inputs import public_inputs


def update_r1cs(pt: UpdateProofType | int | str, cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """The ``gpu.groth16.r1cs.R1CS`` of one partition of an update proof type (bellperson's row and column
    order), with compact matrices, from the pre-compiled circuit (``porep.snap.pce``). ``cache_dir`` (the
    agent passes ``agent.config.cache_dir()``) keeps the recorded template under ``cache_dir/pce``; without it
    the template is recorded afresh."""
    from porep.snap.pce import update_pce

    return update_pce(pt if isinstance(pt, UpdateProofType) else update_proof_type(pt), cache_dir)


def update_template(pt: UpdateProofType | int | str, cache_dir: str | os.PathLike[str] | None = None) -> Any:
    """The recorded header + one challenge of the update circuit (``porep.circuit.pce.PartitionTemplate``,
    cached like ``update_r1cs``'s): its ``stats()`` give the counts without tiling."""
    from porep.snap.pce import cached_template, record

    upt = pt if isinstance(pt, UpdateProofType) else update_proof_type(pt)
    return cached_template(upt, cache_dir) if cache_dir is not None else record(upt)


def _request(work: object) -> SnapRequest:
    """The Snap request of a market ``ProofData`` (its ``snap``), or the request itself."""
    snap = getattr(work, "snap", None)
    if snap is None and hasattr(work, "porep"):
        raise ValueError("not a Snap request (ProofData.Snap is null)")
    return snap if snap is not None else work  # type: ignore[return-value]


def update_assignment(
    snap: SnapRequest | object, k: int, out: np.ndarray | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> np.ndarray:
    """Partition ``k``'s full assignment of a Snap request (``market.proofdata.Snap``, or the ``ProofData``
    carrying it), canonical ``(num_inputs + num_aux, 8)`` uint32, ONE first: the
    vector ``R1CS.evaluate`` / ``Assignment.from_r1cs`` take with :func:`update_r1cs`'s matrices, equal to
    ``synthesize_request(snap, k).witness_array()``. ``out`` (that shape, C-contiguous, e.g. a pinned buffer)
    is written in full and returned; ``cache_dir`` keeps the tree-D node's compiled bit program under
    ``cache_dir/witness``. Raises ``porep.snap.circuit.UpdateWitnessError`` (a ValueError) for a request the
    circuit cannot take; run the strict check (``porep.snap.verify.check_request``) first. Vectorised
    (``porep.snap.witness``)."""
    from porep.snap.witness import update_assignment as vectorised

    return vectorised(_request(snap), k, out=out, cache_dir=cache_dir)


def update_public_inputs(snap: SnapRequest | object) -> list[list[int]]:
    """The four public inputs (after ONE) of every partition, from the request's commitments only
    (``market.proofdata.Snap`` or the ``ProofData`` carrying it)."""
    snap = _request(snap)
    pt = update_proof_type(snap.proof_type)
    c = pt.constants
    return [public_inputs(c, k, snap.old_r, snap.new_d, snap.new_r) for k in range(c.partitions)]


class UpdateWork:
    """A Snap request in the shape a proving loop reads of a C1 (``agent.proving.ProofPipeline.prove``):
    ``proof_type`` (an :class:`~porep.snap.params.UpdateProofType`: ``name``, ``partitions``, ``param_stem``)
    and one ``vanilla_proofs`` entry per partition (the bincode partition proofs)."""

    def __init__(self, work: SnapRequest | object) -> None:
        self.snap = _request(work)
        self.proof_type = update_proof_type(self.snap.proof_type)
        self.vanilla_proofs = tuple(self.snap.proofs)


class UpdateCircuit:
    """The update circuit behind a proving loop's circuit seam (``agent.proving.Circuit``: ``r1cs(pt)``,
    ``assignment(work, k)``), for :class:`UpdateWork` items; ``cache``: where the PCE and the witness's
    compiled programs are kept (as ``agent.proving.PorepCircuit``)."""

    def __init__(self, cache: str | os.PathLike[str] | None = None) -> None:
        self.cache = cache

    def r1cs(self, pt: UpdateProofType | int | str) -> Any:
        return update_r1cs(pt, self.cache)

    def assignment(self, work: UpdateWork | SnapRequest | object, k: int) -> np.ndarray:
        snap = work.snap if isinstance(work, UpdateWork) else work
        return update_assignment(snap, k, cache_dir=self.cache)
