"""The agent as its own process for the reliability runner: ``python agent_process.py SPEC.json``.

It is the real service (agent.service.Agent, its loops, the SQLite store, market.client over HTTP), built from
a real TOML configuration by the composition root, agent.runtime, as ``psagent run`` builds it (the key
file's permission check, the store URL, the client's timeouts, retry budget and size cap, the loops' settings
are the production ones), with the proving stages played by the stand-in prover of tests/agent/_standin.py
(the mock market's DigestStandInChecker accepts its bytes; no Groth16 time). Seams the runner drives, all in
this file:

* ``hold``: at one named pipeline stage (fetch, check, synthesis, prove, verify, store, submit) write
  the stage into ``control/held`` and sleep, so the runner can ``kill -9`` the process right there;
* ``gpu_faults``: prove calls (1-based, process-wide) that raise gpu.GpuError: a CUDA launch failure or an
  out-of-memory error, as gpu.device.Device.use() reports them;
* ``corrupt``: prove calls whose proof has one byte flipped (a wrong proof the local check must catch);
* ``control/no-asks``: while this file exists the readiness gate is closed (no new asks): the runner's settle
  phase, which lets every assigned request finish before the invariants are read.
Every injected fault appends one line to ``control/injected`` (the runner counts them).
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "agent"))  # tests/agent/_standin.py

from agent.cli.common import use_engine_options  # noqa: E402

use_engine_options()  # as the CLI does, before numba loads: a restart must not recompile the C1 checks

from _standin import stand_in_report  # noqa: E402

from agent import runtime  # noqa: E402
from agent.config import ConfigError, load_settings  # noqa: E402
from agent.logsetup import setup_logging  # noqa: E402
from agent.opsview.metrics import AgentMetrics  # noqa: E402
from agent.proving.prover import Proven  # noqa: E402
from agent.proving.work import Work  # noqa: E402
from agent.service import Agent, AgentSettings  # noqa: E402
from agent.stages import request_work  # noqa: E402
from agent.store import RequestState, SqliteStore  # noqa: E402
from gpu.placement import GpuError  # noqa: E402
from market.client import AlreadyAccepted, MarketClient  # noqa: E402
from market.mock.checker import stand_in_proof  # noqa: E402
from market.models import ProofReward  # noqa: E402


class Seams:
    """Stage markers, holds and the injected-fault log, shared by the wrappers below."""

    def __init__(self, control: Path, hold: dict[str, Any] | None) -> None:
        self.control = control
        self.hold_stage = (hold or {}).get("stage")
        self.hold_s = float((hold or {}).get("seconds", 0.0))
        self.hold_times = int((hold or {}).get("times", 1))
        self.held = 0

    def mark(self, stage: str, name: str = "stage") -> None:
        tmp = self.control / f"{name}.tmp"
        tmp.write_text(stage)
        os.replace(tmp, self.control / name)

    def at(self, stage: str) -> None:
        """Called (in a worker thread or the loop's thread) when a stage starts. A held stage is written to
        ``control/held`` (the other loops go on writing ``control/stage``)."""
        self.mark(stage)
        if stage == self.hold_stage and self.held < self.hold_times:
            self.held += 1
            self.mark(stage, "held")
            time.sleep(self.hold_s)

    async def at_async(self, stage: str) -> None:
        await anyio.to_thread.run_sync(self.at, stage)

    def injected(self, what: str) -> None:
        with open(self.control / "injected", "a") as fh:
            fh.write(what + "\n")

    def asks_allowed(self) -> bool:
        return not (self.control / "no-asks").exists()


class FaultyStandInProver:
    """The stand-in prover with two stages (synthesis, prove) and injected GPU faults / wrong proofs; one
    job at a time. Its warm-up (the readiness gate's) is one strict check of a genuine C1 (compiles the
    hashing kernels) before the first ask, so the first request does not spend its deadline compiling."""

    capacity = 1

    def __init__(self, seams: Seams, spec: dict[str, Any]) -> None:
        self.seams = seams
        self.delay_s = float(spec.get("delay_s", 0.0))
        self.gpu_faults = {int(k): v for k, v in (spec.get("gpu_faults") or {}).items()}
        self.corrupt = {int(k) for k in spec.get("corrupt") or []}
        self.warm_up_data = spec.get("warm_up_data")
        self.calls = 0

    def warm_up(self) -> None:
        if self.warm_up_data:
            request_work(Path(self.warm_up_data).read_bytes())

    async def prove(self, work: Work, job_id: str) -> Proven:
        proof = await anyio.to_thread.run_sync(self._prove, work)
        await self.seams.at_async("verify")  # the pipeline's pairing check of each partition
        return Proven(proof, stand_in_report(work, proof))

    def _prove(self, work: Work) -> bytes:
        self.calls += 1
        n = self.calls
        self.seams.at("synthesis")
        if self.delay_s:
            time.sleep(self.delay_s / 2)
        self.seams.at("prove")
        kind = self.gpu_faults.get(n)
        if kind == "oom":
            self.seams.injected("gpu-oom")
            raise GpuError("CUDA_ERROR_OUT_OF_MEMORY: out of memory (injected)", device=0, out_of_memory=True)
        if kind == "launch":
            self.seams.injected("gpu-launch")
            raise GpuError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure (injected)", device=0)
        if self.delay_s:
            time.sleep(self.delay_s / 2)
        proof = bytearray(stand_in_proof(work.raw))
        if n in self.corrupt:
            self.seams.injected("wrong-proof")
            proof[100] ^= 0x01
        return bytes(proof)


class StagedStore(SqliteStore):
    """The production store; only the write that makes a verified proof durable announces itself first."""

    seams: Seams

    def transition(self, row_id: int, src: RequestState, dst: RequestState, **kw: Any) -> Any:
        if dst is RequestState.COMPUTED:
            self.seams.at("store")
        return super().transition(row_id, src, dst, **kw)


class StagedMarket:
    """market.client.MarketClient with stage markers on fetch and on the answer of a submission."""

    def __init__(self, client: MarketClient, seams: Seams) -> None:
        self.client = client
        self.seams = seams

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def fetch_request_bytes(self, request_cid: str) -> bytes:
        await self.seams.at_async("fetch")
        return await self.client.fetch_request_bytes(request_cid)

    async def complete(self, request_cid: str, proof: bytes) -> ProofReward | AlreadyAccepted:
        self.seams.mark("submit")
        outcome = await self.client.complete(request_cid, proof)
        # the market has the proof; the answer is in this process only until the store records it
        await self.seams.at_async("submit")
        return outcome


class ReliabilityAgent(Agent):
    seams: Seams

    def ready(self) -> bool:
        return super().ready() and self.seams.asks_allowed()


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    control = Path(spec["control_dir"])
    control.mkdir(parents=True, exist_ok=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the runner asks for stacks of a stuck agent
    setup_logging("info", "json")
    try:
        settings = load_settings(Path(spec["config"]))
        wallet = runtime.load_wallet(settings)
        runtime.open_configured_store(settings).close()  # the configured URL must open (one-line error)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    seams = Seams(control, spec.get("hold"))
    store = StagedStore(
        settings.store.url.removeprefix("sqlite:///"), discard_inputs=settings.retention.discard_inputs
    )
    store.seams = seams
    t = spec.get("timing", {})

    def tune(s: AgentSettings) -> AgentSettings:
        return replace(
            s,
            requests=replace(s.requests, deadline_s=float(t.get("deadline_s", s.requests.deadline_s))),
            idle_s=float(t.get("idle_s", 0.05)),
            error_backoff_s=float(t.get("error_backoff_s", 0.2)),
            error_backoff_max_s=float(t.get("error_backoff_max_s", 2.0)),
            drain_s=float(t.get("drain_s", 10.0)),
            janitor_every_s=float(t.get("janitor_every_s", 600.0)),
        )

    m = settings.market
    retry = runtime.retry_policy(
        settings,
        initial_s=float(t.get("retry_initial_s", 0.1)),
        max_s=float(t.get("retry_max_s", 1.0)),
        attempt_s=m.request_timeout_s + 1.0,
        fetch_attempt_s=m.request_timeout_s * 4,
    )
    metrics = AgentMetrics()
    runtime.start_metrics(settings, metrics)

    def check(raw: bytes) -> Work:
        seams.at("check")
        return request_work(raw)

    prover = FaultyStandInProver(seams, {**spec.get("prover", {}), "warm_up_data": spec.get("warm_up_data")})

    async def run() -> int:
        async with runtime.market_client(settings, wallet, retry=retry) as client:
            agent = runtime.build_agent(
                settings,
                StagedMarket(client, seams),
                store,
                prover,
                metrics=metrics,
                agent_type=ReliabilityAgent,
                check=check,
                tune=tune,
            )
            assert isinstance(agent, ReliabilityAgent)
            agent.seams = seams
            summary = await agent.run(max_proofs=spec.get("max_proofs"))
        print(summary.line(), flush=True)
        return 0

    try:
        return anyio.run(run)
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
