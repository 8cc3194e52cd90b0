"""Fault injection, seen from our client over loopback: each fault shows up as the client error it is meant
to provoke, and is counted on the inspection page."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from market.cid import RequestCid
from market.client import AlreadyAccepted, MarketClient, RetryPolicy
from market.errors import ContentMismatch, SignatureRejected, TooManyRequests, TransportError, WorkGone
from market.mock import FaultPlan, FaultSpecError, MockMarket, stand_in_proof
from market.models import ProofReward
from market.wallet import Wallet

pytestmark = pytest.mark.anyio
PRICE = 5 * 10**15
FAST = RetryPolicy(initial_s=0.02, max_s=0.1, budget_s=5.0, attempt_s=5.0)


def counters(market: MockMarket) -> dict[str, Any]:
    return dict(httpx.get(market.root_url + "/_mock/state").json()["counters"])


def add_faults(market: MockMarket, spec: str) -> None:
    httpx.post(market.root_url + "/_mock/faults", content=spec).raise_for_status()


async def _challenge(c: MarketClient) -> tuple[str, bytes]:
    await c.create_ask(PRICE)
    req = (await c.poll()).requests[-1]
    assert req.request_cid is not None
    return req.request_cid, await c.fetch_request_bytes(req.request_cid)


async def test_status_latency_and_drops(market: MockMarket, wallet: Wallet) -> None:
    add_faults(market, "ask:429#1; poll:503#2; poll:latency=0.3#1; complete:drop-before#1")
    async with MarketClient(market.base_url, wallet, retry=FAST) as c:
        with pytest.raises(TooManyRequests):
            await c.create_ask(PRICE)
        t0 = time.monotonic()
        cid, raw = await _challenge(c)  # the poll is retried through two 503s, after 0.3 s of latency
        assert time.monotonic() - t0 >= 0.3
        reward = await c.complete(cid, stand_in_proof(raw))  # dropped before processing, then accepted
        assert isinstance(reward, ProofReward) and reward.pow
    n = counters(market)
    assert (
        n["fault_429_ask"],
        n["fault_503_poll"],
        n["fault_latency_poll"],
        n["fault_drop_before_complete"],
    ) == (
        1,
        2,
        1,
        1,
    )
    assert n["requests_complete"] == 2 and n["completed_valid"] == 1


async def test_lost_answer_then_409_is_already_accepted(market: MockMarket, wallet: Wallet) -> None:
    """The market takes the proof, the connection drops before the answer; the retry gets 409."""
    async with MarketClient(market.base_url, wallet, retry=FAST) as c:
        cid, raw = await _challenge(c)
        add_faults(market, "complete:drop-after#1")
        outcome = await c.complete(cid, stand_in_proof(raw))
        assert isinstance(outcome, AlreadyAccepted) and outcome.status == 409
    n = counters(market)
    assert (n["fault_drop_after_complete"], n["completed_challenges"], n["rejected_duplicate"]) == (1, 1, 1)


async def test_bad_request_data_and_410_storm(market: MockMarket, wallet: Wallet) -> None:
    async with MarketClient(market.base_url, wallet, retry=FAST) as c:
        await c.create_ask(PRICE)
        (req,) = (await c.poll()).requests
        assert req.request_cid is not None
        add_faults(market, "fetch:truncate#1; fetch:corrupt#1")
        # a cut and a damaged download, then a good one: all within one call (the client downloads again)
        raw = await c.fetch_request_bytes(req.request_cid)
        assert req.request_cid and RequestCid.parse(req.request_cid).matches(raw)
        add_faults(market, "fetch:corrupt#3")  # damaged every time: refused after the re-downloads
        with pytest.raises(ContentMismatch):
            await c.fetch_request_bytes(req.request_cid)
        add_faults(market, "complete:410#1")
        with pytest.raises(WorkGone):
            await c.complete(req.request_cid, stand_in_proof(raw))
        reward = await c.complete(req.request_cid, stand_in_proof(raw))  # the work was never really gone
        assert isinstance(reward, ProofReward)
    n = counters(market)
    assert (n["fault_truncate_fetch"], n["fault_corrupt_fetch"], n["fault_410_complete"]) == (1, 4, 1)


async def test_clock_skew(make_market: Any, wallet: Wallet) -> None:
    """A market clock 30 s behind: our first signature is from its future (401); the client reads the
    offset from the Date header and signs with the market's time from then on."""
    market = make_market(slot_divisor=2)
    add_faults(market, "*:skew=-30")
    async with MarketClient(market.base_url, wallet, retry=FAST) as c:
        with pytest.raises(SignatureRejected) as err:
            await c.create_ask(PRICE)
        assert err.value.clock_offset_s is not None and -32 < err.value.clock_offset_s < -28
        await c.create_ask(PRICE)
    date = httpx.get(market.root_url + "/_mock/state").headers["date"]
    from email.utils import parsedate_to_datetime

    assert abs(parsedate_to_datetime(date).timestamp() - (time.time() - 30)) < 2


async def test_drop_with_no_retry_is_a_transport_error(market: MockMarket, wallet: Wallet) -> None:
    add_faults(market, "withdraw:drop-before")
    async with MarketClient(market.base_url, wallet, retry=FAST) as c:
        with pytest.raises(TransportError):
            await c.withdraw(1)


def test_spec_grammar() -> None:
    plan = FaultPlan.parse("ask:429@0.5/10-20#3; *:latency=0.25; fetch:corrupt; *:skew=-5/0-60", seed=1)
    assert [
        (r.endpoint, r.kind, r.value, r.probability, r.start_s, r.end_s, r.count) for r in plan.rules
    ] == [
        ("ask", "status", 429.0, 0.5, 10.0, 20.0, 3),
        ("*", "latency", 0.25, 1.0, 0.0, None, None),
        ("fetch", "corrupt", 0.0, 1.0, 0.0, None, None),
        ("*", "skew", -5.0, 1.0, 0.0, 60.0, None),
    ]
    assert plan.skew(59.9) == -5.0 and plan.skew(60.0) == 0.0
    assert plan.pick("ask", 5.0)[1] is None  # outside its window
    fired = sum(plan.pick("ask", 15.0)[1] is not None for _ in range(200))
    assert fired == 3  # the count caps it, the coin decides when
    assert plan.pick("fetch", 0.0) == (0.25, plan.rules[2])
    for bad in [
        "ask",
        "ask:999",
        "nope:429",
        "ask:latency",
        "poll:truncate",
        "ask:429@1.5",
        "ask:429/5-1",
        "ask:boom",
    ]:
        with pytest.raises(FaultSpecError):
            FaultPlan.parse(bad)
