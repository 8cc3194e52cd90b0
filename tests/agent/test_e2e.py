"""The agent against the mock market over real loopback HTTP: paid work end to end (PoRep, and a pool mixing
PoRep and SnapDeals requests), a 429 storm, 410 / deadline, a dropped answer (409), a corrupt partition. The
prover is the stand-in double (tests/agent/_standin); the market checks the stand-in token, its rules and
signatures are the real mock's."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from _standin import StandInProver  # tests/agent is on sys.path

from agent.requester import RequestLoopSettings
from agent.service import Agent, AgentSettings
from agent.store import RequestState, SqliteStore, StoreError
from market.client import MarketClient
from market.mock import DigestStandInChecker, MarketRules, MockMarket
from market.mock.pool import ChallengePool
from market.wallet import Wallet

pytestmark = pytest.mark.anyio
PRICE = 5 * 10**15


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the mock serves from its own thread; the client side runs on asyncio


async def run_until(agent: Agent, store: SqliteStore, state: RequestState) -> None:
    """Run ``agent`` until a request reaches ``state`` (30 s at most), then stop it."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: agent.run(handle_signals=False))
        with anyio.fail_after(30):
            while not store.list_requests([state]):
                await anyio.sleep(0.05)
        agent._done.set()


def settings(high: int = 2, **kw: Any) -> AgentSettings:
    base: dict[str, Any] = {"idle_s": 0.02, "error_backoff_s": 0.05, "error_backoff_max_s": 0.2}
    base["drain_s"] = 5.0
    base.update(kw)
    return AgentSettings(
        RequestLoopSettings(PRICE, low_water=high, high_water=high, poll_interval_s=0.05, backoff_max_s=0.4),
        **base,
    )


class Counting:
    """Counts the agent's market calls by kind (to bound the request rate under a 429 storm)."""

    def __init__(self, inner: MarketClient) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.inner, name)
        if not callable(fn):
            return fn

        async def call(*a: Any, **k: Any) -> Any:
            self.calls[name] += 1
            return await fn(*a, **k)

        return call


def vouchers(market: MockMarket, wallet: Wallet) -> list[dict[str, Any]]:
    return market.state.vouchers(wallet.address.encode("f"))


async def run_agent(
    market: MockMarket, wallet: Wallet, store: SqliteStore, prover: Any, s: AgentSettings, n: int,
    timeout: float = 60,
) -> tuple[Any, Counting]:
    async with MarketClient(market.base_url, wallet) as client:
        counting = Counting(client)
        agent = Agent(counting, store, prover, s)  # type: ignore[arg-type]
        with anyio.fail_after(timeout):
            summary = await agent.run(max_proofs=n, handle_signals=False)
    return summary, counting


async def test_paid_work_end_to_end_ledger_equals_vouchers(make_market: Any, tmp_path: Path) -> None:
    market = make_market(slot_divisor=1, initial_challenges=2, demand_open=3)
    wallet = Wallet.generate()
    store = SqliteStore(tmp_path / "a.db")
    prover = StandInProver()
    summary, _ = await run_agent(market, wallet, store, prover, settings(high=2), 5)
    assert summary.submitted >= 5 and summary.verified >= 5
    rows = store.list_requests([RequestState.SUBMITTED])
    assert len(rows) >= 5
    for r in rows:  # inputs discarded once the work is done (ToS 6.3)
        with pytest.raises(StoreError, match="holds no data"):
            store.data(r.row_id)
    paid = [r for r in rows if not r.pow]
    assert paid, "some of the work must be paid"
    ours = [(p.nonce, p.cumulative_amount, p.signature.hex(), p.request_cid) for p in store.payments()]
    theirs = [
        (v["nonce"], v["cumulative"], v["signature"], v["request_cid"]) for v in vouchers(market, wallet)
    ]
    assert ours == theirs and len(ours) == len(paid)
    assert summary.paid_attofil == ours[-1][1] == PRICE * len(paid)
    assert len(set(prover.job_ids)) == len(prover.job_ids)  # a job id per attempt
    store.close()


