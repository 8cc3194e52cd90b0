"""agent.service: the loops together in one task group against an in-memory market (prover doubles), systemd
notify over a real unix datagram socket, metrics, shutdown by max_proofs and by SIGTERM."""

from __future__ import annotations

import os
import signal
import socket

import anyio
import pytest
from _doubles import FakeProver  # tests/agent is on sys.path

from agent.requester import RequestLoopSettings
from agent.sdnotify import Notifier
from agent.service import Agent, AgentSettings
from agent.stages import StageSettings
from agent.store import RequestState, SqliteStore
from market.cid import RequestCid
from market.models import ProofReward, WorkAsk, WorkRequest, WorkResponse

pytestmark = pytest.mark.anyio


class MemoryMarket:
    """Every ask is matched on the next poll to a request carrying ``data``; vouchers are cumulative."""

    clock_offset_s: float | None = None  # never measured (agent.service.Market)

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.cid = str(RequestCid.of(data))
        self.asks: list[int] = []
        self.requests: list[WorkRequest] = []
        self.completed: list[str] = []
        self.withdrawn: list[int] = []
        self.nonce = 0
        self.cumulative = 0
        self.calls = 0

    async def poll(self) -> WorkResponse:
        self.calls += 1
        for ask_id in self.asks:
            # a distinct request per ask: the same bytes plus a trailing space would change the CID, so the
            # double serves the one C1 under per-request CIDs it keeps in a table instead
            self.requests.append(
                WorkRequest(id=ask_id, request_cid=f"{self.cid}#{ask_id}", done=None, work_ask_id=ask_id)
            )
        self.asks = []
        return WorkResponse(requests=tuple(self.requests), active_asks=())

    async def create_ask(self, price_attofil: int) -> WorkAsk:
        self.calls += 1
        ask = WorkAsk(id=len(self.requests) + len(self.asks) + 1)
        self.asks.append(ask.id)
        return ask

    async def fetch_request_bytes(self, request_cid: str) -> bytes:
        self.calls += 1
        return self.data

    async def complete(self, request_cid: str, proof: bytes) -> ProofReward:
        self.calls += 1
        self.completed.append(request_cid)
        self.nonce += 1
        self.cumulative += 7
        return ProofReward("ok", False, self.nonce, 7, self.cumulative, b"sig")

    async def withdraw(self, ask_id: int) -> None:
        self.withdrawn.append(ask_id)


def _settings(**kw) -> AgentSettings:
    return AgentSettings(
        requests=RequestLoopSettings(
            price_attofil=1, low_water=2, high_water=3, poll_interval_s=0.05, backoff_max_s=0.2
        ),
        stages=StageSettings(max_attempts=2),
        idle_s=0.02,
        error_backoff_s=0.05,
        drain_s=5.0,
        **kw,
    )


async def test_max_proofs_then_exit_with_a_ledger_that_matches_the_vouchers(tmp_path, work_bytes):
    store = SqliteStore(tmp_path / "s.db")
    market = MemoryMarket(work_bytes)
    warmed: list[bool] = []
    agent = Agent(
        market,
        store,
        FakeProver(),
        _settings(),
        check=_check,
        warm_up=lambda: warmed.append(True),
    )
    with anyio.fail_after(60):
        summary = await agent.run(max_proofs=3, handle_signals=False)
    assert warmed == [True]
    assert summary.submitted >= 3 and summary.verified >= 3 and summary.failed == 0
    payments = store.payments()
    assert [p.nonce for p in payments] == list(range(1, len(market.completed) + 1))
    assert payments[-1].cumulative_amount == sum(p.amount for p in payments) == market.cumulative
    assert summary.paid_attofil == market.cumulative
    assert store.counts()[RequestState.SUBMITTED] == len(market.completed)
    assert "submitted" in summary.line()
    store.close()


def _check(raw: bytes):
    from agent.stages import request_work

    return request_work(raw)


