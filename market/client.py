"""The provider side of the ProofShare market API, as one async client (Curio ``lib/proofsvc/provictl.go``).

Layers, outermost first:
    public calls         create_ask / poll / fetch_request / complete / withdraw: paths, signatures, models
    _retrying            poll, fetch and complete only: exponential backoff 1 s → 60 s within a time budget
    _within              every try (retried or not) under a wall-clock deadline
    _exchange            one HTTP exchange: streams the body under a size cap, notes the market's clock
    _http_errors         the single place where httpx exceptions become market errors
    httpx.AsyncClient    pooling and timeouts; injected for tests (``respx`` / ``httpx.MockTransport``)

Behaviour that matters to the market:
* create_ask never retries: a 429 raises TooManyRequests at once, so the caller's loop keeps polling and sees
  work matched to its existing asks (the Curio bug this fixes blocked there);
* complete signs every attempt afresh (the market rejects reused nonces and signatures older than 60 s), and
  a 410 raises WorkGone without another try: the work was reassigned; a 409 after a try of ours that may
  have arrived is AlreadyAccepted, not a refusal (the POST is not idempotent);
* signing time follows the market's clock when its ``Date`` headers show ours off by 2 s or more;
* no signature leaves the client in an error message (error bodies that quote the request are scrubbed);
* request data is streamed under ``max_request_bytes`` and its sha2-256 checked against the request CID
  before anything parses it.
Unlike Curio, which retries every failure, statuses that describe the request rather than the server
(4xx other than 408/425/429) fail at once with their status and body: repeating them cannot help.

Time is injected (``clock`` for signature nonces, ``monotonic`` for the retry budget, ``sleep`` for
backoff) so tests run without waiting. Everything awaits through anyio-neutral calls, so asyncio and trio
both work.
"""

from __future__ import annotations

import email.utils
import io
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TypeVar, cast

import anyio
import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from market.cid import RequestCid
from market.errors import (
    AskOutcomeUnknown,
    ContentMismatch,
    ProtocolError,
    Rejected,
    ResponseTooLarge,
    SignatureRejected,
    TooManyRequests,
    TransportError,
    WorkGone,
)
from market.models import ATTO_PER_FIL, ProofReward, WorkAsk, WorkResponse
from market.proofdata import ProofData
from market.signing import DST_WORK_ASK, DST_WORK_COMPLETE, DST_WORK_WITHDRAW, Signer, sign_request

__all__ = ["AlreadyAccepted", "MAINNET_URL", "MarketClient", "RetryPolicy"]

log = logging.getLogger(__name__)
T = TypeVar("T")

MAINNET_URL = "https://mainnet.snass.fsp.sh/v0/proofs"
PRICE_RESOLUTION_ATTOFIL = 10**9  # the market prices in whole nanoFIL (common.PriceResolution)
MAX_PRICE_ATTOFIL = ATTO_PER_FIL  # common.MaxPrice = 1 FIL
DEFAULT_MAX_REQUEST_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # JSON answers (poll, ask, reward) are small
ERROR_BODY_BYTES = 64 * 1024  # how much of an error body is kept for the message
USER_AGENT = "psagent/0.1 (ProofShare provider)"


MIN_TRY_S = 1.0  # the least time a retry is started with (see MarketClient._retrying)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Backoff for poll / fetch / complete: ``initial_s`` doubling up to ``max_s``, for at most ``budget_s``.

    The defaults are Curio's (1 s → 60 s, 30 minutes). A retry whose wait would leave less than
    MIN_TRY_S of the budget is not made; the last error is raised instead. The budget counts the time spent
    in tries as well as the sleeps.

    Every try has a wall-clock limit, whatever the server trickles (httpx's timeouts are per read):
    ``attempt_s`` for the calls with small answers (poll, create_ask, complete, withdraw; the single-try calls
    too) and ``fetch_attempt_s`` for a request-data download (a 32GiB C1 is tens of MB). A retried try also
    ends when the budget runs out.
    """

    initial_s: float = 1.0
    max_s: float = 60.0
    budget_s: float = 30 * 60.0
    attempt_s: float = 60.0
    fetch_attempt_s: float = 600.0
    # downloads again after request bytes that do not hash to their CID (a cut or damaged transfer: the
    # market's data is content-addressed, so a good copy exists; refusing at once costs the assignment)
    content_refetches: int = 2

    def wait_before(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based); a Retry-After is honoured."""
        wait = min(self.max_s, self.initial_s * 2.0 ** min(attempt - 1, 60))
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_s))
        return wait


