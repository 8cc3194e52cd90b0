"""Request signatures: the deps.md §3 golden vectors, cbor2 as an independent encoder, and verification."""

from __future__ import annotations

import base64
import random

import cbor2
import pytest

from market.address import parse_address
from market.errors import ProtocolError, WalletError
from market.signing import (
    DST_WORK_ASK,
    DST_WORK_COMPLETE,
    DST_WORK_WITHDRAW,
    Signature,
    SignedMsg,
    sign_request,
    verify_request,
)
from market.wallet import Wallet

# docs/deps.md §3 (self-generated with three Python encoders, not by Go): Zondax key, NonceTime 1767225600,
# NonceID 0xdeadbeefcafebabe, Data "work-ask" + "1000000000".
ZONDAX = Wallet(base64.b64decode("8VcW07ADswS4BV2cxi5rnIadVsyTDDhY1NfDH19T8Uo="))
T0, NID = 1767225600, 0xDEADBEEFCAFEBABE
GOLDEN_SIGNING_BYTES = (
    "a3" "63536967"  # map(3), "Sig"
    "a3" "63536967" "40" "674e6f6e63654944" "1bdeadbeefcafebabe" "694e6f6e636554696d65" "1a6955b900"
    "6444617461" "52776f726b2d61736b31303030303030303030"
    "665369676e6572" "55011eaf1c8a4bbfeeb0870b1745b1f57503470b7116"
)  # fmt: skip
GOLDEN_SIGNATURE_HEX = (
    "a3635369675842017d31ef15552e45ebf679efa51b3877fded94383cc6a81148d24551857d4e21654d86b42334799d152e4768dd"
    "376546ab3dc5cc35bfe0d2e569aec038500cc05d00674e6f6e636549441bdeadbeefcafebabe694e6f6e636554696d651a6955b900"
)


def test_golden_signing_bytes() -> None:
    msg = SignedMsg(data=b"work-ask1000000000", signer=ZONDAX.address, sig=Signature(T0, NID))
    assert msg.signing_bytes().hex() == GOLDEN_SIGNING_BYTES
    # SigningBytes ignores whatever Sig.Sig holds
    signed = SignedMsg(data=msg.data, signer=msg.signer, sig=Signature(T0, NID, b"\x01" * 66))
    assert signed.signing_bytes() == msg.signing_bytes() != signed.to_cbor()


def test_golden_signature_query_value() -> None:
    assert (
        sign_request(ZONDAX, DST_WORK_ASK, "1000000000", nonce_time=T0, nonce_id=NID) == GOLDEN_SIGNATURE_HEX
    )
    sig = Signature.from_hex(GOLDEN_SIGNATURE_HEX)
    assert (sig.nonce_time, sig.nonce_id, sig.sig[0], len(sig.sig)) == (T0, NID, 1, 66)


def test_golden_signature_verifies_and_recovers_the_signer() -> None:
    got = verify_request(GOLDEN_SIGNATURE_HEX, ZONDAX.address, DST_WORK_ASK, "1000000000", now=T0 + 10)
    assert got.nonce_id == NID


def test_nil_sig_is_an_empty_byte_string_not_null() -> None:
    raw = Signature(5, 6).to_cbor()
    assert raw == bytes.fromhex("a3") + b"\x63Sig\x40" + b"\x67NonceID\x06" + b"\x69NonceTime\x05"
    assert b"\xf6" not in raw


@pytest.mark.parametrize(
    "n", [0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 1767225600, 2**63, 2**64 - 1]
)
def test_uint_heads_match_cbor2(n: int) -> None:
    assert Signature(n, n).to_cbor() == cbor2.dumps(
        {"Sig": b"", "NonceID": n, "NonceTime": n}, canonical=True
    )


def test_random_structs_match_cbor2_canonical() -> None:
    """cbor2 canonical orders text keys by (length, bytes): an independent encoder of the same rules."""
    rng = random.Random(1234)
    for _ in range(300):
        t, nid = rng.getrandbits(rng.choice((5, 16, 32, 64))), rng.getrandbits(64)
        sig = rng.randbytes(rng.choice((0, 1, 23, 24, 66, 97, 300)))
        data = rng.randbytes(rng.randrange(0, 400))
        signer = Wallet.generate().address if rng.random() < 0.05 else ZONDAX.address
        ours = SignedMsg(data=data, signer=signer, sig=Signature(t, nid, sig)).to_cbor()
        theirs = cbor2.dumps(
            {"Sig": {"Sig": sig, "NonceID": nid, "NonceTime": t}, "Data": data, "Signer": signer.to_bytes()},
            canonical=True,
        )
        assert ours == theirs
        assert cbor2.loads(ours)["Signer"] == signer.to_bytes()


