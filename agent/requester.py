"""The request loop: keep enough matched work queued, never block on rate limits.

One round (:func:`request_round`) polls the market, records newly matched requests (deduped by request cid),
reconciles our asks with the market's ``active_asks`` and creates asks until the queue target is met or the
market answers 429 (the TooManyRequests sentinel — never retried inside the round, so matched work is seen on
the next poll; that is the Curio bug this shape avoids). :func:`request_loop` repeats rounds with a
progress-based backoff: back to the poll interval after progress, doubling to a cap while rate-limited, held
otherwise.

Queue target (Curio's): keep the number of unfinished requests (queued, fetched, proving, computed: a proof
not yet submitted is not done) between the low and the high water mark. Asks are created only when that
number is below the low mark, then up to ``high − unfinished − active asks``, and only while the readiness
gate is open (parameters loaded, kernels warm, self-test passed, prover healthy): a matched proof that misses
its deadline costs 50 challenge proofs.

Asks whose create answer was lost still exist on the market: they appear in ``active_asks`` with an id we
never stored and are adopted (recorded, counted against the target); asks we stored that the market no
longer lists and that no request matched are marked expired.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from agent.store import AskState, RequestState, Store, TransitionError, in_worker
from market.errors import MarketError, TooManyRequests
from market.models import WorkAsk, WorkResponse

__all__ = ["AskMarket", "RequestLoopSettings", "RoundResult", "request_loop", "request_round"]

log = logging.getLogger(__name__)

# Computed proofs count too: while submissions fail, asking for more work only piles up proofs that miss
# their deadlines.
UNFINISHED = (RequestState.QUEUED, RequestState.FETCHED, RequestState.PROVING, RequestState.COMPUTED)


class AskMarket(Protocol):
    """The two market calls the loop makes (market.client.MarketClient has them)."""

    async def poll(self) -> WorkResponse: ...
    async def create_ask(self, price_attofil: int) -> WorkAsk: ...


@dataclass(frozen=True)
class RequestLoopSettings:
    price_attofil: int
    low_water: int = 5
    high_water: int = 8
    poll_interval_s: float = 3.0
    backoff_max_s: float = 120.0
    deadline_s: float = 45 * 60.0  # the market's submit deadline, counted from when we first saw the request


@dataclass
class RoundResult:
    added: int = 0
    asks_created: int = 0
    rate_limited: bool = False
    adopted_asks: int = 0
    expired_asks: int = 0
    gone: int = 0  # rows the poll stopped listing before they were proven
    unfinished: int = 0
    active_asks: int = 0
    asks_wanted: int = 0

    @property
    def progress(self) -> bool:
        return self.added > 0 or self.asks_created > 0


@dataclass
class LoopCounters:
    """Totals over the loop's life (exported as metrics by the service)."""

    rounds: int = 0
    polls_failed: int = 0
    asks_created: int = 0
    rate_limited: int = 0
    added: int = 0
    last: RoundResult = field(default_factory=RoundResult)

    def record(self, r: RoundResult) -> None:
        """Count one completed round."""
        self.last = r
        self.asks_created += r.asks_created
        self.added += r.added
        self.rate_limited += int(r.rate_limited)


