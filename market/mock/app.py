"""The mock market's HTTP face: Curio's provider endpoints under the real base path, plus ``/_mock/…``.

    POST {base}/provider/work/ask/{wallet}?price=&signature=            → 200 WorkAsk | 400 | 401 | 429
    GET  {base}/provider/work/poll/{wallet}                              → 200 WorkResponse | 400
    GET  {base}/provider/proof/{request_cid}                             → 200 raw ProofData bytes | 404
    POST {base}/provider/work/complete/{wallet}/{cid}?signature=  body   → 200 ProofReward | 400 | 401 | 404
                                                                           | 409 already submitted | 410 gone
    POST {base}/provider/work/withdraw/{ask_id}?provider-id=&signature=  → 200 | 400 | 401 | 404 | 409
    GET  /_mock/state            counters, providers, jobs, asks, the checker, fault rules (JSON)
    GET  /_mock/vouchers/{wallet}   every voucher issued to a wallet
    POST /_mock/faults           body: a fault spec to add (``clear`` removes all rules)
    POST /_mock/demand?count=&price=   add paid requests (real C1s from the pool)

The real market's status codes for a malformed or refused signature are not public: the mock answers 400 when
the signature or wallet cannot be decoded and 401 when verification fails (stale, future, replayed, wrong
signer), which our client reads as SignatureRejected. Every answer carries a ``Date`` header from the market's
clock (which a ``skew`` fault moves), so clients can measure their clock offset.
"""

from __future__ import annotations

import base64
import email.utils
import logging
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from market.mock.auth import AuthError, NonceCache, encode_f1, parse_f1, verify_signed_request
from market.mock.checker import ProofChecker
from market.mock.faults import Fault, FaultPlan, FaultSpecError
from market.mock.state import MarketState, Refusal

__all__ = ["BASE_PATH", "MockMarketApp", "TRANSPORT_KEY"]

log = logging.getLogger(__name__)

BASE_PATH = "/v0/proofs"
TRANSPORT_KEY = "psagent.mock.transport"  # the server puts the connection's transport in the scope here
MAX_PRICE = 10**18
PRICE_RESOLUTION = 10**9
MAX_PROOF_BYTES = 64 * 1024 * 1024
_DECIMAL = re.compile(r"[1-9][0-9]{0,18}")
_CID = re.compile(r"b[a-z2-7]{58}")


def _text(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)


def _request_kind(data: bytes) -> str:
    """The kind the request data carries, PoRep or Snap (the checker then picks that kind's verifying key);
    data that does not parse is left to the checker to diagnose."""
    from market.proofdata import ProofData

    try:
        return ProofData.parse(data).kind
    except Exception:  # noqa: BLE001 - the checker names the fault
        return "PoRep"


