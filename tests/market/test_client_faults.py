"""Faults an outside check found in MarketClient, each reproduced first: lost answers to accepted submits,
servers that trickle bytes, signatures in logs, orphan asks, clock skew, key-file edge cases, and a large body
held twice. Loopback servers here are real TCP servers on 127.0.0.1, bounded in time and count."""

from __future__ import annotations

import email.utils
import io
import json
import logging
import os
import threading
import tracemalloc
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
import respx

import agent.logsetup as logsetup
from market.cid import RequestCid
from market.client import AlreadyAccepted, MarketClient, RetryPolicy
from market.errors import AskOutcomeUnknown, KeyFileError, Rejected, SignatureRejected, TransportError
from market.models import ProofReward
from market.proofdata import ProofData, SectorID
from market.signing import DST_WORK_ASK, DST_WORK_COMPLETE, verify_request
from market.wallet import Wallet, read_key_file, write_key_file
from porep.c1 import KeyOrder
from porep.c1.synth import synth_c1_json

pytestmark = pytest.mark.anyio

BASE = "https://market.test/v0/proofs"
NOW = 1_767_225_600.0
PRICE = 5_000_000_000_000_000
REWARD = {"status": "ok", "pow": False, "nonce": 1, "amount": "5", "cumulative_amount": "5", "signature": ""}
CID = str(RequestCid.of(b"some proof data"))


class Clock:
    def __init__(self) -> None:
        self.wall = NOW
        self.mono = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    async def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.wall += s
        self.mono += s


@pytest.fixture
async def mocked() -> AsyncIterator[tuple[respx.MockRouter, MarketClient, Wallet, Clock]]:
    router = respx.MockRouter(base_url=BASE, assert_all_called=False, assert_all_mocked=True)
    wallet, clock = Wallet.generate(), Clock()
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as http:
        client = MarketClient(
            BASE,
            wallet,
            http=http,
            clock=clock.clock,
            monotonic=clock.monotonic,
            sleep=clock.sleep,
            retry=RetryPolicy(budget_s=600),
        )
        yield router, client, wallet, clock


# -- 1. a completion the market accepted, whose answer was lost -------------------------------------------


async def test_409_after_a_lost_answer_is_already_accepted(mocked) -> None:
    router, client, wallet, _ = mocked
    accepted: list[bytes] = []

    def market(request: httpx.Request) -> httpx.Response:
        if accepted:
            return httpx.Response(409, text="already submitted")
        accepted.append(request.content)  # the market takes the proof ...
        raise httpx.ReadTimeout("answer lost", request=request)  # ... and the answer never arrives

    route = router.post(f"/provider/work/complete/{wallet.address}/{CID}").mock(side_effect=market)
    outcome = await client.complete(CID, b"p" * 192)
    assert isinstance(outcome, AlreadyAccepted) and outcome.request_cid == CID and outcome.status == 409
    assert route.call_count == 2 and accepted == [b"p" * 192]


async def test_409_on_a_first_try_or_after_a_connect_failure_stays_an_error(mocked) -> None:
    router, client, wallet, _ = mocked
    route = router.post(f"/provider/work/complete/{wallet.address}/{CID}")
    route.side_effect = [httpx.Response(409, text="already submitted")]
    with pytest.raises(Rejected, match="409"):
        await client.complete(CID, b"p")
    route.side_effect = [httpx.ConnectError("refused"), httpx.Response(409, text="already submitted")]
    with pytest.raises(Rejected, match="409"):  # the refused try never reached the market
        await client.complete(CID, b"p")


async def test_5xx_then_409_is_already_accepted(mocked) -> None:
    router, client, wallet, _ = mocked
    route = router.post(f"/provider/work/complete/{wallet.address}/{CID}")
    route.side_effect = [httpx.Response(502, text="bad gateway"), httpx.Response(409, text="dup")]
    assert isinstance(await client.complete(CID, b"p"), AlreadyAccepted)


# -- 2. no overall deadline per try --------------------------------------------------------------------------


async def _trickle_server(listener: anyio.abc.SocketListener, served: list[int]) -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nContent-Type: application/json\r\n\r\n"

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                await stream.receive(65536)  # the request (small GET)
                served.append(1)
                await stream.send(head)
                for _ in range(200):  # one byte every 0.3 s: never slow enough for a per-read timeout
                    await anyio.sleep(0.3)
                    await stream.send(b" ")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                return  # the client gave up on this connection

    await listener.serve(handle)