async def test_sigterm_drains_and_leaves_resumable_state(tmp_path, work_bytes):
    store = SqliteStore(tmp_path / "s.db")
    market = MemoryMarket(work_bytes)
    agent = Agent(
        market, store, FakeProver(), _settings(withdraw_on_shutdown=True), check=_check
    )

    async def kill_soon() -> None:
        while not market.completed:
            await anyio.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(kill_soon)
            summary = await agent.run()
    assert summary.submitted >= 1
    counts = store.counts()
    assert counts[RequestState.PROVING] == 0  # nothing left claimed
    assert counts[RequestState.COMPUTED] == 0  # the drain handed everything computed in
    store.close()


async def test_unhealthy_prover_closes_the_gate(tmp_path, work_bytes):
    store = SqliteStore(tmp_path / "s.db")
    market = MemoryMarket(work_bytes)
    agent = Agent(market, store, FakeProver(corrupt=0), _settings(), check=_check)

    seen: dict = {}

    async def stop_when_unhealthy() -> None:
        while agent.gate().state != "unhealthy":
            await anyio.sleep(0.05)
        await anyio.sleep(0.5)  # time for asks, if the closed gate let any through
        seen["gate"] = agent.gate()
        seen["ready"] = agent.metrics.registry.get_sample_value("psagent_ready")
        agent._done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_when_unhealthy)
            summary = await agent.run(handle_signals=False)
    assert summary.submitted == 0 and market.completed == []  # no unverified proof ever submitted
    assert seen["gate"].reason.endswith("proofs in a row did not verify") and seen["ready"] == 0
    assert agent.loop_counters.asks_created <= 6  # asks stopped once the prover was found unhealthy
    failed = store.list_requests([RequestState.FAILED])
    assert failed and all("did not verify" in (r.last_error or "") for r in failed)
    store.close()


def test_sd_notify_over_a_real_socket(tmp_path):
    path = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        n = Notifier(address=path, watchdog_usec="4000000")
        assert n.enabled and n.watchdog_interval_s == 2.0
        assert n.ready("ready: asking")
        assert server.recv(256) == b"READY=1\nSTATUS=ready: asking"
        assert n.watchdog() and server.recv(256) == b"WATCHDOG=1"
        assert n.stopping() and server.recv(256) == b"STOPPING=1"
    assert not Notifier(address="").ready()
    assert not Notifier(address=str(tmp_path / "missing.sock")).ready()  # never raises


async def test_no_ask_before_the_gate_opens(tmp_path, work_bytes):
    import threading

    from agent.opsview.gate import read_gate

    store = SqliteStore(tmp_path / "s.db")
    market = MemoryMarket(work_bytes)
    release = threading.Event()
    gate_file = tmp_path / "gate.json"
    agent = Agent(
        market, store, FakeProver(), _settings(), check=_check,
        warm_up=lambda: release.wait(30), gate_file=gate_file,
    )

    async def observe_then_open() -> None:
        await anyio.sleep(0.6)  # many poll rounds while warming up
        assert market.asks == [] and market.requests == [] and not agent.ready()
        assert agent.gate().state == "warming" and read_gate(gate_file)["state"] == "warming"
        assert agent.metrics.registry.get_sample_value("psagent_ready") == 0
        release.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(observe_then_open)
            summary = await agent.run(max_proofs=1, handle_signals=False)
    assert summary.submitted >= 1 and market.completed
    assert read_gate(gate_file)["state"] == "stopped" and agent.gate().state == "stopped"
    store.close()


