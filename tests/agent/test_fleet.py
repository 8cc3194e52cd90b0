"""Three agents (real processes, one wallet) against one mock market and one PostgreSQL store: the work is
spread over them, nothing is proven twice or lost; kill -9 of the requester while it proves → its claim is
re-queued and finished by another member, and the requester's lock moves to a live member."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fleet_proc import STALE_AFTER_S

from agent.fleet import fleet_marks
from agent.requester import RequestLoopSettings
from agent.store import TERMINAL_STATES, RequestState, open_store
from agent.store.postgres import PgStore
from market.mock import MockMarket
from market.wallet import Wallet

PROC = Path(__file__).with_name("_fleet_proc.py")
S = RequestState


def test_fleet_marks_scale_with_the_fleets_capacity() -> None:
    s = RequestLoopSettings(1, low_water=5, high_water=8)
    assert fleet_marks(s, 1, 1) == s  # alone: unchanged
    assert fleet_marks(s, 0, 1) == s  # own row not visible yet: never below its own
    three = fleet_marks(s, 3, 1)
    assert (three.low_water, three.high_water) == (15, 24)
    mixed = fleet_marks(s, 3, 2)  # this member has 2 of the fleet's 3 slots
    assert (mixed.low_water, mixed.high_water) == (8, 12)


@pytest.fixture
def market(make_market: Any) -> MockMarket:
    return make_market(slot_divisor=1, initial_challenges=3, demand_open=3)  # type: ignore[no-any-return]


def _start(market: MockMarket, key: str, url: str, delay_s: float, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.Popen(
        [sys.executable, str(PROC), market.base_url, key, url, str(delay_s), str(log)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def _proofs(log: Path) -> list[tuple[str, int, int, int, float]]:
    """(start|end, pid, row id, attempt, time) per line of the members' proof log."""
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        what, pid, job, t = line.split()
        row_id, attempt = job.rsplit("-", 2)[-2:]
        out.append((what, int(pid), int(row_id), int(attempt), float(t)))
    return out