async def test_a_trickling_server_cannot_hold_a_try_past_its_deadline() -> None:
    served: list[int] = []
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(_trickle_server, listener, served)
        async with MarketClient(
            f"http://127.0.0.1:{port}/v0/proofs",
            Wallet.generate(),
            timeout_s=1.0,
            retry=RetryPolicy(initial_s=0.1, max_s=0.1, budget_s=2.5, attempt_s=1.0),
        ) as client:
            t0 = anyio.current_time()
            with anyio.fail_after(15):  # without per-try deadlines this ran for minutes
                with pytest.raises(TransportError, match="no complete answer within"):
                    await client.poll()
            elapsed = anyio.current_time() - t0
        tg.cancel_scope.cancel()
    assert 1.0 <= elapsed < 4.0, elapsed  # bounded by the 2.5 s budget (+ one try's deadline at most)
    assert 2 <= len(served) <= 3  # it did retry, within the budget


# -- 3. signatures and keys in logs --------------------------------------------------------------------------


async def test_no_signature_or_key_reaches_the_logs(mocked, monkeypatch) -> None:
    router, client, wallet, clock = mocked
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logsetup._configured)
    chatty = {n: logging.getLogger(n).level for n in ("httpx", "httpcore")}
    monkeypatch.setattr(logsetup, "_configured", False)
    root.handlers = []
    try:
        logsetup.setup_logging("debug", "json", stream=stream)
        router.post(f"/provider/work/ask/{wallet.address}").respond(200, json={"id": 1})
        router.post(f"/provider/work/complete/{wallet.address}/{CID}").respond(200, json=REWARD)
        router.post("/provider/work/withdraw/1").respond(500, text="x")
        await client.create_ask(PRICE)
        await client.complete(CID, b"p")
        with pytest.raises(Rejected):
            await client.withdraw(1)
        # a third-party logger at INFO that prints URLs with their query (what httpx does)
        logging.getLogger("someone.else").info("GET %s", f"{BASE}/x?signature=" + "ab" * 40)
    finally:
        root.handlers, root.level = saved[0], saved[1]
        logsetup._configured = saved[2]
        for name, level in chatty.items():
            logging.getLogger(name).setLevel(level)
    text = stream.getvalue()
    assert "withdraw" in text or "market" in text  # something was logged
    sigs = [c.request.url.params["signature"] for c in router.calls]
    assert sigs and not any(s in text for s in sigs)
    assert "ab" * 40 not in text and "signature=<redacted>" in text
    key = wallet.export_lotus()
    assert key not in text and wallet._key.secret.hex() not in text  # type: ignore[attr-defined]


# -- 4. orphan asks ------------------------------------------------------------------------------------------


async def test_a_lost_ask_answer_says_the_ask_may_exist(mocked) -> None:
    router, client, wallet, _ = mocked
    route = router.post(f"/provider/work/ask/{wallet.address}")
    route.side_effect = httpx.ReadTimeout("lost")
    with pytest.raises(AskOutcomeUnknown, match="active_asks"):
        await client.create_ask(PRICE)
    route.side_effect = httpx.ConnectError("refused")  # certainly not created: a plain transport error
    with pytest.raises(TransportError) as info:
        await client.create_ask(PRICE)
    assert not isinstance(info.value, AskOutcomeUnknown)
    assert route.call_count == 2  # never retried inside the call


# -- 5. clock skew ----------------------------------------------------------------------------------------


def _date(t: float) -> str:
    return email.utils.formatdate(t, usegmt=True)


async def test_clock_skew_is_measured_reported_and_corrected(mocked) -> None:
    router, client, wallet, clock = mocked
    market_time = clock.wall + 90  # this host is 90 s slow: every signature looks 90 s old... too old

    def ask(request: httpx.Request) -> httpx.Response:
        try:
            verify_request(
                request.url.params["signature"],
                wallet.address,
                DST_WORK_ASK,
                str(PRICE),
                now=market_time,
                max_age_s=60,
                skew_s=5,
            )
        except Exception as e:  # noqa: BLE001 - the market's answer to any bad signature
            return httpx.Response(401, text=f"bad signature: {e}", headers={"Date": _date(market_time)})
        return httpx.Response(200, json={"id": 5}, headers={"Date": _date(market_time)})

    router.post(f"/provider/work/ask/{wallet.address}").mock(side_effect=ask)
    with pytest.raises(SignatureRejected, match="90 s behind the market's") as info:
        await client.create_ask(PRICE)
    assert info.value.clock_offset_s == pytest.approx(90, abs=1)
    assert client.clock_offset_s == pytest.approx(90, abs=1)
    assert (await client.create_ask(PRICE)).id == 5  # the next signature uses the market's time


