"""The operator's view under test: an agent built the way the dry run builds it (``agent.runtime``, the mock
market on loopback, a throwaway wallet, its metrics, /status and status page on a loopback port), with a
prover double at the proof pipeline's seam so that the real ``AdmittedProver`` (admission to simulated
devices, the device ledger, the metrics it records) runs without Groth16 time.

``StandInPipeline`` answers ``AdmittedProver`` as ``ProofPipeline`` does: the mock's stand-in token as the
proof (its ``DigestStandInChecker`` accepts it), per-partition stage times that are the double's own measured
work (a hash, a sleep, a comparison), and the verdict read back from the bytes. Knobs make the faults the
alert tests need: a corrupt partition, a slow proof, a failing warm-up, a stall before admission.

Binaries the browser and Prometheus tests use are the distribution's (``chromium``, ``prometheus``); a test
skips with the reason when one is missing (``.ci/run`` installs them).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from _standin import parsed_only  # tests/agent is on sys.path

from agent.opsview.document import StatusView
from agent.opsview.metrics import AgentMetrics
from agent.proving.pipeline import PartitionResult, ProofCancelled, ProofResult
from agent.proving.prover import AdmittedProver
from agent.proving.work import Work
from agent.service import Agent, AgentSettings
from agent.store import SqliteStore
from gpu.device import Device
from market.client import RetryPolicy
from market.mock import DigestStandInChecker, MarketRules, MockMarket
from market.mock.checker import stand_in_proof

GIB = 2**30
PROOF_TYPE = "StackedDrg2KiBV1_1"


class _Engine:
    backend = "stand-in"
    params_to_device = False

    def __init__(self, device: Device) -> None:
        self.device = device


class StandInPipeline:
    """``ProofPipeline``'s surface for ``AdmittedProver`` over ``devices`` simulated devices.

    ``delay_s``: time each proof spends "on the device" (split over its partitions); ``corrupt``: that
    partition's bytes are flipped (its check fails); ``warm_up_error``: the self-test raises it; ``stall``:
    after the warm-up, every proof waits on this event before it is admitted (a wedged parameter load)."""

    def __init__(
        self,
        devices: int = 1,
        *,
        delay_s: float = 0.1,
        corrupt: int | None = None,
        warm_up_error: str | None = None,
        stall: threading.Event | None = None,
        job_bytes: int = 2 * GIB,
        cache: Path | None = None,
    ) -> None:
        import tempfile

        from agent.admission import HostBudget

        self.engines = tuple(_Engine(Device(i, f"sim-{i}", (0, 0), True)) for i in range(devices))
        self.host = HostBudget(64 * GIB)
        self.params_dir = Path("/nonexistent-stand-in-params")  # no files: the gate logs no verdict
        self.cache = cache if cache is not None else Path(tempfile.mkdtemp(prefix="psagent-standin-"))
        self.delay_s = delay_s
        self.corrupt = corrupt
        self.warm_up_error = warm_up_error
        self.stall = stall
        self.job_bytes = job_bytes
        self.warmed = False

    @property
    def backend(self) -> str:
        return "stand-in"

    def params_file(self, pt: Any) -> Path:
        return self.params_dir / f"{pt.param_stem}.params"

    def shape(self, pt: Any, *, engine: int = 0, **_: Any) -> None:
        return None

    def resident_bytes(self, pt: Any, engine: int = 0) -> int:
        return 1 * GIB

    def job_device_bytes(self, pt: Any, engine: int = 0) -> int:
        if self.stall is not None and self.warmed:
            self.stall.wait()
        return self.job_bytes

    def self_test(self, engine: int = 0) -> float:
        if self.warm_up_error is not None:
            raise RuntimeError(self.warm_up_error)
        self.warmed = True
        return 0.0

    def prove(
        self,
        work: Work,
        *,
        job_id: str,
        engine: int = 0,
        memory_bytes: int | None = None,
        verify: bool = True,
        cancel: threading.Event | None = None,
        events: Any = None,
    ) -> ProofResult:
        from agent.proving.pipeline import StageEvent

        def emit(ev: StageEvent) -> None:
            if events is not None:
                events(ev)

        t_start = time.perf_counter()
        n = work.partitions
        parts: list[PartitionResult] = []
        chunks: list[bytes] = []
        for k in range(n):
            if cancel is not None and cancel.is_set():
                raise ProofCancelled(f"{job_id}: cancelled after {k} of {n} partitions")
            t0 = time.perf_counter()
            token = stand_in_proof(work.raw, n)[k * 192 : (k + 1) * 192]
            witness = time.perf_counter() - t0
            t0 = time.perf_counter()
            emit(StageEvent(job_id, k, n, "groth16"))
            time.sleep(self.delay_s / n)
            chunk = bytes([token[0] ^ 0xFF]) + token[1:] if k == self.corrupt else token
            groth16 = time.perf_counter() - t0
            emit(StageEvent(job_id, k, n, "groth16", groth16))
            t0 = time.perf_counter()
            good = chunk == token if verify else None
            emit(StageEvent(job_id, k, n, "verified" if good is not False else "NOT VERIFIED", 0.0))
            parts.append(
                PartitionResult(
                    k, good, {"witness": witness, "groth16": groth16, "verify": time.perf_counter() - t0}
                )
            )
            chunks.append(chunk)
        return ProofResult(
            job_id=job_id,
            proof_type=work.proof_type.name,
            backend=self.backend,
            proof=b"".join(chunks),
            partitions=parts,
            setup={},
            wall_s=time.perf_counter() - t_start,
            rss_peak_bytes=None,
            device_peak_bytes=(memory_bytes or 0) // 2,
        )


@dataclass
class Scenario:
    """One agent: the market's rules and faults, the double's knobs, the loops' settings."""

    name: str
    devices: int = 1
    water: int = 1  # low and high water marks
    slots: int = 2  # the mock's work slots for this wallet (its challenge balance, slot divisor 1)
    demand: int = 1  # paid requests the mock keeps open (0: no work at all)
    faults: str | None = None
    delay_s: float = 0.1
    corrupt: int | None = None
    warm_up_error: str | None = None
    stall: bool = False
    deadline_s: float | None = None  # the requester's deadline window (None: the market's 45 minutes)
    retry_budget_s: float = 10.0  # the market client's retry budget per call
    early: bool = False  # its loops start before Prometheus's first scrape (see test_prometheus)
    extra: dict[str, Any] = field(default_factory=dict)


