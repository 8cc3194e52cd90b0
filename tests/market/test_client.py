"""MarketClient against a respx router behind ``httpx.MockTransport``: every endpoint and status path.

No sockets are opened and no test waits: time, sleep and nonces are injected, and backoff sleeps only
advance a fake clock.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import anyio
import httpx
import pytest
import respx

from market.cid import RequestCid
from market.client import MarketClient, RetryPolicy
from market.errors import (
    ContentMismatch,
    ProtocolError,
    Rejected,
    ResponseTooLarge,
    TooManyRequests,
    TransportError,
    WorkGone,
)
from market.models import WorkAsk
from market.proofdata import ProofData, SectorID
from market.signing import DST_WORK_ASK, DST_WORK_COMPLETE, DST_WORK_WITHDRAW, verify_request
from market.wallet import Wallet
from porep.c1 import KeyOrder
from porep.c1.synth import synth_c1_json

pytestmark = pytest.mark.anyio

BASE = "https://market.test/v0/proofs"
NOW = 1_767_225_600.0
PRICE = 5_000_000_000_000_000  # 0.005 FIL
MAX_REQUEST = 256 * 1024
C1 = synth_c1_json("StackedDrg2KiBV1_1", order=KeyOrder.GO)  # ~100 kB
DATA = ProofData.encode(SectorID(1000, 1), porep=C1)
CID = str(RequestCid.of(DATA))
REWARD = {"status": "ok", "pow": False, "nonce": 3, "amount": "5000000000000000",
          "cumulative_amount": "15000000000000000", "signature": "c2ln"}  # fmt: skip


@dataclass
class FakeTime:
    """Wall clock, monotonic clock and sleep in one: sleeping advances both clocks, instantly."""

    wall: float = NOW
    mono: float = 1000.0
    sleeps: list[float] = field(default_factory=list)

    def clock(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.wall += seconds
        self.mono += seconds


@dataclass
class Env:
    router: respx.MockRouter
    client: MarketClient
    wallet: Wallet
    time: FakeTime


@pytest.fixture
def wallet() -> Wallet:
    return Wallet.generate()


@pytest.fixture
async def env(wallet: Wallet) -> AsyncIterator[Env]:
    router = respx.MockRouter(base_url=BASE, assert_all_called=False, assert_all_mocked=True)
    fake = FakeTime()
    nonces = iter(range(1, 1_000_000))
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as http:
        client = MarketClient(
            BASE,
            wallet,
            http=http,
            retry=RetryPolicy(initial_s=1, max_s=60, budget_s=1800),
            max_request_bytes=MAX_REQUEST,
            clock=fake.clock,
            monotonic=fake.monotonic,
            sleep=fake.sleep,
            nonce_source=lambda: next(nonces),
        )
        yield Env(router, client, wallet, fake)


def ask_path(env: Env) -> str:
    return f"/provider/work/ask/{env.wallet.address}"


def poll_path(env: Env) -> str:
    return f"/provider/work/poll/{env.wallet.address}"


def complete_path(env: Env) -> str:
    return f"/provider/work/complete/{env.wallet.address}/{CID}"


def verified(env: Env, request: httpx.Request, dst: str, payload: str) -> int:
    """The request's signature checks out for our wallet; returns its NonceID."""
    sig = request.url.params["signature"]
    return verify_request(sig, env.wallet.address, dst, payload, now=env.time.wall).nonce_id


def statuses(*codes: int, final: httpx.Response) -> Iterator[httpx.Response]:
    for code in codes:
        yield httpx.Response(code, text=f"status {code}")
    yield final


# -- create_ask --------------------------------------------------------------------------------------------


async def test_create_ask_signs_and_parses(env: Env) -> None:
    body = {
        "id": 41,
        "min_price_nfil": 5_000_000,
        "created_at": "2026-01-01T00:00:00Z",
        "min_price_fil": "0.005",
    }
    route = env.router.post(ask_path(env)).respond(200, json=body)
    ask = await env.client.create_ask(PRICE)
    assert ask.id == 41 and ask.min_price_nfil == 5_000_000
    req = route.calls.last.request
    assert str(env.wallet.address).startswith("f1")
    assert list(req.url.params.keys()) == ["price", "signature"]  # Curio's query order
    assert req.url.params["price"] == str(PRICE) and req.content == b""
    verified(env, req, DST_WORK_ASK, str(PRICE))


