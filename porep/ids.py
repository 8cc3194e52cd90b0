"""The 32-byte identifiers that bind a sealed sector to its prover, its sector and its proof type.

porep_id names the graph (it seeds the DRG and the expander); prover_id and replica_id are the
sealing inputs whose bytes must match Filecoin's exactly, or every label and every commitment
differs (docs porep.md §1.9).
"""

from __future__ import annotations

import hashlib

U64_MAX = (1 << 64) - 1


def _check_u64(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise ValueError(f"{name} must be an integer in [0, 2^64), got {value!r}")


def _check_32(name: str, value: bytes) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be 32 bytes, got {type(value).__name__}")
    value = bytes(value)
    if len(value) != 32:
        raise ValueError(f"{name} must be 32 bytes, got {len(value)}")
    return value


def uvarint(n: int) -> bytes:
    """Unsigned LEB128, as Go's binary.PutUvarint and the multiformats varint write it."""
    if n < 0:
        raise ValueError("uvarint of a negative number")
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def porep_id(registered_proof_id: int, nonce: int = 0) -> bytes:
    """u64_le(id) ‖ u64_le(nonce) ‖ 16 zero bytes (rust-filecoin-proofs-api ``RegisteredSealProof``)."""
    _check_u64("registered proof id", registered_proof_id)
    _check_u64("nonce", nonce)
    return registered_proof_id.to_bytes(8, "little") + nonce.to_bytes(8, "little") + bytes(16)


def prover_id(actor_id: int) -> bytes:
    """The ID-address payload (uvarint of the actor id) in a zeroed 32-byte array, as filecoin-ffi has it."""
    _check_u64("actor id", actor_id)
    payload = uvarint(actor_id)
    return payload + bytes(32 - len(payload))


def replica_id(prover: bytes, sector_number: int, ticket: bytes, comm_d: bytes, porep: bytes) -> bytes:
    """SHA256(prover ‖ u64_be(sector) ‖ ticket ‖ comm_d ‖ porep_id) with the top two bits cleared.

    Clearing bits 254/255 makes the digest a valid little-endian Fr repr (``bytes_into_fr_repr_safe``).
    """
    prover = _check_32("prover_id", prover)
    ticket = _check_32("ticket", ticket)
    comm_d = _check_32("comm_d", comm_d)
    porep = _check_32("porep_id", porep)
    _check_u64("sector number", sector_number)
    digest = bytearray(
        hashlib.sha256(prover + sector_number.to_bytes(8, "big") + ticket + comm_d + porep).digest()
    )
    digest[31] &= 0x3F
    return bytes(digest)
