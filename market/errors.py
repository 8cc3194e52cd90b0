"""Every error the market package raises, in one place.

    MarketError                      base of everything below
    ├── TransportError               no usable HTTP answer: connect/read/write failure or timeout (retryable)
    │   └── AskOutcomeUnknown        create_ask sent, answer lost: an ask may exist (reconcile via poll)
    ├── ProtocolError                the market answered, but with something we must not use
    │   ├── ResponseTooLarge         the body is over the configured cap (checked while streaming)
    │   └── ContentMismatch          request data whose sha2-256 differs from its request CID
    ├── TooManyRequests              429 on create_ask: the sentinel; back off in the caller, never inside
    ├── WorkGone                     410 on complete: the work was reassigned; drop it, do not retry
    ├── Rejected(status, body)       any other unexpected status; ``retryable`` for 5xx / 408 / 429
    │   └── SignatureRejected        401/403 on a signed call; says how far our clock is from the market's
    └── WalletError                  keys, key files, addresses and signatures
        ├── InvalidAddress           an address string or byte form that does not parse (also a ValueError)
        └── KeyFileError             a key file that is missing, malformed, or readable by others

Which errors are retried, per call (``market.client``):

    call          retried inside the call                       never retried
    poll, fetch   TransportError, Rejected.retryable (5xx,      other 4xx, ProtocolError (ResponseTooLarge;
                  408, 425, 429); fetch: ContentMismatch        ContentMismatch once the re-downloads
                  downloaded again, ``content_refetches`` times  also mismatched)
    complete      the same, each try freshly signed; a 409      WorkGone (410); other 4xx; SignatureRejected
                  after one of our own tries may have reached   unless its answer's Date corrected our
                  the market returns AlreadyAccepted (the       signing time (then signed once more)
                  market has the proof: not an error)
    create_ask    nothing (one try): 429 → TooManyRequests;     a lost or late answer → AskOutcomeUnknown: the
                  the caller's loop backs off                   ask may exist; it shows in poll's active_asks
    withdraw      nothing (one try, like Curio)
Every try of every call has a wall-clock deadline (a server that trickles bytes cannot hold it open); a try
cut by it counts as maybe delivered. The retry budget counts the time spent in tries as well as the sleeps.

httpx exceptions become TransportError in exactly one place (``market.client._http_errors``), chained with
``raise … from exc`` so the original stays in the traceback.
"""

from __future__ import annotations

__all__ = [
    "AskOutcomeUnknown",
    "ContentMismatch",
    "InvalidAddress",
    "KeyFileError",
    "MarketError",
    "ProtocolError",
    "Rejected",
    "ResponseTooLarge",
    "SignatureRejected",
    "TooManyRequests",
    "TransportError",
    "WalletError",
    "WorkGone",
]

# Statuses worth another try: the server or a proxy was busy or broken, not the request.
_RETRYABLE_STATUSES = frozenset({408, 425, 429})


class MarketError(Exception):
    """Base class of every error raised by the market package."""


class TransportError(MarketError):
    """The request got no usable HTTP response (network failure or timeout); safe to retry for idempotent
    calls. ``maybe_delivered`` is False only when the request certainly never left (connect failures)."""

    maybe_delivered: bool = True


class AskOutcomeUnknown(TransportError):
    """create_ask's request may have reached the market but its answer was lost: an ask may now exist that
    the caller has no id for. It appears in the next poll's ``active_asks``; count it there (the agent's
    request loop adopts such asks) instead of creating another one blindly."""


class ProtocolError(MarketError):
    """The market's response does not follow the protocol (bad JSON, wrong types, wrong shape)."""


class ResponseTooLarge(ProtocolError):
    """A response body exceeded the size cap; the rest of the body was not read."""

    def __init__(self, limit: int, url: str) -> None:
        super().__init__(f"response from {url} exceeds the {limit}-byte limit")
        self.limit = limit


class ContentMismatch(ProtocolError):
    """Downloaded request data does not hash to the CID it was requested under."""

    def __init__(self, request_cid: str, got_sha256: bytes) -> None:
        super().__init__(f"request data does not match {request_cid}: its sha2-256 is {got_sha256.hex()}")
        self.request_cid = request_cid


class TooManyRequests(MarketError):
    """The market rate-limited ask creation (HTTP 429); the caller backs off and keeps polling."""

    def __init__(self, body: str = "") -> None:
        super().__init__(f"too many requests (429){': ' + body if body else ''}")
        self.body = body


class WorkGone(MarketError):
    """The market answered 410 Gone to a proof submission: the work was reassigned, drop it."""

    def __init__(self, request_cid: str, body: str = "") -> None:
        super().__init__(f"work {request_cid} is gone (410){': ' + body if body else ''}")
        self.request_cid = request_cid
        self.body = body


class Rejected(MarketError):
    """The market answered with an unexpected status; ``status`` and ``body`` say what it said."""

    def __init__(
        self, method: str, url: str, status: int, body: str, retry_after: float | None = None
    ) -> None:
        shown = body if len(body) <= 500 else body[:500] + "…"
        super().__init__(f"{method} {url} → {status}: {shown}" if shown else f"{method} {url} → {status}")
        self.status = status
        self.body = body
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """True for statuses that describe the server's state rather than the request (5xx, 408, 425, 429)."""
        return self.status >= 500 or self.status in _RETRYABLE_STATUSES


class WalletError(MarketError):
    """A wallet problem: key material, key file, address or signature."""


class InvalidAddress(WalletError, ValueError):
    """A Filecoin address that does not parse; the message says why (length, network, protocol, checksum)."""


class KeyFileError(WalletError):
    """A key file that cannot be used: missing, malformed, of an unsupported type, or readable by others."""


class SignatureRejected(Rejected):
    """401/403 on a signed call. The market refuses signatures older than 60 s or more than 5 s ahead of its
    clock, so the message states the clock offset measured from its ``Date`` headers when one is known."""

    def __init__(
        self,
        method: str,
        url: str,
        status: int,
        body: str,
        clock_offset_s: float | None = None,
        *,
        clock_corrected: bool = False,
    ) -> None:
        super().__init__(method, url, status, body)
        self.clock_offset_s = clock_offset_s
        # True when this very answer corrected our signing time: complete signs once more (only then)
        self.clock_corrected = clock_corrected
        if clock_offset_s is not None and abs(clock_offset_s) >= 2:
            way = "behind" if clock_offset_s > 0 else "ahead of"
            self.args = (
                f"{self.args[0]} (this host's clock is {abs(clock_offset_s):.0f} s {way} the market's, "
                "by its Date header: the market refuses signatures older than 60 s or more than 5 s in the "
                "future; fix the clock (NTP))",
            )
