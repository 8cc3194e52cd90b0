"""Reliability scenarios and the runner that prints their table: ``python tests/reliability/scenarios.py``.

Each scenario starts the mock market and the agent as processes (tests/reliability/harness.py), injects its
faults, measures the recovery and ends with :meth:`Run.finish` (settle, stop, invariants). Deadlines are
scaled: the market's submit deadline is 20 s instead of 45 min, the agent's poll interval 0.2 s instead of
3 s, its backoff cap 2 s instead of 2 min and the client's retry budget 13 s instead of 30 min, so a 25 s
429 storm stands for ~10 minutes of real time.

``--only NAME…`` picks scenarios; ``SOAK_S`` (default 300) sets the soak's length; ``--json`` writes every
result with its details. Exit status 1 when any scenario breaks an invariant.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from adversarial import PAYLOADS  # noqa: E402
from harness import Result, Run, wait_until  # noqa: E402

DEADLINE_S = 20.0
STAGES = ("fetch", "check", "synthesis", "prove", "verify", "store", "submit")


def _start(run: Run, faults: str = "", **agent: object) -> None:
    run.start_market(faults=faults)
    run.start_agent(**agent)  # type: ignore[arg-type]


def _after_market_start(run: Run, seconds: float) -> None:
    time.sleep(max(0.0, run.market_started + seconds - time.monotonic()))


def baseline(run: Run) -> None:
    _start(run)
    run.result.recovery_s = run.wait_proofs(1, 60)  # first proof after a cold start
    run.wait_proofs(4, 60)


def storm_429(run: Run) -> None:
    _start(run, "ask:429/0-25")
    _after_market_start(run, 25)
    tried = run.mock_state()["counters"].get("requests_ask", 0)
    run.result.notes.append(f"{tried} ask tries in 25 s of 429s (backoff)")
    run.recovery()
    run.wait_proofs(2, 60)


def bursts_5xx(run: Run) -> None:
    _start(run, "*:500@0.3/0-20; *:503@0.2/0-20; *:502#5; complete:504#3; fetch:500#3")
    run.wait_proofs(1, 60)
    _after_market_start(run, 20)
    run.recovery()
    run.wait_proofs(2, 60)


def latency_timeouts(run: Run) -> None:
    # request_timeout_s = 3: the 4 s answers time out on every endpoint, the others are slow but arrive
    _start(
        run,
        "*:latency=0.3@0.3/0-20; poll:latency=4#2; fetch:latency=4#2; complete:latency=4#2; ask:latency=4#2",
    )
    run.wait_proofs(1, 60)
    _after_market_start(run, 20)
    run.recovery()
    run.wait_proofs(2, 60)


def dropped_connections(run: Run) -> None:
    _start(run, "*:drop-before@0.15/0-20; *:drop-after@0.15/0-20; complete:drop-after#2; ask:drop-after#2")
    run.wait_proofs(1, 60)
    _after_market_start(run, 20)
    run.recovery()
    run.wait_proofs(2, 60)


def bad_request_data(run: Run) -> None:
    _start(run, "fetch:truncate#2; fetch:corrupt#2")
    run.wait_proofs(3, 90)
    bad = [e for s, e, _ in run.rows().values() if s == "failed" and (e or "").startswith("fetch")]
    run.result.notes.append(f"{len(bad)} request(s) failed on bad bytes (never parsed)")
    run.recovery()


def adversarial_c1(run: Run) -> None:
    _start(run)
    run.wait_proofs(1, 60)
    template = _template(run)
    cids = {}
    for name, make in PAYLOADS.items():
        cids[run.inject(make(template))] = name
        run.extra_faults["hostile request data"] += 1
    peak = [0]

    def all_failed() -> bool:
        run.sample()
        peak[0] = max(peak[0], run.rss[-1][1] if run.rss else 0)
        rows = run.rows()
        return all(rows.get(c, ("",))[0] in ("failed", "gone", "submitted") for c in cids)

    wait_until(all_failed, 150, "every adversarial request ended", poll=0.3)
    rows = run.rows()
    for cid, name in cids.items():
        state, err, _ = rows[cid]
        if state != "failed" or not err:
            run.result.problems.append(f"adversarial {name}: {state} ({err})")
        run.result.extra.setdefault("adversarial", {})[name] = f"{state}: {(err or '')[:120]}"
    run.result.notes.append(
        f"{len(cids)} hostile inputs failed with a reason; agent RSS peak {peak[0] // 1024} MiB"
    )
    run.recovery()
    run.wait_proofs(1, 60)


def _template(run: Run) -> bytes:
    return run.template.read_bytes()


def kill_at(stage: str) -> Callable[[Run], None]:
    def scenario(run: Run) -> None:
        run.start_market()
        run.start_agent(hold={"stage": stage, "seconds": 120})
        run.wait_held(stage)
        run.kill_agent()
        run.start_agent()
        run.recovery()
        run.wait_proofs(2, 60)
        rows = run.rows().values()
        if stage == "submit":
            took = [e for s, e, _ in rows if s == "submitted" and (e or "").startswith("accepted earlier")]
            run.result.notes.append(
                f"{len(took)} proof(s) found accepted (409) after the restart, not resent"
            )

    scenario.__name__ = f"kill_9_{stage}"
    return scenario


def disk_full(run: Run) -> None:
    """The disk fills while the agent holds a fetched request in its check stage, so the write that should
    keep the checked data is the one that fails; 15 s later the space comes back."""
    fs = run.store_path.parent
    run.result.notes.append("tmpfs of 64 MiB under the store, filled with a ballast file")
    run.start_market()
    run.start_agent(hold={"stage": "check", "seconds": 3})
    run.wait_held("check")
    ballast = fs / "ballast"
    with open(ballast, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError:
            pass
    run.extra_faults["disk full"] += 1
    t_full = time.time()
    done_before = run.done()
    time.sleep(15)
    alive = run.agent_proc is not None and run.agent_proc.poll() is None
    asks = run.asks_created_between(t_full + 2, time.time())  # 2 s grace: a round in flight when it filled
    run.result.notes.append(
        f"disk full 15 s: agent {'alive' if alive else 'DEAD'}, {asks} ask(s) made, "
        f"{run.done() - done_before} proof(s) accepted meanwhile"
    )
    run.result.extra["asks_while_full"] = asks
    if not alive:
        run.result.problems.append("the agent died of a full disk")
    ballast.unlink()
    run.recovery()
    run.wait_proofs(2, 60)


def clock_skew(seconds: float) -> Callable[[Run], None]:
    """The market's clock ``seconds`` ahead of the agent's for the whole run (its Date headers, its signature
    checks, its deadlines). A constant offset, not a jump: a mid-run jump of the mock's clock would expire
    fresh assignments at once, which no real clock does."""

    def scenario(run: Run) -> None:
        _start(run, f"*:skew={seconds:+g}")
        run.extra_faults["clock skew"] += 1  # skew rules move the clock; they do not "fire" per request
        run.result.recovery_s = run.wait_proofs(1, 60)  # the first proof, signed across the skew
        run.wait_proofs(3, 60)
        rejected = {k: v for k, v in run.mock_state()["counters"].items() if k.startswith("rejected_")}
        run.result.notes.append(f"market refusals: {rejected or 'none'}")

    return scenario


def market_restart(run: Run) -> None:
    _start(run)
    run.wait_proofs(2, 60)
    run.stop_market(signal.SIGTERM)
    run.extra_faults["market restart (SIGTERM)"] += 1
    time.sleep(3)
    run.start_market()
    run.recovery()
    run.wait_proofs(1, 60)
    run.stop_market(signal.SIGKILL)
    run.extra_faults["market crash (kill -9)"] += 1
    time.sleep(3)
    run.start_market()
    run.recovery()
    run.wait_proofs(1, 60)


def gpu_errors(run: Run) -> None:
    faults = {2: "launch", 3: "oom", 6: "launch", 7: "oom", 8: "launch", 12: "oom"}
    _start(run, prover={"gpu_faults": faults})
    run.wait_proofs(1, 60)
    run.wait_proofs(4, 90)
    run.recovery()


def gpu_errors_lone_request(run: Run) -> None:
    """One request at a time (queue target 1) and its three attempts all hit GPU errors: it fails with the
    reason; then the agent must go on asking for work (the prover is healthy again)."""
    run.agent_cfg.update(low_water=1, high_water=1)
    run.write_config()
    _start(run, prover={"gpu_faults": {1: "launch", 2: "oom", 3: "launch"}})
    run.recovery(timeout=60)
    run.wait_proofs(1, 60)


def submit_outage(run: Run) -> None:
    """The complete endpoint answers 503 for 17 s: longer than the client's retry budget (13 s), shorter than
    the submit deadline (20 s), so every proof made meanwhile can still be handed in when it ends."""
    _start(run, "complete:503/5-22")
    _after_market_start(run, 22)
    rows = run.rows().values()
    gone = sum(1 for s, _, _ in rows if s == "gone")
    computed = sum(1 for s, _, _ in rows if s == "computed")
    run.result.notes.append(f"after the outage: {computed} proof(s) waiting, {gone} already gone (deadline)")
    run.recovery()
    run.wait_proofs(2, 60)
    gone = sum(1 for s, _, _ in run.rows().values() if s == "gone")
    run.result.notes.append(f"{gone} request(s) gone past their deadline in all")
    run.result.extra["gone"] = gone


def wrong_proofs(run: Run) -> None:
    _start(run, prover={"corrupt": [1, 2, 4, 5, 6, 9]})
    run.wait_proofs(4, 90)
    run.recovery()


SCENARIOS: dict[str, Callable[[Run], None]] = {
    "baseline": baseline,
    "429-storm": storm_429,
    "5xx-bursts": bursts_5xx,
    "latency+timeouts": latency_timeouts,
    "dropped-connections": dropped_connections,
    "bad-request-data": bad_request_data,
    "adversarial-c1": adversarial_c1,
    **{f"kill-9@{s}": kill_at(s) for s in STAGES},
    "disk-full": disk_full,
    "clock-skew+30s": clock_skew(30),
    "clock-skew-30s": clock_skew(-30),
    "market-restart": market_restart,
    "gpu-errors": gpu_errors,
    "gpu-errors-3-in-a-row": gpu_errors_lone_request,
    "wrong-proofs": wrong_proofs,
    "submit-outage": submit_outage,
}


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)]).returncode == 0


# The market's outage must stay shorter than the submit deadline, or work assigned just before it expires
# unseen (the agent cannot learn of an assignment while the market is down): a process start is ~5-30 s here.
DEADLINES = {"market-restart": 90.0}


def run_one(name: str, root: Path, pool: Path) -> Result:
    store_dir = root / name / "fs" if name == "disk-full" else None
    market = {"deadline_s": DEADLINES.get(name, DEADLINE_S), "initial_challenges": 1000}
    run = Run(name, root, pool, market=market, store_dir=store_dir)
    mounted = store_dir is not None and _mount_tmpfs(store_dir, "64m")
    if store_dir is not None and not mounted:
        run.result.notes.append("SKIPPED: needs root and mount(8) for a tmpfs")
        print(f"!! {name}: SKIPPED (needs root and mount for a small tmpfs)", flush=True)
        return run.result
    t0 = time.monotonic()
    try:
        SCENARIOS[name](run)
    except Exception as e:  # noqa: BLE001 - a failed scenario is a row of the table, not a crash
        run.result.problems.append(f"{type(e).__name__}: {e}")
        traceback.print_exc()
        run.dump_stacks()
    try:
        result = run.finish()
        if name == "disk-full":
            import sqlite3

            db = sqlite3.connect(f"file:{run.store_path}?mode=ro", uri=True)
            check = db.execute("PRAGMA integrity_check").fetchone()[0]
            db.close()
            result.notes.append(f"store integrity_check: {check}")
            if check != "ok":
                result.problems.append(f"store corrupted: {check}")
    except Exception as e:  # noqa: BLE001
        run.result.problems.append(f"finish: {type(e).__name__}: {e}")
        traceback.print_exc()
        result = run.result
    finally:
        run.cleanup()
        if mounted and store_dir is not None:
            for f in store_dir.glob("agent.db*"):  # kept for a look after the tmpfs is gone
                shutil.copy(f, run.dir / f.name)
            subprocess.run(["umount", str(store_dir)])
    result.seconds = time.monotonic() - t0
    return result


def soak(root: Path, pool: Path, seconds: float) -> Result:
    """Mild mixed faults for ``seconds``; RSS, fds and store size sampled every 5 s."""
    run = Run("soak", root, pool, market={"deadline_s": 60.0, "initial_challenges": 1000})
    faults = "*:500@0.02; *:latency=0.2@0.05; ask:429@0.3; complete:drop-after@0.02; fetch:drop-before@0.02"
    t0 = time.monotonic()
    try:
        _start(run, faults, prover={"delay_s": 0.3, "gpu_faults": {k: "launch" for k in range(50, 5000, 97)}})
        run.wait_proofs(1, 60)
        warm = time.monotonic()
        done0 = run.done()
        while time.monotonic() - warm < seconds:
            run.sample()
            time.sleep(5)
        run.sample()
        hours = (time.monotonic() - warm) / 3600
        run.result.extra["proofs_per_hour"] = round((run.done() - done0) / hours)
    except Exception as e:  # noqa: BLE001
        run.result.problems.append(f"{type(e).__name__}: {e}")
        traceback.print_exc()
    try:
        result = run.finish()
    finally:
        run.cleanup()
    result.seconds = time.monotonic() - t0
    s = run.rss
    if s:
        k = max(1, len(s) // 5)
        first = sorted(x[1] for x in s[:k])[k // 2]
        last = sorted(x[1] for x in s[-k:])[k // 2]
        result.extra.update(
            rss_kib_first=first,
            rss_kib_last=last,
            rss_kib_max=max(x[1] for x in s),
            fds_first=s[0][2],
            fds_last=s[-1][2],
            fds_max=max(x[2] for x in s),
            store_bytes_first=s[0][3],
            store_bytes_last=s[-1][3],
            samples=[list(x) for x in s],
        )
        growth = (last - first) / first if first else 0.0
        result.notes.append(
            f"{result.extra.get('proofs_per_hour', 0)} proofs/h; RSS {first // 1024}→{last // 1024} MiB "
            f"({100 * growth:+.0f} %); fds {s[0][2]}→{s[-1][2]}; "
            f"store {s[0][3] // 1024}→{s[-1][3] // 1024} KiB"
        )
        if growth > 0.25:
            result.problems.append(f"agent RSS grew {100 * growth:.0f} % over the soak")
        if s[-1][2] > s[0][2] + 10:
            result.problems.append(f"open fds grew {s[0][2]} → {s[-1][2]}")
    return result


def table(results: list[Result]) -> str:
    cols = ("scenario", "faults injected", "proofs", "lost", "duplicates", "invalid submitted", "recovery s")
    lines = ["| " + " | ".join(cols) + " | result |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        rec = "-" if r.recovery_s is None else f"{r.recovery_s:.1f}"
        broken = [
            f"{k} {v}"
            for k, v in (("lost", r.lost), ("dup", r.duplicates), ("invalid", r.invalid_submitted))
            if v
        ]
        status = "pass" if r.passed else "FAIL: " + "; ".join(broken + r.problems)[:160]
        if any(n.startswith("SKIPPED") for n in r.notes):
            status = "skipped"
        lines.append(
            f"| {r.scenario} | {r.faults_injected} | {r.proofs} | {r.lost} | {r.duplicates} | "
            f"{r.invalid_submitted} | {rec} | {status} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="scenario names (and/or 'soak')")
    ap.add_argument("--root", type=Path, help="working directory (default: a new temporary one)")
    ap.add_argument("--pool", type=Path, help="challenge pool directory (sealed on first use)")
    ap.add_argument("--json", type=Path, help="write every result with its details here")
    ap.add_argument("--no-soak", action="store_true")
    args = ap.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="psagent-reliability-"))
    root.mkdir(parents=True, exist_ok=True)
    pool = args.pool or root / "pool"
    from market.mock.pool import ChallengePool

    ChallengePool.open(pool)  # seal once, before any market process needs it
    names = args.only or [*SCENARIOS, *([] if args.no_soak else ["soak"])]
    unknown = [n for n in names if n not in SCENARIOS and n != "soak"]
    if unknown:
        print(
            f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}, soak", file=sys.stderr
        )
        return 2
    soak_s = float(os.environ.get("SOAK_S", "300"))
    results = []
    print(f"reliability runner: {len(names)} scenario(s) in {root}", flush=True)
    for name in names:
        r = soak(root, pool, soak_s) if name == "soak" else run_one(name, root, pool)
        results.append(r)
        mark = "ok " if r.passed else "!! "
        print(
            f"{mark}{name}: {r.proofs} proofs, {r.faults_injected} faults, lost {r.lost}, "
            f"dup {r.duplicates}, "
            f"invalid {r.invalid_submitted}, recovery {r.recovery_s}, {r.seconds:.0f} s; "
            f"{'; '.join(r.notes)} {'; '.join(r.problems)}",
            flush=True,
        )
    print()
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1, default=str))
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