class _KindRecording(DigestStandInChecker):
    """The stand-in checker, recording the kind the mock names for each proof (a Snap proof must be judged
    as Snap: a pairing checker picks the update verifying key by it)."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def check(self, kind: str, request: bytes, proof: bytes) -> Any:
        from market.proofdata import ProofData

        assert kind == ProofData.parse(request).kind
        self.kinds.append(kind)
        return super().check(kind, request, proof)


async def test_mixed_porep_and_snap_pool_all_proven_and_paid(
    mixed_pool: ChallengePool, tmp_path: Path
) -> None:
    """The pool mixes SnapDeals update requests into its PoRep ones (every second request): the agent
    fetches, strictly checks, proves, verifies and submits both kinds, the market accepts every proof and
    pays each (a wallet balance high enough that no challenge is needed, so the work alternates kinds)."""
    checker = _KindRecording()
    market = MockMarket(
        checker=checker,
        rules=MarketRules(slot_divisor=1, initial_challenges=50, demand_open=3),
        challenge_source=mixed_pool.make,
    ).start()
    try:
        wallet = Wallet.generate()
        store = SqliteStore(tmp_path / "a.db")
        prover = StandInProver()
        summary, _ = await run_agent(market, wallet, store, prover, settings(high=2), 6, timeout=120)
        rows = store.list_requests([RequestState.SUBMITTED])
        assert summary.submitted == len(rows) >= 6 and summary.verified >= 6
        assert not store.list_requests([RequestState.FAILED, RequestState.GONE])
        kinds = Counter(r.kind for r in rows)
        assert kinds["porep"] >= 2 and kinds["snap"] >= 2 and set(kinds) == {"porep", "snap"}, kinds
        assert all(r.pow is False for r in rows)  # every one paid work
        named = {"porep": "PoRep", "snap": "Snap"}
        assert Counter(checker.kinds) == Counter(named[r.kind] for r in rows)
        counters = market.state.snapshot()["counters"]
        assert counters.get("completed_valid", 0) == len(rows) and counters.get("completed_invalid", 0) == 0
        ours = [(p.nonce, p.cumulative_amount, p.signature.hex(), p.request_cid) for p in store.payments()]
        theirs = [
            (v["nonce"], v["cumulative"], v["signature"], v["request_cid"]) for v in vouchers(market, wallet)
        ]
        assert ours == theirs and len(ours) == len(rows)
        assert {cid for *_, cid in ours} == {r.request_cid for r in rows}
        assert summary.paid_attofil == ours[-1][1] == PRICE * len(rows)
        store.close()
    finally:
        market.stop()


async def test_429_storm_matched_work_still_completed(make_market: Any, tmp_path: Path) -> None:
    """Two asks get in; from then on every ask is 429. Work matched to the early asks is still proven and
    submitted, and the agent backs off: its request count stays bounded."""
    market = make_market(slot_divisor=1, initial_challenges=2)
    wallet = Wallet.generate()
    store = SqliteStore(tmp_path / "a.db")
    async with MarketClient(market.base_url, wallet) as client:
        asks = [await client.create_ask(PRICE) for _ in range(2)]
    for a in asks:
        store.record_ask(a.id, PRICE)
    market.faults.add("ask:429")
    for _ in range(2):
        market.state.add_paid_request(market.state.challenge_source(), PRICE, market.app.now())
    t0 = anyio.current_time()
    summary, counting = await run_agent(market, wallet, store, StandInProver(), settings(high=4), 2)
    elapsed = anyio.current_time() - t0
    assert summary.submitted == 2 and summary.paid_attofil == 2 * PRICE
    # polls at >= 0.05 s, doubling to 0.4 s while rate-limited: a busy loop would make thousands
    assert counting.calls["create_ask"] <= 2 + elapsed / 0.05, counting.calls
    assert counting.calls["poll"] <= 2 + elapsed / 0.05, counting.calls
    store.close()


async def test_dropped_answer_409_is_submitted_once(make_market: Any, tmp_path: Path) -> None:
    market = make_market(slot_divisor=1, initial_challenges=1, demand_open=1, faults="complete:drop-after#1")
    wallet = Wallet.generate()
    store = SqliteStore(tmp_path / "a.db")
    summary, counting = await run_agent(market, wallet, store, StandInProver(), settings(high=1), 1)
    assert summary.stages.already_accepted == 1
    rows = store.list_requests([RequestState.SUBMITTED])
    assert len(rows) == summary.submitted >= 1
    assert sum("answer lost" in (r.last_error or "") for r in rows) == 1
    snap = market.state.snapshot()["counters"]
    # the market accepted each request exactly once: the lost answer was not followed by a second proof
    assert snap.get("completed_valid", 0) == len(rows)
    # the lost answer's voucher is never seen, but vouchers are cumulative: the last one we hold covers it
    theirs = market.state.vouchers(wallet.address.encode("f"))
    if len(theirs) > 1:
        assert store.payments()[-1].cumulative_amount == theirs[-1]["cumulative"]
    store.close()


async def test_late_submit_410_is_gone_never_resubmitted(make_market: Any, tmp_path: Path) -> None:
    """The market's deadline passes while proving: the submit gets 410, the row is gone (kept), no retry."""
    market = make_market(slot_divisor=1, initial_challenges=1, demand_open=1, deadline_s=0.3)
    wallet = Wallet.generate()
    store = SqliteStore(tmp_path / "a.db")
    async with MarketClient(market.base_url, wallet) as client:
        agent = Agent(client, store, StandInProver(delay_s=0.8), settings(high=1))
        await run_until(agent, store, RequestState.GONE)
    gone = store.list_requests([RequestState.GONE])
    assert gone and not store.payments()
    assert any("deadline passed before proving" not in (r.last_error or "") for r in gone)  # a market 410
    assert market.state.snapshot()["counters"].get("reassigned", 0) >= 1
    assert not store.list_requests([RequestState.SUBMITTED])
    store.close()


