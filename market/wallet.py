"""The provider's wallet: one secp256k1 key, its f1 address, Filecoin signatures, and the key file.

Signing follows lotus ``lib/sigs/secp``: the message is hashed with blake2b-256 and signed with a recoverable
ECDSA signature, 65 bytes ``r ‖ s ‖ v`` with v ∈ {0, 1}. libsecp256k1 (through coincurve) uses RFC 6979
nonces, so signatures are deterministic. Verification recovers the public key and compares addresses, which
is how Filecoin verifies secp256k1 signatures.

The key file holds what ``lotus wallet export`` prints: hex of the JSON
``{"Type":"secp256k1","PrivateKey":"<base64 of 32 bytes>"}``, so the file can be fed back to
``lotus wallet import``. It is written with mode 0600 and refused when anyone but the owner may access it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
import stat
from pathlib import Path

from coincurve import PrivateKey, PublicKey

from market.address import Address
from market.errors import KeyFileError, WalletError

__all__ = [
    "SIG_TYPE_BLS",
    "SIG_TYPE_SECP256K1",
    "Wallet",
    "blake2b256",
    "read_key_file",
    "recover_address",
    "verify_signature",
    "write_key_file",
]

SIG_TYPE_SECP256K1 = 1  # go-state-types crypto.SigTypeSecp256k1
SIG_TYPE_BLS = 2  # crypto.SigTypeBLS (we cannot sign with it; named for the error message)
LOTUS_KEY_TYPE = "secp256k1"
_PRIVATE_MODE_MASK = 0o077  # any group/other permission bit makes a key file unusable


def blake2b256(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


class Wallet:
    """A secp256k1 key and its f1 address. ``repr`` never shows key material."""

    __slots__ = ("_key", "address")

    def __init__(self, private_key: bytes) -> None:
        if len(private_key) != 32:
            raise WalletError(f"a secp256k1 private key is 32 bytes, got {len(private_key)}")
        try:
            self._key = PrivateKey(private_key)
        except ValueError:
            raise WalletError(
                "not a valid secp256k1 private key (zero or not below the group order)"
            ) from None
        self.address = Address.from_secp256k1_pubkey(self._key.public_key.format(compressed=False))

    @classmethod
    def generate(cls) -> Wallet:
        """A fresh key from the operating system's CSPRNG."""
        return cls(PrivateKey().secret)

    @property
    def public_key(self) -> bytes:
        """The 65-byte uncompressed public key (0x04 ‖ X ‖ Y) that the f1 address hashes."""
        return bytes(self._key.public_key.format(compressed=False))

    def sign(self, message: bytes) -> bytes:
        """Filecoin secp256k1 signature data: recoverable ECDSA over blake2b-256(message), 65 bytes."""
        return bytes(self._key.sign_recoverable(message, hasher=blake2b256))

    def sign_typed(self, message: bytes) -> bytes:
        """Signature type byte ‖ signature: the ``crypto.Signature`` layout inside ProofShare signatures."""
        return bytes([SIG_TYPE_SECP256K1]) + self.sign(message)

    # -- lotus export format -------------------------------------------------------------------------------

    def export_lotus(self) -> str:
        """Hex of the lotus KeyInfo JSON, byte-identical to ``lotus wallet export`` (Go field order)."""
        info = {"Type": LOTUS_KEY_TYPE, "PrivateKey": base64.b64encode(self._key.secret).decode()}
        return json.dumps(info, separators=(",", ":")).encode().hex()

    @classmethod
    def from_lotus_export(cls, text: str | bytes) -> Wallet:
        """Parse ``lotus wallet export`` output (hex of KeyInfo JSON); the bare JSON is accepted too.

        Error messages never quote the input: it is key material.
        """
        if isinstance(text, bytes):
            try:
                text = text.decode("ascii")
            except UnicodeDecodeError:
                raise KeyFileError("key export is not ASCII text") from None
        text = text.strip()
        if not text:
            raise KeyFileError("key export is empty")
        if not text.startswith("{"):
            try:
                text = bytes.fromhex(text).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                raise KeyFileError("key export is neither lotus hex nor KeyInfo JSON") from None
        try:
            info = json.loads(text)
        except json.JSONDecodeError as exc:
            raise KeyFileError(f"key export is not valid JSON (at offset {exc.pos})") from None
        if not isinstance(info, dict) or "Type" not in info or "PrivateKey" not in info:
            raise KeyFileError('key export must be a JSON object with "Type" and "PrivateKey"')
        key_type = info["Type"]
        if key_type != LOTUS_KEY_TYPE:
            shown = key_type if isinstance(key_type, str) and len(key_type) < 40 else "?"
            raise KeyFileError(f"unsupported key type {shown!r}: the provider wallet must be secp256k1 (f1)")
        if not isinstance(info["PrivateKey"], str):
            raise KeyFileError("PrivateKey must be a base64 string")
        try:
            raw = base64.b64decode(info["PrivateKey"], validate=True)
        except binascii.Error:
            raise KeyFileError("PrivateKey is not valid base64") from None
        try:
            return cls(raw)
        except WalletError as exc:
            raise KeyFileError(str(exc)) from None

    def __repr__(self) -> str:
        return f"Wallet({self.address})"


