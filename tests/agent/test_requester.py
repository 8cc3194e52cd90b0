"""agent.requester: queue target, 429 sentinel, backoff, dedupe, ask reconciliation (fake market)."""

from __future__ import annotations

import pytest

from agent.requester import RequestLoopSettings, RoundResult, next_interval, request_loop, request_round
from agent.store import AskState, RequestState, SqliteStore
from market.errors import TooManyRequests, TransportError
from market.models import WorkAsk, WorkRequest, WorkResponse

pytestmark = pytest.mark.anyio


class FakeMarket:
    """Asks are matched to requests by ``match()``; create_ask answers 429 while ``limited``."""

    def __init__(self) -> None:
        self.asks: dict[int, bool] = {}  # id → matched
        self.requests: list[WorkRequest] = []
        self.next_id = 1
        self.limited = False
        self.poll_calls = 0
        self.ask_calls = 0
        self.poll_fails = 0

    async def poll(self) -> WorkResponse:
        self.poll_calls += 1
        if self.poll_fails:
            self.poll_fails -= 1
            raise TransportError("connection refused")
        active = tuple(WorkAsk(id=i) for i, matched in self.asks.items() if not matched)
        return WorkResponse(requests=tuple(self.requests), active_asks=active)

    async def create_ask(self, price_attofil: int) -> WorkAsk:
        self.ask_calls += 1
        if self.limited:
            raise TooManyRequests("slow down")
        ask = WorkAsk(id=self.next_id)
        self.asks[ask.id] = False
        self.next_id += 1
        return ask

    def match(self, n: int) -> None:
        for ask_id, matched in list(self.asks.items()):
            if n == 0:
                break
            if not matched:
                self.asks[ask_id] = True
                self.requests.append(
                    WorkRequest(id=1000 + ask_id, request_cid=f"bafk-{ask_id}", done=None, work_ask_id=ask_id)
                )
                n -= 1


@pytest.fixture
def store(tmp_path):
    s = SqliteStore(tmp_path / "a.db")
    yield s
    s.close()


SETTINGS = RequestLoopSettings(
    price_attofil=5 * 10**15, low_water=5, high_water=8, poll_interval_s=3.0, backoff_max_s=120.0
)


async def test_fills_to_the_high_mark_then_waits(store):
    m = FakeMarket()
    r = await request_round(m, store, SETTINGS)
    assert r.asks_created == 8 and r.asks_wanted == 8
    r = await request_round(m, store, SETTINGS)  # 8 asks active: nothing more
    assert r.asks_created == 0 and r.active_asks == 8
    m.match(3)
    r = await request_round(m, store, SETTINGS)
    assert r.added == 3 and r.active_asks == 5 and r.asks_created == 0  # 3 unfinished + 5 asks = 8
    assert store.counts()[RequestState.QUEUED] == 3
    assert len(store.asks([AskState.MATCHED])) == 3 and len(store.asks([AskState.ACTIVE])) == 5


async def test_below_the_low_mark_only(store):
    m = FakeMarket()
    for n in range(5):
        store.add_request(n, f"old-{n}", 0)
        m.requests.append(WorkRequest(n, f"old-{n}", None, 0))  # still assigned to us
    r = await request_round(m, store, SETTINGS)
    assert r.unfinished == 5 and r.asks_created == 0  # at the low mark: no asks
    store.transition(store.by_cid("old-0").row_id, RequestState.QUEUED, RequestState.GONE)  # type: ignore[union-attr]
    r = await request_round(m, store, SETTINGS)
    assert r.unfinished == 4 and r.asks_created == 4  # 8 - 4 unfinished - 0 asks


async def test_dedupes_requests_across_polls(store):
    m = FakeMarket()
    await request_round(m, store, SETTINGS)
    m.match(2)
    assert (await request_round(m, store, SETTINGS)).added == 2
    assert (await request_round(m, store, SETTINGS)).added == 0
    assert len(store.list_requests()) == 2


async def test_requests_without_data_or_done_are_skipped(store):
    m = FakeMarket()
    m.requests = [WorkRequest(1, None, None, 1), WorkRequest(2, "bafk-done", True, 2)]
    assert (await request_round(m, store, SETTINGS)).added == 0


async def test_gate_closed_means_no_asks_but_work_is_still_recorded(store):
    m = FakeMarket()
    m.asks = {1: False}
    m.match(1)
    r = await request_round(m, store, SETTINGS, ready=lambda: False)
    assert r.added == 1 and r.asks_created == 0 and m.ask_calls == 0


