"""A PoSt request as the prover consumes it — the two questions ``porep.circuit.partition`` answers for PoRep
and ``porep.snap.partition`` for SnapDeals: the circuit's R1CS (the same for every request of a proof type's
shape; from the pre-compiled circuit) and a request's full assignment (the vectorised witness); and the
verifier's side, the public inputs from the request's public values only.
"""

from __future__ import annotations

import os

import numpy as np

from gpu.groth16.r1cs import R1CS
from porep.circuit.pce import PartitionTemplate
from porep.post.circuit import PoStShape
from porep.post.params import PoStProofType, post_proof_type
from porep.post.verify import CheckedPoSt

__all__ = ["PoStCircuit", "post_assignment", "post_public_inputs", "post_r1cs", "post_template"]


def _pt(pt: PoStProofType | int | str) -> PoStProofType:
    return pt if isinstance(pt, PoStProofType) else post_proof_type(pt)


def post_r1cs(pt: PoStProofType | int | str, cache_dir: str | os.PathLike[str] | None = None) -> R1CS:
    """The R1CS of ``pt``'s circuit (bellperson's row and column order, compact matrices); ``cache_dir`` keeps
    the recorded sector template under ``cache_dir/pce``."""
    from porep.post.pce import post_pce

    return post_pce(PoStShape.for_proof_type(_pt(pt)), cache_dir)


def post_template(
    pt: PoStProofType | int | str, cache_dir: str | os.PathLike[str] | None = None
) -> PartitionTemplate:
    """The recorded sector of ``pt``'s circuit: ``stats()`` gives the counts without tiling."""
    from porep.post.pce import cached_template, record

    shape = PoStShape.for_proof_type(_pt(pt))
    return cached_template(shape, cache_dir) if cache_dir is not None else record(shape)


def post_assignment(checked: CheckedPoSt, out: np.ndarray | None = None) -> np.ndarray:
    """The full assignment (canonical ``(num_inputs + num_aux, 8)`` uint32, ONE first) of a checked request:
    equal to ``porep.post.circuit.synthesize_request(checked).witness_array()``."""
    from porep.post.witness import post_assignment as vectorised

    return vectorised(checked, out=out)


def post_public_inputs(checked: CheckedPoSt) -> list[int]:
    """The inputs after ONE of a checked request (``porep.post.public_inputs``: randomness, partition index,
    sector ids and comm_r only)."""
    from porep.post.public_inputs import public_inputs

    sectors = [(p.sector_id, p.comm_r) for p in checked.proofs]
    return public_inputs(checked.proof_type, checked.randomness, sectors, checked.partition_index)


class PoStCircuit:
    """The FallbackPoSt circuit behind a proving loop's circuit seam (``r1cs(pt)``, ``assignment(work, k)``);
    ``cache``: where the pre-compiled circuit is kept. A request is one partition (``k`` = 0)."""

    def __init__(self, cache: str | os.PathLike[str] | None = None) -> None:
        self.cache = cache

    def r1cs(self, pt: PoStProofType) -> R1CS:
        return post_r1cs(pt, self.cache)

    def assignment(self, checked: CheckedPoSt, k: int) -> np.ndarray:
        if k != 0:
            raise ValueError(f"a PoSt request is one partition, asked for partition {k}")
        return post_assignment(checked)
