"""The mock's signature checks, against independent references: the deps.md §3 golden vector, cbor2's
canonical encoder, coincurve signatures made here, and cbor-gen's decoding rules case by case."""

from __future__ import annotations

import hashlib

import cbor2
import pytest
from coincurve import PrivateKey

from market.mock.auth import (
    AuthError,
    NonceCache,
    encode_f1,
    parse_f1,
    parse_signature,
    signing_bytes,
    verify_signed_request,
)

GOLDEN_SIGNER = bytes.fromhex("011eaf1c8a4bbfeeb0870b1745b1f57503470b7116")
GOLDEN_TIME = 1767225600
GOLDEN_NONCE = 0xDEADBEEFCAFEBABE
GOLDEN_SIGNING = bytes.fromhex(
    "a363536967a36353696740674e6f6e636549441bdeadbeefcafebabe694e6f6e636554696d651a6955b900644461746152776f726b"
    "2d61736b31303030303030303030665369676e657255011eaf1c8a4bbfeeb0870b1745b1f57503470b7116"
)
GOLDEN_QUERY = (
    "a3635369675842017d31ef15552e45ebf679efa51b3877fded94383cc6a81148d24551857d4e21654d86b42334799d152e4768dd376546"
    "ab3dc5cc35bfe0d2e569aec038500cc05d00674e6f6e636549441bdeadbeefcafebabe694e6f6e636554696d651a6955b900"
)


def _b2(data: bytes, n: int = 32) -> bytes:
    return hashlib.blake2b(data, digest_size=n).digest()


def _key() -> tuple[PrivateKey, bytes]:
    sk = PrivateKey()
    return sk, b"\x01" + _b2(sk.public_key.format(compressed=False), 20)


def _sign(sk: PrivateKey, signer: bytes, dst: str, payload: bytes, t: int, nid: int) -> str:
    """A signature made with cbor2 + coincurve (not our client), per deps.md §3."""
    msg = {
        "Sig": {"Sig": b"", "NonceID": nid, "NonceTime": t},
        "Data": dst.encode() + payload,
        "Signer": signer,
    }
    raw = sk.sign_recoverable(cbor2.dumps(msg, canonical=True), hasher=_b2)
    return cbor2.dumps({"Sig": b"\x01" + raw, "NonceID": nid, "NonceTime": t}, canonical=True).hex()


def test_golden_vector() -> None:
    assert signing_bytes(b"work-ask1000000000", GOLDEN_SIGNER, GOLDEN_TIME, GOLDEN_NONCE) == GOLDEN_SIGNING
    sig = verify_signed_request(
        GOLDEN_QUERY, GOLDEN_SIGNER, "work-ask", b"1000000000", now=GOLDEN_TIME + 1, nonces=NonceCache()
    )
    assert (sig.nonce_time, sig.nonce_id) == (GOLDEN_TIME, GOLDEN_NONCE)
    with pytest.raises(AuthError) as err:  # the same bytes for another payload
        verify_signed_request(
            GOLDEN_QUERY, GOLDEN_SIGNER, "work-ask", b"2000000000", now=GOLDEN_TIME, nonces=NonceCache()
        )
    assert (err.value.status, err.value.reason) == (401, "bad_signature")


@pytest.mark.parametrize("t", [0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1])
def test_signing_bytes_match_cbor2_canonical(t: int) -> None:
    signer = b"\x01" + bytes(range(20))
    want = cbor2.dumps(
        {"Sig": {"Sig": b"", "NonceID": t, "NonceTime": t}, "Data": b"x" * (t % 300), "Signer": signer},
        canonical=True,
    )
    assert signing_bytes(b"x" * (t % 300), signer, t, t) == want


def test_time_and_replay_rules() -> None:
    sk, signer = _key()
    now = 1_800_000_000
    cache = NonceCache()
    ok = _sign(sk, signer, "work-complete", b"cid", now - 60, 7)
    verify_signed_request(ok, signer, "work-complete", b"cid", now=now, nonces=cache)  # 60 s old: still valid
    for reason, query in [
        ("replayed_nonce", ok),
        ("expired_signature", _sign(sk, signer, "work-complete", b"cid", now - 61, 8)),
        ("future_signature", _sign(sk, signer, "work-complete", b"cid", now + 6, 9)),
    ]:
        with pytest.raises(AuthError) as err:
            verify_signed_request(query, signer, "work-complete", b"cid", now=now, nonces=cache)
        assert (err.value.status, err.value.reason) == (401, reason)
    # 5 s ahead is allowed; a refused signature does not burn its nonce
    verify_signed_request(
        _sign(sk, signer, "work-complete", b"cid", now + 5, 8),
        signer,
        "work-complete",
        b"cid",
        now=now,
        nonces=cache,
    )
    # the replay is remembered as long as the nonce time could pass, even across Curio's bucket boundary
    t = 1_800_000_039  # a window boundary (t // 60 changes at ...040)
    q = _sign(sk, signer, "work-ask", b"1", t, 99)
    verify_signed_request(q, signer, "work-ask", b"1", now=t, nonces=cache)
    with pytest.raises(AuthError, match="replay"):
        verify_signed_request(q, signer, "work-ask", b"1", now=t + 3, nonces=cache)


