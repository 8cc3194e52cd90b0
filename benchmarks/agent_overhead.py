"""Agent overhead per proof: everything but proving (poll, ask, fetch + CID check, strict C1 check, store
transactions, submit, voucher), with a prover that takes no time, against the mock market on loopback.

The market runs in its own process (``psagent market-mock serve``, stand-in checker), so the CPU time read
here is the agent's alone. Usage: ``python benchmarks/agent_overhead.py [--proofs 20]``; prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from agent.proving.prover import Proven
from agent.proving.verifier import VerifyReport
from agent.proving.work import Work, WorkKind, recognise
from agent.requester import RequestLoopSettings
from agent.service import Agent, AgentSettings
from agent.stages import request_work
from agent.store import SqliteStore
from market.client import MarketClient
from market.mock.checker import stand_in_proof
from market.wallet import Wallet

PRICE = 5 * 10**15


class InstantProver:
    """The mock's stand-in token, at once: the benchmark measures the agent around the prover."""

    async def prove(self, work: Work, job_id: str) -> Proven:
        proof = stand_in_proof(work.raw)
        return Proven(proof, VerifyReport((True,) * work.partitions))


def parsed_only(raw: bytes) -> Work:
    """The request parsed (``recognise``) but neither checked nor given public inputs: the loop's own cost."""
    got = recognise(raw, request_only=True)
    assert got.c1 is not None, "the mock's pool serves PoRep requests here"
    return Work(WorkKind.POREP, got.c1.proof_type, got.c1, None, (), raw, got.format, got.miner, got.sector)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _run(url: str, n: int, store_path: Path, strict: bool) -> dict[str, object]:
    store = SqliteStore(store_path)
    s = AgentSettings(
        RequestLoopSettings(PRICE, low_water=4, high_water=8, poll_interval_s=0.05, backoff_max_s=0.2),
        idle_s=0.01,
    )
    async with MarketClient(url, Wallet.generate()) as client:
        check = request_work if strict else parsed_only
        agent = Agent(client, store, InstantProver(), s, check=check)
        cpu0, t0 = time.process_time(), time.perf_counter()
        summary = await agent.run(max_proofs=n, handle_signals=False)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    store.close()
    done = summary.submitted
    return {
        "strict_c1_check": strict,
        "proofs": done,
        "wall_s_per_proof": wall / done,
        "agent_cpu_s_per_proof": cpu / done,
        "stage_s_per_proof": {k: v / done for k, v in summary.stages.seconds.items()},
        "asks": summary.asks,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--proofs", type=int, default=20)
    ap.add_argument("--no-strict-check", action="store_true", help="parse the C1 only (no vanilla check)")
    args = ap.parse_args()
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        pool = Path(os.environ.get("PSAGENT_POOL", Path(tmp) / "pool"))
        market = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("psagent")), "market-mock", "serve",
                "--listen", f"127.0.0.1:{port}",
                "--pool", str(pool), "--slot-divisor", "1", "--initial-challenges", "8", "--demand", "8",
            ],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/v0/proofs"
            deadline = time.monotonic() + 180  # the pool seals a sector on its first start
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or market.poll() is not None:
                        raise SystemExit("the mock market did not start") from None
                    time.sleep(0.2)
            result = anyio.run(_run, url, args.proofs, Path(tmp) / "agent.db", not args.no_strict_check)
        finally:
            market.terminate()
            market.wait()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
