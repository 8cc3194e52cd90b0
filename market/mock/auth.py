"""The market's side of request signatures, written from the protocol document (market-protocol.md) and
Curio's ``lib/proofsvc/sigs.go`` / ``sigs_cbor_gen.go``, independently of ``market.signing`` (a bug shared by
the client and the mock would otherwise pass every test).

What the real market does, and so what this does:
* the ``signature`` query value is hex of a cbor-gen map ``{Sig: bytes, NonceID: uint, NonceTime: uint}``,
  decoded as cbor-gen decodes it: keys in any order, unknown keys skipped, missing keys left at zero, but
  every head must be minimal ("cbor input was not canonical") and of definite length; trailing bytes after
  the map are not looked at (``VerifyHexSig`` reads from a ``bytes.Reader`` and never checks the rest);
* the signed bytes are *re-encoded* from the decoded values (``SigningBytes``), never taken from the wire: a
  client that signed anything but cbor-gen's canonical encoding fails verification;
* the time checks come before the signature check, the replay check after it (a nonce is recorded only when
  the signature is valid); the replay cache is in memory, as Curio's is, keyed by (signer, NonceID);
* secp256k1 verification is Filecoin's: recover the public key from ``r‖s‖v`` over blake2b-256(bytes) and
  compare its f1 address with the signer's (``coincurve`` and ``hashlib`` here, not ``market.wallet``).

Malformed signatures and wallet addresses are :class:`AuthError` with status 400, failed verification 401.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from dataclasses import dataclass

from coincurve import PublicKey

__all__ = [
    "AuthError",
    "NONCE_EXPIRY_S",
    "NonceCache",
    "ParsedSignature",
    "SKEW_ALLOWANCE_S",
    "encode_f1",
    "parse_f1",
    "parse_signature",
    "signing_bytes",
    "verify_signed_request",
]

NONCE_EXPIRY_S = 60  # sigs.go NonceExpiry
SKEW_ALLOWANCE_S = 5  # sigs.go SkewAllowance
_MAX_BYTES = 2_097_152  # cbor-gen's limit for []byte fields
_SECP = 1  # crypto.SigTypeSecp256k1
_B32 = "abcdefghijklmnopqrstuvwxyz234567"


class AuthError(Exception):
    """A refused signed request; ``status`` is the HTTP status the mock answers with, ``reason`` a counter."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


# -- f1 addresses (go-address) ------------------------------------------------------------------------------


def _checksum(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=4).digest()


def encode_f1(payload: bytes, network: str = "f") -> str:
    """The string of an f1 address from its 20-byte payload (blake2b-160 of the uncompressed public key)."""
    b32 = base64.b32encode(payload + _checksum(b"\x01" + payload)).decode().lower().rstrip("=")
    return f"{network}1{b32}"


def parse_f1(text: str) -> bytes:
    """The raw address bytes (``0x01 ‖ payload``) of an f1/t1 string; anything else is a 400."""
    if len(text) != 41 or text[0] not in "ft" or text[1] != "1" or any(c not in _B32 for c in text[2:]):
        raise AuthError(400, "bad_address", f"{text[:64]!r} is not an f1 (secp256k1) address")
    body = text[2:]
    decoded = base64.b32decode(body.upper() + "=" * (-len(body) % 8))
    if base64.b32encode(decoded).decode().lower().rstrip("=") != body:
        raise AuthError(400, "bad_address", f"{text!r}: not canonical base32")
    payload, check = decoded[:20], decoded[20:]
    if _checksum(b"\x01" + payload) != check:
        raise AuthError(400, "bad_address", f"{text!r}: bad address checksum")
    return b"\x01" + payload


# -- the cbor-gen subset ------------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