async def test_small_offsets_are_not_corrected(mocked) -> None:
    router, client, wallet, clock = mocked
    route = router.get(f"/provider/work/poll/{wallet.address}")
    route.respond(200, json={}, headers={"Date": _date(NOW + 1)})
    await client.poll()
    assert client.clock_offset_s == pytest.approx(1, abs=1) and client.signing_time() == int(NOW)


# -- 6. key files and memory ------------------------------------------------------------------------------


def test_a_stale_temporary_key_file_does_not_break_writing(tmp_path: Path) -> None:
    d = tmp_path / "keys"
    d.mkdir(mode=0o700)
    (d / f".wallet.key.{os.getpid()}.tmp").write_text("stale from a crash")
    w = Wallet.generate()
    write_key_file(d / "wallet.key", w)
    assert read_key_file(d / "wallet.key").address == w.address


def test_group_or_world_writable_key_directories_are_refused(tmp_path: Path) -> None:
    d = tmp_path / "open"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.raises(KeyFileError, match="writable by group or others"):
        write_key_file(d / "k.key", Wallet.generate())
    safe = tmp_path / "safe"
    safe.mkdir(mode=0o700)
    write_key_file(safe / "k.key", Wallet.generate())
    os.chmod(safe, 0o770)
    with pytest.raises(KeyFileError, match="writable by group or others"):
        read_key_file(safe / "k.key")


async def test_a_large_body_is_held_once(mocked) -> None:
    router, client, wallet, _ = mocked
    size = 24 * 1024 * 1024
    data = ProofData.encode(SectorID(1, 1), porep=synth_c1_json("StackedDrg2KiBV1_1", order=KeyOrder.GO))
    data = data[:-1] + b" " * (size - len(data)) + b"}"
    cid = RequestCid.of(data)
    client.max_request_bytes = 2 * size

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(data), 1 << 20):
            yield data[i : i + (1 << 20)]

    router.get(f"/provider/proof/{cid}").mock(return_value=httpx.Response(200, content=chunks()))
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        got = await client.fetch_request_bytes(cid)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got == data
    assert peak - base < 1.5 * size, (peak - base) / size  # bytes(bytearray) made it ~2.0


async def test_fetch_request_parses_in_a_worker_thread(mocked, monkeypatch) -> None:
    router, client, wallet, _ = mocked
    data = ProofData.encode(SectorID(1000, 1), porep=synth_c1_json("StackedDrg2KiBV1_1", order=KeyOrder.GO))
    cid = RequestCid.of(data)
    router.get(f"/provider/proof/{cid}").respond(200, content=data)
    threads: list[bool] = []
    original = ProofData.parse.__func__  # type: ignore[attr-defined]

    def spy(cls, raw):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread() is threading.main_thread())
        return original(cls, raw)

    monkeypatch.setattr(ProofData, "parse", classmethod(spy))
    pd = await client.fetch_request(cid)
    assert pd.sector_id.miner == 1000 and threads == [False]


# -- follow-ups: the same faults through the paths the first fixes missed ------------------------------------


async def test_409_after_a_try_cut_by_its_deadline_is_already_accepted() -> None:
    """A try that the per-try deadline cuts may have been accepted as surely as one whose answer was lost."""
    router = respx.MockRouter(base_url=BASE, assert_all_called=False, assert_all_mocked=True)
    wallet, clock = Wallet.generate(), Clock()
    taken: list[bytes] = []

    async def market(request: httpx.Request) -> httpx.Response:
        if taken:
            return httpx.Response(409, text="already submitted")
        taken.append(request.content)  # accepted; the answer never comes back in time
        await anyio.sleep(30)
        return httpx.Response(200, json=REWARD)

    router.post(f"/provider/work/complete/{wallet.address}/{CID}").mock(side_effect=market)
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as http:
        client = MarketClient(
            BASE,
            wallet,
            http=http,
            clock=clock.clock,
            sleep=clock.sleep,
            retry=RetryPolicy(budget_s=600, attempt_s=0.2),
        )
        with anyio.fail_after(10):
            outcome = await client.complete(CID, b"p")
    assert isinstance(outcome, AlreadyAccepted) and taken == [b"p"]


