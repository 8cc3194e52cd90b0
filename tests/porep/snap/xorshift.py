"""rust-fil-proofs' test RNG, to rebuild the inputs of its published vectors:
``XorShiftRng::from_seed(TEST_SEED)`` (rand_xorshift 0.3) and blstrs ``Scalar::random`` (docs snap.md §3)."""

from __future__ import annotations

from porep.hashes.poseidon import R

TEST_SEED = bytes.fromhex("5962be5d763d318d17db37325406bce5")  # storage-proofs-core lib.rs
M32 = 0xFFFFFFFF


class XorShift:
    def __init__(self, seed: bytes = TEST_SEED):
        self.x, self.y, self.z, self.w = (int.from_bytes(seed[i : i + 4], "little") for i in range(0, 16, 4))

    def next_u32(self) -> int:
        t = (self.x ^ (self.x << 11)) & M32
        self.x, self.y, self.z = self.y, self.z, self.w
        self.w = (self.w ^ (self.w >> 19) ^ (t ^ (t >> 8))) & M32
        return self.w

    def next_u64(self) -> int:
        lo = self.next_u32()
        return (self.next_u32() << 32) | lo

    def fr(self) -> int:
        """blstrs ``Scalar::random``: four u64 LE limbs, the top bit cleared, values >= r drawn again."""
        while True:
            limbs = [self.next_u64() for _ in range(4)]
            limbs[3] &= 0x7FFFFFFFFFFFFFFF
            v = sum(limb << (64 * i) for i, limb in enumerate(limbs))
            if v < R:
                return v

    def fr_bytes(self) -> bytes:
        return self.fr().to_bytes(32, "little")
