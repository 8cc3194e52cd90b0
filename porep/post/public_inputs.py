"""The FallbackPoSt circuit's public inputs (``FallbackPoStCompound::generate_public_inputs``; docs post.md
§5.2), from the request's public values only: the randomness, the partition index and each sector's id and
comm_r. Never read from a witness.

Per circuit sector, in order: comm_r, then the challenged leaf of each of its challenges (PoR's one input: the
leaf index as an integer, which equals the packed path bits). A WindowPoSt partition with fewer sectors than
the circuit repeats its last sector's inputs; WinningPoSt's 66 circuit sectors are its one sector's
challenges 0..65, each with the sector's comm_r.
"""

from __future__ import annotations

from collections.abc import Sequence

from porep.post.params import PoStKind, PoStProofType, post_proof_type
from porep.post.verify import challenges_of

__all__ = ["public_inputs"]


def public_inputs(
    proof_type: PoStProofType | int,
    randomness: bytes,
    sectors: Sequence[tuple[int, bytes]],
    partition_index: int = 0,
) -> list[int]:
    """The inputs after ONE of one request's partition; ``sectors``: (sector id, comm_r) in request order."""
    pt = proof_type if isinstance(proof_type, PoStProofType) else post_proof_type(proof_type)
    if not sectors:
        raise ValueError("a PoSt partition has at least one sector")
    blocks: list[list[int]] = []
    for i, (sector_id, comm_r) in enumerate(sectors):
        comm = int.from_bytes(comm_r, "little")
        chs = challenges_of(pt, randomness, partition_index, i, sector_id)
        if pt.kind is PoStKind.WINNING:
            blocks += [[comm, c] for c in chs]
        else:
            blocks.append([comm, *chs])
    if len(blocks) > pt.circuit_sectors:
        raise ValueError(f"{len(blocks)} sectors, a {pt.name} partition has at most {pt.circuit_sectors}")
    blocks += [blocks[-1]] * (pt.circuit_sectors - len(blocks))
    return [x for b in blocks for x in b]
