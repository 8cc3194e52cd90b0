"""One fleet member as its own process, for the fleet tests: ``python _fleet_proc.py MARKET_URL KEY_HEX
STORE_URL DELAY_S LOG`` runs the real service loops on the shared store (stand-in prover taking DELAY_S per
proof, capacity 1) until SIGTERM, then drains. Every proof start and end is appended to LOG as
``start|end PID JOB_ID TIME`` so the test can tell who proved what, and when. The request data is parsed but
not strictly checked: a cold strict check costs each new process tens of seconds on the loaded 2-core CI
machine, and the fleet's subject is who holds which row (the check has its own tests and runs in test_crash).
SIGUSR1 dumps every thread's stack (to see where a member is stuck)."""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from _standin import StandInProver, parsed_only  # noqa: E402

from agent.proving.prover import Proven  # noqa: E402
from agent.proving.work import Work  # noqa: E402
from agent.requester import RequestLoopSettings  # noqa: E402
from agent.service import Agent, AgentSettings  # noqa: E402
from agent.store import open_store  # noqa: E402
from market.client import MarketClient  # noqa: E402
from market.wallet import Wallet  # noqa: E402

# A member silent this long is taken for dead and its claims are re-queued. 1.5 s was too tight for the loaded
# 2-core CI machine: a live member that missed six beats lost its claim mid-proof (the fleet test's "takeover
# started before the kill"), which the kill -9 test rightly counts as a failure.
STALE_AFTER_S = 4.0


class LoggedProver(StandInProver):
    def __init__(self, log: str, delay_s: float) -> None:
        super().__init__(delay_s=delay_s)
        self.log = log

    def _note(self, what: str, job_id: str) -> None:
        with open(self.log, "a") as fh:  # one short line per write: O_APPEND keeps them whole
            fh.write(f"{what} {os.getpid()} {job_id} {time.time():.3f}\n")

    async def prove(self, work: Work, job_id: str) -> Proven:
        self._note("start", job_id)
        proven = await super().prove(work, job_id)
        self._note("end", job_id)
        return proven


async def main(url: str, key: str, store_url: str, delay_s: float, log: str) -> int:
    faulthandler.register(signal.SIGUSR1)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    store = open_store(store_url, heartbeat_s=0.25, stale_after_s=STALE_AFTER_S)
    s = AgentSettings(
        RequestLoopSettings(5 * 10**15, low_water=1, high_water=1, poll_interval_s=0.1, backoff_max_s=0.4),
        idle_s=0.05, error_backoff_s=0.05, error_backoff_max_s=0.2, drain_s=10.0,
    )
    async with MarketClient(url, Wallet(bytes.fromhex(key))) as client:
        agent = Agent(client, store, LoggedProver(log, delay_s), s, check=parsed_only)
        agent.fleet.devices = ("stand-in",)
        summary = await agent.run()
    store.close()
    print(summary.line(), flush=True)
    return 0


if __name__ == "__main__":
    u, k, p, d, lg = sys.argv[1:6]
    sys.exit(anyio.run(main, u, k, p, float(d), lg))
