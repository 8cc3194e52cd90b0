"""sha254 ("SHA-256 trunc254"): Filecoin's hash for tree D, comm_d / commP and the SDR labels.

``Sha256Function`` (rust-fil-proofs ``filecoin-hashers/src/sha256.rs``) is SHA-256 with the two most
significant bits of the little-endian value cleared (``out[31] &= 0x3f``) so that every digest is an Fr
element. Tree D is the binary tree of it over the 32-byte nodes of the fr32-padded data; leaves are the raw
nodes (not hashed). A zero piece's commitment is the root of an all-zero tree (docs porep.md §3).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

NODE = 32


def trim(digest: bytes) -> bytes:
    """Clear the top two bits of byte 31 (``trim_to_fr32``)."""
    b = bytearray(digest)
    b[31] &= 0x3F
    return bytes(b)


def sha254(data: bytes) -> bytes:
    return trim(hashlib.sha256(data).digest())


def node(left: bytes, right: bytes) -> bytes:
    """The binary tree-D node: sha254(left ‖ right)."""
    return sha254(bytes(left) + bytes(right))


def hash_pairs(level: np.ndarray) -> np.ndarray:
    """The next tree-D level: ``uint8[2m, 32]`` → ``uint8[m, 32]``."""
    level = np.ascontiguousarray(level, dtype=np.uint8)
    if level.ndim != 2 or level.shape[1] != NODE or level.shape[0] % 2:
        raise ValueError(f"a tree-D level is uint8[2m, 32], got {level.shape}")
    raw = level.tobytes()
    sha = hashlib.sha256
    out = np.frombuffer(
        b"".join(sha(raw[i : i + 64]).digest() for i in range(0, len(raw), 64)), dtype=np.uint8
    ).reshape(-1, NODE)
    out = out.copy()
    out[:, 31] &= 0x3F
    return out


def hash_pairs_indexed(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """sha254(left[i] ‖ right[i]) for each row of two ``uint8[n, 32]`` arrays."""
    both = np.concatenate([np.asarray(left, np.uint8), np.asarray(right, np.uint8)], axis=1)
    return hash_pairs(both.reshape(-1, NODE))


@lru_cache(maxsize=64)
def zero_comm(padded_size: int) -> bytes:
    """comm_d / commP of ``padded_size`` zero bytes (a power of two ≥ 32; go-commp-utils ``zerocomm``)."""
    if padded_size < NODE or padded_size & (padded_size - 1):
        raise ValueError(f"zero-piece size must be a power of two >= 32, got {padded_size}")
    if padded_size == NODE:
        return bytes(NODE)
    half = zero_comm(padded_size // 2)
    return node(half, half)


def comm_d(padded: bytes | np.ndarray) -> bytes:
    """Root of tree D over fr32-padded data whose length is a power of two ≥ 32 (levels not kept: the
    whole tree is porep.hashes.merkle.build_tree_d, which builds on this module)."""
    level = np.frombuffer(bytes(padded), dtype=np.uint8) if not isinstance(padded, np.ndarray) else padded
    level = np.ascontiguousarray(level, dtype=np.uint8).reshape(-1, NODE)
    n = level.shape[0]
    if n == 0 or n & (n - 1):
        raise ValueError(f"{n} leaves is not a power of 2")
    while level.shape[0] > 1:
        level = hash_pairs(level)
    return level[0].tobytes()
