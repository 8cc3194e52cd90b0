"""The mock market driven by our market client over real loopback HTTP: the rules, the refusals, restarts."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import cbor2
import httpx
import pytest

from market.address import Address
from market.cid import RequestCid
from market.client import MarketClient, RetryPolicy
from market.errors import Rejected, SignatureRejected, TooManyRequests, WorkGone
from market.mock import MockMarket, stand_in_proof
from market.mock.vouchers import voucher_signer
from market.models import ProofReward
from market.proofdata import ProofData
from market.wallet import Wallet

pytestmark = pytest.mark.anyio
PRICE = 4 * 10**15
FAST = RetryPolicy(initial_s=0.02, max_s=0.1, budget_s=5.0, attempt_s=5.0)


def client(market: MockMarket, wallet: Wallet, **kw: Any) -> MarketClient:
    return MarketClient(market.base_url, wallet, retry=FAST, **kw)


def state(market: MockMarket) -> dict[str, Any]:
    return dict(httpx.get(market.root_url + "/_mock/state").json())


def demand(market: MockMarket, count: int, price: int) -> list[str]:
    r = httpx.post(market.root_url + "/_mock/demand", params={"count": count, "price": price})
    r.raise_for_status()
    return list(r.json()["request_cids"])


async def prove_all(c: MarketClient, *, pow_: bool | None = None) -> list[ProofReward]:
    """Fetch and answer every assigned request with the stand-in proof the mock's checker accepts."""
    out = []
    for r in (await c.poll()).requests:
        assert r.request_cid is not None
        raw = await c.fetch_request_bytes(r.request_cid)
        reward = await c.complete(r.request_cid, stand_in_proof(raw))
        assert isinstance(reward, ProofReward)
        if pow_ is not None:
            assert reward.pow is pow_
        out.append(reward)
    return out


async def earn(c: MarketClient, n: int) -> None:
    for _ in range(n):
        await c.create_ask(PRICE)
    assert len(await prove_all(c, pow_=True)) == n


