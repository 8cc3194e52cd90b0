"""ProofShare request signatures, byte-compatible with Curio's ``lib/proofsvc/sigs.go`` ``Sign``/``Verify``.

    Signature = {NonceTime uint64, NonceID uint64, Sig []byte}
    SignedMsg = {Data []byte = dst ‖ payload, Signer address, Sig Signature}

Both are cbor-gen *map-encoded* structs (``cbor-gen-for --map-encoding``): a CBOR map of Go field names whose
entries are sorted by (key length, key bytes), so Signature is written Sig, NonceID, NonceTime and SignedMsg
Sig, Data, Signer. Integers take the shortest CBOR head; a nil ``[]byte`` is an empty byte string (0x40), not
null; the signer is a byte string of the raw address bytes; the nested Signature is a map, not bytes.

Signing: the wallet signs ``SignedMsg.signing_bytes()`` (the message with ``Sig.Sig`` nil); then
``Sig.Sig = type byte ‖ signature`` and the query parameter is ``hex(cbor(Signature))``. A request must
carry a fresh (NonceTime, NonceID): the market rejects times older than 60 s or more than 5 s ahead, and
replayed IDs. The encoder is written out here (a dozen lines) so the rules above are visible; tests
cross-check it against cbor2 in canonical mode and the golden vectors of docs/deps.md §3.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from typing import Protocol

import cbor2

from market.address import Address
from market.errors import ProtocolError, WalletError
from market.wallet import SIG_TYPE_SECP256K1, recover_address

__all__ = [
    "DST_WORK_ASK",
    "DST_WORK_COMPLETE",
    "DST_WORK_WITHDRAW",
    "NONCE_EXPIRY_S",
    "SKEW_ALLOWANCE_S",
    "Signature",
    "SignedMsg",
    "Signer",
    "sign_request",
    "verify_request",
]

DST_WORK_ASK = "work-ask"  # payload: the price in attoFIL, decimal
DST_WORK_WITHDRAW = "work-withdraw"  # payload: the ask id, decimal
DST_WORK_COMPLETE = "work-complete"  # payload: the request CID string
NONCE_EXPIRY_S = 60  # sigs.go NonceExpiry
SKEW_ALLOWANCE_S = 5  # sigs.go SkewAllowance
_U64_MAX = 2**64 - 1
_MAX_SIG_BYTES = 2_097_152  # cbor-gen's byte-array limit for Sig


class Signer(Protocol):
    """What signing needs from a wallet: its address and type-prefixed signatures."""

    @property
    def address(self) -> Address: ...

    def sign_typed(self, message: bytes) -> bytes: ...


# -- the cbor-gen subset -----------------------------------------------------------------------------------


def _head(major: int, n: int) -> bytes:
    """CBOR head with the shortest argument (cbor-gen ``WriteMajorTypeHeader``)."""
    if n < 24:
        return bytes([major << 5 | n])
    for extra, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if n < 1 << (8 * size):
            return bytes([major << 5 | extra]) + n.to_bytes(size, "big")
    raise ValueError(f"{n} does not fit a uint64")


def _uint(n: int) -> bytes:
    return _head(0, n)


def _bytes(b: bytes) -> bytes:
    return _head(2, len(b)) + b  # nil and empty both become 0x40


def _text(s: str) -> bytes:
    raw = s.encode()
    return _head(3, len(raw)) + raw


def _map(entries: dict[str, bytes]) -> bytes:
    """A map of already-encoded values, in cbor-gen order: by key length, then key bytes."""
    keys = sorted(entries, key=lambda k: (len(k.encode()), k.encode()))
    return _head(5, len(keys)) + b"".join(_text(k) + entries[k] for k in keys)


def _check_u64(name: str, n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _U64_MAX:
        raise ValueError(f"{name} must be a uint64, got {n!r}")


# -- the two structs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Signature:
    """The signature envelope sent as ``?signature=hex(cbor(Signature))``."""

    nonce_time: int  # unix seconds when signed
    nonce_id: int  # random uint64, unique per request
    sig: bytes = b""  # signature type byte ‖ signature data; empty while computing the signing bytes

    def __post_init__(self) -> None:
        _check_u64("NonceTime", self.nonce_time)
        _check_u64("NonceID", self.nonce_id)
        if len(self.sig) > _MAX_SIG_BYTES:
            raise ValueError("Sig is longer than cbor-gen allows")

    def to_cbor(self) -> bytes:
        return _map(
            {"Sig": _bytes(self.sig), "NonceID": _uint(self.nonce_id), "NonceTime": _uint(self.nonce_time)}
        )

    def to_hex(self) -> str:
        return self.to_cbor().hex()

    @classmethod
    def from_cbor(cls, data: bytes) -> Signature:
        """Decode as cbor-gen does (any key order, unknown keys skipped); trailing bytes are an error."""
        fp = io.BytesIO(data)
        try:
            obj = cbor2.CBORDecoder(fp).decode()
        except (cbor2.CBORDecodeError, ValueError, EOFError) as exc:
            raise ProtocolError(f"signature is not valid CBOR: {exc}") from None
        if fp.tell() != len(data):
            raise ProtocolError("trailing bytes after the signature CBOR")
        if not isinstance(obj, dict):
            raise ProtocolError("signature CBOR must be a map")
        missing = {"Sig", "NonceID", "NonceTime"} - obj.keys()
        if missing:
            raise ProtocolError(f"signature CBOR lacks {sorted(missing)}")
        sig, nid, ntime = obj["Sig"], obj["NonceID"], obj["NonceTime"]
        if not isinstance(sig, bytes):
            raise ProtocolError("signature field Sig must be a byte string")
        try:
            return cls(nonce_time=ntime, nonce_id=nid, sig=sig)
        except ValueError as exc:
            raise ProtocolError(f"bad signature field: {exc}") from None

    @classmethod
    def from_hex(cls, text: str) -> Signature:
        try:
            raw = bytes.fromhex(text)
        except ValueError:
            raise ProtocolError("signature is not hex") from None
        return cls.from_cbor(raw)


@dataclass(frozen=True, slots=True)
class SignedMsg:
    """What is signed: domain-separated data, the signer's account key, and the nonces."""

    data: bytes
    signer: Address
    sig: Signature

    def to_cbor(self) -> bytes:
        return _map(
            {"Sig": self.sig.to_cbor(), "Data": _bytes(self.data), "Signer": _bytes(self.signer.to_bytes())}
        )

    def signing_bytes(self) -> bytes:
        """The CBOR with ``Sig.Sig`` nil, as ``SignedMsg.SigningBytes`` makes it."""
        return replace(self, sig=replace(self.sig, sig=b"")).to_cbor()