class AgentThread:
    """A scenario's agent: ``serve()`` opens its listener (metrics, /status, page) while the gate still reads
    ``starting``; ``run()`` starts its loops on an event loop of its own; ``stop()`` drains it."""

    def __init__(self, scenario: Scenario, pool: Any, directory: Path, *, store: Path | None = None) -> None:
        """``store``: the agent's SQLite file (default: one named after the scenario in ``directory``)."""
        from agent import runtime
        from agent.config import Settings
        from market.wallet import Wallet

        self.scenario = s = scenario
        self.stall = threading.Event() if s.stall else None
        rules = MarketRules(
            slot_divisor=1, initial_challenges=s.slots, demand_open=s.demand, max_challenges=0
        )
        self.market = MockMarket(
            checker=DigestStandInChecker(),
            rules=rules,
            state_path=directory / f"{s.name}-market.db",
            challenge_source=pool.make if s.demand else None,
            faults=s.faults,
        ).start()
        self.store_path = store or directory / f"{s.name}.db"
        self.store = SqliteStore(self.store_path)
        self.metrics = AgentMetrics()
        self.pipeline = StandInPipeline(
            s.devices, delay_s=s.delay_s, corrupt=s.corrupt, warm_up_error=s.warm_up_error, stall=self.stall,
            cache=directory / f"{s.name}-cache",
        )
        self.prover = AdmittedProver(
            self.pipeline,
            accepted=(PROOF_TYPE,),
            accepted_update=(),
            metrics=self.metrics,  # type: ignore[arg-type]
            device_budget_bytes=8 * GIB,
        )
        self.settings = Settings(
            market={
                "price_fil": "0.005",
                "low_water": s.water,
                "high_water": s.water,
                "poll_interval_s": 0.2,
            }
        )
        self.view = StatusView(self.store, self.metrics, price_attofil=self.settings.market.price_attofil)
        self.wallet = Wallet.generate()
        self.exporter: Any = None
        self.agent: Agent | None = None
        self._portal_cm: Any = None
        self._portal: Any = None
        self._done: Any = None
        self._runtime = runtime

    @property
    def url(self) -> str:
        host, port = self.exporter.address
        return f"http://{host}:{port}"

    @property
    def target(self) -> str:
        host, port = self.exporter.address
        return f"{host}:{port}"

    def serve(self) -> AgentThread:
        self.exporter = self.metrics.serve("127.0.0.1:0", status=self.view.document, page=self.view.page)
        return self

    def _tune(self, a: AgentSettings) -> AgentSettings:
        req = replace(a.requests, poll_interval_s=0.2, backoff_max_s=1.0)
        if self.scenario.deadline_s is not None:
            req = replace(req, deadline_s=self.scenario.deadline_s)
        loops: dict[str, Any] = {
            "idle_s": 0.05,
            "error_backoff_s": 0.2,
            "error_backoff_max_s": 600.0,
            "drain_s": 5.0,
        }
        return replace(a, requests=req, **{**loops, **self.scenario.extra})

    def run(self) -> AgentThread:
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal("asyncio")
        self._portal = self._portal_cm.__enter__()
        retry = RetryPolicy(
            initial_s=0.05,
            max_s=0.1,
            budget_s=self.scenario.retry_budget_s,
            attempt_s=5.0,
            fetch_attempt_s=5.0,
        )

        async def build() -> Agent:
            client = self._runtime.market_client(
                self.settings, self.wallet, url=self.market.base_url, retry=retry
            )
            await client.__aenter__()
            self._client = client
            agent = self._runtime.build_agent(
                self.settings,
                client,
                self.store,
                self.prover,
                metrics=self.metrics,
                check=parsed_only,
                tune=self._tune,
            )
            self.view.attach(agent)
            return agent

        self._client: Any = None
        self.agent = self._portal.call(build)
        self._done = self._portal.start_task_soon(lambda: self.agent.run(handle_signals=False))  # type: ignore[union-attr]
        return self

    def stop(self) -> None:
        if self.stall is not None:
            self.stall.set()
        if self._portal is not None:
            try:
                if self.agent is not None and self._done is not None:
                    self._portal.call(self.agent._done.set)
                    self._done.result(timeout=30)
                if getattr(self, "_client", None) is not None:
                    self._portal.call(self._client.__aexit__, None, None, None)
            finally:
                self._portal_cm.__exit__(None, None, None)
                self._portal = None
        if self.exporter is not None:
            self.exporter.stop()
            self.exporter = None
        self.market.stop()
        self.store.close()

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/status", timeout=10) as r:
            return json.loads(r.read())  # type: ignore[no-any-return]

    def accepted(self) -> int:
        return int(self.metrics.count(self.metrics.submissions, outcome="accepted"))