async def test_ask_match_fetch_complete_voucher(market: MockMarket, wallet: Wallet) -> None:
    async with client(market, wallet) as c:
        # no slots yet: an ask is answered with a real challenge (miner 1000 / sector 1, raw random seed)
        ask = await c.create_ask(PRICE)
        work = await c.poll()
        assert work.active_asks == () and [r.work_ask_id for r in work.requests] == [ask.id]
        cid = work.requests[0].request_cid
        assert cid is not None
        raw = await c.fetch_request_bytes(cid)
        assert RequestCid.parse(cid).matches(raw)
        pd = ProofData.parse(raw)
        assert (pd.sector_id.miner, pd.sector_id.number, pd.kind) == (1000, 1, "PoRep")
        first = await c.complete(cid, stand_in_proof(raw))
        assert isinstance(first, ProofReward) and first.pow
        await earn(c, 3)  # 4 challenge proofs / 2 per slot = 2 slots
        me = state(market)["providers"][wallet.address.encode("f")]
        assert (me["challenges"], me["slots"]) == (4, 2)

        # with slots, asks are listed; a request priced below the ask is not matched, one at or above is
        cheap = demand(market, 1, PRICE - 10**9)
        a1 = await c.create_ask(PRICE)
        work = await c.poll()
        assert [a.id for a in work.active_asks] == [a1.id] and work.requests == ()
        assert (a1.min_price_nfil, a1.min_price_fil) == (PRICE // 10**9, "0.004 FIL")
        paid = demand(market, 2, 5 * 10**15)
        a2 = await c.create_ask(PRICE + 10**9)
        work = await c.poll()
        assert work.active_asks == ()
        assert {r.request_cid for r in work.requests} == set(paid) and cheap[0] not in paid
        assert {r.work_ask_id for r in work.requests} == {a1.id, a2.id}
        with pytest.raises(TooManyRequests):  # both slots hold assigned work and no challenge is owed... yet
            for _ in range(9):  # 8 outstanding challenges are allowed, the 9th ask gets 429
                await c.create_ask(PRICE)
        rewards = await prove_all(c)

    paid_rewards = [r for r in rewards if not r.pow]
    assert [r.nonce for r in paid_rewards] == [1, 2]
    assert [r.amount for r in paid_rewards] == [5 * 10**15] * 2
    assert [r.cumulative_amount for r in paid_rewards] == [5 * 10**15, 10**16]
    snap = state(market)
    pub = bytes.fromhex(snap["market_public_key"])
    vouchers = httpx.get(f"{market.root_url}/_mock/vouchers/{wallet.address.encode('f')}").json()
    for r in paid_rewards:  # signed by the market's key over the router contract's voucher bytes
        assert voucher_signer(vouchers["provider_id"], r.cumulative_amount, r.nonce, r.signature) == pub
    assert sum(v["amount"] for v in vouchers["vouchers"]) == vouchers["vouchers"][-1]["cumulative"]
    counters = snap["counters"]
    assert counters["completed_valid"] == 4 + 2 + 8 and counters["vouchers"] == 2
    assert counters["status_429"] == 1 and counters["rejected_no_slot"] == 1
    assert snap["checker"].startswith("digest-stand-in")


async def test_duplicate_invalid_and_withdraw(market: MockMarket, wallet: Wallet) -> None:
    async with client(market, wallet) as c:
        await c.create_ask(PRICE)
        (req,) = (await c.poll()).requests
        assert req.request_cid is not None
        raw = await c.fetch_request_bytes(req.request_cid)
        with pytest.raises(Rejected) as err:  # an invalid proof: 400, counted, the work stays assigned
            await c.complete(req.request_cid, bytes(192))
        assert err.value.status == 400 and "does not verify" in err.value.body
        await c.complete(req.request_cid, stand_in_proof(raw))
        with pytest.raises(Rejected) as err:  # a second submit of accepted work: 409 already submitted
            await c.complete(req.request_cid, stand_in_proof(raw))
        assert err.value.status == 409 and "already submitted" in err.value.body
        await earn(c, 1)
        ask = await c.create_ask(PRICE)  # 2 challenges = 1 slot: an active ask
        await c.withdraw(ask.id)
        with pytest.raises(Rejected) as err:
            await c.withdraw(ask.id)
        assert err.value.status == 409
        with pytest.raises(Rejected) as err:
            await c.withdraw(10**9)
        assert err.value.status == 404
    snap = state(market)
    assert snap["providers"][wallet.address.encode("f")]["challenges"] == 1  # 2 earned, 1 for the withdrawal
    c_ = snap["counters"]
    assert (c_["completed_invalid"], c_["rejected_duplicate"], c_["withdrawals"]) == (1, 1, 1)


class _Impostor:
    """Claims one wallet's address, signs with another key."""

    def __init__(self, claimed: Wallet, key: Wallet) -> None:
        self.address: Address = claimed.address
        self._key = key

    def sign_typed(self, message: bytes) -> bytes:
        return self._key.sign_typed(message)


class _Corrupting:
    def __init__(self, wallet: Wallet) -> None:
        self.address = wallet.address
        self._w = wallet

    def sign_typed(self, message: bytes) -> bytes:
        sig = bytearray(self._w.sign_typed(message))
        sig[10] ^= 1
        return bytes(sig)


async def test_signature_refusals(market: MockMarket, wallet: Wallet) -> None:
    cases: list[tuple[str, dict[str, object], object]] = [
        ("expired_signature", {"clock": lambda: time.time() - 61}, wallet),
        ("future_signature", {"clock": lambda: time.time() + 7}, wallet),  # signing floors to seconds
        ("bad_signature", {}, _Impostor(wallet, Wallet.generate())),
        ("bad_signature", {}, _Corrupting(wallet)),
    ]
    for reason, kw, signer in cases:
        async with MarketClient(market.base_url, signer, retry=FAST, **kw) as c:  # type: ignore[arg-type]
            with pytest.raises(SignatureRejected) as err:
                await c.create_ask(PRICE)
            assert err.value.status == 401, reason
    async with client(market, wallet, nonce_source=lambda: 7) as c:
        await c.create_ask(PRICE)
        with pytest.raises(SignatureRejected, match="replay"):
            await c.create_ask(PRICE)
    # non-canonical CBOR: a valid signature re-sent with NonceTime in a 9-byte head
    good = bytes.fromhex(
        client(market, wallet)._sign("work-ask", str(PRICE))  # noqa: SLF001 - the client's own signing
    )
    obj = cbor2.loads(good)
    crafted = (
        b"\xa3"
        + cbor2.dumps("Sig")
        + cbor2.dumps(obj["Sig"])
        + cbor2.dumps("NonceID")
        + cbor2.dumps(obj["NonceID"])
        + cbor2.dumps("NonceTime")
        + b"\x1b"
        + obj["NonceTime"].to_bytes(8, "big")
    )
    url = f"{market.base_url}/provider/work/ask/{wallet.address.encode('f')}"
    r = httpx.post(url, params={"price": str(PRICE), "signature": crafted.hex()})
    assert r.status_code == 400 and "not canonical" in r.text
    r = httpx.post(url, params={"price": str(PRICE), "signature": good.hex()})
    assert r.status_code == 200  # the same nonce was not burnt by the malformed try
    r = httpx.post(url.replace("/f1", "/f0"), params={"price": str(PRICE), "signature": good.hex()})
    assert r.status_code == 400
    counters = state(market)["counters"]
    assert counters["rejected_expired_signature"] == 1 and counters["rejected_future_signature"] == 1
    assert counters["rejected_bad_signature"] == 2 and counters["rejected_replayed_nonce"] == 1
    assert counters["rejected_malformed_signature"] == 1 and counters["rejected_bad_address"] == 1


async def test_deadline_penalty_and_reassignment(make_market: Callable[..., MockMarket]) -> None:
    market = make_market(deadline_s=3.0, initial_challenges=60)
    late, other = Wallet.generate(), Wallet.generate()
    try:
        async with client(market, late) as c:
            await c.create_ask(PRICE)
            assigned_at = time.monotonic()
            (cid,) = demand(market, 1, PRICE)  # matched to the ask at once: the deadline runs from here
            (req,) = (await c.poll()).requests
            assert req.request_cid == cid
            raw = await c.fetch_request_bytes(cid)
            await anyio.sleep(assigned_at + 3.3 - time.monotonic())
            with pytest.raises(WorkGone):
                await c.complete(cid, stand_in_proof(raw))
            assert (await c.poll()).requests == ()
        me = state(market)["providers"][late.address.encode("f")]
        assert (me["challenges"], me["slots"]) == (10, 0)  # 60 − 50
        async with client(market, other) as c2:  # reassigned to another wallet, never back to the late one
            await c2.create_ask(PRICE)
            (req,) = (await c2.poll()).requests
            assert req.request_cid == cid
            (reward,) = await prove_all(c2, pow_=False)
            assert (reward.nonce, reward.cumulative_amount) == (1, PRICE)
        counters = state(market)["counters"]
        assert (counters["penalties"], counters["reassigned"], counters["status_410"]) == (1, 1, 1)
    finally:
        market.stop()


async def test_state_survives_a_restart(
    make_market: Callable[..., MockMarket], tmp_path: Path, wallet: Wallet
) -> None:
    path = tmp_path / "market.db"
    market = make_market(state_path=path, slot_divisor=1)
    try:
        async with client(market, wallet) as c:
            await earn(c, 1)
            await c.create_ask(PRICE)
            demand(market, 1, PRICE)
            (first,) = await prove_all(c, pow_=False)
            await c.create_ask(PRICE)  # an active ask left open
        before = state(market)
    finally:
        market.stop()
    market = make_market(state_path=path, slot_divisor=1)
    try:
        after = state(market)
        assert (
            after["providers"] == before["providers"]
            and after["market_public_key"] == before["market_public_key"]
        )
        async with client(market, wallet) as c:
            (ask,) = (await c.poll()).active_asks
            demand(market, 1, 2 * PRICE)
            (second,) = await prove_all(c, pow_=False)
        assert (second.nonce, second.cumulative_amount) == (2, first.cumulative_amount + 2 * PRICE)
        assert after["counters"]["vouchers"] == 1 and state(market)["counters"]["vouchers"] == 2
    finally:
        market.stop()


def test_the_printed_url_answers_and_uvicorn_logs_through_ours(market: MockMarket) -> None:
    """`market-mock serve` prints its base URL, which answered 404; uvicorn installed handlers of its own
    ("INFO:     Started server process …" lines in psagent's log). The URL answers 200 saying what is
    there, and uvicorn's loggers have no handler of their own (they reach the root's: psagent's format)."""
    import logging
    import urllib.request

    for url in (market.base_url, market.base_url + "/"):
        with urllib.request.urlopen(url, timeout=5) as r:
            body = r.read().decode()
        assert r.status == 200 and "/v0/proofs/provider/" in body and "/_mock/state" in body
    from uvicorn.logging import ColourizedFormatter

    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        theirs = [h for h in logger.handlers if isinstance(h.formatter, ColourizedFormatter)]
        assert theirs == [], name
    assert logging.getLogger("uvicorn.error").propagate  # access lines are off (access_log=False)
