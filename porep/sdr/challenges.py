"""PoRep challenge derivation: interactive, non-interactive (NI), synthetic (SPP ``vanilla/challenges.rs``).

A 32-byte hash becomes a node as ``BigUint_le(h) mod (N − 1) + 1`` (node 0 is never challenged). With n
challenges per partition, challenge i of partition k has global number j = n·k + i (docs porep.md §5):

* interactive (V1, V1_1): h = SHA256(replica_id ‖ seed ‖ u32_le(j));
* NI (V1_2_Feat_NonInteractivePoRep): h = SHA256("filecoin.io|PoRep|1|NonInteractive|1" ‖ replica_id ‖
  comm_r ‖ u32_le(j)); the seed is not used;
* synthetic (V1_1_Feat_SyntheticPoRep): min(N, 2^18) synthetic challenges from an IETF ChaCha20 keystream
  keyed by BLAKE2b("…Synthetic|1|Generation"; replica_id ‖ comm_r), 32 bytes each; the porep challenges
  of partition k are the synthetic challenges at indices u32_le(4 bytes) mod num_synth read from a second
  keystream keyed by BLAKE2b("…Synthetic|1|Selection"; replica_id ‖ seed), starting at challenge n·k.
"""

from __future__ import annotations

import hashlib

from porep.hashes.chacha import chacha20_keystream
from porep.prooftypes import ProofType

NI_TAG = b"filecoin.io|PoRep|1|NonInteractive|1"
SYNTH_GENERATION_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Generation"
SYNTH_SELECTION_KEY = b"filecoin.io|PoRep|1|Synthetic|1|Selection"
SYNTH_NONCE = b"synth-porep\x00"
DEFAULT_SYNTH_CHALLENGES = 1 << 18


def _check32(name: str, value: bytes) -> bytes:
    value = bytes(value)
    if len(value) != 32:
        raise ValueError(f"{name} must be 32 bytes, got {len(value)}")
    return value


def hash_to_challenge(h: bytes, nodes: int) -> int:
    """``(BigUint_le(h) mod (nodes − 1)) + 1``."""
    if nodes <= 2:
        raise ValueError(f"too few sector nodes: {nodes}")
    return int.from_bytes(h, "little") % (nodes - 1) + 1


def interactive(nodes: int, replica_id: bytes, seed: bytes, k: int, per_partition: int) -> list[int]:
    replica_id, seed = _check32("replica_id", replica_id), _check32("seed", seed)
    out = []
    for i in range(per_partition):
        j = per_partition * k + i
        h = hashlib.sha256(replica_id + seed + j.to_bytes(4, "little")).digest()
        out.append(hash_to_challenge(h, nodes))
    return out


def non_interactive(nodes: int, replica_id: bytes, comm_r: bytes, k: int, per_partition: int) -> list[int]:
    replica_id, comm_r = _check32("replica_id", replica_id), _check32("comm_r", comm_r)
    prefix = hashlib.sha256(NI_TAG + replica_id + comm_r)
    out = []
    for i in range(per_partition):
        j = per_partition * k + i
        h = prefix.copy()
        h.update(j.to_bytes(4, "little"))
        out.append(hash_to_challenge(h.digest(), nodes))
    return out


def _blake2b_key(key: bytes, *parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=32, key=key)
    for p in parts:
        h.update(p)
    return h.digest()


class SynthChallenges:
    """The synthetic challenge set of one replica (``SynthChallengeGenerator``)."""

    def __init__(self, nodes: int, replica_id: bytes, comm_r: bytes, count: int | None = None):
        self.nodes = nodes
        self.replica_id = _check32("replica_id", replica_id)
        self.comm_r = _check32("comm_r", comm_r)
        self.count = min(nodes, DEFAULT_SYNTH_CHALLENGES) if count is None else count
        if self.count >= 1 << 32:
            raise ValueError("too many synthetic challenges")
        self._key = _blake2b_key(SYNTH_GENERATION_KEY, self.replica_id, self.comm_r)

    def challenge(self, i: int) -> int:
        """Synthetic challenge ``i`` (32 keystream bytes at offset 32·i)."""
        if not 0 <= i < self.count:
            raise IndexError(f"synthetic challenge {i} of {self.count}")
        block = chacha20_keystream(self._key, SYNTH_NONCE, (i // 2) * 64, 64)
        half = block[32:] if i & 1 else block[:32]
        return hash_to_challenge(half, self.nodes)

    def all(self) -> list[int]:
        stream = chacha20_keystream(self._key, SYNTH_NONCE, 0, 32 * self.count)
        return [hash_to_challenge(stream[32 * i : 32 * i + 32], self.nodes) for i in range(self.count)]

    def selected_indexes(self, rand: bytes, k: int, per_partition: int) -> list[int]:
        """Indexes into the synthetic set of partition k's porep challenges."""
        key = _blake2b_key(SYNTH_SELECTION_KEY, self.replica_id, _check32("seed", rand))
        first = k * per_partition
        start_block = first // 16  # 16 four-byte indexes per 64-byte block
        skip = first % 16
        nbytes = -(-(skip + per_partition) * 4 // 64) * 64
        stream = chacha20_keystream(key, SYNTH_NONCE, start_block * 64, nbytes)
        words = [
            int.from_bytes(stream[4 * i : 4 * i + 4], "little") for i in range(skip, skip + per_partition)
        ]
        return [w % self.count for w in words]

    def porep_challenges(self, rand: bytes, k: int, per_partition: int) -> list[int]:
        return [self.challenge(i) for i in self.selected_indexes(rand, k, per_partition)]


def derive(pt: ProofType, replica_id: bytes, seed: bytes, comm_r: bytes | None, k: int) -> list[int]:
    """The challenges of partition ``k`` for a proof type (comm_r is needed by NI and synthetic)."""
    if not 0 <= k < pt.partitions:
        raise ValueError(f"partition {k} of {pt.partitions}")
    n = pt.challenges_per_partition
    if pt.is_non_interactive or pt.is_synthetic:
        if comm_r is None:
            raise ValueError(f"{pt.name} challenges depend on comm_r")
        if pt.is_non_interactive:
            return non_interactive(pt.nodes, replica_id, comm_r, k, n)
        return SynthChallenges(pt.nodes, replica_id, comm_r).porep_challenges(seed, k, n)
    return interactive(pt.nodes, replica_id, seed, k, n)


def derive_all(pt: ProofType, replica_id: bytes, seed: bytes, comm_r: bytes | None) -> list[list[int]]:
    """Challenges of every partition, ``[k][i]``."""
    return [derive(pt, replica_id, seed, comm_r, k) for k in range(pt.partitions)]