async def test_local_deadline_drops_before_proving(make_market: Any, tmp_path: Path) -> None:
    market = make_market(slot_divisor=1, initial_challenges=1, demand_open=1)
    wallet = Wallet.generate()
    store = SqliteStore(tmp_path / "a.db")
    s = settings(high=1)
    s = AgentSettings(
        RequestLoopSettings(PRICE, low_water=1, high_water=1, poll_interval_s=0.05, deadline_s=0.0),
        idle_s=0.02, drain_s=1.0,
    )
    async with MarketClient(market.base_url, wallet) as client:
        agent = Agent(client, store, StandInProver(), s)
        await run_until(agent, store, RequestState.GONE)
    (row, *_) = store.list_requests([RequestState.GONE])
    assert "deadline" in (row.last_error or "") and row.proof is None
    assert market.state.snapshot()["counters"].get("completed_valid", 0) == 0
    store.close()


async def test_corrupt_partition_never_submitted(make_market: Any, tmp_path: Path) -> None:
    market = make_market(slot_divisor=1, initial_challenges=1, demand_open=1)
    wallet = Wallet.generate()
    store = SqliteStore(tmp_path / "a.db")
    s = AgentSettings(
        RequestLoopSettings(PRICE, low_water=1, high_water=1, poll_interval_s=0.05), idle_s=0.02, drain_s=1.0
    )
    async with MarketClient(market.base_url, wallet) as client:
        counting = Counting(client)
        agent = Agent(counting, store, StandInProver(corrupt=0), s)  # type: ignore[arg-type]
        await run_until(agent, store, RequestState.FAILED)
    (row, *_) = store.list_requests([RequestState.FAILED])
    assert "partitions [0] of 1 did not verify" in (row.last_error or "") and row.proof is None
    assert row.attempts == 3
    assert counting.calls["complete"] == 0
    assert not agent.ready()  # three bad proofs in a row close the gate: no new asks
    store.close()


