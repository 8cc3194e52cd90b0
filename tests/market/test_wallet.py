"""The wallet: published key/address/signature vectors, the lotus export format, key-file permissions."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import cbor2
import pytest
from coincurve import PublicKey

from market.address import parse_address
from market.errors import KeyFileError, WalletError
from market.wallet import Wallet, read_key_file, recover_address, verify_signature, write_key_file

# Zondax/filecoin-signing-tools test_vectors/wallet.json: "private_key" and the m/44'/461'/0/0/0
# child address.
ZONDAX_KEY_B64 = "8VcW07ADswS4BV2cxi5rnIadVsyTDDhY1NfDH19T8Uo="
ZONDAX_ADDRESS = "f1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba"
# Zondax test_vectors/signed_message.json: a message from that key and lotus's published signature of it.
ZONDAX_SIGNATURE_B64 = (
    "nFuTI7MxEXqTQ0QmmQTmqbUsNZfHFXlNjz+susVDkAk1SrRCdJKxlVZZrM4vUtVBSYgtMIeigNfpqdKGIFhoWQA="
)
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1 group order


def zondax() -> Wallet:
    return Wallet(base64.b64decode(ZONDAX_KEY_B64))


def test_zondax_key_gives_the_published_address() -> None:
    w = zondax()
    assert str(w.address) == ZONDAX_ADDRESS
    assert w.address.encode("t") == "t1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba"


def test_zondax_published_message_signature_is_reproduced() -> None:
    """Lotus signs a chain message's CID bytes; the secp256k1 step is the same one ProofShare uses."""
    # signed_message.json "Message": To, From, Nonce 1, Value "100000", GasLimit 25000, GasFeeCap "1",
    # GasPremium "1", Method 0, Params "".
    to = parse_address("t17uoq6tp427uzv7fztkbsnn64iwotfrristwpryy")
    sender = parse_address("t1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba")

    def bigint(n: int) -> bytes:  # go-state-types big.Int CBOR payload: sign byte + big-endian magnitude
        return b"" if n == 0 else b"\x00" + n.to_bytes((n.bit_length() + 7) // 8, "big")

    # lotus types.Message is a CBOR tuple: Version, To, From, Nonce, Value, GasLimit, GasFeeCap, GasPremium,
    # Method, Params.
    fields = [0, to.to_bytes(), sender.to_bytes(), 1, bigint(100000), 25000, bigint(1), bigint(1), 0, b""]
    unsigned = cbor2.dumps(fields)
    assert unsigned.hex().startswith("8a005501fd1d") and unsigned.hex().endswith("0040")
    # CIDv1, dag-cbor (0x71), blake2b-256 (0xb220, uvarint a0 e4 02), 32-byte digest
    cid = bytes([0x01, 0x71, 0xA0, 0xE4, 0x02, 0x20]) + hashlib.blake2b(unsigned, digest_size=32).digest()
    sig = zondax().sign(cid)
    assert base64.b64encode(sig).decode() == ZONDAX_SIGNATURE_B64
    assert recover_address(cid, sig) == sender


def test_our_signature_recovers_to_our_address_with_coincurve() -> None:
    w = Wallet.generate()
    message = b"work-complete" + os.urandom(40)
    sig = w.sign(message)
    assert len(sig) == 65 and sig[64] in (0, 1)
    assert int.from_bytes(sig[32:64], "big") <= N // 2  # low-s, as libsecp256k1 always makes it
    pub = PublicKey.from_signature_and_message(
        sig, message, hasher=lambda m: hashlib.blake2b(m, digest_size=32).digest()
    )
    assert pub.format(compressed=False) == w.public_key
    typed = w.sign_typed(message)
    assert typed[0] == 1 and typed[1:] == sig
    assert verify_signature(w.address, message, typed)
    assert not verify_signature(w.address, message + b"x", typed)
    assert not verify_signature(Wallet.generate().address, message, typed)
    assert not verify_signature(w.address, message, b"\x02" + sig)  # BLS type byte


def test_signatures_are_deterministic() -> None:
    w = zondax()
    assert w.sign(b"abc") == w.sign(b"abc") != w.sign(b"abd")


def test_invalid_private_keys_are_refused() -> None:
    for raw in (bytes(32), N.to_bytes(32, "big"), b"\x01" * 31):
        with pytest.raises(WalletError):
            Wallet(raw)


def test_repr_hides_the_key() -> None:
    w = zondax()
    assert ZONDAX_KEY_B64 not in repr(w) and ZONDAX_ADDRESS in repr(w)


# -- lotus export format -----------------------------------------------------------------------------------


def test_lotus_export_is_hex_of_keyinfo_json() -> None:
    expected = ('{"Type":"secp256k1","PrivateKey":"' + ZONDAX_KEY_B64 + '"}').encode().hex()
    assert zondax().export_lotus() == expected
    assert Wallet.from_lotus_export(expected + "\n").address == zondax().address
    assert Wallet.from_lotus_export(bytes.fromhex(expected).decode()).address == zondax().address  # bare JSON


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("zz", "neither lotus hex nor KeyInfo JSON"),
        ("7b", "not valid JSON"),
        (json.dumps({"Type": "bls", "PrivateKey": ZONDAX_KEY_B64}).encode().hex(), "secp256k1"),
        (json.dumps({"Type": "secp256k1", "PrivateKey": "***"}).encode().hex(), "base64"),
        (json.dumps({"Type": "secp256k1", "PrivateKey": "AAAA"}).encode().hex(), "32 bytes"),
        (json.dumps({"Type": "secp256k1"}).encode().hex(), "PrivateKey"),
    ],
)
def test_bad_lotus_exports_are_refused_without_echoing_them(text: str, message: str) -> None:
    with pytest.raises(KeyFileError, match=message) as info:
        Wallet.from_lotus_export(text)
    assert ZONDAX_KEY_B64 not in str(info.value)


# -- key files ---------------------------------------------------------------------------------------------


def test_key_file_round_trip_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "wallet.key"
    w = Wallet.generate()
    write_key_file(path, w)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_key_file(path).address == w.address
    assert path.read_text().strip() == w.export_lotus()
    assert [p.name for p in path.parent.iterdir()] == ["wallet.key"]  # no temporary left behind


def test_key_file_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "wallet.key"
    first = Wallet.generate()
    write_key_file(path, first)
    with pytest.raises(KeyFileError, match="already exists"):
        write_key_file(path, Wallet.generate())
    assert read_key_file(path).address == first.address


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o660])
def test_key_file_accessible_by_others_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "wallet.key"
    write_key_file(path, Wallet.generate())
    path.chmod(mode)
    with pytest.raises(KeyFileError, match=f"mode {mode:04o}.*chmod 600"):
        read_key_file(path)


def test_key_file_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="does not exist"):
        read_key_file(tmp_path / "nope.key")
    with pytest.raises(KeyFileError, match="not a regular file"):
        read_key_file(tmp_path)
    bad = tmp_path / "bad.key"
    bad.write_text("not a key\n")
    bad.chmod(0o600)
    with pytest.raises(KeyFileError, match=f"{bad}: key export is neither"):
        read_key_file(bad)
