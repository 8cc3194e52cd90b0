"""contrib/prometheus/alerts.yml and the dashboard's queries under ``promtool test rules`` (Prometheus's own
unit-test runner: series written out minute by minute, the rules evaluated over them). Where the live test
(test_prometheus.py) shows each rule firing against running agents, this one covers what no running agent can
show: an agent that is dead for an hour, and a dashboard over several hosts. Skipped, saying why, without
promtool (Debian's ``prometheus`` package ships it; .ci/run installs that)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _opsview import binary_or_skip

REPO = Path(__file__).resolve().parents[2]
ALERTS = REPO / "contrib" / "prometheus" / "alerts.yml"
DASHBOARD = REPO / "contrib" / "grafana" / "psagent.json"


@pytest.fixture
def promtool() -> str:
    what = "the distribution's `prometheus` package (which ships promtool)"
    return binary_or_skip("promtool", what=what, package="prometheus")


def _run(promtool: str, tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    spec = {"rule_files": [str(ALERTS)], "evaluation_interval": "1m", "tests": tests}
    path = tmp_path / "alerts_test.yml"
    path.write_text(json.dumps(spec, indent=1))  # JSON is YAML
    return subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120)


def _healthy(instance: str) -> list[dict[str, str]]:
    """The series of an agent up with its gate open (what every rule but the dead-agent ones reads)."""
    labels = f'job="psagent", instance="{instance}"'
    return [
        {"series": f"up{{{labels}}}", "values": "1x90"},
        {"series": f"psagent_ready{{{labels}}}", "values": "1x90"},
        {"series": f'psagent_submissions_total{{{labels}, kind="porep", outcome="accepted"}}',
         "values": "0+1x90"},
    ]


def test_the_rules_file_checks(promtool: str) -> None:
    r = subprocess.run([promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_dead_agent_pages(promtool: str, tmp_path: Path) -> None:
    """``up{job="psagent"}`` 0 for an hour (a crash, or an exit 2 the unit leaves down by design) fired no
    rule: every rule read psagent's own series, which a dead agent no longer has. PsagentDown fires after
    its 5 minutes; a healthy agent beside it fires nothing."""
    dead = 'job="psagent", instance="gpu-1:9477"'
    tests = [{
        "interval": "1m",
        "input_series": [{"series": f"up{{{dead}}}", "values": "0x60"}, *_healthy("gpu-2:9477")],
        "alert_rule_test": [
            {"eval_time": "3m", "alertname": "PsagentDown", "exp_alerts": []},  # not yet: its for: 5m
            {
                "eval_time": "60m",
                "alertname": "PsagentDown",
                "exp_alerts": [{
                    "exp_labels": {"severity": "page", "job": "psagent", "instance": "gpu-1:9477"},
                    "exp_annotations": {
                        "summary": "gpu-1:9477: psagent is down (its metrics do not answer)",
                        "description": "Prometheus cannot scrape the agent for 5 minutes. systemctl status "
                        "psagent; journalctl -u psagent (an exit status of 2 is a configuration error: fix "
                        "it, the unit does not restart it).",
                    },
                }],
            },
            {"eval_time": "60m", "alertname": "PsagentReadyAbsent", "exp_alerts": []},  # gpu-2 reports
            {"eval_time": "60m", "alertname": "PsagentGateClosed", "exp_alerts": []},
        ],
    }]
    r = _run(promtool, tmp_path, tests)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_agent_reporting_pages(promtool: str, tmp_path: Path) -> None:
    """Every agent gone with its targets (the scrape configuration lost them: up is absent too), or a target
    that answers without psagent's series: PsagentReadyAbsent."""
    other = 'job="psagent", instance="gpu-3:9477"'
    tests = [
        {
            "interval": "1m",
            "input_series": [{"series": 'some_other_metric{job="node"}', "values": "1x60"}],
            "alert_rule_test": [{
                "eval_time": "30m",
                "alertname": "PsagentReadyAbsent",
                "exp_alerts": [{
                    "exp_labels": {"severity": "page", "job": "psagent"},
                    "exp_annotations": {
                        "summary": "no psagent reports psagent_ready",
                        "description": "psagent_ready is absent for 10 minutes: no agent is scraped (check "
                        "the scrape configuration and the hosts), or the target is not psagent.",
                    },
                }],
            }],
        },
        {
            "interval": "1m",
            "input_series": [{"series": f"up{{{other}}}", "values": "1x60"}, *_healthy("gpu-2:9477")],
            "alert_rule_test": [
                {
                    "eval_time": "30m",
                    "alertname": "PsagentReadyAbsent",
                    "exp_alerts": [{
                        "exp_labels": {"severity": "page", "job": "psagent", "instance": "gpu-3:9477"},
                        "exp_annotations": {
                            "summary": "gpu-3:9477: no psagent reports psagent_ready",
                            "description": "psagent_ready is absent for 10 minutes: no agent is scraped "
                            "(check the scrape configuration and the hosts), or the target is not psagent.",
                        },
                    }],
                },
                {"eval_time": "30m", "alertname": "PsagentDown", "exp_alerts": []},
            ],
        },
    ]
    r = _run(promtool, tmp_path, tests)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_device_memory_panel_is_per_host(promtool: str, tmp_path: Path) -> None:
    """Two hosts with a GPU 0 each: the panel drew one line per device label, the two hosts' memory summed
    into it. Each of its queries (the dashboard's own text, ``$instance`` = all) answers per host and
    device."""
    dashboard = json.loads(DASHBOARD.read_text())
    panel = next(p for p in dashboard["panels"] if p.get("title") == "Device memory")
    series = []
    for key, gib in (("reserved", 3), ("budget", 70), ("peak", 5)):
        for host, scale in (("gpu-1:9477", 1), ("gpu-2:9477", 2)):
            labels = f'job="psagent", instance="{host}", device="0"'
            series.append({"series": f"psagent_device_memory_{key}_bytes{{{labels}}}",
                           "values": f"{gib * scale * 2**30}x10"})
    tests = [{
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [
            {
                "expr": target["expr"].replace("$instance", ".*"),
                "eval_time": "5m",
                "exp_samples": [
                    {"labels": f'{{device="0", instance="{host}"}}', "value": gib * scale * 2**30}
                    for host, scale in (("gpu-1:9477", 1), ("gpu-2:9477", 2))
                ],
            }
            for target, gib in zip(panel["targets"], (3, 70, 5), strict=True)
        ],
    }]
    r = _run(promtool, tmp_path, tests)
    assert r.returncode == 0, r.stdout + r.stderr
    assert all("{{instance}}" in t["legendFormat"] for t in panel["targets"])