@dataclass(frozen=True, slots=True)
class _Answer:
    status: int
    body: bytes
    retry_after: float | None


@dataclass(frozen=True, slots=True)
class AlreadyAccepted:
    """The outcome of ``complete`` when a try that may have reached the market got no answer and a later try
    got 409: the market has our proof. It issued a voucher we never saw; vouchers are cumulative, so the next
    one covers it. The caller marks the work submitted."""

    request_cid: str
    status: int
    body: str


SKEW_CORRECTION_S = 2.0  # a measured clock offset at least this large corrects the signing time


def _server_date(headers: httpx.Headers) -> float | None:
    value = headers.get("date")
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if value is None or not value.strip().isdigit():
        return None  # the HTTP-date form is not worth a clock comparison here
    return float(value.strip())


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, TransportError):
        return True
    if isinstance(exc, SignatureRejected):
        return exc.clock_corrected  # signed with a time the market's answer has since corrected
    return isinstance(exc, Rejected) and exc.retryable


@contextmanager
def _http_errors(method: str, url: str) -> Iterator[None]:
    """Translate httpx's exceptions into ours, most specific first; the original is chained."""
    try:
        yield
    except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:  # nothing was sent
        err = TransportError(f"{method} {url}: {type(exc).__name__}: {exc}")
        err.maybe_delivered = False
        raise err from exc
    except httpx.TimeoutException as exc:
        raise TransportError(f"{method} {url}: timed out ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise TransportError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
    except httpx.RequestError as exc:  # DecodingError, TooManyRedirects: the answer itself is unusable
        raise ProtocolError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc


class MarketClient:
    """An async client of the ProofShare provider API, signing as ``signer`` (an f1 wallet).

    ``http``: an ``httpx.AsyncClient`` to use (the caller keeps ownership); if omitted the client builds a
    pooled one with ``timeout_s`` and closes it in ``aclose``. Use as ``async with MarketClient(…) as m:``.
    """

    def __init__(
        self,
        base_url: str,
        signer: Signer,
        *,
        network: str = "f",
        http: httpx.AsyncClient | None = None,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        nonce_source: Callable[[], int] = lambda: secrets.randbits(64),
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"market URL must be http(s)://…, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.signer = signer
        self.wallet = signer.address.encode(network)  # the {wallet} path segment, e.g. f1…
        self.retry = retry or RetryPolicy()
        self.max_request_bytes = max_request_bytes
        self.max_response_bytes = max_response_bytes
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._nonce = nonce_source
        self._offset: float | None = None  # market clock − our clock, from its Date headers
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=8),
            headers={"User-Agent": USER_AGENT},
            follow_redirects=False,
        )
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self._owns_http:
                await self._http.aclose()

    async def __aenter__(self) -> MarketClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- the API -----------------------------------------------------------------------------------------

    async def create_ask(self, price_attofil: int) -> WorkAsk:
        """Offer to prove one request at ``price_attofil``; raises TooManyRequests on 429, never retries.

        Orphan asks: if the request may have reached the market but its answer was lost, AskOutcomeUnknown is
        raised; the ask, if it was made, appears in ``poll().active_asks`` with an id the caller never saw.
        Count those (agent.requester adopts them) rather than asking again and overshooting the target.
        """
        if isinstance(price_attofil, bool) or not isinstance(price_attofil, int):
            raise TypeError("price_attofil must be an int")
        if not 0 < price_attofil <= MAX_PRICE_ATTOFIL or price_attofil % PRICE_RESOLUTION_ATTOFIL:
            raise ValueError("the price must be a whole number of nanoFIL in (0, 1 FIL]")
        price = str(price_attofil)
        url = f"{self.base_url}/provider/work/ask/{self.wallet}"
        params = {"price": price, "signature": self._sign(DST_WORK_ASK, price)}
        try:
            answer = await self._within(
                "create ask",
                self.retry.attempt_s,
                lambda: self._exchange("POST", url, params=params, limit=self.max_response_bytes),
            )
        except TransportError as exc:
            if not exc.maybe_delivered:
                raise
            raise AskOutcomeUnknown(
                f"{exc} — the ask may have been created; it will show in the next poll's active_asks"
            ) from exc
        if answer.status == 429:
            body = _text(answer.body)
            log.info("create ask rate-limited (429): %s", body)
            raise TooManyRequests(body)
        self._expect_ok("POST", url, answer)
        return WorkAsk.from_json(answer.body)

    async def poll(self) -> WorkResponse:
        """Requests assigned to us and our active asks; transient failures are retried within the budget."""
        url = f"{self.base_url}/provider/work/poll/{self.wallet}"

        async def attempt() -> WorkResponse:
            answer = await self._exchange("GET", url, limit=self.max_response_bytes)
            self._expect_ok("GET", url, answer)
            return WorkResponse.from_json(answer.body)

        return await self._retrying("poll", attempt)

    async def fetch_request_bytes(self, request_cid: str | RequestCid) -> bytes:
        """The exact request bytes, checked against the CID and the size cap; retried if transient. Bytes
        that do not match the CID are downloaded again up to ``retry.content_refetches`` times (after the
        usual backoff wait) before ContentMismatch is raised: a cut or damaged transfer must not cost the
        assignment, and a market that serves wrong data every time is still refused."""
        cid = request_cid if isinstance(request_cid, RequestCid) else RequestCid.parse(request_cid)
        url = f"{self.base_url}/provider/proof/{cid}"

        async def attempt() -> bytes:
            answer = await self._exchange("GET", url, limit=self.max_request_bytes)
            self._expect_ok("GET", url, answer)
            if not cid.matches(answer.body):
                raise ContentMismatch(str(cid), RequestCid.of(answer.body).digest)
            return answer.body

        refetches = max(self.retry.content_refetches, 0)
        for n in range(refetches + 1):
            try:
                return await self._retrying("fetch request", attempt, attempt_s=self.retry.fetch_attempt_s)
            except ContentMismatch as exc:
                if n == refetches:
                    raise
                wait = self.retry.wait_before(n + 1)
                log.warning(
                    "market fetch request: %s; downloading again in %.1f s (%d of %d)",
                    exc, wait, n + 1, refetches,
                )
                await self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def fetch_request(self, request_cid: str | RequestCid) -> ProofData:
        """Download, verify and parse one request's ProofData (parsed in a worker thread: ~1.5 s at 32GiB
        must not stall the event loop)."""
        raw = await self.fetch_request_bytes(request_cid)
        return await anyio.to_thread.run_sync(ProofData.parse, raw)

    async def complete(self, request_cid: str | RequestCid, proof: bytes) -> ProofReward | AlreadyAccepted:
        """Submit a proof; returns the reward voucher. Raises WorkGone on 410 (drop the work, no retry).

        ``complete`` is not idempotent: a try whose answer was lost may have been accepted. When such a try
        is followed by a 409, the result is :class:`AlreadyAccepted` instead of an error. A 409 on the first
        try (nothing of ours could have arrived before) stays a Rejected: the caller knows whether an earlier
        process submitted it."""
        rcid = str(request_cid if isinstance(request_cid, RequestCid) else RequestCid.parse(request_cid))
        url = f"{self.base_url}/provider/work/complete/{self.wallet}/{rcid}"
        maybe_delivered = False

        async def attempt() -> ProofReward | AlreadyAccepted:
            nonlocal maybe_delivered
            correction = self._correction()
            params = {"signature": self._sign(DST_WORK_COMPLETE, rcid)}  # fresh nonces on every try
            earlier = maybe_delivered
            # Until this try is answered it may have reached the market, however it ends: a transport error,
            # the per-try deadline (a cancellation, which no except clause here sees) or anything else.
            maybe_delivered = True
            try:
                answer = await self._exchange(
                    "POST", url, params=params, content=proof, limit=self.max_response_bytes
                )
            except TransportError as exc:
                if not exc.maybe_delivered:
                    maybe_delivered = earlier  # refused before anything was sent
                raise
            maybe_delivered = earlier  # answered: this try's outcome is known
            if answer.status == 410:
                body = _text(answer.body)
                log.info("work %s is gone (410): %s", rcid, body)
                raise WorkGone(rcid, body)
            if answer.status == 409 and maybe_delivered:
                body = _text(answer.body)
                log.info("work %s: 409 after a try whose answer was lost: the market has it (%s)", rcid, body)
                return AlreadyAccepted(rcid, 409, body)
            if answer.status >= 500:
                maybe_delivered = True  # a proxy or the market may have failed after taking the proof
            if answer.status in (401, 403) and abs(self._correction() - correction) >= SKEW_CORRECTION_S:
                # this answer's Date changed our signing time: one more try, signed on the market's clock
                raise SignatureRejected(
                    "POST", url, answer.status, _text(answer.body), self._offset, clock_corrected=True
                )
            self._expect_ok("POST", url, answer)
            return ProofReward.from_json(answer.body)

        return await self._retrying("complete", attempt)

    async def withdraw(self, ask_id: int) -> None:
        """Withdraw an active ask (costs one challenge proof on the market). One attempt, like Curio."""
        if isinstance(ask_id, bool) or not isinstance(ask_id, int):
            raise TypeError("ask_id must be an int")
        url = f"{self.base_url}/provider/work/withdraw/{ask_id}"
        params = {"provider-id": self.wallet, "signature": self._sign(DST_WORK_WITHDRAW, str(ask_id))}
        answer = await self._within(
            "withdraw",
            self.retry.attempt_s,
            lambda: self._exchange("POST", url, params=params, limit=self.max_response_bytes),
        )
        self._expect_ok("POST", url, answer)

    # -- layers ------------------------------------------------------------------------------------------

    @property
    def clock_offset_s(self) -> float | None:
        """The market's clock minus ours, from the last ``Date`` header (1 s resolution); None until seen."""
        return self._offset

    def signing_time(self) -> int:
        """Unix seconds for signature nonces: our clock, corrected by the measured offset when that is 2 s or
        more (the market refuses signatures > 5 s ahead of or > 60 s behind its clock).

        Corrected rather than only reported: the market's clock is the only one its check uses, so signing on
        it keeps a skewed host earning while the operator fixes NTP (a warning is logged and the offset is
        exposed as ``clock_offset_s`` for a metric). The measurement errs towards the past (``Date`` is cut to
        whole seconds and stamped before the answer travels), the wide side of the market's window; offsets
        under 2 s are left alone since the 1 s resolution makes them noise."""
        return int(self._clock() + self._correction())

    def _correction(self) -> float:
        if self._offset is not None and abs(self._offset) >= SKEW_CORRECTION_S:
            return self._offset
        return 0.0

    def _sign(self, dst: str, payload: str) -> str:
        return sign_request(self.signer, dst, payload, nonce_time=self.signing_time(), nonce_id=self._nonce())

    def _note_date(self, headers: httpx.Headers) -> None:
        date = _server_date(headers)
        if date is None:
            return
        offset = date - self._clock()
        was = self._offset
        self._offset = offset
        if abs(offset) >= SKEW_CORRECTION_S and (was is None or abs(was - offset) >= SKEW_CORRECTION_S):
            log.warning(
                "this host's clock is %.0f s %s the market's (Date header); signing with the market's time",
                abs(offset),
                "behind" if offset > 0 else "ahead of",
            )

    def _expect_ok(self, method: str, url: str, answer: _Answer) -> None:
        if answer.status in (401, 403):
            raise SignatureRejected(method, url, answer.status, _text(answer.body), self._offset)
        if answer.status != 200:
            raise Rejected(method, url, answer.status, _text(answer.body), answer.retry_after)

    async def _retrying(
        self, op: str, attempt: Callable[[], Awaitable[T]], *, attempt_s: float | None = None
    ) -> T:
        policy = self.retry
        per_try = policy.attempt_s if attempt_s is None else attempt_s
        deadline = self._monotonic() + policy.budget_s

        def wait(rs: RetryCallState) -> float:
            exc = rs.outcome.exception() if rs.outcome else None
            return policy.wait_before(rs.attempt_number, getattr(exc, "retry_after", None))

        # A retry starts only with at least min_try seconds of the budget left: a try cut to ~0 s can only
        # time out, and its "no complete answer within 0 s" would replace the failure that mattered.
        min_try = min(per_try, MIN_TRY_S)
        tries = [0]
        failures: list[BaseException] = []

        def stop(rs: RetryCallState) -> bool:
            over = deadline - (self._monotonic() + rs.upcoming_sleep) < min_try
            if over:
                log.warning(
                    "market %s: giving up after %d attempts (retry budget %.0f s)",
                    op,
                    rs.attempt_number,
                    policy.budget_s,
                )
            return over

        def before_sleep(rs: RetryCallState) -> None:
            exc = rs.outcome.exception() if rs.outcome else None
            if exc is not None:
                failures.append(exc)
            log.warning(
                "market %s failed (attempt %d): %s; retrying in %.1f s",
                op,
                rs.attempt_number,
                exc,
                rs.upcoming_sleep,
            )

        async def bounded() -> T:
            tries[0] += 1  # the first try gets its whole time: the budget bounds the retries
            limit = per_try if tries[0] == 1 else min(per_try, max(deadline - self._monotonic(), min_try))
            try:
                return await self._within(op, limit, attempt)
            except TransportError as e:
                if limit < per_try and failures and str(e).endswith(f"within {limit:g} s"):
                    raise TransportError(
                        f"{e}, cut short by the retry budget; the try before: {failures[-1]}"
                    ) from None
                raise

        retrying = AsyncRetrying(
            sleep=self._sleep,
            wait=wait,
            stop=stop,
            retry=retry_if_exception(_is_transient),
            before_sleep=before_sleep,
            reraise=True,
        )
        return await retrying(bounded)

    @staticmethod
    async def _within(op: str, limit: float, attempt: Callable[[], Awaitable[T]]) -> T:
        """One try under a wall-clock deadline: httpx's timeouts are per read, so a server that trickles a
        byte at a time would otherwise hold the try open for as long as it likes."""
        try:
            with anyio.fail_after(limit):
                return await attempt()
        except TimeoutError:
            raise TransportError(f"market {op}: no complete answer within {limit:g} s") from None

    async def _exchange(
        self,
        method: str,
        url: str,
        *,
        limit: int,
        params: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> _Answer:
        """One request; the body is read in full for 200 (up to ``limit``) and in part otherwise."""
        if self._closed:
            raise RuntimeError("MarketClient is closed")
        with _http_errors(method, url):
            async with self._http.stream(method, url, params=params, content=content) as resp:
                self._note_date(resp.headers)
                if resp.status_code != 200:
                    body = await _read_capped(resp, ERROR_BODY_BYTES, url, truncate=True)
                    if params and "signature" in params:  # a body that quotes the request must not leak it
                        body = body.replace(params["signature"].encode(), b"<signature>")
                    return _Answer(resp.status_code, body, _retry_after(resp.headers))
                declared = resp.headers.get("content-length")
                encoded = resp.headers.get("content-encoding", "identity").lower() != "identity"
                if declared is not None and declared.isdigit() and int(declared) > limit and not encoded:
                    raise ResponseTooLarge(limit, url)
                return _Answer(200, await _read_capped(resp, limit, url), None)


async def _read_capped(resp: httpx.Response, limit: int, url: str, *, truncate: bool = False) -> bytes:
    """Read the (decoded) body, stopping past ``limit``: error bodies are cut, data bodies refused.

    The body is held once: BytesIO.getvalue() hands over its buffer without a copy when nothing else refers to
    it (CPython), where ``bytes(bytearray)`` would hold a 40 MB request twice at the end."""
    buf = io.BytesIO()
    size = 0
    # aclosing: leaving the loop early must finalise the generator now (trio warns about GC finalisation).
    async with aclosing(cast(AsyncGenerator[bytes, None], resp.aiter_bytes())) as chunks:
        async for chunk in chunks:
            size += len(chunk)
            if size > limit:
                if truncate:
                    buf.write(chunk[: len(chunk) - (size - limit)])
                    return buf.getvalue()
                raise ResponseTooLarge(limit, url)
            buf.write(chunk)
    return buf.getvalue()


def _text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace").strip()
