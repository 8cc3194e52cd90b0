"""The agent as its own process, for the kill -9 tests: ``python _agent_proc.py URL KEY_HEX STORE DELAY_S N``
runs the real service loops (stand-in prover that takes DELAY_S per proof) until N proofs are accepted."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))

from _standin import StandInProver  # noqa: E402

from agent.requester import RequestLoopSettings  # noqa: E402
from agent.service import Agent, AgentSettings  # noqa: E402
from agent.store import SqliteStore  # noqa: E402
from market.client import MarketClient  # noqa: E402
from market.wallet import Wallet  # noqa: E402


async def main(url: str, key: str, store_path: str, delay_s: float, n: int) -> int:
    store = SqliteStore(store_path)
    s = AgentSettings(
        RequestLoopSettings(5 * 10**15, low_water=1, high_water=1, poll_interval_s=0.05, backoff_max_s=0.4),
        idle_s=0.02, error_backoff_s=0.05, error_backoff_max_s=0.2, drain_s=10.0,
    )
    async with MarketClient(url, Wallet(bytes.fromhex(key))) as client:
        agent = Agent(client, store, StandInProver(delay_s=delay_s), s)
        summary = await agent.run(max_proofs=n)
    store.close()
    print(summary.line(), flush=True)
    return 0 if summary.submitted >= n else 1


if __name__ == "__main__":
    u, k, p, d, count = sys.argv[1:6]
    sys.exit(anyio.run(main, u, k, p, float(d), int(count)))