@pytest.mark.skipif(not os.environ.get("PSAGENT_AGENT_LONG"), reason="real 2KiB proofs: make test-agent-long")
@pytest.mark.timeout(3600)  # development parameters made on first use, then real CPU proofs
async def test_real_prover_end_to_end(challenge_pool: ChallengePool, tmp_path: Path) -> None:
    """The real StackedDRG prover and pairing checker (development parameters from the user's cache, made
    once), against a mock market that verifies with the pairing too: two proofs accepted, one paid."""
    from agent.config import cache_dir
    from agent.proving.parameters import ensure_dev_params
    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver
    from market.mock import PairingChecker as MarketPairing
    from porep.prooftypes import proof_type

    params_dir = cache_dir() / "params-dev"
    pt = proof_type("StackedDrg2KiBV1_1")
    _, vk = await anyio.to_thread.run_sync(lambda: ensure_dev_params(pt, params_dir, cache=cache_dir()))
    market = MockMarket(
        checker=MarketPairing(vk),
        rules=MarketRules(slot_divisor=1, initial_challenges=1, demand_open=1),
        challenge_source=challenge_pool.make,
    ).start()
    try:
        wallet = Wallet.generate()
        store = SqliteStore(tmp_path / "a.db")
        async with MarketClient(market.base_url, wallet) as client:
            prover = AdmittedProver(ProofPipeline(params_dir), accepted=(pt.name,))
            agent = Agent(client, store, prover, settings(high=1), warm_up=prover.warm_up)
            with anyio.fail_after(3600):
                summary = await agent.run(max_proofs=2, handle_signals=False)
        assert summary.submitted >= 2 and summary.verified >= 2 and summary.paid_attofil >= PRICE
        assert market.state.snapshot()["counters"].get("completed_invalid", 0) == 0
        ours = [(p.nonce, p.cumulative_amount) for p in store.payments()]
        theirs = market.state.vouchers(wallet.address.encode("f"))
        assert ours == [(v["nonce"], v["cumulative"]) for v in theirs]
        store.close()
    finally:
        market.stop()


@pytest.mark.skipif(not os.environ.get("PSAGENT_AGENT_LONG"), reason="real 2KiB proofs: make test-agent-long")
@pytest.mark.timeout(5400)  # the update setup (2^21) on first use takes many minutes on 2 cores
async def test_real_prover_mixed_porep_and_snap(mixed_pool: ChallengePool, tmp_path: Path) -> None:
    """The real provers (StackedDRG and the update circuit) and pairing checkers on both sides, against a
    mock market whose pool alternates PoRep and Snap requests: both kinds proven, accepted and paid.
    Development parameters of both circuits from the user's cache (the update setup, a 2^21 domain, is made
    once and takes many minutes on 2 cores)."""
    from agent.config import cache_dir
    from agent.proving.parameters import ensure_dev_params
    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver
    from market.mock import PairingChecker as MarketPairing
    from porep.prooftypes import proof_type
    from porep.snap.params import for_sector_size

    params_dir = cache_dir() / "params-dev"
    pt = proof_type("StackedDrg2KiBV1_1")
    upt = for_sector_size(pt.sector_size)
    _, vk = await anyio.to_thread.run_sync(lambda: ensure_dev_params(pt, params_dir, cache=cache_dir()))
    _, uvk = await anyio.to_thread.run_sync(lambda: ensure_dev_params(upt, params_dir, cache=cache_dir()))
    market = MockMarket(
        checker=MarketPairing(vk, update_vk=uvk),
        rules=MarketRules(slot_divisor=1, initial_challenges=50, demand_open=2),
        challenge_source=mixed_pool.make,
    ).start()
    try:
        wallet = Wallet.generate()
        store = SqliteStore(tmp_path / "a.db")
        async with MarketClient(market.base_url, wallet) as client:
            prover = AdmittedProver(
                ProofPipeline(params_dir), accepted=(pt.name,), accepted_update=(upt.name,)
            )
            agent = Agent(client, store, prover, settings(high=1), warm_up=prover.warm_up)
            with anyio.fail_after(3600):
                summary = await agent.run(max_proofs=2, handle_signals=False)
        rows = store.list_requests([RequestState.SUBMITTED])
        assert summary.submitted >= 2 and {r.kind for r in rows} == {"porep", "snap"}
        assert market.state.snapshot()["counters"].get("completed_invalid", 0) == 0
        ours = [(p.nonce, p.cumulative_amount) for p in store.payments()]
        theirs = market.state.vouchers(wallet.address.encode("f"))
        assert ours == [(v["nonce"], v["cumulative"]) for v in theirs] and len(ours) == len(rows)
        store.close()
    finally:
        market.stop()