async def test_ask_429_raises_the_sentinel_at_once(env: Env) -> None:
    route = env.router.post(ask_path(env)).respond(429, text="slow down")
    start = time.perf_counter()
    with pytest.raises(TooManyRequests, match="slow down"):
        await env.client.create_ask(PRICE)
    assert time.perf_counter() - start < 0.05
    assert route.call_count == 1 and env.time.sleeps == []


async def test_ask_other_errors_fail_fast_with_status_and_body(env: Env) -> None:
    route = env.router.post(ask_path(env)).respond(503, text="maintenance")
    with pytest.raises(Rejected, match="503: maintenance") as info:
        await env.client.create_ask(PRICE)
    assert (info.value.status, info.value.body) == (503, "maintenance")
    assert route.call_count == 1 and env.time.sleeps == []  # asks are never retried inside the call


async def test_ask_and_withdraw_transport_errors_are_not_retried(env: Env) -> None:
    ask = env.router.post(ask_path(env)).mock(side_effect=httpx.ConnectError("refused"))
    withdraw = env.router.post("/provider/work/withdraw/7").mock(side_effect=httpx.WriteTimeout("slow"))
    with pytest.raises(TransportError, match="refused"):
        await env.client.create_ask(PRICE)
    with pytest.raises(TransportError, match="timed out"):
        await env.client.withdraw(7)
    assert ask.call_count == withdraw.call_count == 1 and env.time.sleeps == []


async def test_ask_malformed_json_is_a_clear_protocol_error(env: Env) -> None:
    env.router.post(ask_path(env)).respond(200, text='{"id": 4')
    with pytest.raises(ProtocolError, match="WorkAsk: malformed JSON"):
        await env.client.create_ask(PRICE)


async def test_ask_price_is_checked_before_sending(env: Env) -> None:
    for bad in (0, -1, 10**18 + 10**9, 5 * 10**15 + 1):
        with pytest.raises(ValueError):
            await env.client.create_ask(bad)
    assert env.router.calls.call_count == 0


async def test_every_request_gets_fresh_nonces(env: Env) -> None:
    route = env.router.post(ask_path(env)).respond(200, json={"id": 1})
    await env.client.create_ask(PRICE)
    env.time.wall += 1
    await env.client.create_ask(PRICE)
    first, second = (c.request.url.params["signature"] for c in route.calls)
    assert first != second
    assert [verified(env, c.request, DST_WORK_ASK, str(PRICE)) for c in route.calls] == [1, 2]


# -- poll and the retry policy ------------------------------------------------------------------------------


async def test_poll_ok(env: Env) -> None:
    body = {
        "requests": [{"id": 1, "request_cid": CID, "done": False, "work_ask_id": 41}],
        "active_asks": None,
    }
    env.router.get(poll_path(env)).respond(200, json=body)
    resp = await env.client.poll()
    assert resp.requests[0].request_cid == CID and resp.active_asks == ()