# -- sign and verify ---------------------------------------------------------------------------------------


def _as_bytes(payload: str | bytes) -> bytes:
    return payload.encode() if isinstance(payload, str) else bytes(payload)


def sign_request(signer: Signer, dst: str, payload: str | bytes, *, nonce_time: int, nonce_id: int) -> str:
    """The ``signature`` query value for one request (Curio ``proofsvc.Sign``).

    Pure: the caller supplies the time and a fresh random nonce, so one request = one call.
    """
    msg = SignedMsg(
        data=dst.encode() + _as_bytes(payload),
        signer=signer.address,
        sig=Signature(nonce_time=nonce_time, nonce_id=nonce_id),
    )
    typed = signer.sign_typed(msg.signing_bytes())
    return Signature(nonce_time=nonce_time, nonce_id=nonce_id, sig=typed).to_hex()


def verify_request(
    hex_signature: str,
    signer: Address,
    dst: str,
    payload: str | bytes,
    *,
    now: float,
    max_age_s: float = NONCE_EXPIRY_S,
    skew_s: float = SKEW_ALLOWANCE_S,
) -> Signature:
    """The market's side of ``Sign`` (Curio ``VerifyHexSig`` minus the replay cache, which is the caller's).

    Returns the decoded Signature so the caller can record ``nonce_id``; raises WalletError when the
    signature is stale, from the future, malformed, or not made by ``signer`` (f1 only).
    """
    try:
        sig = Signature.from_hex(hex_signature)
    except ProtocolError as exc:
        raise WalletError(str(exc)) from None
    if sig.nonce_time > now + skew_s:
        raise WalletError("signature timestamp too far in the future")
    if now - sig.nonce_time > max_age_s:
        raise WalletError("signature has expired")
    if len(sig.sig) < 1:
        raise WalletError("invalid signature: too short")
    if sig.sig[0] != SIG_TYPE_SECP256K1:
        raise WalletError(f"unsupported signature type {sig.sig[0]}")
    msg = SignedMsg(data=dst.encode() + _as_bytes(payload), signer=signer, sig=sig)
    if recover_address(msg.signing_bytes(), sig.sig[1:]) != signer:
        raise WalletError("signature verification failed")
    return sig