async def request_round(
    market: AskMarket,
    store: Store,
    settings: RequestLoopSettings,
    *,
    ready: Callable[[], bool] = lambda: True,
    clock: Callable[[], float] = time.time,
    proofs_left: Callable[[dict[RequestState, int]], int | None] = lambda counts: None,
) -> RoundResult:
    """One poll → record → reconcile → ask round (see the module docstring). ``proofs_left(counts)``: how
    many more proofs are wanted at all (``--max-proofs``), from the same store counts the round sizes its asks
    by, so a proof submitted meanwhile is counted once; the water marks are capped by it."""
    result = RoundResult()
    response = await market.poll()
    now = clock()
    for req in response.requests:
        if req.request_cid is None or req.done:
            continue  # nothing to fetch (yet), or already finished on the market's side
        row = await in_worker(
            store.add_request,
            req.id,
            req.request_cid,
            req.work_ask_id,
            obtained_at=now,
            deadline=now + settings.deadline_s,
        )
        if row is not None:
            result.added += 1
            log.info("matched request %s (service id %d, ask %d)", req.request_cid, req.id, req.work_ask_id)

    # work the market took back (a passed deadline, reassigned): rows not yet submitted that the poll no
    # longer lists go gone now, so no device time is spent on a proof the market would answer with 410 (a
    # proof in progress sees its row gone and stops at its next partition boundary: agent.stages)
    listed_cids = {r.request_cid for r in response.requests if r.request_cid is not None and not r.done}
    taken_back = [RequestState.QUEUED, RequestState.FETCHED, RequestState.PROVING]
    for row in await in_worker(store.list_requests, taken_back):
        if row.request_cid in listed_cids:
            continue
        proving = row.state is RequestState.PROVING
        try:
            await in_worker(
                store.transition, row.row_id, row.state, RequestState.GONE,
                error="gone: the market no longer lists it (taken back "
                + ("while it was proven)" if proving else "before it was proven)"),
            )
        except TransitionError:
            continue  # it moved meanwhile (claimed, computed): the next round or the submit's 410 settles it
        result.gone += 1
        log.warning("request %s: the market no longer lists it; %s", row.request_cid,
                    "stopping its proof" if proving else "not proving it")
    # reconcile asks with what the market lists
    listed = {a.id for a in response.active_asks}
    known = {a.ask_id: a for a in await in_worker(store.asks)}
    for ask in response.active_asks:
        if ask.id not in known:
            await in_worker(store.record_ask, ask.id, 0, created_at=now)
            result.adopted_asks += 1
            log.warning(
                "adopted ask %d listed by the market but not recorded here (a lost create answer)", ask.id
            )
        elif known[ask.id].state is AskState.EXPIRED:  # listed again after a poll that missed it
            await in_worker(store.set_ask_state, ask.id, AskState.ACTIVE)
    for ask_id, stored in known.items():
        if stored.state is AskState.ACTIVE and ask_id not in listed:
            await in_worker(store.set_ask_state, ask_id, AskState.EXPIRED)
            result.expired_asks += 1

    counts = await in_worker(store.counts)
    result.unfinished = sum(counts[s] for s in UNFINISHED)
    result.active_asks = len(listed)
    low, high = settings.low_water, settings.high_water
    left = proofs_left(counts)
    if left is not None:
        low, high = min(low, max(0, left)), min(high, max(0, left))
    if result.unfinished < low and ready():
        result.asks_wanted = max(0, high - result.unfinished - result.active_asks)
    for _ in range(result.asks_wanted):
        try:
            ask = await market.create_ask(settings.price_attofil)
        except TooManyRequests:
            result.rate_limited = True
            break
        await in_worker(store.record_ask, ask.id, settings.price_attofil, created_at=clock())
        result.asks_created += 1
    return result


def next_interval(current: float, result: RoundResult, settings: RequestLoopSettings) -> float:
    """Back to the poll interval after progress; double to the cap while rate-limited; else hold."""
    if result.progress:
        return settings.poll_interval_s
    if result.rate_limited:
        return min(current * 2.0, settings.backoff_max_s)
    return current


async def request_loop(
    market: AskMarket,
    store: Store,
    settings: RequestLoopSettings,
    *,
    ready: Callable[[], bool] = lambda: True,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    counters: LoopCounters | None = None,
    max_rounds: int | None = None,
) -> LoopCounters:
    """Run rounds until cancelled (or ``max_rounds``). A failed poll (the client already retried it within its
    budget) is logged and the loop goes on at the backed-off interval: the loop itself never dies of a
    market fault."""
    c = counters or LoopCounters()
    interval = settings.poll_interval_s
    while max_rounds is None or c.rounds < max_rounds:
        c.rounds += 1
        try:
            r = await request_round(market, store, settings, ready=ready)
        except MarketError as e:
            c.polls_failed += 1
            log.warning("request round failed: %s", e)
            interval = min(interval * 2.0, settings.backoff_max_s)
        else:
            c.record(r)
            interval = next_interval(interval, r, settings)
        await sleep(interval)
    return c
