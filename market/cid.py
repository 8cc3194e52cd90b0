"""Request CIDs: CIDv1, codec raw (0x55), multihash sha2-256 (0x12, 32 bytes), multibase base32 lower ('b').

The market addresses request data by this CID (Curio ``clientctl.go`` ``UploadProofData``), so the bytes a
provider downloads can be checked against the name it asked for. The layout is fixed — ``01 55 12 20`` +
digest, all single-byte varints — so a few lines of stdlib replace a multiformats dependency.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass

from market.errors import ProtocolError

__all__ = ["RequestCid"]

CID_VERSION = 1
CODEC_RAW = 0x55
MH_SHA2_256 = 0x12
DIGEST_LEN = 32
_PREFIX = bytes([CID_VERSION, CODEC_RAW, MH_SHA2_256, DIGEST_LEN])
_BASE32_LOWER = re.compile(r"b[a-z2-7]+")


def _b32(data: bytes) -> str:
    return base64.b32encode(data).decode().lower().rstrip("=")


@dataclass(frozen=True, slots=True)
class RequestCid:
    """The sha2-256 digest of a request's ProofData bytes; ``str()`` is the canonical ``bafkrei…`` form."""

    digest: bytes

    def __post_init__(self) -> None:
        if len(self.digest) != DIGEST_LEN:
            raise ValueError(f"a sha2-256 digest is {DIGEST_LEN} bytes, got {len(self.digest)}")

    @classmethod
    def of(cls, data: bytes) -> RequestCid:
        """The CID the market gives ``data``."""
        return cls(hashlib.sha256(data).digest())

    @classmethod
    def parse(cls, text: str) -> RequestCid:
        """Parse a base32 CIDv1 string; anything but raw + sha2-256 (or non-canonical) is refused."""
        if not isinstance(text, str) or not _BASE32_LOWER.fullmatch(text):
            raise ProtocolError(f"request CID {text!r} is not a base32 ('b…') CIDv1")
        body = text[1:]
        if len(body) % 8 in (1, 3, 6):
            raise ProtocolError(f"request CID {text!r} has an impossible base32 length")
        raw = base64.b32decode(body.upper() + "=" * (-len(body) % 8))
        if _b32(raw) != body:
            raise ProtocolError(f"request CID {text!r} is not canonical base32")
        if len(raw) != len(_PREFIX) + DIGEST_LEN or raw[: len(_PREFIX)] != _PREFIX:
            raise ProtocolError(
                f"request CID {text!r} is not CIDv1 raw sha2-256 "
                f"(prefix {raw[:4].hex()}, want {_PREFIX.hex()})"
            )
        return cls(raw[len(_PREFIX) :])

    def to_bytes(self) -> bytes:
        return _PREFIX + self.digest

    def __str__(self) -> str:
        return "b" + _b32(self.to_bytes())

    def matches(self, data: bytes) -> bool:
        return hashlib.sha256(data).digest() == self.digest
