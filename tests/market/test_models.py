"""Wire models: Curio's JSON names, Go's encodings (nil slices, big.Int strings, base64, RFC 3339)."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime

import pytest

from market.cid import RequestCid
from market.errors import ProtocolError
from market.models import (
    GO_ZERO_TIME,
    ProofReward,
    WorkAsk,
    WorkRequest,
    WorkResponse,
    format_attofil,
    parse_attofil,
)

CID = str(RequestCid.of(b"{}"))


def test_work_ask_full_and_minimal() -> None:
    ask = WorkAsk.from_json(
        b'{"id":7,"min_price_nfil":5000000,"created_at":"2026-08-20T11:51:28.123456789Z","min_price_fil":"0.005"}'
    )
    assert ask == WorkAsk(7, 5_000_000, datetime(2026, 8, 20, 11, 51, 28, 123456, tzinfo=UTC), "0.005")
    assert ask.to_obj()["created_at"] == "2026-08-20T11:51:28.123456Z"
    assert WorkAsk.from_obj(ask.to_obj()) == ask
    old = WorkAsk.from_json('{"id":8}')  # the market before min_price/created_at existed
    assert old == WorkAsk(8) and old.created_at == GO_ZERO_TIME
    assert WorkAsk(8).to_obj()["created_at"] == "0001-01-01T00:00:00Z"  # Go's zero time.Time
    assert (
        WorkAsk.from_json('{"id":9,"created_at":"2026-01-02T03:04:05+02:00"}').created_at.utcoffset()
        is not None
    )


def test_work_response_go_nil_slices_and_old_active_asks() -> None:
    empty = WorkResponse.from_json(b'{"requests":null,"active_asks":null}')
    assert empty == WorkResponse((), ())
    body = {
        "requests": [
            {"id": 1, "request_cid": CID, "done": False, "work_ask_id": 10},
            {"id": 2, "request_cid": None, "done": None, "work_ask_id": 11},
        ],
        "active_asks": [
            {"id": 12, "min_price_nfil": 1, "created_at": "2026-01-01T00:00:00Z", "min_price_fil": "x"}
        ],
        "future_field": {"ignored": True},
    }
    resp = WorkResponse.from_json(json.dumps(body))
    assert resp.requests == (WorkRequest(1, CID, False, 10), WorkRequest(2, None, None, 11))
    assert [a.id for a in resp.active_asks] == [12]
    assert WorkResponse.from_json(json.dumps(resp.to_obj())) == resp
    # an older market sent active asks as bare ids (WorkResponse.ActiveAsks []int64)
    assert WorkResponse.from_json('{"requests":[],"active_asks":[3,4]}').active_asks == (
        WorkAsk(3),
        WorkAsk(4),
    )


def test_proof_reward_amounts_are_attofil_ints() -> None:
    sig = hashlib.sha256(b"voucher").digest()
    raw = {
        "status": "ok",
        "pow": False,
        "nonce": 2**64 - 1,
        "amount": "5000000000000000",
        "cumulative_amount": "123456789012345678901234567890",
        "signature": base64.b64encode(sig).decode(),
    }
    r = ProofReward.from_json(json.dumps(raw))
    assert r.amount == 5 * 10**15 and r.cumulative_amount == 123456789012345678901234567890
    assert r.signature == sig and r.nonce == 2**64 - 1 and r.pow is False
    assert r.to_obj() == raw
    pow_reward = ProofReward.from_json(
        b'{"status":"pow","pow":true,"nonce":0,"amount":"0","cumulative_amount":"0","signature":null}'
    )
    assert pow_reward.pow and pow_reward.signature == b""
    no_pow = {k: v for k, v in raw.items() if k != "pow"}  # older markets had no "pow"
    assert ProofReward.from_json(json.dumps(no_pow)).pow is False


@pytest.mark.parametrize(
    "bad", [5, "-1", "+1", "1e18", " 1", "1_000", "0x10", "01", "", "1.5", "9" * 79, None]
)
def test_bad_amounts_are_refused(bad: object) -> None:
    with pytest.raises(ProtocolError):
        parse_attofil(bad)


def test_amount_round_trip() -> None:
    for n in (0, 1, 10**18, 2**200):
        assert parse_attofil(format_attofil(n)) == n
    with pytest.raises(ValueError):
        format_attofil(-1)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{not json", "malformed JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[1]", "expected a JSON object"),
        (b'{"id": 1, "id": 2}', "duplicate key"),
        (b'{"id": NaN}', "NaN"),
        (b'{"id": "1"}', "must be an integer"),
        (b'{"id": true}', "must be an integer"),
        (b'{"id": 1.0}', "must be an integer"),
        (b'{"id": 9223372036854775808}', "out of range"),
        (b'{"min_price_nfil": 1}', "missing field 'id'"),
        (b'{"id": 1, "created_at": "yesterday"}', "RFC 3339"),
        (b'{"id": 1, "created_at": "2026-01-01T00:00:00"}', "time zone"),
    ],
)
def test_malformed_work_ask_is_refused_clearly(raw: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        WorkAsk.from_json(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"requests": {}, "active_asks": []}', "requests must be a list"),
        ('{"requests": [{"id": 1, "request_cid": 5, "work_ask_id": 1}]}', r"requests\[0\].request_cid"),
        ('{"requests": [{"id": 1, "done": "yes", "work_ask_id": 1}]}', r"requests\[0\].done"),
        ('{"requests": [{"id": 1}]}', "work_ask_id"),
        ('{"active_asks": [true]}', r"active_asks\[0\]"),
    ],
)
def test_malformed_work_response_is_refused_clearly(raw: str, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        WorkResponse.from_json(raw)


def test_malformed_reward_is_refused_clearly() -> None:
    base = {"status": "ok", "nonce": 1, "amount": "1", "cumulative_amount": "1", "signature": "AA=="}
    for key, value, message in [
        ("signature", "not base64!", "base64"),
        ("amount", 1, "decimal string"),
        ("nonce", -1, "out of range"),
        ("pow", "no", "boolean"),
        ("status", None, "string"),
    ]:
        with pytest.raises(ProtocolError, match=message):
            ProofReward.from_json(json.dumps({**base, key: value}))
