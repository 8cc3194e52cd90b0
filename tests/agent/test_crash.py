"""kill -9 of the agent process during fetch, proving and submit; a restart finishes the work: every request
is submitted exactly once (the market accepted it once) or still pending, nothing lost, nothing sent twice."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.store import TERMINAL_STATES, RequestRow, RequestState, SqliteStore
from market.mock import MockMarket
from market.wallet import Wallet

pytestmark = pytest.mark.slow
PROC = Path(__file__).with_name("_agent_proc.py")


@pytest.fixture
def market(make_market: Any) -> MockMarket:
    return make_market(slot_divisor=1, initial_challenges=1, demand_open=1)  # type: ignore[no-any-return]


def start(market: MockMarket, key: str, store: Path, delay_s: float, n: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.Popen(
        [sys.executable, str(PROC), market.base_url, key, str(store), str(delay_s), str(n)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def wait_for(
    store_path: Path, cond: Callable[[list[RequestRow]], bool], proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if store_path.exists():
            s = SqliteStore(store_path)
            try:
                if cond(s.list_requests()):
                    return
            finally:
                s.close()
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        time.sleep(0.05)
    raise AssertionError("the agent never reached the stage to kill it in")


STAGES: dict[str, tuple[str | None, float, Callable[[list[RequestRow]], bool]]] = {
    # fault spec (slows the stage on the market side), prover delay, "the agent is in that stage now"
    "fetch": ("fetch:latency=5", 0.0, lambda rows: any(r.state is RequestState.QUEUED for r in rows)),
    "proving": (None, 30.0, lambda rows: any(r.state is RequestState.PROVING for r in rows)),
    "submit": (
        "complete:latency=2",
        0.0,
        lambda rows: any(r.state is RequestState.COMPUTED and r.submit_attempts > 0 for r in rows),
    ),
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_kill_9_then_restart_submits_exactly_once(market: MockMarket, tmp_path: Path, stage: str) -> None:
    fault, delay, in_stage = STAGES[stage]
    key = secrets.token_bytes(32).hex()
    wallet = Wallet(bytes.fromhex(key)).address.encode("f")
    store_path = tmp_path / "agent.db"
    if fault:
        market.faults.add(fault)
    proc = start(market, key, store_path, delay, 1)
    try:
        wait_for(store_path, in_stage, proc)
        if stage == "submit":
            time.sleep(0.3)  # the proof is on the wire; the market will take it after its latency
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    market.faults.clear()
    if stage == "submit":
        time.sleep(2.5)  # the market has now accepted the proof whose answer died with the process
    proc = start(market, key, store_path, 0.0, 1)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out.decode()
    s = SqliteStore(store_path)
    try:
        rows = s.list_requests()
        submitted = [r for r in rows if r.state is RequestState.SUBMITTED]
        assert submitted, out.decode()
        assert all(r.state is RequestState.SUBMITTED or r.state not in TERMINAL_STATES for r in rows), rows
        assert not [r for r in rows if r.state is RequestState.PROVING]  # orphans were re-queued
        counters = market.state.snapshot()["counters"]
        # exactly once: each submitted request was accepted by the market once, none refused as a duplicate
        assert counters.get("completed_valid", 0) == len(submitted), counters
        cids = [v["request_cid"] for v in market.state.vouchers(wallet)]
        assert len(cids) == len(set(cids))
        assert {p.request_cid for p in s.payments()} <= set(cids)
    finally:
        s.close()