async def test_a_failing_self_test_keeps_the_gate_closed_and_says_why(tmp_path, work_bytes):
    """The real warm-up of the agent's prover, without parameters: the gate stays closed, the reason is in
    the gate, the metrics and the gate file; nothing is asked for and nothing is proven."""
    from agent.opsview.gate import read_gate
    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver

    store = SqliteStore(tmp_path / "s.db")
    store_row = store.add_request(1, "bafyold", 1)
    assert store_row is not None
    store.store_data(store_row.row_id, work_bytes, "porep")  # work fetched by an earlier run
    market = MemoryMarket(work_bytes)
    market.requests.append(WorkRequest(id=1, request_cid="bafyold", done=None, work_ask_id=1))  # still ours
    pipe = ProofPipeline(tmp_path / "none", cache=tmp_path)
    prover = AdmittedProver(pipe, accepted=("StackedDrg2KiBV1_1",))
    gate_file = tmp_path / "gate.json"
    agent = Agent(
        market, store, prover, _settings(), check=_check, warm_up=prover.warm_up,
        gate_file=gate_file,
    )
    seen: dict = {}

    async def observe_then_stop() -> None:
        await anyio.sleep(1.0)
        seen["gate"] = agent.gate()
        seen["file"] = read_gate(gate_file)
        registry = agent.metrics.registry
        seen["metric"] = registry.get_sample_value("psagent_readiness_gate", {"state": "failed"})
        agent._done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(observe_then_stop)
            await agent.run(handle_signals=False)
    gate = seen["gate"]
    assert gate.state == "failed" and "FileNotFoundError" in gate.reason
    assert "StackedDrg2KiBV1_1" in gate.reason
    assert seen["file"]["state"] == "failed" and seen["file"]["reason"] == gate.reason
    assert seen["metric"] == 1
    assert market.asks == [] and [r.request_cid for r in market.requests] == ["bafyold"]  # nothing asked
    assert store.counts()[RequestState.FETCHED] == 1  # not claimed: nothing is proven before the warm-up
    store.close()


async def test_a_stop_during_the_warm_up_does_not_wait_for_it(tmp_path, work_bytes):
    import threading
    import time

    store = SqliteStore(tmp_path / "s.db")
    hold = threading.Event()
    agent = Agent(
        MemoryMarket(work_bytes), store, FakeProver(), _settings(), check=_check,
        warm_up=lambda: hold.wait(60),
    )

    async def stop_soon() -> None:
        await anyio.sleep(0.3)
        agent._done.set()

    t0 = time.perf_counter()
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_soon)
                summary = await agent.run(handle_signals=False)
        assert time.perf_counter() - t0 < 10 and summary.asks == 0 and agent.gate().state == "stopped"
    finally:
        hold.set()
        store.close()


async def test_a_self_test_that_does_not_verify_keeps_the_gate_closed(tmp_path, work_bytes):
    """The agent prover's warm-up on an engine that corrupts its proofs (the reference Groth16 with a bit
    flipped): the self-test proof fails the pairing check, the gate stays closed and says so."""
    from _doubles import ReferenceEngine, ToyCircuit, toy_circuits, toy_sample

    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver

    store = SqliteStore(tmp_path / "s.db")
    market = MemoryMarket(work_bytes)
    pipe = ProofPipeline(
        tmp_path, engines=[ReferenceEngine(corrupt=True)], cache=tmp_path, sample=toy_sample,
        circuits=toy_circuits(ToyCircuit(2, lambda c1: [])),
    )
    prover = AdmittedProver(pipe, accepted=())
    agent = Agent(market, store, prover, _settings(), check=_check, warm_up=prover.warm_up)
    # every gate the warm-up publishes, in order (polling the gate raced the 0.05 s retry backoff: a poll
    # could land in the next try's "warming")
    gates: list = []
    set_gate = agent._set_gate

    def record(state: str, reason: str = "") -> None:
        set_gate(state, reason)
        gates.append(agent.gate())

    agent._set_gate = record

    async def observe_then_stop() -> None:
        while sum(g.state == "failed" for g in gates) < 2:  # the first try and its retry both failed
            assert agent.ready() is False
            await anyio.sleep(0.01)
        agent._done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(observe_then_stop)
            await agent.run(handle_signals=False)
    states = [g.state for g in gates]
    assert states[:4] == ["warming", "failed", "warming", "failed"], states
    why = gates[1].reason
    assert why.startswith("warm-up failed: RuntimeError: self-test:")
    assert why.endswith("the 3-constraint proof on reference did not verify")
    assert gates[2].reason == f"retrying after {why}"  # the retry keeps the failure in view
    assert gates[3].reason == why
    assert "open" not in states
    assert market.asks == [] and market.requests == []
    store.close()


class _SlowBeatStore(SqliteStore):
    """A store whose fleet heartbeat takes longer than its interval: a beat is nearly always in flight."""

    def heartbeat(self, owner, **kw):  # type: ignore[no-untyped-def]
        import time

        time.sleep(0.15)
        super().heartbeat(owner, **kw)


