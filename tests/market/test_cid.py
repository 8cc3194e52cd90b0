"""Request CIDs (CIDv1 raw sha2-256), parsed and built with stdlib code."""

from __future__ import annotations

import base64
import hashlib

import pytest

from market.cid import RequestCid
from market.errors import ProtocolError

# CIDv1 raw sha2-256 of the empty input: the well-known IPFS identity of an empty raw block.
EMPTY_RAW_CID = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"


def test_known_cid_of_empty_bytes() -> None:
    assert str(RequestCid.of(b"")) == EMPTY_RAW_CID
    assert RequestCid.parse(EMPTY_RAW_CID).digest == hashlib.sha256(b"").digest()


def test_round_trip_and_layout() -> None:
    data = b'{"SectorID":{"Miner":1000,"Number":1},"PoRep":null,"Snap":null}'
    cid = RequestCid.of(data)
    text = str(cid)
    assert text.startswith("bafkrei")
    raw = base64.b32decode(text[1:].upper() + "=" * (-len(text[1:]) % 8))
    assert raw == bytes([0x01, 0x55, 0x12, 0x20]) + hashlib.sha256(data).digest()
    assert RequestCid.parse(text) == cid and cid.matches(data) and not cid.matches(data + b" ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "base32"),  # CIDv0
        ("BAFKREIHDWDCEFGH4DQKJV67UZCMW7OJEE6XEDZDETOJUZJEVTENXQUVYKU", "base32"),  # upper-case multibase
        ("bafyreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku", "raw sha2-256"),  # dag-cbor codec
        ("bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvykv", "canonical"),  # non-zero pad bits
        ("bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvy", "raw sha2-256"),  # truncated
        ("b", "base32"),
        ("bafkrei../../etc", "base32"),
    ],
)
def test_other_cids_are_refused(text: str, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        RequestCid.parse(text)