async def _serve_once_then_trickle(port_out: list[int], task_status: anyio.abc.TaskStatus[None]) -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port_out.append(listener.extra(anyio.abc.SocketAttribute.local_port))
    task_status.started()
    async with listener:
        await _trickle_server(listener, [])


@pytest.mark.parametrize("call", ["create_ask", "withdraw"])
async def test_single_try_calls_have_a_wall_clock_deadline_too(call: str) -> None:
    """create_ask and withdraw are never retried, but one try must not be held open by a trickling server
    (the request loop would stop polling); a cut create_ask may have made the ask: AskOutcomeUnknown."""
    port: list[int] = []
    async with anyio.create_task_group() as tg:
        await tg.start(_serve_once_then_trickle, port)
        async with MarketClient(
            f"http://127.0.0.1:{port[0]}/v0/proofs",
            Wallet.generate(),
            timeout_s=1.0,
            retry=RetryPolicy(attempt_s=0.8),
        ) as client:
            t0 = anyio.current_time()
            with anyio.fail_after(10), pytest.raises(TransportError, match="no complete answer") as info:
                if call == "create_ask":
                    await client.create_ask(PRICE)
                else:
                    await client.withdraw(7)
            elapsed = anyio.current_time() - t0
        tg.cancel_scope.cancel()
    assert 0.7 <= elapsed < 3.0, elapsed
    assert isinstance(info.value, AskOutcomeUnknown) == (call == "create_ask")


async def test_error_bodies_never_echo_our_signature(mocked) -> None:
    """A market (or proxy) that quotes the request back must not carry our signature into errors and logs."""
    router, client, wallet, _ = mocked

    def echo(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, text=f"bad request {request.url} sig {request.url.params['signature']}")

    router.post(f"/provider/work/ask/{wallet.address}").mock(side_effect=echo)
    with pytest.raises(Rejected) as info:
        await client.create_ask(PRICE)
    sig = router.calls.last.request.url.params["signature"]
    assert "400" in str(info.value) and sig not in str(info.value) and sig not in info.value.body
    assert "bad request" in info.value.body


def test_key_file_os_errors_are_key_file_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """File systems without hard links (some FUSE/SMB mounts) fail os.link with EPERM: one clear error."""
    d = tmp_path / "keys"
    d.mkdir(mode=0o700)

    def no_links(src: object, dst: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    with pytest.raises(KeyFileError, match="cannot write key file"):
        write_key_file(d / "wallet.key", Wallet.generate())
    assert list(d.iterdir()) == []  # no temporary file left behind
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a directory should be")
    with pytest.raises(KeyFileError):
        write_key_file(blocked / "sub" / "wallet.key", Wallet.generate())


async def test_a_submit_refused_for_clock_skew_is_signed_again_with_the_market_time(mocked) -> None:
    """A proof is worth more than an ask: when the 401 itself reveals the skew (no Date seen before, or the
    clock jumped), complete signs once more with the corrected time instead of failing the proof."""
    router, client, wallet, clock = mocked
    market_time = clock.wall - 120  # this host is 2 minutes fast: its signatures look to be from the future

    def market(request: httpx.Request) -> httpx.Response:
        headers = {"Date": _date(market_time)}
        try:
            verify_request(
                request.url.params["signature"], wallet.address, DST_WORK_COMPLETE, CID, now=market_time
            )
        except Exception as e:  # noqa: BLE001 - the market's answer to any bad signature
            return httpx.Response(401, text=f"bad signature: {e}", headers=headers)
        return httpx.Response(200, json=REWARD, headers=headers)

    route = router.post(f"/provider/work/complete/{wallet.address}/{CID}").mock(side_effect=market)
    reward = await client.complete(CID, b"p")
    assert not isinstance(reward, AlreadyAccepted) and reward.nonce == 1
    assert route.call_count == 2 and client.clock_offset_s == pytest.approx(-120, abs=1)
    route.side_effect = [httpx.Response(401, text="bad signature", headers={"Date": _date(market_time)})]
    with pytest.raises(SignatureRejected):  # skew already corrected: a 401 now is not about the clock
        await client.complete(CID, b"p")
    assert route.call_count == 3


# -- the outside check's run, replayed on a real loopback market that drops answers --------------------------


class _DroppingMarket:
    """A minimal HTTP/1.1 market on 127.0.0.1: takes every proof, drops the answer for every other proof
    (closes the connection after reading the request), answers 409 to a proof it already has."""

    def __init__(self) -> None:
        self.accepted: list[str] = []
        self.signatures: list[str] = []

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            buf = b""
            try:
                while b"\r\n\r\n" not in buf:
                    buf += await stream.receive(65536)
                head, _, body = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                fields = dict(h.lower().split(": ", 1) for h in lines[1:])
                while len(body) < int(fields.get("content-length", "0")):
                    body += await stream.receive(65536)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
            target = httpx.URL(lines[0].split(" ")[1])
            self.signatures.append(target.params["signature"])
            rcid = target.path.rsplit("/", 1)[1]
            if rcid in self.accepted:
                status, text = 409, b"already submitted"
            else:
                self.accepted.append(rcid)
                if len(self.accepted) % 2:
                    return  # accepted, and the answer is lost: the connection closes unanswered
                status, text = 200, json.dumps(REWARD).encode()
            reason = {200: "OK", 409: "Conflict"}[status]
            head_out = (
                f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(text)}\r\nConnection: close\r\n\r\n"
            )
            await stream.send(head_out.encode() + text)