async def test_a_clean_exit_leaves_the_fleet_after_its_last_heartbeat(tmp_path, work_bytes):
    """The fleet heartbeat is stopped (its in-flight beat finished) before the member leaves: a beat that
    committed after leave() marked the stopped member alive again (seen in the fleet test, 1 run in 10)."""
    store = _SlowBeatStore(tmp_path / "s.db", heartbeat_s=0.02, stale_after_s=5.0)
    agent = Agent(MemoryMarket(work_bytes), store, FakeProver(), _settings(), check=_check)
    with anyio.fail_after(60):
        await agent.run(max_proofs=1, handle_signals=False)
    (host,) = store.hosts()
    assert host.stopped_at is not None and not host.alive
    store.close()


async def test_ready_at_once_watchdog_fed_and_gate_in_status_during_a_slow_warm_up(tmp_path, work_bytes):
    """systemd's view of a start with a warm-up of several seconds: READY=1 within a second (not after the
    warm-up), WATCHDOG=1 pings all through the warm-up, and STATUS= carrying the gate: warming, then open."""
    import threading
    import time

    from _notify import NotifySocket

    store = SqliteStore(tmp_path / "s.db")
    release = threading.Event()
    with NotifySocket(tmp_path / "notify.sock") as sock:
        notifier = Notifier(address=sock.path, watchdog_usec="200000")  # a ping every 0.1 s
        agent = Agent(
            MemoryMarket(work_bytes), store, FakeProver(), _settings(), check=_check,
            warm_up=lambda: release.wait(30), notifier=notifier,
        )
        seen: dict = {}

        async def observe() -> None:
            t0 = time.monotonic()
            seen["ready"] = await anyio.to_thread.run_sync(sock.wait_for, "READY", None, 10.0)
            await anyio.sleep(2.0)  # the warm-up still runs
            seen["pings_while_warming"] = [t for t, _ in sock.fields("WATCHDOG") if t > seen["ready"]]
            seen["warming_gate"] = agent.gate().state
            seen["t0"] = t0
            release.set()
            seen["open"] = await anyio.to_thread.run_sync(sock.wait_for, "STATUS", "gate open", 10.0)
            agent._done.set()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(observe)
                await agent.run(handle_signals=False)
    statuses = [v for _, v in sock.fields("STATUS")]  # after the socket's last datagrams were read
    assert seen["ready"] - seen["t0"] < 1.0  # up at once, although the warm-up took 2 s more
    assert seen["warming_gate"] == "warming"
    assert len(seen["pings_while_warming"]) >= 10  # every 0.1 s for 2 s (allowing for a loaded machine)
    assert statuses[0] == "gate starting" or statuses[0].startswith("gate warming")
    assert any(s.startswith("gate warming: parameters") for s in statuses)
    assert "gate open: asking for work" in statuses
    assert statuses.index("gate open: asking for work") > max(
        i for i, s in enumerate(statuses) if s.startswith("gate warming")
    )
    assert sock.fields("STOPPING") and statuses[-1] == "gate stopped"
    store.close()


async def test_a_failing_warm_up_is_ready_with_the_reason_in_status(tmp_path, work_bytes):
    """No parameters yet: the service is up (READY=1), the gate is closed and STATUS= says why."""
    from _notify import NotifySocket

    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver

    store = SqliteStore(tmp_path / "s.db")
    pipe = ProofPipeline(tmp_path / "none", cache=tmp_path)
    prover = AdmittedProver(pipe, accepted=("StackedDrg2KiBV1_1",))
    market = MemoryMarket(work_bytes)
    with NotifySocket(tmp_path / "notify.sock") as sock:
        agent = Agent(
            market, store, prover, _settings(), check=_check, warm_up=prover.warm_up,
            notifier=Notifier(address=sock.path, watchdog_usec="1000000"),
        )

        async def stop_once_failed() -> None:
            await anyio.to_thread.run_sync(sock.wait_for, "STATUS", "gate failed", 20.0)
            agent._done.set()

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(stop_once_failed)
                await agent.run(handle_signals=False)
        ready = sock.fields("READY")
        failed = [v for _, v in sock.fields("STATUS") if v.startswith("gate failed")]
    assert ready and failed
    assert "FileNotFoundError" in failed[0] and "StackedDrg2KiBV1_1" in failed[0]
    assert market.asks == []
    store.close()


