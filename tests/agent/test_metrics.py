"""The operator's view (agent.opsview: metrics, exporter, document, page) without outside binaries: what the
prover and the service record (against the store they wrote), the device ledger read live, the deadline
margin, the /status document's hours and failures, the listener's three pages, and the page's escaping."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest
from _opsview import GIB, PROOF_TYPE, AgentThread, Scenario, StandInPipeline, wait_for  # tests/agent
from _standin import parsed_only

from agent.opsview.document import StatusView, hour_buckets
from agent.opsview.metrics import AgentMetrics, DeviceLedger, ProverMetrics
from agent.opsview.page import fil, render
from agent.proving.prover import AdmittedProver
from agent.store import Payment, RequestState, SqliteStore


def _value(m: ProverMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


@pytest.fixture
def work(work_bytes: bytes) -> Any:
    return parsed_only(work_bytes)


def _prover(metrics: ProverMetrics, **kw: Any) -> AdmittedProver:
    return AdmittedProver(
        StandInPipeline(2, delay_s=0.01, **kw), accepted=(PROOF_TYPE,), accepted_update=(),  # type: ignore[arg-type]
        metrics=metrics, device_budget_bytes=8 * GIB,
    )


def test_the_prover_records_proofs_partitions_devices_and_parameters(work: Any) -> None:
    m = ProverMetrics()
    prover = _prover(m)
    assert _value(m, "psagent_device_memory_budget_bytes", device="0") == 8 * GIB
    prover.warm_up()
    assert _value(m, "psagent_params_loaded", proof_type=PROOF_TYPE, kind="porep") == 1
    assert _value(m, "psagent_device_memory_budget_bytes", device="1") == 7 * GIB  # the resident key's 1 GiB
    proven = anyio.run(prover.prove, work, "job-1")
    assert proven.report.ok
    assert _value(m, "psagent_proofs_total", kind="porep", outcome="verified") == 1
    assert _value(m, "psagent_proof_seconds_count", kind="porep") == 1
    for stage in ("witness", "groth16", "verify"):  # one observation per partition and stage
        assert _value(m, "psagent_partition_seconds_count", kind="porep", stage=stage) == work.partitions
    devices = {d["device"]: d for d in m.devices.snapshot()}
    assert sum(d["jobs_done"] for d in devices.values()) == 1
    used = next(d for d in devices.values() if d["jobs_done"])
    assert used["busy_seconds"] >= 0.01 and used["memory_reserved_bytes"] == 0 and not used["busy"]
    assert used["memory_peak_bytes"] == GIB  # the double reports half of the 2 GiB it was granted
    assert _value(m, "psagent_device_busy_seconds_total", device=used["device"]) == used["busy_seconds"]

    bad = _prover(ProverMetrics(), corrupt=0)
    assert not anyio.run(bad.prove, work, "job-2").report.ok
    assert _value(bad.metrics, "psagent_proofs_total", kind="porep", outcome="invalid") == 1  # type: ignore[arg-type]


def test_a_prover_fault_is_an_error_outcome(work: Any) -> None:
    m = ProverMetrics()
    prover = _prover(m)

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

    prover.pipeline.prove = boom  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        anyio.run(prover.prove, work, "job-3")
    assert _value(m, "psagent_proofs_total", kind="porep", outcome="error") == 1
    assert all(d["jobs_done"] == 1 or d["jobs_done"] == 0 for d in m.devices.snapshot())
    assert sum(d["memory_reserved_bytes"] for d in m.devices.snapshot()) == 0  # the grant went back


def test_the_device_ledger_counts_a_running_job_while_it_runs() -> None:
    now = [100.0]
    ledger = DeviceLedger(clock=lambda: now[0])
    ledger.add("0", name="sim", backend="cuda", total_bytes=80 * GIB, budget_bytes=70 * GIB)
    with ledger.busy("0", "job-a", "snap", reserved_bytes=5 * GIB):
        now[0] += 30
        (d,) = ledger.snapshot()
        assert d["busy"] and d["busy_seconds"] == 30 and d["current_proof_kind"] == "snap"
        assert d["current_job_id"] == "job-a" and d["memory_reserved_bytes"] == 5 * GIB
    now[0] += 100  # idle time is not busy time
    (d,) = ledger.snapshot()
    assert d["busy_seconds"] == 30 and d["jobs_done"] == 1 and d["memory_reserved_bytes"] == 0


def test_the_deadline_margin_of_accepted_proofs_only() -> None:
    m = AgentMetrics()
    m.submitted("porep", "accepted", obtained_at=1000.0, deadline=1000.0 + 2700, now=1000.0 + 2700 - 135)
    m.submitted("snap", "accepted", obtained_at=0.0, deadline=100.0, now=150.0)  # late: no margin left
    m.submitted("porep", "rejected", obtained_at=0.0, deadline=100.0, now=150.0)
    assert _value(m, "psagent_deadline_margin_ratio_bucket", kind="porep", le="0.05") == 1  # 135/2700
    assert _value(m, "psagent_deadline_margin_ratio_bucket", kind="porep", le="0.0") == 0
    assert _value(m, "psagent_deadline_margin_ratio_bucket", kind="snap", le="0.0") == 1
    assert _value(m, "psagent_deadline_margin_seconds_sum", kind="porep") == 135
    assert _value(m, "psagent_deadline_margin_ratio_count", kind="porep") == 1  # the rejection has none
    assert _value(m, "psagent_submissions_total", kind="porep", outcome="rejected") == 1


def test_status_hours_failures_and_queues_from_the_store(tmp_path: Path) -> None:
    now = 1_800_000_000.0 + 1234.0  # 20 min 34 s into a clock hour
    starts = hour_buckets(now)
    t = [0.0]
    store = SqliteStore(tmp_path / "s.db", clock=lambda: t[0])

    def proof(at: float, n: int) -> None:
        t[0] = at
        row = store.add_request(n, f"bafy{n}", n, obtained_at=at, deadline=at + 2700)
        assert row is not None
        store.store_data(row.row_id, b"x", "porep")
        assert store.claim("o") is not None
        store.transition(row.row_id, RequestState.PROVING, RequestState.COMPUTED, proof=b"p", owner="o")
        store.transition(row.row_id, RequestState.COMPUTED, RequestState.SUBMITTED, pow=False)
        store.record_payment(Payment(n, 10 * n, 5 * n * (n + 1), b"s", f"bafy{n}", at))

    proof(starts[0], 1)  # the first instant of the oldest hour shown
    proof(starts[0] - 0.001, 2)  # just before it: not shown
    proof(starts[-1] + 5, 3)  # the running hour
    t[0] = now - 60
    for i, error in enumerate(["check: a\nsecond line", "fetch: <b>corrupt</b>"]):
        row = store.add_request(10 + i, f"bafybad{i}", 10 + i, obtained_at=t[0])
        assert row is not None
        t[0] += 1
        store.transition(row.row_id, RequestState.QUEUED, RequestState.FAILED, error=error)
    row = store.add_request(20, "bafyqueued", 20, obtained_at=now - 90)
    row2 = store.add_request(21, "bafyfetched", 21, obtained_at=now - 30)
    assert row is not None and row2 is not None
    store.store_data(row2.row_id, b"x", "snap")
    m = AgentMetrics()
    doc = StatusView(store, m, price_attofil=5 * 10**15, clock=lambda: now).document()
    store.close()
    hours = doc["last_24h"]["hours"]
    assert [h["start"] for h in hours] == starts and len(hours) == 24
    assert hours[0]["proofs"] == 1 and hours[-1]["proofs"] == 1 and doc["last_24h"]["proofs"] == 2
    assert hours[0]["earned_attofil"] == "10" and hours[-1]["earned_attofil"] == "30"
    assert doc["totals"]["proofs_completed"] == 3 and doc["totals"]["earned_attofil"] == str(5 * 3 * 4)
    assert [(f["request_cid"], f["error"]) for f in doc["recent_failures"]] == [
        ("bafybad1", "fetch: <b>corrupt</b>"), ("bafybad0", "check: a")  # newest first, one line each
    ]
    assert doc["queues"] == [
        {"proof_kind": "", "pending": 1, "in_progress": 0, "computed": 0},
        {"proof_kind": "snap", "pending": 1, "in_progress": 0, "computed": 0},
    ]
    assert doc["oldest_unfinished_s"] == 90.0 and doc["gate"]["state"] == "starting"
    page = render(doc)
    assert "fetch: &lt;b&gt;corrupt&lt;/b&gt;" in page and "<b>corrupt</b>" not in page
    assert "http://" not in page and "https://" not in page and "<script" not in page  # no outside asset
    assert fil(5 * 10**15) == "0.005 FIL" and fil(0) == "0 FIL" and fil(10**18) == "1 FIL"


def test_the_listener_serves_metrics_status_and_the_page() -> None:
    m = AgentMetrics()
    calls = {"n": 0}

    def status() -> dict[str, Any]:
        calls["n"] += 1
        return {"ok": True, "n": calls["n"]}

    def page() -> str:
        if calls["n"] >= 1:
            raise RuntimeError("store locked")
        return "<html>page</html>"

    ex = m.serve("127.0.0.1:0", status=status, page=page)
    host, port = ex.address
    url = f"http://{host}:{port}"
    try:
        assert host == "127.0.0.1"
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            text = r.read().decode()
            assert r.headers["Content-Type"].startswith("text/plain")
        assert "psagent_build_info{" in text and "psagent_readiness_gate" in text
        req = urllib.request.Request(url + "/metrics", headers={"Accept": "application/openmetrics-text"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.headers["Content-Type"].startswith("application/openmetrics-text")
        with urllib.request.urlopen(url + "/status", timeout=5) as r:
            assert json.loads(r.read()) == {"ok": True, "n": 1}
        with pytest.raises(urllib.error.HTTPError) as e:  # a failing page says why, once, and the rest lives
            urllib.request.urlopen(url + "/", timeout=5)
        with e.value:
            assert e.value.code == 500 and b"store locked" in e.value.read()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + "/nope", timeout=5)
        with e.value:
            assert e.value.code == 404
        head = urllib.request.Request(url + "/status", method="HEAD")
        with urllib.request.urlopen(head, timeout=5) as r:
            assert r.read() == b"" and int(r.headers["Content-Length"]) > 0
        with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
            assert r.status == 200
    finally:
        ex.stop()


@pytest.mark.slow
def test_the_service_records_what_the_store_holds(challenge_pool: Any, tmp_path: Path) -> None:
    """A runtime-built agent against the mock market: its counters agree with the rows and vouchers it
    stored, and every loop's error series exists from the start."""
    a = AgentThread(Scenario("count", devices=2, water=2, slots=2, delay_s=0.05), challenge_pool, tmp_path)
    a.serve().run()
    try:
        wait_for("3 proofs accepted", lambda: a.accepted() >= 3, timeout=60)
        a.market.state.rules = replace(a.market.state.rules, demand_open=0)
        active = (RequestState.QUEUED, RequestState.FETCHED, RequestState.PROVING, RequestState.COMPUTED)
        wait_for("the queue empty", lambda: not a.store.list_requests(list(active)), timeout=30)
        time.sleep(0.3)
        rows = a.store.list_requests()
        payments = a.store.payments()
        m = a.metrics
        submitted = [r for r in rows if r.state is RequestState.SUBMITTED]
        assert a.accepted() == len(submitted) >= 3
        assert _value(m, "psagent_paid_attofil_total") == sum(p.amount for p in payments)
        assert _value(m, "psagent_voucher_cumulative_attofil") == payments[-1].cumulative_amount
        assert _value(m, "psagent_deadline_margin_ratio_count", kind="porep") == len(submitted)
        assert _value(m, "psagent_requests_added_total") == len(rows)
        assert _value(m, "psagent_ask_price_attofil") == 5 * 10**15
        assert _value(m, "psagent_proofs_total", kind="porep", outcome="verified") == len(submitted)
        assert sum(d["jobs_done"] for d in m.devices.snapshot()) == len(submitted)
        assert _value(m, "psagent_queue_depth", state="submitted") == len(submitted)
        for loop in ("requester", "fetcher", "submitter", "warm_up", "prover0", "prover1"):
            assert _value(m, "psagent_loop_errors_total", loop=loop) == 0
        assert _value(m, "psagent_ready") == 1
    finally:
        a.stop()