async def test_answers_dropped_for_half_the_proofs_still_count_every_accepted_one(monkeypatch) -> None:
    """The outside check's run: answers dropped for 50 % of 6 proofs. Every proof the market accepted comes
    back accepted (a reward or AlreadyAccepted), never a refusal; and no signature reaches the logs."""
    market, wallet = _DroppingMarket(), Wallet.generate()
    cids = [str(RequestCid.of(b"proof data %d" % i)) for i in range(6)]
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level, {n: logging.getLogger(n).level for n in ("httpx", "httpcore")}
    monkeypatch.setattr(logsetup, "_configured", False)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    try:
        logsetup.setup_logging("debug", "json", stream=stream)
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, market.handle)
            retry = RetryPolicy(initial_s=0.01, max_s=0.01, budget_s=10, attempt_s=5)
            async with MarketClient(f"http://127.0.0.1:{port}/v0/proofs", wallet, retry=retry) as client:
                with anyio.fail_after(20):
                    outcomes = [await client.complete(cid, b"p" * 1920) for cid in cids]
            tg.cancel_scope.cancel()
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        for name, level in saved[2].items():
            logging.getLogger(name).setLevel(level)
    assert market.accepted == cids
    assert sum(isinstance(o, AlreadyAccepted) for o in outcomes) == 3  # the dropped answers
    assert sum(isinstance(o, ProofReward) for o in outcomes) == 3
    text = stream.getvalue()
    assert "failed (attempt 1)" in text  # the run was logged, retries included
    assert len(market.signatures) == 9 and not any(s in text for s in market.signatures)
    assert wallet.export_lotus() not in text


async def test_a_fetch_try_has_its_own_wall_clock_deadline() -> None:
    """Request data (tens of MB at 32GiB) gets ``fetch_attempt_s``, the small JSON calls ``attempt_s``; the
    time spent in tries counts against the budget (real clocks here)."""
    router = respx.MockRouter(base_url=BASE, assert_all_called=False, assert_all_mocked=True)
    data = b"request bytes"
    cid = RequestCid.of(data)
    tries: list[float] = []

    async def slow(request: httpx.Request) -> httpx.Response:
        tries.append(anyio.current_time())
        await anyio.sleep(30)
        return httpx.Response(200, content=data)

    router.get(f"/provider/proof/{cid}").mock(side_effect=slow)
    retry = RetryPolicy(initial_s=0.01, max_s=0.01, budget_s=0.9, attempt_s=100, fetch_attempt_s=0.2)
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as http:
        client = MarketClient(BASE, Wallet.generate(), http=http, retry=retry)
        t0 = anyio.current_time()
        with anyio.fail_after(10), pytest.raises(TransportError, match="no complete answer within"):
            await client.fetch_request_bytes(cid)
        elapsed = anyio.current_time() - t0
    assert 3 <= len(tries) <= 6 and 0.8 <= elapsed < 2.0, (len(tries), elapsed)