class UnmatchedMarket(MemoryMarket):
    """Asks stay active (listed by the poll, never matched): what an agent leaves behind when it stops."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.open: list[int] = []

    async def poll(self) -> WorkResponse:
        self.calls += 1
        return WorkResponse(requests=(), active_asks=tuple(WorkAsk(id=i) for i in self.open))

    async def create_ask(self, price_attofil: int) -> WorkAsk:
        ask = WorkAsk(id=100 + len(self.open))
        self.open.append(ask.id)
        return ask

    async def withdraw(self, ask_id: int) -> None:
        self.withdrawn.append(ask_id)
        self.open.remove(ask_id)


@pytest.mark.parametrize("withdraw", [True, False])
async def test_asks_are_withdrawn_on_stop_unless_configured_not_to(tmp_path, work_bytes, withdraw):
    """market.withdraw_on_shutdown (on by default): every active ask is withdrawn as asking stops."""
    from agent.config import Settings
    from agent.runtime import agent_settings
    from agent.store import AskState

    assert agent_settings(Settings()).withdraw_on_shutdown is True
    configured = agent_settings(Settings(market={"withdraw_on_shutdown": withdraw}))
    assert configured.withdraw_on_shutdown is withdraw
    store = SqliteStore(tmp_path / "s.db")
    market = UnmatchedMarket(work_bytes)
    agent = Agent(market, store, FakeProver(), _settings(withdraw_on_shutdown=withdraw),
                  check=_check)

    async def stop_once_asked() -> None:
        while len(market.open) < 3:  # high_water
            await anyio.sleep(0.02)
        agent._done.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_once_asked)
            await agent.run(handle_signals=False)
    asks = store.asks()
    if withdraw:
        assert sorted(market.withdrawn) == [100, 101, 102] and market.open == []
        assert all(a.state is AskState.WITHDRAWN for a in asks)
    else:
        assert market.withdrawn == [] and len(market.open) == 3
        assert all(a.state is AskState.ACTIVE for a in asks)
    store.close()


async def test_asking_stops_when_max_proofs_is_nearly_met(tmp_path, work_bytes):
    """--max-proofs 1 with a high water mark of 3: one ask, not three (each extra matched ask would be left
    to miss its deadline)."""
    store = SqliteStore(tmp_path / "s.db")
    market = MemoryMarket(work_bytes)
    agent = Agent(market, store, FakeProver(), _settings(), check=_check)
    with anyio.fail_after(60):
        summary = await agent.run(max_proofs=1, handle_signals=False)
    assert summary.submitted == 1 and summary.asks == 1
    store.close()


def test_only_accepted_proof_types_are_proven(work_bytes, snap_bytes):
    """prover.accepted_proof_types: work of another type fails as unsupported at the check, before proving."""
    from agent.config import Settings
    from agent.proving.work import WorkKind
    from agent.stages import UnsupportedWork, accepting

    default = accepting(*Settings().prover.accepted())
    for raw in (work_bytes, snap_bytes):  # 2KiB PoRep and 2KiB Snap: not the market's 32GiB pair
        with pytest.raises(UnsupportedWork, match="not in prover.accepted_proof_types"):
            default(raw)
    small = Settings(prover={"accepted_proof_types": ["StackedDrg2KiBV1_1", "snap:StackedDrg2KiBV1"]})
    check = accepting(*small.prover.accepted())
    assert check(work_bytes).kind is WorkKind.POREP and check(snap_bytes).kind is WorkKind.SNAP
    only_porep = Settings(prover={"accepted_proof_types": ["StackedDrg2KiBV1_1"]})
    porep_only = accepting(*only_porep.prover.accepted())
    with pytest.raises(UnsupportedWork, match="snap:StackedDrg2KiBV1"):
        porep_only(snap_bytes)
