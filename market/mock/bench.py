"""Loopback throughput of the mock market with signature checks on (performance.md P8: ≥ 500 round trips/s).

    python -m market.mock.bench [--seconds 10] [--concurrency 8] [--call ask|poll]

The market runs in a child process (its own interpreter and core, as it would beside an agent); this process
drives it with our ``MarketClient``: ``ask`` = signed create_ask calls (client signs, market decodes the
CBOR, recovers the secp256k1 key, checks the nonce, writes the ask to SQLite), ``poll`` = unsigned polls.
The wallet starts with a large challenge balance so every ask is a plain active ask (no pool needed).
Prints one JSON line. A benchmark, not a test: numbers depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import anyio

__all__ = ["main"]


def _serve(conn: Any, db: str | None) -> None:
    import socket

    from market.mock.app import MockMarketApp
    from market.mock.checker import DigestStandInChecker
    from market.mock.server import base_url, bind, serve_forever
    from market.mock.state import MarketRules, MarketState

    state = MarketState(None if db is None else Path(db), MarketRules(initial_challenges=10**9))
    sock: socket.socket = bind("127.0.0.1", 0)
    conn.send(base_url(sock))
    conn.close()
    serve_forever(MockMarketApp(state, DigestStandInChecker()), sock, log_level="warning")


async def _drive(url: str, call: str, seconds: float, concurrency: int) -> dict[str, Any]:
    import httpx

    from market.client import MarketClient
    from market.wallet import Wallet

    wallet = Wallet.generate()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        client = MarketClient(url, wallet, http=http)
        await client.poll()  # warm the connection pool
        done = 0
        latencies: list[float] = []
        stop = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                if call == "ask":
                    await client.create_ask(5 * 10**15)
                else:
                    await client.poll()
                latencies.append(time.perf_counter() - t0)
                done += 1

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(concurrency):
                tg.start_soon(worker)
        elapsed = time.perf_counter() - t0
    latencies.sort()
    return {
        "call": call,
        "signed": call == "ask",
        "round_trips": done,
        "seconds": round(elapsed, 2),
        "round_trips_per_s": round(done / elapsed, 1),
        "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
        "p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2),
        "concurrency": concurrency,
        "cpus": os.cpu_count(),
    }


def _cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--call", choices=["ask", "poll"], default="ask")
    ap.add_argument("--state", help="SQLite file for the market's books (default: in memory)")
    args = ap.parse_args()
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_serve, args=(child, args.state), daemon=True)
    proc.start()
    try:
        url = parent.recv()
        server_cpu0, client_cpu0 = _cpu_seconds(proc.pid), time.process_time()
        result = anyio.run(_drive, url, args.call, args.seconds, args.concurrency)
        server_cpu, client_cpu = _cpu_seconds(proc.pid) - server_cpu0, time.process_time() - client_cpu0
        n = max(result["round_trips"], 1)
        # CPU per round trip on each side: what the rate would be with a core each and no other load
        result["server_cpu_ms_per_rt"] = round(1000 * server_cpu / n, 3)
        result["client_cpu_ms_per_rt"] = round(1000 * client_cpu / n, 3)
        result["server_bound_rt_per_s"] = round(n / server_cpu, 1) if server_cpu else None
        result["state"] = "sqlite file" if args.state else "sqlite memory"
        print(json.dumps(result))
    finally:
        proc.terminate()
        proc.join(10)


if __name__ == "__main__":
    main()