def test_go_declaration_order_would_be_wrong() -> None:
    """The pitfall of deps.md §3: declaration order (NonceTime, NonceID, Sig) is not what cbor-gen writes."""
    wrong = cbor2.dumps({"NonceTime": T0, "NonceID": NID, "Sig": b""})
    assert wrong != Signature(T0, NID).to_cbor()
    assert Signature.from_cbor(wrong) == Signature(T0, NID)  # but decoding, like cbor-gen's, takes any order


def test_decoding_rules() -> None:
    good = Signature(T0, NID, b"\x01" + bytes(65))
    assert Signature.from_hex(good.to_hex()) == good
    extra = cbor2.dumps({"Sig": good.sig, "NonceID": NID, "NonceTime": T0, "Extra": [1, 2]})
    assert Signature.from_cbor(extra) == good  # unknown fields are skipped, as cbor-gen does
    for bad, msg in [
        (good.to_cbor() + b"\x00", "trailing"),
        (cbor2.dumps({"Sig": b"", "NonceID": 1}), "lacks"),
        (cbor2.dumps({"Sig": "text", "NonceID": 1, "NonceTime": 2}), "byte string"),
        (cbor2.dumps({"Sig": b"", "NonceID": -1, "NonceTime": 2}), "uint64"),
        (cbor2.dumps([1, 2, 3]), "map"),
        (b"\xa3\x63Si", "CBOR"),
    ]:
        with pytest.raises(ProtocolError, match=msg):
            Signature.from_cbor(bad)
    with pytest.raises(ProtocolError, match="hex"):
        Signature.from_hex("zz")


def test_out_of_range_nonces_are_refused() -> None:
    for bad in (-1, 2**64, True, 1.5):
        with pytest.raises(ValueError):
            Signature(bad, 1)  # type: ignore[arg-type]


@pytest.mark.parametrize(("dst", "payload"), [(DST_WORK_ASK, "5000000000000000"), (DST_WORK_WITHDRAW, "42"),
                                              (DST_WORK_COMPLETE, "bafkreigh2akiscaildc")])  # fmt: skip
def test_verify_request_paths(dst: str, payload: str) -> None:
    w = Wallet.generate()
    hexsig = sign_request(w, dst, payload, nonce_time=1000, nonce_id=77)
    assert verify_request(hexsig, w.address, dst, payload, now=1000).nonce_id == 77
    assert (
        verify_request(hexsig, w.address, dst, payload, now=1060).nonce_time == 1000
    )  # 60 s old: still fine
    assert (
        verify_request(hexsig, w.address, dst, payload, now=995).nonce_time == 1000
    )  # 5 s ahead: still fine
    cases = [
        ((w.address, dst, payload, 1061), "expired"),
        ((w.address, dst, payload, 994), "future"),
        ((w.address, dst, payload + "0", 1000), "verification failed"),
        ((w.address, "work-other", payload, 1000), "verification failed"),
        ((ZONDAX.address, dst, payload, 1000), "verification failed"),
    ]
    for (addr, d, p, now), msg in cases:
        with pytest.raises(WalletError, match=msg):
            verify_request(hexsig, addr, d, p, now=now)


def test_verify_rejects_non_secp_and_empty_signatures() -> None:
    addr = parse_address("f1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba")
    with pytest.raises(WalletError, match="too short"):
        verify_request(Signature(T0, NID).to_hex(), addr, DST_WORK_ASK, "1", now=T0)
    with pytest.raises(WalletError, match="type 2"):
        verify_request(Signature(T0, NID, b"\x02" + bytes(96)).to_hex(), addr, DST_WORK_ASK, "1", now=T0)
    with pytest.raises(WalletError, match="not hex"):
        verify_request("xyz", addr, DST_WORK_ASK, "1", now=T0)
