"""Filecoin addresses (go-address): the byte form signed over, and the f…/t… string form in URLs.

Bytes are ``protocol ‖ payload``. Protocols: 0 ID (payload = uvarint actor id, string is decimal),
1 secp256k1 (payload = blake2b-160 of the 65-byte uncompressed public key), 2 actor (blake2b-160),
3 BLS (48-byte public key). For 1–3 the string is ``network ‖ protocol digit ‖ base32-lower-nopad(payload ‖
checksum)`` with checksum = blake2b-32 over the bytes. The network letter (``f`` mainnet, ``t`` testnet) is a
formatting choice, not part of the address. Delegated (f4) addresses are not supported: the
market signer is f1.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from enum import IntEnum

from market.errors import InvalidAddress

__all__ = ["Address", "Protocol", "address_checksum", "parse_address"]

PAYLOAD_HASH_LEN = 20
CHECKSUM_LEN = 4
BLS_PUBKEY_LEN = 48
MAX_ADDRESS_STRING_LEN = 2 + 84  # go-address MaxAddressStringLength (a BLS address)
MAX_ACTOR_ID = 2**63 - 1  # go-address refuses IDs >= 2^63
NETWORKS = ("f", "t")
_BASE32_LOWER = re.compile(r"[a-z2-7]*")


class Protocol(IntEnum):
    ID = 0
    SECP256K1 = 1
    ACTOR = 2
    BLS = 3


def address_checksum(address_bytes: bytes) -> bytes:
    """blake2b-32 over protocol byte + payload (go-address ``Checksum``)."""
    return hashlib.blake2b(address_bytes, digest_size=CHECKSUM_LEN).digest()


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _read_uvarint(data: bytes) -> int:
    """Decode a minimal uvarint that spans all of ``data`` (go-varint rules: ≤ 9 bytes, no padding zeros)."""
    n = shift = 0
    for i, b in enumerate(data):
        if i >= 9:
            raise InvalidAddress("ID payload: uvarint too long")
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            if i + 1 != len(data):
                raise InvalidAddress("ID payload: trailing bytes after the uvarint")
            if b == 0 and i > 0:
                raise InvalidAddress("ID payload: non-minimal uvarint")
            return n
    raise InvalidAddress("ID payload: truncated uvarint")


@dataclass(frozen=True, slots=True)
class Address:
    """A parsed address; ``to_bytes()`` is what CBOR carries, ``str(addr)``/``encode()`` what URLs carry."""

    protocol: Protocol
    payload: bytes

    def __post_init__(self) -> None:
        p, n = self.protocol, len(self.payload)
        if p in (Protocol.SECP256K1, Protocol.ACTOR) and n != PAYLOAD_HASH_LEN:
            raise InvalidAddress(f"protocol {int(p)} payload must be {PAYLOAD_HASH_LEN} bytes, got {n}")
        if p == Protocol.BLS and n != BLS_PUBKEY_LEN:
            raise InvalidAddress(f"BLS payload must be {BLS_PUBKEY_LEN} bytes, got {n}")
        if p == Protocol.ID and _read_uvarint(self.payload) > MAX_ACTOR_ID:
            raise InvalidAddress("actor IDs must be below 2^63")

    @classmethod
    def from_secp256k1_pubkey(cls, pubkey65: bytes) -> Address:
        """f1 address of an uncompressed (65-byte, 0x04-prefixed) secp256k1 public key."""
        if len(pubkey65) != 65 or pubkey65[0] != 0x04:
            raise InvalidAddress("a secp256k1 address needs the 65-byte uncompressed public key")
        return cls(Protocol.SECP256K1, hashlib.blake2b(pubkey65, digest_size=PAYLOAD_HASH_LEN).digest())

    @classmethod
    def from_id(cls, actor_id: int) -> Address:
        if not 0 <= actor_id <= MAX_ACTOR_ID:
            raise InvalidAddress("actor IDs must be in [0, 2^63)")
        return cls(Protocol.ID, _uvarint(actor_id))

    @classmethod
    def from_bytes(cls, data: bytes) -> Address:
        if len(data) < 2:
            raise InvalidAddress(f"address bytes too short ({len(data)})")
        try:
            protocol = Protocol(data[0])
        except ValueError:
            raise InvalidAddress(f"unknown address protocol {data[0]}") from None
        return cls(protocol, bytes(data[1:]))

    def to_bytes(self) -> bytes:
        """protocol byte ‖ payload: the form inside CBOR (21 bytes for f1)."""
        return bytes([self.protocol]) + self.payload

    def encode(self, network: str = "f") -> str:
        """String form for ``network`` ('f' mainnet, the default as on Curio's mainnet build; 't' testnet)."""
        if network not in NETWORKS:
            raise InvalidAddress(f"unknown network {network!r} (use 'f' or 't')")
        if self.protocol == Protocol.ID:
            return f"{network}0{_read_uvarint(self.payload)}"
        body = self.payload + address_checksum(self.to_bytes())
        return f"{network}{int(self.protocol)}" + base64.b32encode(body).decode().lower().rstrip("=")

    def __str__(self) -> str:
        return self.encode("f")


def parse_address(text: str) -> Address:
    """Parse an f…/t… string, checking length, network, protocol, base32 alphabet and checksum."""
    if not isinstance(text, str):
        raise InvalidAddress("an address must be a string")
    if not 3 <= len(text) <= MAX_ADDRESS_STRING_LEN:
        raise InvalidAddress(f"invalid address length {len(text)}")
    if text[0] not in NETWORKS:
        raise InvalidAddress(f"unknown network {text[0]!r} in {text!r}")
    if text[1] not in "0123":
        raise InvalidAddress(f"unknown or unsupported address protocol {text[1]!r} in {text!r}")
    protocol = Protocol(int(text[1]))
    raw = text[2:]
    if protocol == Protocol.ID:
        if len(raw) > 20:  # the length of 2^64 - 1 in decimal
            raise InvalidAddress(f"invalid ID address length in {text!r}")
        if not raw.isascii() or not raw.isdigit():
            raise InvalidAddress(f"invalid ID address {text!r}")
        return Address.from_id(int(raw))
    if not _BASE32_LOWER.fullmatch(raw) or len(raw) % 8 in (1, 3, 6):
        raise InvalidAddress(f"{text!r} is not lower-case unpadded base32")
    decoded = base64.b32decode(raw.upper() + "=" * (-len(raw) % 8))
    # Reject encodings with non-zero trailing bits: one address, one string.
    if base64.b32encode(decoded).decode().lower().rstrip("=") != raw:
        raise InvalidAddress(f"{text!r} is not canonical base32")
    if len(decoded) <= CHECKSUM_LEN:
        raise InvalidAddress(f"invalid checksum in {text!r}")
    payload, checksum = decoded[:-CHECKSUM_LEN], decoded[-CHECKSUM_LEN:]
    if protocol in (Protocol.SECP256K1, Protocol.ACTOR) and len(payload) != PAYLOAD_HASH_LEN:
        raise InvalidAddress(f"invalid payload length in {text!r}")
    if address_checksum(bytes([protocol]) + payload) != checksum:
        raise InvalidAddress(f"invalid checksum in {text!r}")
    return Address(protocol, payload)
