"""The running agent: every loop owned by one anyio task group, structured shutdown, nothing lost.

Loops (each survives its own errors with a logged backoff; cancellation is the only way out):
  requester   poll / record / ask (agent.requester), asks only while the readiness gate is open
  gate        the readiness gate (Curio's paramsReady, cuzk's warm-up): ``warm_up`` (parameters of every
              accepted proof type loaded, kernels warm, a self-test proof verified: AdmittedProver.warm_up)
              runs before the first ask; a failure keeps the gate closed, says why (log, metrics, the gate
              file ``psagent status`` reads) and is retried with backoff. The gate closes again while the
              prover is unhealthy (3 unverified proofs in a row) and on shutdown. Provers claim work only
              after the warm-up passed. An unhealthy gate half-opens after a cool-down of
              ``error_backoff_max_s`` without a new failure: the warm-up's self-test runs again and reopens
              the gate if it verifies (the failures may have been the last queued request's: then no proof
              is left that could close the incident).
  fetcher     queued → fetched (agent.stages.fetch_one); the checked Work is handed to the provers
  provers     fetched → computed, ``prover_slots`` of them (one per admission slot: every device proves)
  submitter   computed → submitted / gone / failed
  janitor     orphan reset at start and periodically; purge by the retention settings
  watchdog    systemd WATCHDOG=1 pings and the queue gauge

systemd (``Type=notify``): READY=1 goes out as soon as the service is up (store open, metrics served, the
fleet joined, the loops started), not after the warm-up: a warm-up of minutes (32GiB parameters, kernels, the
self-test) or one that fails until parameters arrive must neither trip the start timeout nor restart-loop
the unit. The gate is what says whether work is taken: every change of it goes out as ``STATUS=gate …``
(what ``systemctl status`` shows), and the watchdog is fed from the event loop while the warm-up runs in
its own thread.

Shutdown (SIGTERM/SIGINT, or ``max_proofs`` accepted proofs): the requester stops first (no new asks), the
fetcher and provers finish the item in hand and stop, the submitter gets ``drain_s`` to hand in what is
computed; anything unfinished stays in the store in a resumable state (fetched / computed) for the next
start. Active asks are withdrawn as asking stops (market.withdraw_on_shutdown, on by default: an ask matched
while the agent is down misses its deadline and costs 50 challenge proofs), and with ``max_proofs`` no more
is asked for than the proofs still wanted.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio import from_thread
from anyio.lowlevel import current_token

from agent.fleet import FleetMember
from agent.opsview.gate import GATE_STATES, Gate, write_gate_file
from agent.opsview.metrics import AgentMetrics
from agent.proving.work import Work
from agent.requester import AskMarket, LoopCounters, RequestLoopSettings, next_interval, request_round
from agent.sdnotify import Notifier
from agent.stages import (
    FetchMarket,
    Prover,
    StageCounters,
    StageSettings,
    SubmitMarket,
    WorkHandoff,
    fetch_one,
    prove_one,
    request_work,
    submit_one,
)
from agent.store import AskState, RequestRow, RequestState, Store, in_worker
from market.models import ATTO_PER_FIL

__all__ = ["Agent", "AgentSettings", "Market", "RunSummary"]

log = logging.getLogger(__name__)


class Market(AskMarket, FetchMarket, SubmitMarket, Protocol):
    """The market calls the agent makes (market.client.MarketClient, or a double): the request loop's (poll,
    ask) and the stages' (fetch, submit), withdrawing an ask, and the host clock's offset from the market's as
    last measured (None: not measured yet; the heartbeat exports it)."""

    @property
    def clock_offset_s(self) -> float | None: ...

    async def withdraw(self, ask_id: int) -> None: ...


@dataclass(frozen=True)
class AgentSettings:
    requests: RequestLoopSettings
    stages: StageSettings = field(default_factory=StageSettings)
    prover_slots: int = 1  # concurrent proofs: the prover's admission slots (one per device by default)
    idle_s: float = 0.5  # how often an idle stage looks at the store again
    error_backoff_s: float = 5.0  # first wait after a loop error (doubles to error_backoff_max_s)
    error_backoff_max_s: float = 120.0
    janitor_every_s: float = 600.0
    retention_submitted_s: float = 2 * 86400.0
    retention_failed_s: float = 7 * 86400.0
    drain_s: float = 60.0  # time the submitter gets on shutdown to hand in computed proofs
    # an ask left active while the agent is down can be matched, and a match missed costs 50 challenge proofs
    withdraw_on_shutdown: bool = True


UNHEALTHY_AFTER = 3  # unverified proofs in a row that close the gate


async def _in_daemon_thread(fn: Callable[[], object]) -> None:
    """Run ``fn`` in a daemon thread and wait for it. Cancelling the wait abandons the thread, and a daemon
    thread does not hold the process at exit: a SIGTERM during a warm-up of minutes (loading parameters)
    ends the process after the drain instead of after the warm-up."""
    token = current_token()
    done = anyio.Event()
    failure: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting task
            failure.append(e)
        finally:
            try:
                from_thread.run_sync(done.set, token=token)
            except Exception:  # noqa: BLE001 - the event loop is gone (shutdown): nobody waits any more
                pass

    threading.Thread(target=target, name="psagent-warm-up", daemon=True).start()
    await done.wait()
    if failure:
        raise failure[0]


@dataclass
class RunSummary:
    """What a run did: the stages' counters, read as the totals an operator asks for."""

    stages: StageCounters = field(default_factory=StageCounters)
    asks: int = 0
    seconds: float = 0.0

    @property
    def verified(self) -> int:
        return self.stages.proofs_ok

    @property
    def submitted(self) -> int:
        """Submissions the market took (a 409 for one it already had counts: it was accepted before)."""
        return self.stages.submitted + self.stages.already_accepted

    @property
    def paid_attofil(self) -> int:
        return self.stages.paid_attofil

    @property
    def failed(self) -> int:
        return self.stages.proofs_failed + self.stages.fetch_failed + self.stages.submit_failed

    @property
    def gone(self) -> int:
        return self.stages.gone

    def line(self) -> str:
        return (
            f"{self.verified} proof(s) verified, {self.submitted} submitted, "
            f"{Decimal(self.paid_attofil) / ATTO_PER_FIL} FIL paid, {self.failed} failed, {self.gone} gone, "
            f"{self.asks} ask(s), {self.seconds:.1f} s"
        )


