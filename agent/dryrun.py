"""``psagent run --dry-run``: the real agent against the mock market, on loopback, with nothing to set up.

The mock market runs in-process (its own thread, a real socket) and judges proofs with the pairing checker;
its challenges are real 2KiB PoRep requests cut from a sector sealed once into the cache. The wallet is
throwaway, the store a temporary file. Development parameters for 2KiB are made once (progress shown) and
kept under the user's cache directory, so later dry runs start in seconds. The market gives the new wallet one
work slot and keeps paid requests open, so the first ask is matched with paid work and a voucher comes back.
The agent passes the readiness gate first (2KiB parameters loaded, a self-test proof verified), as in
production.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agent import runtime
from agent.config import ConfigError, Settings, cache_dir
from agent.opsview.document import StatusView
from agent.opsview.exporter import Exporter
from agent.opsview.metrics import AgentMetrics
from agent.proving.parameters import ensure_dev_params, params_paths
from agent.service import Agent, AgentSettings, RunSummary
from agent.store import SqliteStore
from market.mock import MarketRules, MockMarket
from market.mock import PairingChecker as MarketPairingChecker
from market.mock.pool import ChallengePool
from market.wallet import Wallet
from porep.prooftypes import proof_type

__all__ = ["DRY_RUN_PROOF", "run_dry"]

log = logging.getLogger(__name__)
DRY_RUN_PROOF = "StackedDrg2KiBV1_1"


def _params(cache: Path, console: Any) -> Path:
    """The dev parameters directory, made (with a progress bar) when the 2KiB files are missing."""
    pt = proof_type(DRY_RUN_PROOF)
    directory = cache / "params-dev"
    if all(p.is_file() for p in params_paths(directory, pt)):
        ensure_dev_params(pt, directory, cache=cache)  # made here: recorded as checked (no point checks)
        return directory

    console.print(f"making development parameters for {pt.name} once (cached in {directory})")
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(), console=console, transient=False,
    ) as bar:
        task = bar.add_task("setup", total=1.0)
        seen: set[str] = set()

        def progress(stage: str, done: float, total: float) -> None:
            bar.update(task, description=f"setup: {stage}", completed=done, total=max(total, 1e-9))
            if not console.is_terminal and stage not in seen:  # no live bar: one line per stage
                seen.add(stage)
                console.print(f"setup: {stage} ({100 * done / max(total, 1e-9):.0f} % done)")

        t0 = time.perf_counter()
        ensure_dev_params(pt, directory, cache=cache, progress=progress)
    console.print(f"development parameters ready in {time.perf_counter() - t0:.0f} s")
    return directory


def _view(agent: Agent, started: float) -> Any:
    t = Table(title=f"psagent dry run — {time.perf_counter() - started:.0f} s", show_header=False)
    t.add_row("gate", agent.gate().line())
    counts = agent.store.counts()
    t.add_row("queue", ", ".join(f"{s.value} {n}" for s, n in counts.items() if n) or "empty")
    c = agent.counters
    t.add_row("asks", f"{agent.loop_counters.asks_created} created, {agent.loop_counters.rate_limited} × 429")
    t.add_row("proofs", f"{c.proofs_ok} verified, {c.submitted + c.already_accepted} submitted")
    t.add_row("paid", f"{c.paid_attofil} attoFIL")
    t.add_row("stages", ", ".join(f"{k} {v:.1f} s" for k, v in sorted(c.seconds.items())) or "-")
    return t


async def _drive(agent: Agent, max_proofs: int, live: bool, console: Any) -> RunSummary:
    started = time.perf_counter()
    if not live:
        return await agent.run(max_proofs=max_proofs)

    async with anyio.create_task_group() as tg:
        with Live(_view(agent, started), console=console, refresh_per_second=2) as view:

            async def refresh() -> None:
                while True:
                    await anyio.sleep(0.5)
                    view.update(_view(agent, started))

            tg.start_soon(refresh)
            summary = await agent.run(max_proofs=max_proofs)
            tg.cancel_scope.cancel()
            view.update(_view(agent, started))
    return summary


def run_dry(settings: Settings, *, max_proofs: int = 1, cache: Path | None = None) -> RunSummary:
    """Run the dry run to ``max_proofs`` accepted proofs and return the summary. Built by ``agent.runtime``
    like ``psagent run`` (the prover from ``[prover]``, the client's timeouts and retries, the loops'
    settings), with the mock market's URL, a throwaway wallet, a temporary store, the development parameters
    and shorter intervals in place of the configured ones."""
    console = Console(stderr=True)
    cache = cache or cache_dir()
    params_dir = _params(cache, console)
    pt = proof_type(DRY_RUN_PROOF)
    fresh = not (cache / "pool").exists()
    console.print("challenge sector: sealing one (once)" if fresh else "challenge sector: cached")
    pool = ChallengePool.open(cache / "pool", proof_type=DRY_RUN_PROOF)
    # the dry run's work is the 2KiB sector it seals: that is what its gate loads and its agent proves
    prover_config = settings.prover.model_copy(update={"accepted_proof_types": [DRY_RUN_PROOF]})
    settings = settings.model_copy(update={"prover": prover_config})
    metrics = AgentMetrics()
    # the mock market judges proofs with the development key it is given: development parameters are right
    prover = runtime.build_prover(
        settings, params_dir=params_dir, cache=cache, metrics=metrics, official_only=False
    )
    console.print(f"prover backend: {prover.backend}, {prover.capacity} slot(s)")
    wallet = Wallet.generate()
    rules = MarketRules(slot_divisor=1, initial_challenges=1, demand_open=1)
    with tempfile.TemporaryDirectory(prefix="psagent-dry-") as tmp, MockMarket(
        checker=MarketPairingChecker(params_paths(params_dir, pt)[1]),
        rules=rules,
        state_path=Path(tmp) / "market.db",
        challenge_source=pool.take,
    ) as market:
        console.print(f"mock market on {market.base_url}; throwaway wallet {wallet.address.encode('f')}")
        store = SqliteStore(Path(tmp) / "agent.db", discard_inputs=settings.retention.discard_inputs)
        view = StatusView(store, metrics, price_attofil=rules.demand_price)
        exporter = _serve(settings, metrics, view, console)

        def tune(s: AgentSettings) -> AgentSettings:
            req = replace(
                s.requests, price_attofil=rules.demand_price, low_water=1, high_water=1, poll_interval_s=0.5,
                backoff_max_s=5.0,
            )
            return replace(s, requests=req, idle_s=0.2, error_backoff_s=1.0)

        async def main() -> RunSummary:
            async with runtime.market_client(settings, wallet, url=market.base_url) as client:
                agent = runtime.build_agent(settings, client, store, prover, metrics=metrics, tune=tune)
                view.attach(agent)
                return await _drive(agent, max_proofs, sys.stderr.isatty(), console)

        try:
            return anyio.run(main)
        finally:
            if exporter is not None:
                exporter.stop()
            store.close()


def _serve(settings: Settings, metrics: AgentMetrics, view: StatusView, console: Any) -> Exporter | None:
    """The operator's listener as ``psagent run`` has it (``metrics.listen``); a dry run goes on without it
    when the address is taken (a running agent on this host), saying so."""
    try:
        exporter = runtime.start_metrics(settings, metrics, view)
    except ConfigError as e:
        console.print(f"status page not served: {e}")
        return None
    if exporter is not None:
        host, port = exporter.address
        console.print(f"status page: http://{host}:{port}/  (JSON: /status, Prometheus: /metrics)")
    return exporter