class MockMarketApp:
    """The ASGI app around a :class:`MarketState`, a :class:`ProofChecker` and a :class:`FaultPlan`."""

    def __init__(
        self,
        state: MarketState,
        checker: ProofChecker,
        faults: FaultPlan | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = state
        self.checker = checker
        self.faults = faults or FaultPlan()
        self._wall = clock
        self.started = clock()
        self.nonces = NonceCache()
        b = BASE_PATH
        self.app = Starlette(
            routes=[
                Route(b + "/provider/work/ask/{wallet}", self._faulted("ask", self.ask), methods=["POST"]),
                Route(b + "/provider/work/poll/{wallet}", self._faulted("poll", self.poll), methods=["GET"]),
                Route(b + "/provider/proof/{cid}", self._faulted("fetch", self.fetch), methods=["GET"]),
                Route(
                    b + "/provider/work/complete/{wallet}/{cid}",
                    self._faulted("complete", self.complete),
                    methods=["POST"],
                ),
                Route(
                    b + "/provider/work/withdraw/{ask_id}",
                    self._faulted("withdraw", self.withdraw),
                    methods=["POST"],
                ),
                Route(b, self.index, methods=["GET"]),  # the URL `market-mock serve` prints
                Route(b + "/", self.index, methods=["GET"]),
                Route("/_mock/state", self.inspect, methods=["GET"]),
                Route("/_mock/vouchers/{wallet}", self.vouchers, methods=["GET"]),
                Route("/_mock/faults", self.set_faults, methods=["POST"]),
                Route("/_mock/demand", self.demand, methods=["POST"]),
            ]
        )

    # -- ASGI: a Date header from the market's clock on every answer -------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_dated(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                date = email.utils.formatdate(self.now(), usegmt=True).encode()
                message = {**message, "headers": [*message.get("headers", []), (b"date", date)]}
            await send(message)

        await self.app(scope, receive, send_dated)

    def now(self) -> float:
        """The market's clock: the wall clock moved by any active ``skew`` fault."""
        wall = self._wall()
        return wall + self.faults.skew(wall - self.started)

    # -- faults ------------------------------------------------------------------------------------------

    def _faulted(
        self, endpoint: str, handler: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def run(request: Request) -> Response:
            self.state.count(f"requests_{endpoint}")
            latency, fault = self.faults.pick(endpoint, self._wall() - self.started)
            if latency:
                self.state.count(f"fault_latency_{endpoint}")
                await anyio.sleep(latency)
            if fault is not None and fault.kind == "status":
                status = int(fault.value)
                self.state.count(f"fault_{status}_{endpoint}")
                self._count_status(status)
                return _text(
                    status, f"injected fault: {status}", {"Retry-After": "1"} if status == 429 else None
                )
            if fault is not None and fault.kind == "drop-before":
                self.state.count(f"fault_drop_before_{endpoint}")
                return await self._drop(request)
            response = await handler(request)
            self._count_status(response.status_code)
            if fault is not None and fault.kind == "drop-after":
                self.state.count(f"fault_drop_after_{endpoint}")
                return await self._drop(request)
            if fault is not None and fault.kind in ("truncate", "corrupt") and response.status_code == 200:
                self.state.count(f"fault_{fault.kind}_{endpoint}")
                return self._damage(response, fault)
            return response

        return run

    def _count_status(self, status: int) -> None:
        if status in (409, 410, 429) or status >= 500:
            self.state.count(f"status_{status}")

    async def _drop(self, request: Request) -> Response:
        """Close the connection without an answer (the server's protocol put its transport in the scope)."""
        transport = request.scope.get(TRANSPORT_KEY)
        if transport is None:
            raise RuntimeError("dropping a connection needs market.mock.server's HTTP protocol")
        transport.abort()
        await anyio.sleep(0.01)  # let the server see the disconnect: it then sends nothing for this request
        return Response(b"", status_code=500)

    @staticmethod
    def _damage(response: Response, fault: Fault) -> Response:
        body = bytes(response.body)
        if fault.kind == "truncate":
            body = body[: len(body) // 2]
        elif body:
            i = len(body) // 2
            body = body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1 :]
        return Response(body, media_type="application/json")

    # -- shared checks -----------------------------------------------------------------------------------

    def _wallet(self, text: str) -> tuple[str, bytes]:
        raw = parse_f1(text)
        return encode_f1(raw[1:]), raw

    def _signed(self, request: Request, raw: bytes, kind: str, value: str) -> float:
        """Check the call's ``signature`` (the wallet ``raw``'s, over ``kind`` and ``value``, fresh, its nonce
        unused): AuthError otherwise. Returns the time it was checked at."""
        now = self.now()
        verify_signed_request(
            request.query_params.get("signature"), raw, kind, value.encode(), now=now, nonces=self.nonces
        )
        return now

    def _refuse(self, exc: AuthError | Refusal) -> Response:
        self.state.count(f"rejected_{exc.reason}")
        return _text(exc.status, str(exc))

    # -- provider endpoints ------------------------------------------------------------------------------

    async def ask(self, request: Request) -> Response:
        price_text = request.query_params.get("price", "")
        try:
            wallet, raw = self._wallet(request.path_params["wallet"])
            if not _DECIMAL.fullmatch(price_text):
                raise AuthError(
                    400, "bad_price", f"price {price_text[:40]!r} is not a positive decimal attoFIL"
                )
            price = int(price_text)
            if price > MAX_PRICE or price % PRICE_RESOLUTION:
                raise AuthError(400, "bad_price", "price must be a whole number of nanoFIL, at most 1 FIL")
            now = self._signed(request, raw, "work-ask", price_text)
            self.state.count("asks")
            return JSONResponse(self.state.create_ask(wallet, price, now))
        except (AuthError, Refusal) as exc:
            return self._refuse(exc)

    async def poll(self, request: Request) -> Response:
        try:
            wallet, _ = self._wallet(request.path_params["wallet"])
        except AuthError as exc:
            return self._refuse(exc)
        return JSONResponse(self.state.poll(wallet, self.now()))

    async def fetch(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        data = self.state.request_data(cid) if _CID.fullmatch(cid) else None
        if data is None:
            self.state.count("rejected_unknown_data")
            return _text(404, f"no request data {cid[:80]}")
        self.state.count("fetches")
        return Response(data, media_type="application/json")

    async def complete(self, request: Request) -> Response:
        cid = request.path_params["cid"]
        try:
            wallet, raw = self._wallet(request.path_params["wallet"])
            if not _CID.fullmatch(cid):
                raise AuthError(400, "bad_cid", f"{cid[:80]!r} is not a request CID")
            now = self._signed(request, raw, "work-complete", cid)
            proof = await request.body()
            if len(proof) > MAX_PROOF_BYTES:
                raise AuthError(400, "proof_too_large", "proof body too large")
            pending = self.state.begin_complete(wallet, cid, now)
            verdict = await anyio.to_thread.run_sync(
                lambda: self.checker.check(_request_kind(pending.data), pending.data, proof)
            )
            if not verdict.ok:
                self.state.count("completed_invalid")
                log.info("invalid proof for %s from %s: %s", cid, wallet, verdict.diagnosis)
                return _text(400, f"proof does not verify: {verdict.diagnosis}")
            self.state.count("completed_valid")
            return JSONResponse(self.state.finish_complete(wallet, pending, True, self.now()))
        except (AuthError, Refusal) as exc:
            return self._refuse(exc)

    async def withdraw(self, request: Request) -> Response:
        ask_text = request.path_params["ask_id"]
        try:
            wallet, raw = self._wallet(request.query_params.get("provider-id", ""))
            if not _DECIMAL.fullmatch(ask_text) or int(ask_text) >= 2**63:
                raise AuthError(400, "bad_ask_id", f"ask id {ask_text[:40]!r} is not an int64")
            now = self._signed(request, raw, "work-withdraw", ask_text)
            self.state.withdraw(wallet, int(ask_text), now)
            return _text(200, "withdrawn")
        except (AuthError, Refusal) as exc:
            return self._refuse(exc)

    # -- inspection and control --------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        """The base URL answers (it was a 404): what is served here, for someone who opens it."""
        return _text(
            200,
            f"psagent mock ProofShare market: the provider API is under {BASE_PATH}/provider/… "
            "(ask, poll, proof, complete, withdraw); GET /_mock/state shows its books",
        )

    async def inspect(self, request: Request) -> Response:
        snap = self.state.snapshot()
        snap["checker"] = self.checker.name
        snap["faults"] = self.faults.describe()
        snap["market_public_key"] = self.market_public_key().hex()
        snap["clock_skew_s"] = self.now() - self._wall()
        return JSONResponse(snap)

    def market_public_key(self) -> bytes:
        from coincurve import PrivateKey

        return bytes(PrivateKey(self.state.market_key).public_key.format(compressed=False))

    async def vouchers(self, request: Request) -> Response:
        try:
            wallet, _ = self._wallet(request.path_params["wallet"])
        except AuthError as exc:
            return self._refuse(exc)
        return JSONResponse(
            {"provider_id": self.state.provider_id(wallet), "vouchers": self.state.vouchers(wallet)}
        )

    async def set_faults(self, request: Request) -> Response:
        spec = (await request.body()).decode("utf-8", errors="replace").strip()
        if spec == "clear":
            self.faults.clear()
            return JSONResponse({"faults": []})
        try:
            for rule in spec.split(";"):
                if rule.strip():
                    self.faults.add(rule)
        except FaultSpecError as exc:
            return _text(400, str(exc))
        return JSONResponse({"faults": self.faults.describe()})

    async def demand(self, request: Request) -> Response:
        try:
            count = int(request.query_params.get("count", "1"))
            price = int(request.query_params.get("price", str(self.state.rules.demand_price)))
        except ValueError:
            return _text(400, "count and price must be integers")
        source = self.state.challenge_source
        if source is None:
            return _text(409, "the mock has no challenge pool to make requests from")
        now = self.now()
        cids = []
        for _ in range(max(0, min(count, 1000))):
            data = await anyio.to_thread.run_sync(source)
            cids.append(self.state.add_paid_request(data, price, now))
        return JSONResponse({"request_cids": cids})


def reward_signature(reward: dict[str, Any]) -> bytes:
    """The voucher signature bytes of a ProofReward JSON object (tests, tools)."""
    sig = reward.get("signature")
    return b"" if sig is None else base64.b64decode(sig)