def wait_for(what: str | Any, check: Any, timeout: float = 30.0, every: float = 0.1) -> Any:
    """``check()`` until it returns something true; AssertionError naming ``what`` (or what ``what()`` says
    then) after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {said}")
        time.sleep(every)


def binary(name: str, *alternatives: str) -> str | None:
    """The distribution's binary ``name`` (or an alternative name), or None."""
    for n in (name, *alternatives):
        path = shutil.which(n)
        if path:
            return path
    return None


def binary_or_skip(name: str, *alternatives: str, what: str, package: str) -> str:
    """The distribution's binary ``name`` (or an alternative), or the test skipped saying that ``what`` is not
    installed and which package .ci/run installs for it."""
    path = binary(name, *alternatives)
    if path is None:
        pytest.skip(
            f"NO {name.upper()}: {what} is not installed (.ci/run installs it: apt-get install {package})"
        )
    return path


def chromium_args(chromium: str, *args: str) -> list[str]:
    """Headless Chromium as root in a container: no sandbox, no GPU, no /dev/shm reliance, no first-run UI."""
    return [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        *args,
    ]


def chromium_run(chromium: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="psagent-chromium-") as profile:
        return subprocess.run(
            chromium_args(chromium, f"--user-data-dir={profile}", *args),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def keep_screenshot(path: Path, name: str) -> Path | None:
    """Copy a screenshot to $PSAGENT_SCREENSHOTS (the README's images are made this way), when set."""
    import os

    target = os.environ.get("PSAGENT_SCREENSHOTS")
    if not target:
        return None
    out = Path(target) / name
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, out)
    return out


_ = anyio  # the portal runs the agent on anyio's asyncio backend