async def test_orphan_asks_are_adopted_and_unlisted_ones_expire(store):
    m = FakeMarket()
    m.asks = {41: False}  # created on the market, answer lost: we never stored it
    store.record_ask(7, 1)  # stored here, the market no longer lists it
    r = await request_round(m, store, SETTINGS)
    assert r.adopted_asks == 1 and r.expired_asks == 1
    assert {a.ask_id for a in store.asks([AskState.ACTIVE])} >= {41}
    assert [a.ask_id for a in store.asks([AskState.EXPIRED])] == [7]
    # the adopted ask counts against the target: 8 - 0 unfinished - 1 listed
    assert r.asks_created == 7


async def test_429_storm_matched_work_still_flows_and_backoff_bounds_requests(store):
    """Asks always answer 429 while earlier asks get matched: every matched request is recorded, ask attempts
    stop at the first 429 of each round, and the interval doubles to the cap (no busy loop)."""
    m = FakeMarket()
    await request_round(m, store, SETTINGS)  # 8 asks exist
    m.limited = True
    sleeps: list[float] = []

    async def sleep(s: float) -> None:
        sleeps.append(s)
        if len(sleeps) in (10, 20, 21):
            m.match(2)  # the market matches waiting asks now and then

    # the agent wants more work than it has asks for: every round tries to ask and is refused
    settings = RequestLoopSettings(
        price_attofil=1, low_water=20, high_water=20, poll_interval_s=3.0, backoff_max_s=60.0
    )
    ask_calls_before = m.ask_calls
    c = await request_loop(m, store, settings, sleep=sleep, max_rounds=30)
    assert len(m.requests) == 6 and store.counts()[RequestState.QUEUED] == 6  # nothing matched was missed
    assert m.ask_calls - ask_calls_before == c.rounds == 30  # one refused ask per round, never more
    assert c.rate_limited == 30 and c.added == 6
    assert sleeps[:5] == [6.0, 12.0, 24.0, 48.0, 60.0] and sleeps[8] == 60.0  # doubling to the cap, held
    assert sleeps[10] == 3.0  # progress (matched work) resets the interval
    # every interval is the poll interval after progress, or a doubling up to the cap
    for a, b in zip(sleeps, sleeps[1:], strict=False):
        assert b in (3.0, a, min(2 * a, 60.0))


async def test_poll_failures_do_not_kill_the_loop(store):
    m = FakeMarket()
    m.poll_fails = 2
    sleeps: list[float] = []

    async def sleep(s: float) -> None:
        sleeps.append(s)

    c = await request_loop(m, store, SETTINGS, sleep=sleep, max_rounds=4)
    assert c.polls_failed == 2 and c.asks_created == 8
    assert sleeps[:2] == [6.0, 12.0] and sleeps[2] == 3.0  # backed off, then reset by progress


def test_next_interval_rules():
    s = SETTINGS
    assert next_interval(24.0, RoundResult(added=1), s) == 3.0
    assert next_interval(24.0, RoundResult(rate_limited=True), s) == 48.0
    assert next_interval(100.0, RoundResult(rate_limited=True), s) == 120.0
    assert next_interval(24.0, RoundResult(), s) == 24.0


async def test_work_the_market_took_back_goes_gone_before_it_is_proven(store):
    """Rows the poll stops listing (deadline passed, reassigned) go gone while queued or fetched, and while
    being proven too (P32: its proof sees the row gone and stops at its next partition boundary, instead of
    running to the end for a submit answered 410)."""
    m = FakeMarket()
    for n, cid in enumerate(("kept", "taken-queued", "taken-fetched", "taken-proving", "done-now")):
        store.add_request(n, cid, 0)
    store.store_data(store.by_cid("taken-fetched").row_id, b"d", "porep")  # type: ignore[union-attr]
    row = store.by_cid("taken-proving")
    assert row is not None
    store.store_data(row.row_id, b"d", "porep")
    assert store.claim("me") is not None  # one fetched row is being proven now
    m.requests = [WorkRequest(0, "kept", None, 0), WorkRequest(4, "done-now", True, 0)]
    claimed = {r.request_cid for r in store.list_requests([RequestState.PROVING])}
    r = await request_round(m, store, SETTINGS)
    gone = {r.request_cid for r in store.list_requests([RequestState.GONE])}
    unlisted = {"taken-queued", "taken-fetched", "taken-proving", "done-now"}
    assert claimed == {"taken-fetched"}  # the oldest fetched row was claimed
    assert gone == unlisted and r.gone == len(gone)
    assert store.by_cid("kept").state is RequestState.QUEUED  # type: ignore[union-attr]
    assert all("no longer lists it" in (x.last_error or "") for x in store.list_requests([RequestState.GONE]))
    assert "taken back while it was proven" in (store.by_cid("taken-fetched").last_error or "")  # type: ignore[union-attr]
    assert store.list_requests([RequestState.PROVING]) == []
