"""contrib/prometheus/alerts.yml and contrib/grafana/psagent.json against a real Prometheus (the
distribution's ``prometheus``; skipped, saying why, when it is not installed: ``.ci/run`` installs it).

Six agents run at once (tests/agent/_opsview: the runtime-built service, the mock market on loopback, the real
``AdmittedProver`` over a pipeline double), each a scrape target: one healthy, five made to trigger one
alert each. Prometheus scrapes every 0.5 s and evaluates the rules file every 0.5 s with each ``for:``
shortened to a few seconds (the expressions and their windows are the file's own). Then:

* every rule fires for the scenario made for it, and no rule ever fires for the healthy agent (the ALERTS
  series over the whole run);
* every panel query of the dashboard (and its instance variable) returns data for the healthy agent;
* the panels are drawn from Prometheus's answers into a screenshot (tests/agent/_panels: not Grafana).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _opsview import AgentThread, Scenario, binary, binary_or_skip, chromium_run, keep_screenshot, wait_for

from agent.store import RequestState

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "contrib" / "prometheus" / "alerts.yml"
DASHBOARD = REPO / "contrib" / "grafana" / "psagent.json"
FOR_IN_TEST = "3s"

SCENARIOS = {
    "healthy": Scenario("healthy", devices=2, water=2, slots=2, delay_s=0.3),
    # the rule asks for a whole window of readiness: this agent's gate opens before Prometheus first looks
    "no-demand": Scenario("no-demand", demand=0, early=True),
    "invalid": Scenario("invalid", corrupt=0),
    "late": Scenario("late", deadline_s=1.0, delay_s=1.2),
    # wedged before any device is granted, with fetched work waiting: Prometheus first looks once it is
    # so (the rule asks for a whole window of waiting work)
    "stalled": Scenario("stalled", devices=2, water=4, slots=4, stall=True, early=True),
    "market-errors": Scenario(
        "market-errors", faults="poll:500", retry_budget_s=0.3, extra={"error_backoff_max_s": 0.5}
    ),
}
# each rule, and the scenario made to fire it (others may fire it too: they are faulty as well)
MADE_FOR = {
    "PsagentNoProofInAnHour": "no-demand",
    "PsagentInvalidProof": "invalid",
    "PsagentGateClosed": "invalid",  # three proofs in a row that do not verify close the gate
    "PsagentDeadlineMarginLow": "late",
    "PsagentDeviceIdleWithWork": "stalled",
    "PsagentLoopErrorsRising": "market-errors",
    # targets that are no running psagent: a port nothing answers on (a dead agent) and Prometheus's own
    # metrics (something else on the port): psagent's own series cannot tell of either
    "PsagentDown": "dead",
    "PsagentReadyAbsent": "not-psagent",
}

# what an early scenario reaches before Prometheus first looks
EARLY = {
    "no-demand": ("the gate open", lambda a: a.metrics.ready._value.get() == 1),
    "stalled": ("both provers stuck and work fetched", lambda a: a.store.counts()[RequestState.PROVING] == 2
                and a.store.counts()[RequestState.FETCHED] >= 1),
}

pytestmark = pytest.mark.slow


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, url: str, others: dict[str, str] | None = None) -> None:
        self.url = url
        self.others = others or {}  # targets of the job that are not agents: target -> scenario

    def get(self, path: str, **params: Any) -> Any:
        q = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=10) as r:
                body = json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{path} {params}: {e.code} {e.read().decode()[:500]}") from None
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = at
        return self.get("/api/v1/query", **params)["result"]  # type: ignore[no-any-return]

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict[str, Any]]:
        return self.get("/api/v1/query_range", query=expr, start=start, end=end, step=step)["result"]  # type: ignore[no-any-return]


@pytest.fixture
def prometheus_binary() -> str:
    return binary_or_skip("prometheus", what="the distribution's `prometheus` binary", package="prometheus")


@pytest.fixture
def agents(challenge_pool: Any, tmp_path: Path) -> Iterator[dict[str, AgentThread]]:
    started: dict[str, AgentThread] = {}
    try:
        for name, s in SCENARIOS.items():
            started[name] = AgentThread(s, challenge_pool, tmp_path).serve()
            if s.early:
                started[name].run()
                what, reached = EARLY[name]
                wait_for(f"{name}: {what}", lambda a=started[name], r=reached: r(a), timeout=30)
        yield started
    finally:
        for a in started.values():
            a.stop()


def _rules_for_test(tmp_path: Path) -> tuple[Path, int]:
    """alerts.yml with every ``for:`` shortened to FOR_IN_TEST; the expressions are untouched."""
    text, n = re.subn(r"^(\s+for:\s*)\S+\s*$", rf"\g<1>{FOR_IN_TEST}", ALERTS.read_text(), flags=re.M)
    out = tmp_path / "alerts-test.yml"
    out.write_text(text)
    return out, n


@pytest.fixture
def prom(prometheus_binary: str, agents: dict[str, AgentThread], tmp_path: Path) -> Iterator[Prometheus]:
    rules, shortened = _rules_for_test(tmp_path)
    assert shortened >= 3
    config = {  # JSON is YAML: Prometheus reads it as its configuration file
        "global": {"scrape_interval": "500ms", "scrape_timeout": "400ms", "evaluation_interval": "500ms"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "psagent",
                "static_configs": [
                    {"targets": [a.target], "labels": {"scenario": name}} for name, a in agents.items()
                ],
            }
        ],
    }
    port = _free_port()
    others = {f"127.0.0.1:{_free_port()}": "dead", f"127.0.0.1:{port}": "not-psagent"}
    config["scrape_configs"][0]["static_configs"] += [  # type: ignore[index]
        {"targets": [target], "labels": {"scenario": name}} for target, name in others.items()
    ]
    (tmp_path / "prometheus.yml").write_text(json.dumps(config, indent=1))
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prometheus_binary,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    p = Prometheus(f"http://127.0.0.1:{port}", others)
    try:

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(
                    f"prometheus exited: {(tmp_path / 'prometheus.log').read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{p.url}/-/ready", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for("prometheus to be ready", ready, timeout=30)
        yield p
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_alerts_fire_where_made_to_and_the_dashboard_has_data(
    prom: Prometheus, agents: dict[str, AgentThread], tmp_path: Path
) -> None:
    t_start = time.time()
    healthy = agents["healthy"]
    # every agent scraped once before its loops start (its gate reads "starting"), so what they do next is a
    # change Prometheus sees (a counter's first value is no increase)
    wait_for(
        "every target scraped", lambda: len([r for r in prom.query("up == 1")]) == len(agents) + 1, timeout=20
    )
    rules = prom.get("/api/v1/rules")["groups"][0]["rules"]
    assert {r["name"] for r in rules} == set(MADE_FOR), "every rule of alerts.yml is loaded, and only those"
    for name, a in agents.items():
        if not SCENARIOS[name].early:
            a.run()
    scenario_of = {a.target: name for name, a in agents.items()} | prom.others
    seen: set[tuple[str, str]] = set()

    def fired() -> bool:
        for alert in prom.get("/api/v1/alerts")["alerts"]:
            if alert["state"] == "firing" and "instance" in alert["labels"]:
                seen.add((alert["labels"]["alertname"], scenario_of[alert["labels"]["instance"]]))
        return all((rule, scenario) in seen for rule, scenario in MADE_FOR.items())

    wait_for(
        lambda: f"every rule to fire for its scenario (seen: {sorted(seen)})", fired, timeout=60, every=0.5
    )
    assert healthy.accepted() >= 3  # a few proofs on the healthy agent meanwhile

    # the healthy agent: no rule fired at any time of the run (ALERTS keeps every evaluation's state)
    now = time.time()
    window = f"{math.ceil(now - t_start) + 5}s"
    quiet = prom.query(f'max_over_time(ALERTS{{alertstate="firing",instance="{healthy.target}"}}[{window}])')
    assert quiet == [], f"alerts fired for the healthy agent: {[r['metric'] for r in quiet]}"
    assert not [s for s in seen if s[1] == "healthy"]

    # every panel query and the instance variable return data for the healthy agent
    dashboard = json.loads(DASHBOARD.read_text())
    instances = prom.get("/api/v1/label/instance/values", **{"match[]": "psagent_build_info"})
    assert healthy.target in instances

    def for_healthy(expr: str) -> str:
        # a regex of the one target (its dots match themselves among others; the match is anchored)
        return expr.replace("$instance", healthy.target).replace("$__rate_interval", "5s")

    empty = []
    queries = 0
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            queries += 1
            expr = for_healthy(target["expr"])
            result = prom.query(expr) if target.get("instant") else prom.query_range(expr, t_start, now)
            values = [float(v) for s in result for _, v in s.get("values", [s.get("value")])]
            if not [v for v in values if not math.isnan(v)]:
                empty.append(f"{panel['title']}: {expr}")
    assert queries >= 25
    assert not empty, "panels without data:\n" + "\n".join(empty)

    _screenshot(prom, dashboard, t_start, now, tmp_path)


def _screenshot(prom: Prometheus, dashboard: dict[str, Any], t0: float, t1: float, tmp_path: Path) -> None:
    """The panels drawn from Prometheus's answers over every agent of the run (the dashboard's default: all
    instances), screenshotted by Chromium when it is installed."""
    from _panels import render

    def substitute(expr: str) -> str:
        return expr.replace("$instance", ".*").replace("$__rate_interval", "5s")

    html = render(
        dashboard,
        lambda e: prom.query_range(e, t0, t1),
        lambda e: prom.query(e, at=t1),
        substitute=substitute,
        t0=t0,
        t1=t1,
        caption=(
            f"contrib/grafana/psagent.json: each panel's query answered by a real Prometheus over a "
            f"{t1 - t0:.0f} s test run of six agents (one healthy, five faulty), drawn by "
            "tests/agent/_panels.py — not Grafana"
        ),
    )
    page = tmp_path / "dashboard.html"
    page.write_text(html)
    chromium = binary("chromium", "chromium-browser")
    if chromium is None:
        print("no chromium: the dashboard page is at", page)
        return
    shot = tmp_path / "dashboard.png"
    r = chromium_run(chromium, "--window-size=1216,1900", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000, r.stderr[-2000:]
    keep_screenshot(shot, "dashboard.png")
    print("dashboard screenshot:", shot)