@pytest.mark.slow
def test_three_agents_share_the_work_and_survive_a_kill_9(
    market: MockMarket, pg_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    key = secrets.token_bytes(32).hex()
    wallet = Wallet(bytes.fromhex(key)).address.encode("f")
    log = tmp_path / "proofs.log"
    PgStore(pg_url).close()  # migrate once before the members start (they would race harmlessly anyway)
    store = open_store(pg_url, heartbeat_s=0.25, stale_after_s=STALE_AFTER_S)  # the members' own
    request.addfinalizer(store.close)  # also when an assertion fails (a leaked session breaks a later test)
    procs = {}
    for _ in range(3):
        p = _start(market, key, pg_url, 0.6, log)
        procs[p.pid] = p

    def wait_for(what: str, cond: Callable[[], bool], timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if cond():
                return
            for p in procs.values():
                if p.poll() is not None and p.returncode != -signal.SIGKILL:
                    out = p.stdout.read().decode() if p.stdout else ""
                    raise AssertionError(f"member {p.pid} exited {p.returncode}: {out[-3000:]}")
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}: {store.hosts()} {store.counts()}")

    def submitted() -> int:
        return store.counts()[S.SUBMITTED]

    try:
        # 1. every member proves; the market sees each proof once
        wait_for("3 members", lambda: sum(h.alive for h in store.hosts()) == 3)
        wait_for(
            "every member proving and 6 submitted",
            lambda: {pid for w, pid, *_ in _proofs(log) if w == "end"} == set(procs) and submitted() >= 6,
        )
        # the fleet is sized by all three members: the requester keeps up to 3 requests in the queue
        assert store.fleet_capacity() == 3
        # 2. kill -9 the requester while it proves
        leader: int | None = None
        victim_row: int | None = None

        def leader_proving() -> bool:
            nonlocal leader, victim_row
            hosts = [h for h in store.hosts() if h.alive and h.requester]
            if len(hosts) != 1:
                return False
            leader = hosts[0].pid
            # a row it claimed AND whose proof it has started (the claim is committed before the prover logs
            # its start: a kill in between would leave nothing of the victim's in the proof log)
            started = {row for w, pid, row, *_ in _proofs(log) if w == "start" and pid == leader}
            ended = {row for w, pid, row, *_ in _proofs(log) if w == "end" and pid == leader}
            rows = [
                r for r in store.list_requests([S.PROVING])
                if r.owner == hosts[0].owner and r.row_id in started - ended
            ]
            if not rows:
                return False
            victim_row = rows[0].row_id
            return True

        wait_for("the requester proving", leader_proving)
        assert leader is not None and victim_row is not None
        procs[leader].send_signal(signal.SIGKILL)
        procs[leader].wait()
        killed_at = time.time()
        before = submitted()
        # 3. its claim is re-queued and finished by another member; the lock moves to a live member
        wait_for("the killed member's row submitted", lambda: store.get(victim_row).state is S.SUBMITTED)
        wait_for(
            "a new requester",
            lambda: any(h.requester and h.alive and h.pid != leader for h in store.hosts()),
        )
        wait_for("more work after the kill", lambda: submitted() >= before + 3)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        outs = {pid: p.communicate(timeout=60)[0].decode() for pid, p in procs.items()}
    assert procs[leader].returncode == -signal.SIGKILL
    for pid, p in procs.items():
        if pid != leader:
            assert p.returncode == 0, outs[pid][-3000:]

    proofs = _proofs(log)
    ends = [(pid, row, att) for w, pid, row, att, _ in proofs if w == "end"]
    # the killed member started the victim's proof and never finished it; another member proved it after
    # the kill, under a new attempt (a new job id)
    victim = [(w, pid, att, t) for w, pid, row, att, t in proofs if row == victim_row]
    assert ("start", leader) in {(w, pid) for w, pid, _, _ in victim}
    assert all(pid != leader for w, pid, _, _ in victim if w == "end")
    takeover = [(pid, att, t) for w, pid, att, t in victim if w == "start" and pid != leader]
    # a start by another member before the kill means a live member's claim was re-queued (it was silent for
    # STALE_AFTER_S under load) and the work proven twice: say so, with the members' re-queue lines
    requeued = [ln for pid, out in outs.items() for ln in out.splitlines() if "re-queued" in ln]
    why = f"killed at {killed_at:.3f}: victim row {victim_row}: {victim}; re-queue log lines: {requeued}"
    assert takeover and all(t > killed_at for _, _, t in takeover), why
    assert max(att for _, att, _ in takeover) >= 2
    # never proven twice: one finished proof per request (the kill left only an unfinished start)
    per_row: dict[int, int] = defaultdict(int)
    for _, row, _ in ends:
        per_row[row] += 1
    twice = {r: [(w, p, a, t) for w, p, r2, a, t in proofs if r2 == r] for r, n in per_row.items() if n > 1}
    handed = [ln for out in outs.values() for ln in out.splitlines() if "handed back" in ln]
    assert not twice, f"proven more than once: {twice}; killed at {killed_at:.3f}; {requeued} {handed}"
    # the work was spread: each of the three members finished proofs
    assert {pid for pid, _, _ in ends} == set(procs)

    rows = store.list_requests()
    done = [r for r in rows if r.state is S.SUBMITTED]
    assert not [r for r in rows if r.state is S.PROVING]  # clean exits handed everything back
    assert not [r for r in rows if r.state in (S.FAILED, S.GONE)], rows
    counters = market.state.snapshot()["counters"]
    # 0 duplicates: the market accepted each submitted request once and refused none as already done
    assert counters.get("completed_valid", 0) == len(done), counters
    assert counters.get("rejected_duplicate", 0) == 0 and counters.get("completed_invalid", 0) == 0, counters
    cids = [v["request_cid"] for v in market.state.vouchers(wallet)]
    assert len(cids) == len(set(cids))
    assert {p.request_cid for p in store.payments()} == set(cids)
    # 0 lost: every request the market handed this wallet is in the store (submitted or still pending), or
    # still assigned on the market and so delivered by the next poll (matched after the members' last poll,
    # when they were told to stop); none ended on the market without passing through the store
    with market.state._lock:  # the mock's own record of its assignments (test-only read)
        assigned = dict(
            market.state._db.execute(
                "SELECT j.cid, a.state FROM assignments a JOIN jobs j ON j.id = a.job_id WHERE a.wallet = ?",
                (wallet,),
            ).fetchall()
        )
    ours = {r.request_cid: r for r in rows}
    unseen = {cid: state for cid, state in assigned.items() if cid not in ours}
    assert all(state == "active" for state in unseen.values()), unseen
    assert len(unseen) <= 3, unseen  # at most the fleet's queue target was matched after the last poll
    assert all(r.state is S.SUBMITTED or r.state not in TERMINAL_STATES for r in ours.values())
    hosts = store.hosts()
    assert len(hosts) == 3 and sum(h.stopped_at is not None for h in hosts) == 2  # the killed one never left


def test_status_shows_the_fleet(pg_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """psagent status on a PostgreSQL store: members, their devices, claims, heartbeats, last errors, and
    which one is the requester."""
    import json

    import psycopg
    from typer.testing import CliRunner

    from agent.cli import app

    store = open_store(pg_url)
    request.addfinalizer(store.close)
    for n in range(2):
        row = store.add_request(n, f"cid-{n}", 1)
        assert row is not None
        store.store_data(row.row_id, b"d", "porep")
    store.heartbeat("gpu1-10-aa", hostname="gpu1", pid=10, capacity=2, devices=["0: H200", "1: H200"])
    store.heartbeat("gpu2-20-bb", hostname="gpu2", pid=20, capacity=1, devices=["0: H200"],
                    last_error="prover0: GpuError: CUDA_ERROR_LAUNCH_FAILED")
    assert store.claim("gpu1-10-aa") is not None and store.try_lead("gpu1-10-aa")
    with psycopg.connect(pg_url, autocommit=True) as conn:  # gpu2 went silent 100 s ago
        conn.execute("UPDATE hosts SET heartbeat_at = heartbeat_at - 100 WHERE owner = 'gpu2-20-bb'")
    cfg = tmp_path / "c.toml"
    from _doubles import throwaway_key_file

    cfg.write_text(
        f'[market]\nkey_file = "{throwaway_key_file(tmp_path)}"\n[prover]\nbackend = "cpu"\n'
        f'[metrics]\nlisten = ""\n[store]\nurl = "{pg_url}"\n[logging]\nformat = "json"\n'
    )
    res = CliRunner().invoke(app, ["status", "--config", str(cfg), "--json"])
    assert res.exit_code == 0, res.output
    fleet = json.loads(res.stdout)["fleet"]
    assert (fleet["alive"], fleet["capacity"], fleet["requester"]) == (1, 2, "gpu1-10-aa")
    members = {m["owner"]: m for m in fleet["members"]}
    assert members["gpu1-10-aa"]["state"] == "alive" and members["gpu1-10-aa"]["proving"] == 1
    assert members["gpu1-10-aa"]["devices"] == ["0: H200", "1: H200"] and members["gpu1-10-aa"]["requester"]
    assert members["gpu2-20-bb"]["state"] == "silent" and members["gpu2-20-bb"]["heartbeat_age_s"] >= 100
    assert members["gpu2-20-bb"]["last_error"] == "prover0: GpuError: CUDA_ERROR_LAUNCH_FAILED"
    human = CliRunner().invoke(app, ["status", "--config", str(cfg)])
    assert human.exit_code == 0, human.output
    out = human.stdout
    assert "fleet:    1 of 2 member(s) alive, capacity 2, requester gpu1-10-aa" in out
    assert "gpu2-20-bb (gpu2 pid 20): silent" in out and "CUDA_ERROR_LAUNCH_FAILED" in out
    assert "gpu1-10-aa (gpu1 pid 10): alive requester" in out and "devices 0: H200, 1: H200" in out
