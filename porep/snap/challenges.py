"""SnapDeals challenges (rust-fil-proofs ``storage-proofs-update/src/challenges.rs``, docs snap.md §3).

Partition k uses digests k·dpp … k·dpp + dpp − 1 (dpp = digests per partition, counted across all
partitions); each digest H_snap(comm_r_new, index) gives floor(254 / rb) challenges of rb = log2 N − log2 P
LE bits, with k placed above them, so every challenge of partition k lies in [k·N/P, (k+1)·N/P). They
depend on comm_r_new only.
"""

from __future__ import annotations

from porep.snap.params import UpdateConstants
from porep.snap.randomness import digest


def partition_challenges(
    consts: UpdateConstants, comm_r_new: bytes, k: int, count: int | None = None
) -> list[int]:
    """The first ``count`` (default: all) challenges of partition ``k``."""
    if not 0 <= k < consts.partitions:
        raise ValueError(f"partition {k} out of range [0, {consts.partitions})")
    n = consts.challenges if count is None else min(count, consts.challenges)
    rb = consts.random_bits
    per = consts.challenges_per_digest
    mask = (1 << rb) - 1
    out: list[int] = []
    index = k * consts.digests_per_partition
    while len(out) < n:
        d = digest(comm_r_new, index)
        for i in range(min(per, n - len(out))):
            out.append(((d >> (i * rb)) & mask) | (k << rb))
        index += 1
    return out


def all_challenges(consts: UpdateConstants, comm_r_new: bytes) -> list[list[int]]:
    return [partition_challenges(consts, comm_r_new, k) for k in range(consts.partitions)]