def test_wrong_signer_and_domain() -> None:
    sk, signer = _key()
    _, other = _key()
    q = _sign(sk, signer, "work-ask", b"5", 100, 1)
    for args in [(other, "work-ask", b"5"), (signer, "work-withdraw", b"5"), (signer, "work-ask", b"6")]:
        with pytest.raises(AuthError) as err:
            verify_signed_request(q, *args, now=100, nonces=NonceCache())
        assert err.value.status == 401


def _heads(t: int, nid: int, sig: bytes) -> dict[str, bytes]:
    return {"Sig": bytes([0x58, len(sig)]) + sig, "NonceID": cbor2.dumps(nid), "NonceTime": cbor2.dumps(t)}


def _map(entries: list[tuple[str, bytes]]) -> str:
    return (bytes([0xA0 | len(entries)]) + b"".join(cbor2.dumps(k) + v for k, v in entries)).hex()


def test_cbor_gen_decoding_rules() -> None:
    sk, signer = _key()
    q = bytes.fromhex(_sign(sk, signer, "work-ask", b"5", 1000, 3))
    sig = cbor2.loads(q)["Sig"]
    h = _heads(1000, 3, sig)
    # any key order and unknown keys are accepted, and trailing bytes ignored (as cbor-gen / VerifyHexSig)
    for text in [
        _map([("NonceTime", h["NonceTime"]), ("Sig", h["Sig"]), ("NonceID", h["NonceID"])]),
        _map([("Extra", cbor2.dumps([1, {"a": b"x"}])), *h.items()]),
        q.hex() + "00ff",
    ]:
        verify_signed_request(text, signer, "work-ask", b"5", now=1000, nonces=NonceCache())
    # non-minimal heads are refused (cbor-gen: "cbor input was not canonical"), whatever the field
    non_minimal = [
        _map(
            [
                ("Sig", h["Sig"]),
                ("NonceID", h["NonceID"]),
                ("NonceTime", bytes([0x1B]) + (1000).to_bytes(8, "big")),
            ]
        ),
        _map([("Sig", h["Sig"]), ("NonceID", bytes([0x18, 3])), ("NonceTime", h["NonceTime"])]),
        _map(
            [
                ("Sig", bytes([0x59, 0, len(sig)]) + sig),
                ("NonceID", h["NonceID"]),
                ("NonceTime", h["NonceTime"]),
            ]
        ),
        "b9000" + "3" + _map(list(h.items()))[2:],  # map header with a 2-byte count of 3
    ]
    for text in non_minimal:
        with pytest.raises(AuthError) as err:
            parse_signature(text)
        assert (err.value.status, err.value.reason) == (400, "malformed_signature"), text
    for text in [
        "zz",
        "",
        cbor2.dumps([1, 2]).hex(),
        _map([("Sig", cbor2.dumps("text")), ("NonceID", h["NonceID"]), ("NonceTime", h["NonceTime"])]),
        _map([("Sig", h["Sig"]), ("NonceID", cbor2.dumps(-1)), ("NonceTime", h["NonceTime"])]),
        "bf" + q.hex()[2:] + "ff",  # indefinite-length map
        q.hex()[:-4],  # cut short
    ]:
        with pytest.raises(AuthError) as err:
            parse_signature(text)
        assert err.value.status == 400
    # a client that signed non-canonical SignedMsg bytes (Go declaration order) fails verification: 401
    bad_order = cbor2.dumps(
        {"Data": b"work-ask5", "Signer": signer, "Sig": {"NonceTime": 1000, "NonceID": 3, "Sig": b""}}
    )
    raw = sk.sign_recoverable(bad_order, hasher=_b2)
    text = cbor2.dumps({"Sig": b"\x01" + raw, "NonceID": 3, "NonceTime": 1000}, canonical=True).hex()
    with pytest.raises(AuthError) as err:
        verify_signed_request(text, signer, "work-ask", b"5", now=1000, nonces=NonceCache())
    assert (err.value.status, err.value.reason) == (401, "bad_signature")


def test_f1_addresses() -> None:
    # deps.md §2: the golden vector's signer (Zondax key) is t1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba
    text = "t1d2xrzcslx7xlbbylc5c3d5lvandqw4iwl6epxba"
    assert parse_f1(text) == GOLDEN_SIGNER
    assert encode_f1(GOLDEN_SIGNER[1:], "t") == text
    assert parse_f1("f" + text[1:]) == GOLDEN_SIGNER
    for bad in [text[:-1] + "b", "t0" + text[2:], text.upper(), text + "a", "t1", "t3" + text[2:]]:
        with pytest.raises(AuthError) as err:
            parse_f1(bad)
        assert err.value.status == 400