async def test_poll_5xx_is_retried_then_succeeds(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    route = env.router.get(poll_path(env))
    route.side_effect = statuses(
        503, 502, 500, final=httpx.Response(200, json={"requests": [], "active_asks": []})
    )
    with caplog.at_level(logging.WARNING, logger="market.client"):
        resp = await env.client.poll()
    assert resp.requests == () and route.call_count == 4
    assert env.time.sleeps == [1, 2, 4]
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 3 and "503" in retries[0] and "retrying in 1.0 s" in retries[0]


async def test_poll_transport_errors_are_retried_and_chained(env: Env) -> None:
    route = env.router.get(poll_path(env))
    route.side_effect = [
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
        httpx.Response(200, json={}),
    ]
    assert (await env.client.poll()).requests == ()
    assert env.time.sleeps == [1, 2]

    env.time.sleeps.clear()
    route.side_effect = httpx.ConnectError("still refused")
    env.client.retry = RetryPolicy(initial_s=1, max_s=60, budget_s=5)
    with pytest.raises(TransportError, match="ConnectError: still refused") as info:
        await env.client.poll()
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert env.time.sleeps == [1, 2]  # a third wait (4 s) would end past the 5 s budget


async def test_timeouts_become_transport_errors(env: Env) -> None:
    env.client.retry = RetryPolicy(budget_s=0)
    env.router.get(poll_path(env)).mock(side_effect=httpx.ReadTimeout("t"))
    with pytest.raises(TransportError, match="timed out") as info:
        await env.client.poll()
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


async def test_backoff_doubles_to_60_s_within_the_budget(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    route = env.router.get(poll_path(env)).respond(503, text="down")
    with caplog.at_level(logging.WARNING, logger="market.client"), pytest.raises(Rejected, match="503"):
        await env.client.poll()
    assert env.time.sleeps[:8] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert max(env.time.sleeps) == 60 and sum(env.time.sleeps) <= 1800
    assert sum(env.time.sleeps) + 60 > 1800  # it used the budget, not less
    assert route.call_count == len(env.time.sleeps) + 1
    assert any("giving up" in r.getMessage() for r in caplog.records)


async def test_retry_after_is_honoured(env: Env) -> None:
    route = env.router.get(poll_path(env))
    route.side_effect = [
        httpx.Response(429, headers={"Retry-After": "7"}),
        httpx.Response(503, headers={"Retry-After": "3600"}),
        httpx.Response(200, json={}),
    ]
    await env.client.poll()
    assert env.time.sleeps == [7, 60]  # max(backoff, Retry-After), capped at the 60 s ceiling


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
async def test_request_errors_fail_fast(env: Env, status: int) -> None:
    route = env.router.get(poll_path(env)).respond(status, text="no such provider")
    with pytest.raises(Rejected, match=f"{status}: no such provider") as info:
        await env.client.poll()
    assert info.value.status == status and not info.value.retryable
    assert route.call_count == 1 and env.time.sleeps == []


async def test_poll_malformed_json_is_not_retried(env: Env) -> None:
    route = env.router.get(poll_path(env)).respond(200, text="<html>oops</html>")
    with pytest.raises(ProtocolError, match="WorkResponse: malformed JSON"):
        await env.client.poll()
    assert route.call_count == 1


async def test_long_error_bodies_are_cut(env: Env) -> None:
    env.router.get(poll_path(env)).respond(418, content=b"x" * 200_000)
    with pytest.raises(Rejected) as info:
        await env.client.poll()
    assert len(info.value.body) == 64 * 1024 and len(str(info.value)) < 1000


# -- fetch_request -----------------------------------------------------------------------------------------


async def test_fetch_request_checks_the_cid_and_parses(env: Env) -> None:
    route = env.router.get(f"/provider/proof/{CID}").respond(200, content=DATA)
    pd = await env.client.fetch_request(CID)
    assert pd.raw == DATA and pd.sector_id == SectorID(1000, 1)
    assert pd.porep is not None and pd.porep_raw == C1 == pd.porep.to_json()
    assert route.call_count == 1


async def test_fetch_hash_mismatch_is_rejected_after_the_refetches(env: Env) -> None:
    route = env.router.get(f"/provider/proof/{CID}").respond(200, content=DATA.replace(b"1000", b"1001"))
    with pytest.raises(ContentMismatch, match=CID):
        await env.client.fetch_request(CID)
    # the market served other bytes every time: two more downloads, then refused
    assert route.call_count == 1 + env.client.retry.content_refetches == 3


async def test_fetch_a_damaged_download_is_fetched_again(env: Env) -> None:
    """A cut transfer (the first body short) does not cost the assignment: the next download matches."""
    route = env.router.get(f"/provider/proof/{CID}")
    route.side_effect = [httpx.Response(200, content=DATA[:-7]), httpx.Response(200, content=DATA)]
    assert await env.client.fetch_request_bytes(CID) == DATA
    assert route.call_count == 2


async def test_fetch_oversize_declared_body_is_rejected(env: Env) -> None:
    big = b"{" + b" " * MAX_REQUEST + b"}"
    env.router.get(f"/provider/proof/{RequestCid.of(big)}").respond(200, content=big)
    with pytest.raises(ResponseTooLarge, match=f"{MAX_REQUEST}-byte limit"):
        await env.client.fetch_request_bytes(RequestCid.of(big))


# Under trio, stopping a body stream early leaves httpx's own nested async generators (Response.aiter_raw,
# BoundAsyncStream.__aiter__, the mock's AsyncIteratorByteStream.__aiter__) to the GC finaliser, which
# warns: a known httpx issue (encode/httpx#3686, fix proposed in #3777). The response itself is closed by
# the client; only that warning is ignored here.
@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <async_generator object "
    r"(Response\.aiter_raw|BoundAsyncStream\.__aiter__|AsyncIteratorByteStream\.__aiter__)"
    ":pytest.PytestUnraisableExceptionWarning"
)
async def test_fetch_oversize_streamed_body_stops_early(env: Env) -> None:
    produced: list[int] = []

    async def endless() -> AsyncIterator[bytes]:
        for i in range(10_000):
            produced.append(i)
            yield b"x" * 1024

    route = env.router.get(f"/provider/proof/{CID}")
    route.mock(side_effect=lambda _: httpx.Response(200, content=endless()))
    with pytest.raises(ResponseTooLarge):
        await env.client.fetch_request(CID)
    assert len(produced) <= MAX_REQUEST // 1024 + 2  # stopped at the cap, not after reading everything
    gc.collect()  # finalise the abandoned generators here, inside this test's warning filter


async def test_fetch_5xx_retried_then_success(env: Env) -> None:
    route = env.router.get(f"/provider/proof/{CID}")
    route.side_effect = statuses(500, final=httpx.Response(200, content=DATA))
    assert (await env.client.fetch_request(CID)).raw == DATA
    assert route.call_count == 2 and env.time.sleeps == [1]


async def test_fetch_malformed_request_data_is_a_clear_error(env: Env) -> None:
    junk = b'{"SectorID": {"Miner": 1, "Number": 2}, "PoRep": {"comm_d": [1,}'
    env.router.get(f"/provider/proof/{RequestCid.of(junk)}").respond(200, content=junk)
    with pytest.raises(ProtocolError, match="ProofData: malformed JSON in 'PoRep'"):
        await env.client.fetch_request(RequestCid.of(junk))


async def test_fetch_refuses_foreign_cids_without_a_request(env: Env) -> None:
    with pytest.raises(ProtocolError, match="raw sha2-256"):
        await env.client.fetch_request("bafyreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku")
    assert env.router.calls.call_count == 0


# -- complete ----------------------------------------------------------------------------------------------


async def test_complete_posts_the_proof_and_returns_the_voucher(env: Env) -> None:
    proof = bytes(range(192)) * 10
    route = env.router.post(complete_path(env)).respond(200, json=REWARD)
    reward = await env.client.complete(CID, proof)
    assert reward.cumulative_amount == 15 * 10**15 and reward.nonce == 3 and reward.signature == b"sig"
    req = route.calls.last.request
    assert req.content == proof
    verified(env, req, DST_WORK_COMPLETE, CID)


async def test_complete_410_is_work_gone_without_retry(env: Env) -> None:
    route = env.router.post(complete_path(env)).respond(410, text="reassigned")
    with pytest.raises(WorkGone, match="reassigned") as info:
        await env.client.complete(CID, b"proof")
    assert info.value.request_cid == CID
    assert route.call_count == 1 and env.time.sleeps == []


async def test_complete_retries_with_a_fresh_signature(env: Env) -> None:
    route = env.router.post(complete_path(env))
    route.side_effect = statuses(502, 503, final=httpx.Response(200, json=REWARD))
    await env.client.complete(CID, b"proof")
    assert route.call_count == 3 and env.time.sleeps == [1, 2]
    sigs = [c.request.url.params["signature"] for c in route.calls]
    assert len(set(sigs)) == 3
    # each try is signed at its own time with its own nonce (checked at the time of that try)
    env.time.wall = NOW
    times = []
    for call, waited in zip(route.calls, [0, 1, 2], strict=True):
        env.time.wall += waited
        sig = call.request.url.params["signature"]
        times.append(
            verify_request(sig, env.wallet.address, DST_WORK_COMPLETE, CID, now=env.time.wall).nonce_time
        )
    assert times == [int(NOW), int(NOW) + 1, int(NOW) + 3]


async def test_complete_then_410_after_retries(env: Env) -> None:
    route = env.router.post(complete_path(env))
    route.side_effect = statuses(500, final=httpx.Response(410))
    with pytest.raises(WorkGone):
        await env.client.complete(CID, b"proof")
    assert route.call_count == 2


# -- withdraw ----------------------------------------------------------------------------------------------


async def test_withdraw(env: Env) -> None:
    route = env.router.post("/provider/work/withdraw/41").respond(200)
    await env.client.withdraw(41)
    req = route.calls.last.request
    assert list(req.url.params.keys()) == ["provider-id", "signature"]
    assert req.url.params["provider-id"] == str(env.wallet.address)
    verified(env, req, DST_WORK_WITHDRAW, "41")


async def test_withdraw_error_has_status_and_body(env: Env) -> None:
    route = env.router.post("/provider/work/withdraw/41").respond(404, text="ask not found")
    with pytest.raises(Rejected, match="404: ask not found"):
        await env.client.withdraw(41)
    assert route.call_count == 1


# -- lifecycle and wiring ----------------------------------------------------------------------------------


async def test_testnet_addresses_in_paths(wallet: Wallet) -> None:
    router = respx.MockRouter(base_url=BASE, assert_all_mocked=True)
    route = router.get(f"/provider/work/poll/{wallet.address.encode('t')}").respond(200, json={})
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as http:
        client = MarketClient(BASE + "/", wallet, network="t", http=http)
        await client.poll()
    assert route.call_count == 1 and client.wallet.startswith("t1")


async def test_owned_client_is_closed_and_borrowed_one_is_not(wallet: Wallet) -> None:
    async with MarketClient(BASE, wallet) as owned:
        http = owned._http
    assert http.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        await owned.poll()
    async with httpx.AsyncClient() as borrowed:
        async with MarketClient(BASE, wallet, http=borrowed):
            pass
        assert not borrowed.is_closed


async def test_ask_model_is_the_public_one(env: Env) -> None:
    env.router.post(ask_path(env)).respond(200, content=b'{"id": 5}')
    assert await env.client.create_ask(PRICE) == WorkAsk(5)


async def test_cancellation_interrupts_a_backoff_wait(wallet: Wallet) -> None:
    """A cancelled caller (a SIGTERM drain) is not held by a 10 s backoff: real anyio.sleep, 50 ms scope."""
    router = respx.MockRouter(base_url=BASE, assert_all_mocked=True)
    route = router.get(f"/provider/work/poll/{wallet.address}").respond(503)
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as http:
        client = MarketClient(BASE, wallet, http=http, retry=RetryPolicy(initial_s=10))
        start = time.perf_counter()
        with anyio.move_on_after(0.05) as scope:
            await client.poll()
    assert scope.cancelled_caught and time.perf_counter() - start < 1.0
    assert route.call_count == 1


async def test_the_last_retry_never_starts_with_no_time_and_keeps_the_real_cause(env: Env) -> None:
    """A retry whose wait would leave less than a second of the budget is not made (it could only time out,
    "within 0 s", hiding the failure that mattered); a retry the budget cuts short names the try before."""
    route = env.router.get(poll_path(env))
    route.side_effect = httpx.ConnectError("refused")
    env.client.retry = RetryPolicy(initial_s=1, max_s=60, budget_s=1.0)  # after the 1 s wait: 0 s left
    with pytest.raises(TransportError, match="ConnectError: refused"):
        await env.client.poll()
    assert env.time.sleeps == []

    env.time.sleeps.clear()
    calls: list[int] = []

    async def refused_then_slow(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            raise httpx.ConnectError("refused")
        await anyio.sleep(5)  # longer than the 1.5 s of budget the retry has left
        return httpx.Response(200, json={})

    route.side_effect = refused_then_slow
    env.client.retry = RetryPolicy(initial_s=1, max_s=60, budget_s=2.5)
    with pytest.raises(TransportError) as info:
        await env.client.poll()
    msg = str(info.value)
    assert "no complete answer within 1.5 s" in msg and "cut short by the retry budget" in msg
    assert "ConnectError: refused" in msg and env.time.sleeps == [1]
