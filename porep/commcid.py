"""Commitment CIDs (CommD / CommR) ↔ their 32-byte digests, stdlib only (docs deps.md §4, go-fil-commcid).

A commitment CID is CIDv1 = uvarint(1) ‖ uvarint(codec) ‖ uvarint(multihash code) ‖ uvarint(32) ‖ digest,
written in multibase base32 lower case without padding (prefix ``b``). Decoding is strict: the string must
be exactly what encoding its digest gives back, so a CID we accept always round-trips byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Literal

from porep.ids import uvarint

FIL_COMMITMENT_UNSEALED = 0xF101  # multicodec fil-commitment-unsealed
FIL_COMMITMENT_SEALED = 0xF102  # multicodec fil-commitment-sealed
SHA2_256_TRUNC254_PADDED = 0x1012  # multihash of a CommD
POSEIDON_BLS12_381_A2_FC1 = 0xB401  # multihash of a CommR (go-multihash says ..._A1_FC1)

# BLS12-381 scalar field modulus: a CommR is a Poseidon output, so a canonical Fr element below it.
FR_MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001

Kind = Literal["unsealed", "sealed"]
_CODES: dict[str, tuple[int, int]] = {
    "unsealed": (FIL_COMMITMENT_UNSEALED, SHA2_256_TRUNC254_PADDED),
    "sealed": (FIL_COMMITMENT_SEALED, POSEIDON_BLS12_381_A2_FC1),
}
_BASE32_LOWER = re.compile(r"b[a-z2-7]+")
_MAX_CID_CHARS = 128  # a commitment CID is 62 characters; anything far longer is not one


class CommCIDError(ValueError):
    """A string is not a well-formed commitment CID of the expected kind."""


def _read_uvarint(raw: bytes, pos: int, what: str) -> tuple[int, int]:
    value = shift = 0
    start = pos
    while True:
        if pos >= len(raw):
            raise CommCIDError(f"truncated {what} varint")
        b = raw[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
        if shift >= 63:
            raise CommCIDError(f"{what} varint too long")
    if raw[start:pos] != uvarint(value):
        raise CommCIDError(f"{what} varint is not minimally encoded")
    return value, pos


def _check_digest(kind: Kind, digest: bytes) -> None:
    if kind == "unsealed" and digest[31] & 0xC0:
        raise CommCIDError("CommD digest has bits 254/255 set; a sha2-256-trunc254 digest never does")
    if kind == "sealed" and int.from_bytes(digest, "little") >= FR_MODULUS:
        raise CommCIDError("CommR digest is not a canonical BLS12-381 Fr element")


def commitment_to_cid(digest: bytes, kind: Kind) -> str:
    """The CID string of a 32-byte commitment; ``kind`` is ``"unsealed"`` (CommD) or ``"sealed"`` (CommR)."""
    if kind not in _CODES:
        raise ValueError(f"kind must be 'unsealed' or 'sealed', got {kind!r}")
    digest = bytes(digest)
    if len(digest) != 32:
        raise CommCIDError(f"commitment must be 32 bytes, got {len(digest)}")
    _check_digest(kind, digest)
    codec, mh = _CODES[kind]
    raw = uvarint(1) + uvarint(codec) + uvarint(mh) + uvarint(32) + digest
    return "b" + base64.b32encode(raw).decode("ascii").lower().rstrip("=")


def cid_to_commitment(cid: str, kind: Kind) -> bytes:
    """The 32-byte digest of a commitment CID, after checking version, codec, multihash and length."""
    if kind not in _CODES:
        raise ValueError(f"kind must be 'unsealed' or 'sealed', got {kind!r}")
    if not isinstance(cid, str):
        raise CommCIDError(f"CID must be a string, got {type(cid).__name__}")
    if len(cid) > _MAX_CID_CHARS or not _BASE32_LOWER.fullmatch(cid):
        raise CommCIDError(f"not a base32-lower ('b…') CID: {cid[:80]!r}")
    body = cid[1:].upper()
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except binascii.Error as exc:
        raise CommCIDError(f"bad base32 in CID: {exc}") from None
    version, pos = _read_uvarint(raw, 0, "CID version")
    if version != 1:
        raise CommCIDError(f"CID version {version}, expected 1")
    codec, pos = _read_uvarint(raw, pos, "codec")
    mh, pos = _read_uvarint(raw, pos, "multihash code")
    length, pos = _read_uvarint(raw, pos, "digest length")
    want_codec, want_mh = _CODES[kind]
    if codec != want_codec:
        raise CommCIDError(f"codec 0x{codec:x}, expected 0x{want_codec:x} ({kind} commitment)")
    if mh != want_mh:
        raise CommCIDError(f"multihash 0x{mh:x}, expected 0x{want_mh:x} ({kind} commitment)")
    if length != 32 or len(raw) - pos != 32:
        raise CommCIDError(f"digest of {len(raw) - pos} bytes (declared {length}), expected 32")
    digest = raw[pos:]
    _check_digest(kind, digest)
    if commitment_to_cid(digest, kind) != cid:
        raise CommCIDError("CID is not in canonical form (non-zero trailing base32 bits)")
    return digest


def comm_d_to_cid(comm_d: bytes) -> str:
    """CommD (unsealed sector commitment) → ``baga6ea4seaq…`` CID."""
    return commitment_to_cid(comm_d, "unsealed")


def comm_r_to_cid(comm_r: bytes) -> str:
    """CommR (sealed sector commitment) → ``bagboea4b5abc…`` CID."""
    return commitment_to_cid(comm_r, "sealed")


def cid_to_comm_d(cid: str) -> bytes:
    return cid_to_commitment(cid, "unsealed")


def cid_to_comm_r(cid: str) -> bytes:
    return cid_to_commitment(cid, "sealed")