def recover_address(message: bytes, signature65: bytes) -> Address:
    """The f1 address whose key made ``signature65`` over ``message`` (blake2b-256 hashed)."""
    if len(signature65) != 65 or signature65[64] > 3:
        raise WalletError("a secp256k1 signature is 65 bytes r ‖ s ‖ v")
    try:
        pub = PublicKey.from_signature_and_message(signature65, message, hasher=blake2b256)
    except ValueError as exc:
        raise WalletError(f"cannot recover a public key from the signature: {exc}") from None
    return Address.from_secp256k1_pubkey(pub.format(compressed=False))


def verify_signature(address: Address, message: bytes, typed_signature: bytes) -> bool:
    """Check a type-prefixed signature (type byte ‖ data) against an f1 address, like WalletVerify."""
    if len(typed_signature) != 66 or typed_signature[0] != SIG_TYPE_SECP256K1:
        return False
    try:
        return recover_address(message, typed_signature[1:]) == address
    except WalletError:
        return False


# -- key files -------------------------------------------------------------------------------------------


def _check_directory(directory: Path) -> None:
    """Refuse a key directory that group or others may write: they could delete or replace the key, or plant
    a link where it is about to be written. World-writable sticky directories like /tmp are refused too.
    Refused, not warned: a warning scrolls past in the journal while the key stays exposed, and operators
    know the rule from sshd's StrictModes; the message gives the one command that fixes it."""
    try:
        mode = stat.S_IMODE(os.stat(directory).st_mode)
    except OSError as exc:
        raise KeyFileError(f"cannot inspect key directory {directory}: {exc.strerror}") from None
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise KeyFileError(
            f"key directory {directory} is writable by group or others (mode {mode:04o}); "
            f"run: chmod go-w {directory}"
        )


def write_key_file(path: Path, wallet: Wallet) -> None:
    """Write the lotus export of ``wallet`` to ``path`` with mode 0600; never overwrite an existing file.

    The key is written to a private temporary file in the same directory and linked into place, so a crash
    leaves either no key file or a complete one, and an existing file is never replaced.
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        raise KeyFileError(f"{path} already exists; refusing to overwrite a key file")
    parent = path.parent
    try:
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise KeyFileError(f"cannot create key directory {parent}: {exc.strerror or exc}") from None
    _check_directory(parent)
    # A name no earlier (crashed) run can have left behind: pid + random suffix.
    tmp = parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise KeyFileError(f"cannot create a key file in {parent}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(wallet.export_lotus() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)  # in case the file system ignored the creation mode
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise KeyFileError(f"{path} already exists; refusing to overwrite a key file") from None
    except OSError as exc:  # a full disk, or a file system without hard links (EPERM on some mounts)
        raise KeyFileError(f"cannot write key file {path}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def read_key_file(path: Path) -> Wallet:
    """Load a key file written by ``write_key_file`` (or a ``lotus wallet export`` saved by hand).

    Refuses files that grant any permission to group or others: a key that others could read is compromised.
    """
    path = Path(path)
    if path.parent.is_dir():
        _check_directory(path.parent)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: a FIFO must not hang us
    except FileNotFoundError:
        raise KeyFileError(f"key file {path} does not exist") from None
    except OSError as exc:
        raise KeyFileError(f"cannot open key file {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)  # the permissions of the file actually opened, not of whatever the path names now
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"key file {path} is not a regular file")
        mode = stat.S_IMODE(st.st_mode)
        if mode & _PRIVATE_MODE_MASK:
            raise KeyFileError(
                f"key file {path} is accessible by group or others (mode {mode:04o}); run: chmod 600 {path}"
            )
        data = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        return Wallet.from_lotus_export(data)
    except KeyFileError as exc:
        raise KeyFileError(f"key file {path}: {exc}") from None