class _Reader:
    """Reads CBOR heads the way cbor-gen's ``CborReadHeader`` does: minimal arguments only."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise _Malformed("unexpected end of CBOR")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def head(self) -> tuple[int, int]:
        first = self.take(1)[0]
        major, low = first >> 5, first & 0x1F
        if low < 24:
            return major, low
        if low > 27:
            raise _Malformed(f"invalid or indefinite-length header 0x{first:02x}")
        size = 1 << (low - 24)
        value = int.from_bytes(self.take(size), "big")
        if value < (24 if size == 1 else 1 << (4 * size)):
            raise _Malformed(f"cbor input was not canonical (argument {value} in {size} bytes)")
        return major, value

    def skip(self, depth: int = 0) -> None:
        """Skip one well-formed item (an unknown key's value)."""
        if depth > 64:
            raise _Malformed("CBOR nested too deeply")
        major, value = self.head()
        if major in (2, 3):
            self.take(value)
        elif major == 4:
            for _ in range(value):
                self.skip(depth + 1)
        elif major == 5:
            for _ in range(2 * value):
                self.skip(depth + 1)
        elif major == 6:
            self.skip(depth + 1)
        elif major == 7 and value not in (20, 21, 22, 23):
            raise _Malformed("floats and other simple values are not cbor-gen")


@dataclass(frozen=True, slots=True)
class ParsedSignature:
    nonce_time: int
    nonce_id: int
    sig: bytes


def parse_signature(hex_text: str) -> ParsedSignature:
    """Decode the ``signature`` query value (hex of the Signature map) as cbor-gen would; 400 on failure."""
    try:
        raw = bytes.fromhex(hex_text)
    except ValueError:
        raise AuthError(400, "malformed_signature", "failed to decode hex signature") from None
    reader = _Reader(raw)
    fields = {"Sig": b"", "NonceID": 0, "NonceTime": 0}
    try:
        major, count = reader.head()
        if major != 5:
            raise _Malformed("cbor input should be of type map")
        for _ in range(count):
            kmaj, klen = reader.head()
            if kmaj != 3:
                raise _Malformed(f"got major type {kmaj} while reading a key")
            key = reader.take(klen).decode("utf-8", errors="replace")
            if key == "Sig":
                vmaj, vlen = reader.head()
                if vlen > _MAX_BYTES:
                    raise _Malformed("Sig: byte array too large")
                if vmaj != 2:
                    raise _Malformed("Sig: expected byte array")
                fields["Sig"] = reader.take(vlen)
            elif key in ("NonceID", "NonceTime"):
                vmaj, value = reader.head()
                if vmaj != 0:
                    raise _Malformed(f"{key}: wrong type for uint64 field")
                fields[key] = value
            else:
                reader.skip()
    except _Malformed as exc:
        raise AuthError(400, "malformed_signature", f"failed to unmarshal signature: {exc}") from None
    return ParsedSignature(int(fields["NonceTime"]), int(fields["NonceID"]), bytes(fields["Sig"]))  # type: ignore[call-overload]


def _cbor_head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    size = 1 if n < 1 << 8 else 2 if n < 1 << 16 else 4 if n < 1 << 32 else 8
    return bytes([major << 5 | (24 + size.bit_length() - 1)]) + n.to_bytes(size, "big")


def _cbor_bytes(b: bytes) -> bytes:
    return _cbor_head(2, len(b)) + b


def _cbor_key(k: str) -> bytes:
    return _cbor_head(3, len(k)) + k.encode()


def signing_bytes(data: bytes, signer: bytes, nonce_time: int, nonce_id: int) -> bytes:
    """``SignedMsg{Data, Signer, Sig: {NonceTime, NonceID, Sig: nil}}.SigningBytes()``: cbor-gen map encoding,
    keys by (length, bytes): SignedMsg → Sig, Data, Signer; Signature → Sig, NonceID, NonceTime."""
    inner = (
        b"\xa3"
        + _cbor_key("Sig")
        + _cbor_bytes(b"")
        + _cbor_key("NonceID")
        + _cbor_head(0, nonce_id)
        + _cbor_key("NonceTime")
        + _cbor_head(0, nonce_time)
    )
    return (
        b"\xa3"
        + _cbor_key("Sig")
        + inner
        + _cbor_key("Data")
        + _cbor_bytes(data)
        + _cbor_key("Signer")
        + (_cbor_bytes(signer))
    )


def _secp_signer(message: bytes, sig65: bytes) -> bytes | None:
    """The f1 address bytes whose key made ``sig65`` over ``message`` (lotus ``sigs/secp``), or None."""
    if len(sig65) != 65 or sig65[64] > 3:
        return None
    try:
        pub = PublicKey.from_signature_and_message(
            sig65, hashlib.blake2b(message, digest_size=32).digest(), hasher=None
        )
    except (ValueError, Exception):  # coincurve raises plain Exception for unrecoverable signatures
        return None
    return b"\x01" + hashlib.blake2b(pub.format(compressed=False), digest_size=20).digest()


class NonceCache:
    """Replay protection: a (signer, NonceID) is remembered until its NonceTime can no longer pass the expiry
    check. Curio's ``NonceCache`` rotates two time buckets and, on entering a new window, empties the bucket
    of the window just ended, so a nonce from the last seconds of a window can be replayed in the next one;
    the mock does not reproduce that hole (our client must never depend on it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[bytes, int], float] = {}
        self._next_prune = 0.0

    def add(self, signer: bytes, nonce_id: int, nonce_time: float, now: float) -> bool:
        key = (signer, nonce_id)
        with self._lock:
            if now >= self._next_prune:
                self._seen = {k: t for k, t in self._seen.items() if t > now}
                self._next_prune = now + NONCE_EXPIRY_S
            if key in self._seen:
                return False
            self._seen[key] = max(nonce_time, now) + NONCE_EXPIRY_S + 1
            return True

    def __len__(self) -> int:
        return len(self._seen)


def verify_signed_request(
    hex_signature: str | None, signer: bytes, dst: str, payload: bytes, *, now: float, nonces: NonceCache
) -> ParsedSignature:
    """Curio ``VerifyHexSig`` for ``signer`` (raw f1 address bytes); raises AuthError (400 / 401)."""
    if hex_signature is None:
        raise AuthError(400, "missing_signature", "missing signature query parameter")
    sig = parse_signature(hex_signature)
    if sig.nonce_time > now + SKEW_ALLOWANCE_S:
        raise AuthError(401, "future_signature", "signature timestamp too far in future")
    if now - sig.nonce_time > NONCE_EXPIRY_S:
        raise AuthError(401, "expired_signature", "signature has expired")
    if len(sig.sig) < 1:
        raise AuthError(401, "short_signature", "invalid signature: too short")
    if sig.sig[0] != _SECP:
        raise AuthError(401, "bad_signature", f"signature type {sig.sig[0]} does not verify for an f1 signer")
    message = signing_bytes(dst.encode() + payload, signer, sig.nonce_time, sig.nonce_id)
    if _secp_signer(message, sig.sig[1:]) != signer:
        raise AuthError(401, "bad_signature", "signature verification failed")
    if not nonces.add(signer, sig.nonce_id, sig.nonce_time, now):
        raise AuthError(401, "replayed_nonce", "nonce already used or expired (replay attack)")
    return sig
