"""fr32 padding: raw bytes → 32-byte nodes that are always valid Fr elements (rust-fil-proofs ``fr32``).

The raw stream is read as little-endian bits; after every 254 data bits two zero bits are inserted, so
each 32-byte node has the top two bits of its last byte clear. 127 raw bytes (1016 bits) become exactly
128 padded bytes (4 nodes); a sector of S bytes holds S·127/128 raw bytes (docs porep.md §3).
"""

from __future__ import annotations

import numpy as np

RAW_CHUNK = 127
PADDED_CHUNK = 128
_CHUNKS_PER_STEP = 1 << 14  # bounds the temporary bit arrays to ~16 MiB


def unpadded_size(padded_size: int) -> int:
    """Raw bytes that fit in ``padded_size`` padded bytes (a multiple of 128)."""
    if padded_size % PADDED_CHUNK:
        raise ValueError(f"padded size {padded_size} is not a multiple of {PADDED_CHUNK}")
    return padded_size // PADDED_CHUNK * RAW_CHUNK


def padded_size(unpadded: int) -> int:
    if unpadded % RAW_CHUNK:
        raise ValueError(f"unpadded size {unpadded} is not a multiple of {RAW_CHUNK}")
    return unpadded // RAW_CHUNK * PADDED_CHUNK


def pad(raw: bytes | bytearray | memoryview | np.ndarray) -> bytes:
    """fr32-pad ``raw`` (length a multiple of 127)."""
    src = np.frombuffer(bytes(raw), dtype=np.uint8) if not isinstance(raw, np.ndarray) else raw.ravel()
    if src.size % RAW_CHUNK:
        raise ValueError(f"fr32 padding needs a multiple of {RAW_CHUNK} bytes, got {src.size}")
    chunks = src.reshape(-1, RAW_CHUNK)
    out = np.empty((chunks.shape[0], PADDED_CHUNK), dtype=np.uint8)
    for lo in range(0, chunks.shape[0], _CHUNKS_PER_STEP):
        part = chunks[lo : lo + _CHUNKS_PER_STEP]
        bits = np.unpackbits(part, axis=1, bitorder="little").reshape(-1, 4, 254)
        padded = np.zeros((bits.shape[0], 4, 256), dtype=np.uint8)
        padded[:, :, :254] = bits
        out[lo : lo + part.shape[0]] = np.packbits(padded.reshape(-1, 1024), axis=1, bitorder="little")
    return out.tobytes()


def unpad(padded: bytes | bytearray | memoryview | np.ndarray, *, strict: bool = True) -> bytes:
    """Inverse of :func:`pad` (length a multiple of 128). ``strict`` rejects nodes whose two pad bits are
    set (such bytes were not produced by :func:`pad`)."""
    src = (
        np.frombuffer(bytes(padded), dtype=np.uint8) if not isinstance(padded, np.ndarray) else padded.ravel()
    )
    if src.size % PADDED_CHUNK:
        raise ValueError(f"fr32 unpadding needs a multiple of {PADDED_CHUNK} bytes, got {src.size}")
    nodes = src.reshape(-1, 32)
    if strict and (nodes[:, 31] & 0xC0).any():
        raise ValueError("a node has its two fr32 pad bits set")
    chunks = src.reshape(-1, PADDED_CHUNK)
    out = np.empty((chunks.shape[0], RAW_CHUNK), dtype=np.uint8)
    for lo in range(0, chunks.shape[0], _CHUNKS_PER_STEP):
        part = chunks[lo : lo + _CHUNKS_PER_STEP]
        bits = np.unpackbits(part, axis=1, bitorder="little").reshape(-1, 4, 256)[:, :, :254]
        out[lo : lo + part.shape[0]] = np.packbits(bits.reshape(-1, 1016), axis=1, bitorder="little")
    return out.tobytes()


def pad_to_sector(piece: bytes, sector_size: int) -> bytes:
    """The padded sector image of one piece: ``piece`` zero-extended to the sector's raw capacity, padded.

    (For a piece whose padded size is a power of two this is also what piece alignment would give: the
    rest of the sector is zero pieces.)
    """
    cap = unpadded_size(sector_size)
    if len(piece) > cap:
        raise ValueError(f"piece of {len(piece)} bytes does not fit a {sector_size}-byte sector ({cap} raw)")
    return pad(bytes(piece) + bytes(cap - len(piece)))