class Agent:
    def __init__(
        self,
        market: Market,
        store: Store,
        prover: Prover,
        settings: AgentSettings,
        *,
        check: Callable[[bytes], Work] = request_work,
        warm_up: Callable[[], None] | None = None,
        metrics: AgentMetrics | None = None,
        notifier: Notifier | None = None,
        gate_file: Path | None = None,
    ) -> None:
        """``warm_up``: the readiness gate's work (None: the gate opens at once: tests with doubles);
        ``gate_file``: where the gate's state is written for ``psagent status``."""
        self.market, self.store, self.prover = market, store, prover
        self.settings = settings
        self.check = check
        self.warm_up = warm_up
        self.metrics = metrics or AgentMetrics()
        self.metrics.queue.read_from(store.counts)  # each scrape reads the store's counts
        self.notifier = notifier or Notifier()
        self.owner = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self.stages = replace(settings.stages, owner=self.owner)
        self.handoff = WorkHandoff(limit=4 * max(settings.prover_slots, 1) + settings.requests.high_water)
        self.fleet = FleetMember(store, self.owner, capacity=settings.prover_slots)
        self.counters = StageCounters()
        self.loop_counters = LoopCounters()
        self.gate_file = gate_file
        self._gate = Gate("starting")
        self._status_sent = ""
        self._warmed = anyio.Event()
        self._prover_failures = 0
        self._last_failure = 0.0  # time.monotonic() of the last unverified proof
        self._unhealthy = anyio.Event()
        self._stop_asking = anyio.Event()
        self._stop_work = anyio.Event()
        self._done = anyio.Event()
        self._kick = anyio.Event()
        self._max_proofs: int | None = None
        self._accepted = 0
        self._submitted_at_start = 0
        self._interval: float = settings.requests.poll_interval_s

    # -- readiness ------------------------------------------------------------------------------------

    def ready(self) -> bool:
        """The gate for asks: warmed up and self-tested, prover healthy, not shutting down."""
        return self.gate().open

    def gate(self) -> Gate:
        """The gate now (the warm-up's outcome, then the prover's health and shutdown)."""
        g = self._gate
        if g.state == "stopped":
            return g
        if self._stop_asking.is_set():
            return Gate("stopping", "draining", g.since)
        if g.open and self._prover_failures >= UNHEALTHY_AFTER:
            return Gate("unhealthy", f"{self._prover_failures} proofs in a row did not verify", g.since)
        return g

    def _publish_gate(self) -> None:
        g = self.gate()
        line = g.line()
        if line != self._status_sent:  # systemd's STATUS= follows the gate (sent on change only)
            self._status_sent = line
            self.notifier.status(f"gate {line}")
        self.metrics.ready.set(1 if g.open else 0)
        for state in GATE_STATES:
            self.metrics.gate.labels(state=state).set(1 if state == g.state else 0)
        if self.gate_file is not None:
            try:
                write_gate_file(self.gate_file, g)
            except OSError as e:
                log.warning("cannot write the gate file %s: %s", self.gate_file, e)

    def _set_gate(self, state: str, reason: str = "") -> None:
        self._gate = Gate(state, reason)
        self._publish_gate()

    async def _become_ready(self) -> None:
        """Run the warm-up until it passes (backoff between tries), then open the gate."""
        backoff = self.settings.error_backoff_s
        last_failure = ""
        while self.warm_up is not None:
            # a retry keeps the last failure in view (status, metrics), not only "warming"
            doing = "parameters, kernels, self-test proof"
            self._set_gate("warming", f"retrying after {last_failure}" if last_failure else doing)
            log.info("warming up (parameters, kernels, self-test proof)")
            t0 = time.perf_counter()
            try:
                await _in_daemon_thread(self.warm_up)
            except Exception as e:
                why = last_failure = f"warm-up failed: {type(e).__name__}: {e}"
                self._set_gate("failed", why)
                self.metrics.loop_error("warm_up", why)
                log.error("%s (no asks; trying again in %.0f s)", why, backoff)
                with anyio.move_on_after(backoff):
                    await self._stop_asking.wait()
                if self._stop_asking.is_set():
                    return
                backoff = min(backoff * 2, self.settings.error_backoff_max_s)
                continue
            log.info("warm-up done in %.1f s", time.perf_counter() - t0)
            break
        self._set_gate("open", "asking for work")
        self._warmed.set()

    # -- loops -----------------------------------------------------------------------------------------

    async def _guarded(self, name: str, step: Callable[[], Any], stop: anyio.Event) -> None:
        """Run ``step`` until ``stop``; idle waits when it found nothing, backoff after errors."""
        backoff = self.settings.error_backoff_s
        while not stop.is_set():
            try:
                found = await step()
            except Exception as e:
                self.metrics.loop_error(name, f"{type(e).__name__}: {e}")
                self.fleet.note_error(f"{name}: {type(e).__name__}: {e}")
                log.warning("%s: %s: %s (retrying in %.0f s)", name, type(e).__name__, e, backoff)
                with anyio.move_on_after(backoff):
                    await stop.wait()
                backoff = min(backoff * 2, self.settings.error_backoff_max_s)
                continue
            backoff = self.settings.error_backoff_s
            if not found:
                with anyio.move_on_after(self.settings.idle_s):
                    await stop.wait()

    async def _request_step(self) -> bool:
        if not await self.fleet.may_request():  # another member of the fleet is the requester
            with anyio.move_on_after(self.fleet.heartbeat_s):
                await self._stop_asking.wait()
            return True
        s = await self.fleet.request_settings(self.settings.requests)
        r = await request_round(self.market, self.store, s, ready=self.ready, proofs_left=self._proofs_left)
        self.loop_counters.rounds += 1
        self.loop_counters.record(r)
        self.metrics.asks.inc(r.asks_created)
        self.metrics.added.inc(r.added)
        self.metrics.price.set(s.price_attofil)
        if r.rate_limited:
            self.metrics.rate_limited.inc()
        self._interval = next_interval(self._interval, r, s)
        with anyio.move_on_after(self._interval):
            await self._stop_asking.wait()
        return True

    def _proofs_left(self, counts: dict[RequestState, int]) -> int | None:
        """Proofs still wanted under ``max_proofs`` (None: no limit), from the round's own store counts: the
        submitted rows since the start, so a proof submitted while the round ran is not asked for again."""
        if self._max_proofs is None:
            return None
        done = max(self._accepted, counts[RequestState.SUBMITTED] - self._submitted_at_start)
        return self._max_proofs - done

    async def _fetch_step(self) -> bool:
        t0 = time.perf_counter()
        found = await fetch_one(
            self.market, self.store, check=self.check, counters=self.counters, owner=self.owner,
            handoff=self.handoff,
        )
        if found:
            self.metrics.stage_seconds.labels(stage="fetch").observe(time.perf_counter() - t0)
        return found

    async def _prove_step(self) -> bool:
        if not self._warmed.is_set():  # nothing is proven before the warm-up passed
            with anyio.move_on_after(self.settings.idle_s):
                await self._warmed.wait()
            return self._warmed.is_set()
        t0 = time.perf_counter()
        row = await prove_one(
            self.store, self.prover, self.stages, counters=self.counters, handoff=self.handoff,
            check=self.check,
        )
        if row is None:
            return False
        self.metrics.stage_seconds.labels(stage="prove_verify").observe(time.perf_counter() - t0)
        if row.state is RequestState.COMPUTED:
            self._healed("a proof verified")
        elif row.state in (RequestState.FETCHED, RequestState.FAILED) and row.proof is None:
            self._prover_failures += 1
            self._last_failure = time.monotonic()
            if self._prover_failures == UNHEALTHY_AFTER:
                log.error(
                    "prover unhealthy (3 failures in a row): no new asks until a proof verifies "
                    "(self-test again after %.0f s without a failure)",
                    self.settings.error_backoff_max_s,
                )
                self._unhealthy.set()
                self._publish_gate()
        return True

    def _healed(self, why: str) -> None:
        healed = self._prover_failures >= UNHEALTHY_AFTER
        self._prover_failures = 0
        if healed:
            self._unhealthy = anyio.Event()
            log.info("prover healthy again (%s): asking for work", why)
            self._publish_gate()

    async def _half_open(self) -> None:
        """Reopen an unhealthy gate after a cool-down: when the failures were the attempts of the last queued
        request, no proof is left to show the prover works again and, the gate being closed, none is asked
        for. After ``error_backoff_max_s`` without a new failure the warm-up runs again (its self-test proof
        on every device); if it verifies the gate reopens, otherwise the cool-down starts over."""
        cool_down = self.settings.error_backoff_max_s
        while True:
            await self._unhealthy.wait()
            wait = self._last_failure + cool_down - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
                continue  # a failure may have come meanwhile, or a verified proof healed the gate
            failures, since = self._prover_failures, self._last_failure
            log.info("prover unhealthy for %.0f s without a new failure: self-test", cool_down)
            try:
                if self.warm_up is not None:
                    await _in_daemon_thread(self.warm_up)
            except Exception as e:
                self._last_failure = time.monotonic()
                self.metrics.loop_error("self_test", f"{type(e).__name__}: {e}")
                log.error("self-test while unhealthy failed: %s: %s (gate stays closed)", type(e).__name__, e)
                continue
            if (self._prover_failures, self._last_failure) == (failures, since):  # no failure meanwhile
                self._healed("the self-test verified after the cool-down")

    async def _submit_step(self) -> bool:
        t0 = time.perf_counter()
        row = await submit_one(self.market, self.store, counters=self.counters, owner=self.owner)
        if row is None:
            return False
        self.metrics.stage_seconds.labels(stage="submit").observe(time.perf_counter() - t0)
        await self._record_submission(row)
        if row.state is RequestState.SUBMITTED:
            self._accepted += 1
            if self._max_proofs is not None and self._accepted >= self._max_proofs:
                log.info("%d proof(s) accepted: stopping as asked", self._accepted)
                self._done.set()
        return True

    async def _record_submission(self, row: RequestRow) -> None:
        """A submission's outcome in the metrics: the market's answer, an accepted proof's deadline margin
        and its voucher."""
        outcome = {
            RequestState.SUBMITTED: "accepted", RequestState.GONE: "gone", RequestState.FAILED: "rejected"
        }.get(row.state)
        if outcome is None:
            return
        self.metrics.submitted(row.kind, outcome, obtained_at=row.obtained_at, deadline=row.deadline)
        if outcome == "accepted" and not row.pow:
            payments = await in_worker(self.store.payments)
            if payments and payments[-1].request_cid == row.request_cid:
                self.metrics.paid.inc(payments[-1].amount)
                self.metrics.cumulative.set(payments[-1].cumulative_amount)

    async def _withdraw_asks(self) -> None:
        """Withdraw every active ask (each withdrawal is one market call; a failure is logged, not fatal)."""
        asks = await in_worker(self.store.asks, [AskState.ACTIVE])
        for ask in asks:
            try:
                with anyio.fail_after(30):
                    await self.market.withdraw(ask.ask_id)
                await in_worker(self.store.set_ask_state, ask.ask_id, AskState.WITHDRAWN)
            except Exception as e:
                log.warning("withdraw ask %d failed: %s", ask.ask_id, e)
        if asks:
            log.info("withdrew %d active ask(s) on stop", len(asks))

    async def _janitor(self) -> None:
        while True:
            now = time.time()
            n = await in_worker(
                self.store.purge,
                submitted_before=now - self.settings.retention_submitted_s,
                failed_before=now - self.settings.retention_failed_s,
            )
            if n:
                log.info("purged %d ended request(s) past retention", n)
            await anyio.sleep(self.settings.janitor_every_s)

    async def _heartbeat(self) -> None:
        interval = self.notifier.watchdog_interval_s or 5.0
        while True:
            self.notifier.watchdog()
            self._publish_gate()  # refreshes the gate file's timestamp: status tells a dead agent apart
            self.metrics.set_queue(await in_worker(self.store.counts))
            offset = self.market.clock_offset_s
            if offset is not None:
                self.metrics.clock_offset.set(offset)
            await anyio.sleep(min(interval, 5.0))

    async def _signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("%s: draining (no new asks; finishing in-flight work)", signal.Signals(signum).name)
                self._done.set()
                return

    # -- run ---------------------------------------------------------------------------------------------

    async def run(self, *, max_proofs: int | None = None, handle_signals: bool = True) -> RunSummary:
        t0 = time.perf_counter()
        self._max_proofs = max_proofs
        self._accepted = 0
        self._submitted_at_start = (await in_worker(self.store.counts))[RequestState.SUBMITTED]
        self._interval = self.settings.requests.poll_interval_s
        n = await self.fleet.join()  # registers this process and re-queues what dead ones held
        if n:
            log.warning("re-queued %d request(s) claimed by a process that is gone", n)
        beats = anyio.CancelScope()  # the fleet heartbeat, stopped (and its last beat over) before leaving
        beats_over = anyio.Event()

        async def fleet_beats() -> None:
            try:
                with beats:
                    await self.fleet.run()
            finally:
                beats_over.set()

        loops = ["requester", "fetcher", "submitter", "warm_up"]
        loops += [f"prover{i}" for i in range(self.settings.prover_slots)]
        for name in loops:  # every loop's error series from the start (an alert sees the first error rise)
            self.metrics.errors.labels(loop=name)
        async with anyio.create_task_group() as background:
            background.start_soon(self._heartbeat)
            background.start_soon(fleet_beats)
            background.start_soon(self._janitor)
            if handle_signals:
                background.start_soon(self._signals)
            # up: the store answers, metrics are served, the loops start now; the gate says the rest
            self._status_sent = self.gate().line()
            self.notifier.ready(f"gate {self._status_sent}")
            async with anyio.create_task_group() as work:
                work.start_soon(self._guarded, "fetcher", self._fetch_step, self._stop_work)
                for i in range(self.settings.prover_slots):
                    work.start_soon(self._guarded, f"prover{i}", self._prove_step, self._stop_work)
                work.start_soon(self._guarded, "submitter", self._submit_step, self._stop_work)
                async with anyio.create_task_group() as asking:
                    asking.start_soon(self._guarded, "requester", self._request_step, self._stop_asking)
                    asking.start_soon(self._become_ready)
                    asking.start_soon(self._half_open)
                    await self._done.wait()
                    self._stop_asking.set()
                    self._status_sent = self.gate().line()
                    self.notifier.stopping(f"gate {self._status_sent}")
                    self._publish_gate()
                    asking.cancel_scope.cancel()
                if self.settings.withdraw_on_shutdown:  # before the drain: no match while we wind down
                    await self._withdraw_asks()
                # let the in-hand proofs finish, then give the submitter drain_s for computed work
                self._stop_work.set()
            with anyio.move_on_after(self.settings.drain_s):
                while await in_worker(self.store.list_requests, [RequestState.COMPUTED]):
                    try:
                        done = await submit_one(
                            self.market, self.store, counters=self.counters, owner=self.owner
                        )
                        if done is None:
                            break
                        await self._record_submission(done)
                    except Exception as e:
                        log.warning("drain: submit failed: %s", e)
                        break
            # a beat still running when leave() commits would mark this member alive again (stopped_at NULL)
            beats.cancel()
            await beats_over.wait()
            await self.fleet.leave()
            background.cancel_scope.cancel()
        self._set_gate("stopped")
        return RunSummary(self.counters, self.loop_counters.asks_created, time.perf_counter() - t0)
