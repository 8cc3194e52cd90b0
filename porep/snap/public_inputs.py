"""The EmptySectorUpdate circuit's public inputs per partition, without the circuit (docs snap.md §6.1).

After Groth16's ONE: k_and_h_select = k + h_select·2^pbl, comm_r_old, comm_d_new, comm_r_new (LE Fr reprs
as integers). The partitions differ only in the first value; h itself is not an input.
"""

from __future__ import annotations

from porep.hashes.poseidon import fr_from_le
from porep.snap.params import UpdateConstants, h_select


def public_inputs(
    consts: UpdateConstants,
    k: int,
    comm_r_old: bytes,
    comm_d_new: bytes,
    comm_r_new: bytes,
    h: int | None = None,
) -> list[int]:
    """The four inputs of partition ``k`` (raises ValueError on a non-canonical commitment)."""
    if not 0 <= k < consts.partitions:
        raise ValueError(f"partition {k} out of range [0, {consts.partitions})")
    hsel = consts.h_select if h is None else h_select(consts.nodes, h)
    return [
        k + (hsel << consts.partition_bits),
        fr_from_le(comm_r_old),
        fr_from_le(comm_d_new),
        fr_from_le(comm_r_new),
    ]
