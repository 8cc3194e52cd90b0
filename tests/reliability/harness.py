"""The reliability harness: the mock market and the agent as real processes, their books, the invariants.

A :class:`Run` owns one scenario's directory: a throwaway wallet (key file 0600), the agent's TOML
configuration, its SQLite store, the market's state file and both processes' logs. Scenario drivers
(tests/reliability/scenarios.py) start and stop the processes, add faults, kill, restart; then
:meth:`Run.finish` settles (closes the agent's readiness gate through its control file so no new work is
asked for, waits until every assigned request has ended on both sides), stops both processes and checks the
invariants from the market's books and the agent's store:

* every assignment the market made to our wallet is, in the agent's store, either submitted (and the market
  holds it as done), gone after its deadline, or failed with a recorded reason; anything else is *lost*;
* no proof was accepted twice (one voucher and one done assignment per request CID), and no 409 "already
  submitted" happened that a lost answer does not explain (*duplicates*);
* the market judged no submitted proof invalid (*invalid submitted*);
* neither the agent's log nor its metrics page holds the private key or an unredacted signature.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from market.wallet import Wallet, write_key_file

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PRICE_FIL = "0.005"  # the mock's demand price: asks at this price are matched with paid work

__all__ = ["Result", "Run", "free_port", "proc_sample"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_sample(pid: int) -> tuple[int, int]:
    """(RSS in KiB, open file descriptors) of a live process, from /proc."""
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def wait_until(pred: Callable[[], bool], timeout: float, what: str, poll: float = 0.1) -> float:
    """Seconds it took for ``pred`` to hold; raises TimeoutError naming ``what``."""
    t0 = time.monotonic()
    while True:
        if pred():
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(poll)


@dataclass
class Result:
    scenario: str
    faults_injected: int = 0
    proofs: int = 0
    lost: int = 0
    duplicates: int = 0
    invalid_submitted: int = 0
    recovery_s: float | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.problems and self.lost == 0 and self.duplicates == 0 and self.invalid_submitted == 0


class Run:
    """One scenario's processes and books (see the module docstring)."""

    def __init__(
        self,
        name: str,
        root: Path,
        pool: Path,
        *,
        market: dict[str, Any] | None = None,
        agent: dict[str, Any] | None = None,
        store_dir: Path | None = None,
    ) -> None:
        self.name = name
        self.dir = root / name
        if self.dir.exists():
            shutil.rmtree(self.dir)  # a fresh wallet, store, books and control files every time
        self.dir.mkdir(parents=True)
        self.pool = pool
        self.root = root
        self.template = root / "template.bin"  # a genuine request, for the agent's warm-up check
        if not self.template.exists():
            from market.mock.pool import ChallengePool

            self.template.write_bytes(ChallengePool.open(pool).make())
        self.port = free_port()
        self.metrics_port = free_port()
        self.key = secrets.token_bytes(32)  # kept here only to look for it where it must never be
        self.wallet = Wallet(self.key)
        self.address = self.wallet.address.encode("f")
        self.key_file = self.dir / "key"
        write_key_file(self.key_file, self.wallet)
        self.control = self.dir / "control"
        self.control.mkdir(exist_ok=True)
        self.store_path = (store_dir or self.dir) / "agent.db"
        self.state_path = self.dir / "market.db"
        self.market_spec: dict[str, Any] = {
            "pool": str(pool),
            "state": str(self.state_path),
            "port": self.port,
            "slot_divisor": 1,
            "initial_challenges": 200,
            "deadline_s": 30.0,
            "demand": 4,
            "seed": 7,
            **(market or {}),
        }
        self.agent_cfg: dict[str, Any] = {
            "low_water": 2,
            "high_water": 3,
            "poll_interval_s": 0.2,
            "backoff_max_s": 2.0,
            "request_timeout_s": 3.0,
            "retry_budget_s": 13.0,  # 30 min of a 45 min deadline, scaled to 20 s
            "max_request_bytes": 32 * 1024 * 1024,
            **(agent or {}),
        }
        self.market_proc: subprocess.Popen[bytes] | None = None
        self.agent_proc: subprocess.Popen[bytes] | None = None
        self.base_url = ""
        self.root_url = f"http://127.0.0.1:{self.port}"
        self.market_started = 0.0
        self.fired_before_restarts = 0
        self.extra_faults: Counter[str] = Counter()
        self.rss: list[tuple[float, int, int, int]] = []  # (t, rss KiB, fds, store bytes)
        self.t0 = time.monotonic()
        self.result = Result(name)
        self.write_config()

    # -- configuration ---------------------------------------------------------------------------------

    def write_config(self, key_file: Path | None = None) -> Path:
        c = self.agent_cfg
        text = f"""
[market]
url = "http://127.0.0.1:{self.port}/v0/proofs"
key_file = "{key_file or self.key_file}"
price_fil = "{PRICE_FIL}"
low_water = {c["low_water"]}
high_water = {c["high_water"]}
poll_interval_s = {c["poll_interval_s"]}
backoff_max_s = {c["backoff_max_s"]}
request_timeout_s = {c["request_timeout_s"]}
retry_budget_s = {c["retry_budget_s"]}
max_request_bytes = {c["max_request_bytes"]}

[store]
url = "sqlite:///{self.store_path}"

[metrics]
listen = "127.0.0.1:{self.metrics_port}"

[logging]
format = "json"
"""
        path = self.dir / "config.toml"
        path.write_text(text)
        return path

    # -- processes -------------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PSAGENT_", "NUMBA_CACHE", "XDG_CACHE"))
        }
        env["PYTHONPATH"] = str(REPO)
        env["PSAGENT_CACHE_DIR"] = str(self.root / "cache")  # kernels compiled once per runner root
        env["NUMBA_ENABLE_CUDASIM"] = "1"
        return env

    def start_market(self, **overrides: Any) -> None:
        spec = {**self.market_spec, **overrides}
        path = self.dir / "market.json"
        path.write_text(json.dumps(spec))
        with open(self.dir / "market.log", "ab") as log:  # the child keeps its own descriptor
            self.market_proc = subprocess.Popen(
                [sys.executable, "-u", str(HERE / "market_process.py"), str(path)],
                env=self._env(),
                stdout=subprocess.PIPE,
                stderr=log,
            )
        assert self.market_proc.stdout is not None
        line = self.market_proc.stdout.readline().decode()
        if not line.startswith("ready "):
            raise RuntimeError(f"{self.name}: the mock market did not start: {line!r} (see {self.dir})")
        self.base_url = line.split()[1]
        self.market_started = time.monotonic()

    def stop_market(self, sig: int = signal.SIGTERM) -> None:
        p = self.market_proc
        if p is None:
            return
        if sig != signal.SIGKILL:
            try:
                self.fired_before_restarts += self.market_fired()
            except OSError:
                pass
        else:
            self.fired_before_restarts += self._last_fired
        p.send_signal(sig)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stdout is not None:
            p.stdout.close()
        self.market_proc = None

    def start_agent(
        self,
        *,
        hold: dict[str, Any] | None = None,
        prover: dict[str, Any] | None = None,
        max_proofs: int | None = None,
        config: Path | None = None,
        timing: dict[str, Any] | None = None,
    ) -> subprocess.Popen[bytes]:
        spec = {
            "config": str(config or self.dir / "config.toml"),
            "control_dir": str(self.control),
            "hold": hold,
            "prover": {"delay_s": 0.1, **(prover or {})},
            "max_proofs": max_proofs,
            "warm_up_data": str(self.template),
            "timing": {"deadline_s": self.market_spec["deadline_s"], **(timing or {})},
        }
        path = self.dir / "agent.json"
        path.write_text(json.dumps(spec))
        (self.control / "held").unlink(missing_ok=True)
        with open(self.dir / "agent.log", "ab") as log:
            self.agent_proc = subprocess.Popen(
                [sys.executable, "-u", str(HERE / "agent_process.py"), str(path)],
                env=self._env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self.agent_proc

    def stop_agent(self, sig: int = signal.SIGTERM, timeout: float = 40.0) -> int:
        p = self.agent_proc
        if p is None:
            return 0
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.result.problems.append(f"agent did not stop within {timeout:.0f} s of signal {sig}")
            p.kill()
            rc = p.wait()
        self.agent_proc = None
        return rc

    def kill_agent(self) -> None:
        """kill -9 (counted as an injected fault)."""
        self.stop_agent(signal.SIGKILL)
        self.extra_faults["kill -9"] += 1

    def held(self) -> str:
        try:
            return (self.control / "held").read_text()
        except FileNotFoundError:
            return ""

    def wait_held(self, stage: str, timeout: float = 60.0) -> None:
        def is_held() -> bool:
            if self.agent_proc is not None and self.agent_proc.poll() is not None:
                raise RuntimeError(f"the agent exited ({self.agent_proc.returncode}) before {stage}")
            return self.held() == stage

        wait_until(is_held, timeout, f"agent held at {stage}", poll=0.02)

    # -- the market's books ----------------------------------------------------------------------------

    def mock_state(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.root_url}/_mock/state", timeout=10) as r:
            data: dict[str, Any] = json.loads(r.read())
        return data

    _last_fired = 0

    def market_fired(self) -> int:
        n = sum(int(f["fired"]) for f in self.mock_state()["faults"])
        self._last_fired = n
        return n

    def add_faults(self, spec: str) -> None:
        req = urllib.request.Request(f"{self.root_url}/_mock/faults", data=spec.encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()

    def clear_faults(self) -> None:
        self.market_fired()
        self.fired_before_restarts += self._last_fired
        self._last_fired = 0
        self.add_faults("clear")

    def inject(self, data: bytes) -> str:
        req = urllib.request.Request(f"{self.root_url}/_rel/inject", data=data, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            return str(json.loads(r.read())["request_cid"])

    def _market_db(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.state_path}?mode=ro", uri=True, timeout=10)

    def assignments(self) -> list[tuple[int, str, str, float, int]]:
        """(assignment id, cid, state, deadline, pow) of our wallet's assignments."""
        db = self._market_db()
        try:
            return db.execute(
                "SELECT a.id, j.cid, a.state, a.deadline, j.pow FROM assignments a "
                "JOIN jobs j ON j.id = a.job_id "
                "WHERE a.wallet = ? ORDER BY a.id",
                (self.address,),
            ).fetchall()
        finally:
            db.close()

    def done(self) -> int:
        return sum(1 for a in self.assignments() if a[2] == "done")

    def active_asks(self) -> int:
        db = self._market_db()
        try:
            return int(
                db.execute(
                    "SELECT COUNT(*) FROM asks WHERE wallet = ? AND state = 'active'", (self.address,)
                ).fetchone()[0]
            )
        finally:
            db.close()

    def asks_created_between(self, t0: float, t1: float) -> int:
        db = self._market_db()
        try:
            return int(
                db.execute(
                    "SELECT COUNT(*) FROM asks WHERE wallet = ? AND created_at >= ? AND created_at < ?",
                    (self.address, t0, t1),
                ).fetchone()[0]
            )
        finally:
            db.close()

    # -- the agent's store -------------------------------------------------------------------------------

    def rows(self) -> dict[str, tuple[str, str | None, int]]:
        """request cid → (state, last_error, submit_attempts), read-only."""
        if not self.store_path.exists():
            return {}
        db = sqlite3.connect(f"file:{self.store_path}?mode=ro", uri=True, timeout=10)
        try:
            return {
                cid: (state, err, n)
                for cid, state, err, n in db.execute(
                    "SELECT request_cid, state, last_error, submit_attempts FROM requests"
                ).fetchall()
            }
        except sqlite3.OperationalError:
            return {}
        finally:
            db.close()

    def store_bytes(self) -> int:
        return sum(
            p.stat().st_size for p in self.store_path.parent.glob(self.store_path.name + "*") if p.is_file()
        )

    # -- measurements ----------------------------------------------------------------------------------

    def wait_proofs(self, n: int, timeout: float = 60.0) -> float:
        """Wait until the market holds ``n`` more done proofs of ours than now; returns the seconds taken."""
        start = self.done()
        return wait_until(lambda: self.done() >= start + n, timeout, f"{n} more accepted proof(s)", 0.05)

    def recovery(self, timeout: float = 90.0) -> float:
        """Seconds from now (the fault's end, a restart) to the next proof the market accepts."""
        s = self.wait_proofs(1, timeout)
        self.result.recovery_s = s if self.result.recovery_s is None else max(self.result.recovery_s, s)
        return s

    def sample(self) -> None:
        if self.agent_proc is None or self.agent_proc.poll() is not None:
            return
        rss, fds = proc_sample(self.agent_proc.pid)
        self.rss.append((time.monotonic() - self.t0, rss, fds, self.store_bytes()))

    def scrape_metrics(self) -> str:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
                return str(r.read().decode())
        except OSError:
            return ""

    # -- the end -----------------------------------------------------------------------------------------

    def settle(self, timeout: float | None = None) -> None:
        """No new asks; wait until nothing is assigned, asked for or unfinished."""
        (self.control / "no-asks").touch()
        limit = timeout or float(self.market_spec["deadline_s"]) + 30.0

        def quiet() -> bool:
            if self.agent_proc is not None and self.agent_proc.poll() is not None:
                raise RuntimeError(f"the agent exited ({self.agent_proc.returncode}) while settling")
            active = [a for a in self.assignments() if a[2] == "active"]
            unfinished = [
                r for r in self.rows().values() if r[0] in ("queued", "fetched", "proving", "computed")
            ]
            return not active and not unfinished and self.active_asks() == 0

        try:
            wait_until(quiet, limit, "settling (every assigned request ended)", poll=0.2)
        except TimeoutError as e:
            self.result.problems.append(str(e))
            self.dump_stacks()

    def dump_stacks(self) -> None:
        """Every thread's stack of a live agent into its log (faulthandler on SIGUSR1)."""
        if self.agent_proc is not None and self.agent_proc.poll() is None:
            self.agent_proc.send_signal(signal.SIGUSR1)
            time.sleep(0.5)

    def finish(self) -> Result:
        """Settle, stop both processes, check the invariants; the scenario's row of the table."""
        r = self.result
        if self.agent_proc is not None and self.market_proc is not None:
            self.settle()
            metrics = self.scrape_metrics()
            self._check_secrets(metrics, "metrics page")
            rc = self.stop_agent()
            if rc not in (0, -signal.SIGTERM):
                r.problems.append(f"agent exit status {rc} after SIGTERM")
        if self.market_proc is not None:
            state = self.mock_state()
            r.extra["market_counters"] = state["counters"]
            self.stop_market()
        self._check_secrets((self.dir / "agent.log").read_text(errors="replace"), "agent log")
        self._invariants()
        injected = (
            (self.control / "injected").read_text().split() if (self.control / "injected").exists() else []
        )
        agent_side = Counter(injected) + self.extra_faults
        r.faults_injected = self.fired_before_restarts + sum(agent_side.values())
        r.extra["agent_side_faults"] = dict(agent_side)
        r.extra["market_faults_fired"] = self.fired_before_restarts
        r.seconds = time.monotonic() - self.t0
        return r

    def _invariants(self) -> None:
        r = self.result
        rows = self.rows()
        assignments = self.assignments()
        now = time.time()
        outcome: Counter[str] = Counter()
        per_cid_done: Counter[str] = Counter()
        for _aid, cid, state, deadline, _pow in assignments:
            row = rows.get(cid)
            if state == "done":
                per_cid_done[cid] += 1
            if row is None:
                kind = "lost: assigned but never recorded by the agent"
            elif row[0] == "submitted":
                kind = "submitted" if state == "done" else f"lost: agent says submitted, market says {state}"
            elif row[0] == "failed":
                kind = "failed with reason" if row[1] else "lost: failed without a reason"
                if state == "done":
                    kind = "lost: the market accepted it, the agent recorded a failure"
            elif row[0] == "gone":
                ok = state == "expired" or (state == "active" and deadline <= now)
                kind = "gone after its deadline" if ok else f"lost: gone while the market says {state}"
            else:
                kind = f"lost: still {row[0]} at the end"
            outcome[kind] += 1
        r.proofs = sum(1 for a in assignments if a[2] == "done")
        r.lost = sum(n for k, n in outcome.items() if k.startswith("lost"))
        r.extra["outcomes"] = dict(outcome)
        r.extra["assignments"] = len(assignments)
        failures = Counter((e or "").split(":")[0] for s, e, _ in rows.values() if s in ("failed", "gone"))
        r.extra["failures_by_cause"] = dict(failures)
        counters = r.extra.get("market_counters", {})
        db = self._market_db()
        try:
            vouchers = Counter(
                c for (c,) in db.execute("SELECT request_cid FROM vouchers WHERE wallet = ?", (self.address,))
            )
        finally:
            db.close()
        double = sum(n - 1 for n in per_cid_done.values() if n > 1) + sum(
            n - 1 for n in vouchers.values() if n > 1
        )
        # A 409 "already submitted" is legitimate only after a submission whose answer was lost: the
        # agent then records the request as accepted. Answers are lost by drop-after / latency faults on
        # complete and by a kill -9 between sending and recording; more 409s than those explain is a
        # re-sent proof, and so is a request the agent failed on a 409.
        explained = sum(
            1 for s, e, _ in rows.values() if s == "submitted" and (e or "").startswith("accepted")
        )
        lossy = sum(int(counters.get(k, 0)) for k in ("fault_drop_after_complete", "fault_latency_complete"))
        lossy += self.extra_faults.get("kill -9", 0)
        conflicts = int(counters.get("rejected_duplicate", 0))
        failed_409 = sum(
            1 for s, e, _ in rows.values() if s == "failed" and re.match(r"submit: .*→ 409\b", e or "")
        )
        r.duplicates = double + failed_409 + max(0, conflicts - explained - lossy)
        r.extra["409s"] = {
            "market": conflicts,
            "accepted-after-lost-answer rows": explained,
            "lossy faults": lossy,
        }
        r.invalid_submitted = int(counters.get("completed_invalid", 0))

    def _check_secrets(self, text: str, where: str) -> None:
        secrets_ = [self.wallet.export_lotus(), self.key.hex(), base64.b64encode(self.key).decode()]
        leaks = [s[:8] + "…" for s in secrets_ if s and s.lower() in text.lower()]
        if re.search(r"signature=[0-9a-fA-F]{16,}", text):
            leaks.append("signature=<hex>")
        if leaks:
            self.result.problems.append(f"secret in the {where}: {leaks}")

    def cleanup(self) -> None:
        for p in (self.agent_proc, self.market_proc):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
