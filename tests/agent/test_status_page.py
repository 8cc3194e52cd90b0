"""The status page in a browser (the distribution's headless ``chromium``; skipped, saying why, when it is
not installed: ``.ci/run`` installs it): every figure the page shows equals ``/status``'s and the store's, and
a screenshot is kept under the test's output (and in $PSAGENT_SCREENSHOTS when set: the README's image).

The store holds a live run and a day of history: the agent (tests/agent/_opsview: built by the runtime, mock
market on loopback, the real AdmittedProver over a pipeline double on two simulated devices) proves a few
requests, one of which the market serves corrupt (a failure with its reason); it stops; 23 hours of earlier
proofs and vouchers are written through the store's own API with its clock set back; the agent starts again on
that store (a market with no work for it) and the page is read while it runs."""

from __future__ import annotations

import time
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _opsview import AgentThread, Scenario, binary_or_skip, chromium_run, keep_screenshot, wait_for

from agent.opsview.document import hour_buckets
from agent.opsview.page import fil
from agent.store import Payment, RequestState, SqliteStore

pytestmark = pytest.mark.slow


class _Figures(HTMLParser):
    """Every ``data-k`` element: its ``data-v`` and shown text; each chart's bars (``data-i``: ``data-v``)."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[str, list[tuple[str, str]]] = {}
        self.charts: dict[str, dict[int, str]] = {}
        self._open: list[tuple[str, str, list[str]]] = []  # tag, key, text parts
        self._chart: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg" and "data-k" in a:
            self._chart = a["data-k"]
            self.charts[self._chart] = {}
        elif tag == "rect" and self._chart is not None and "data-i" in a:
            self.charts[self._chart][int(a["data-i"])] = a["data-v"]
        elif "data-k" in a:
            self._open.append((tag, a["data-k"], []))
            self.figures.setdefault(a["data-k"], []).append((a["data-v"], ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._chart = None
        elif self._open and self._open[-1][0] == tag:
            _, key, text = self._open.pop()
            value, _ = self.figures[key][-1]
            self.figures[key][-1] = (value, "".join(text).strip())

    def handle_data(self, data: str) -> None:
        for _, _, text in self._open:
            text.append(data)


def _history(path: Path, *, now: float) -> int:
    """23 hours of earlier proofs (1 to 6 an hour) and their vouchers, through the store's API with its clock
    set back; voucher nonces continue after the live run's (vouchers are ordered by nonce). Returns the
    number of proofs."""
    t = [0.0]
    store = SqliteStore(path, clock=lambda: t[0])
    try:
        payments = store.payments()
        nonce = payments[-1].nonce if payments else 0
        cumulative = payments[-1].cumulative_amount if payments else 0
        n = 0
        for h, start in enumerate(hour_buckets(now)[:-1]):
            for j in range(1 + (h * 7) % 6):
                t[0] = start + 60 + 500 * j
                cid = f"bafkhistory{h:02d}x{j}"
                row = store.add_request(900_000 + n, cid, 900_000 + n, obtained_at=t[0], deadline=t[0] + 2700)
                assert row is not None
                store.store_data(row.row_id, b"history", "porep")
                claimed = store.claim("history")
                assert claimed is not None and claimed.row_id == row.row_id
                store.transition(
                    row.row_id, RequestState.PROVING, RequestState.COMPUTED, proof=b"p" * 192, owner="history"
                )
                t[0] += 90
                store.transition(row.row_id, RequestState.COMPUTED, RequestState.SUBMITTED, pow=False)
                nonce += 1
                amount = 5 * 10**15
                cumulative += amount
                assert store.record_payment(Payment(nonce, amount, cumulative, b"sig", cid, t[0]))
                n += 1
        return n
    finally:
        store.close()


def _from_store(path: Path, now: float) -> dict[str, Any]:
    """The page's figures computed here from the store's rows (not through agent.opsview.document)."""
    store = SqliteStore(path)
    try:
        rows, payments, counts = store.list_requests(), store.payments(), store.counts()
    finally:
        store.close()
    first = now - now % 3600 - 23 * 3600
    proofs = [0] * 24
    earned = [0] * 24
    for r in rows:
        if r.state is RequestState.SUBMITTED and first <= r.updated_at:
            proofs[int((r.updated_at - first) // 3600)] += 1
    for p in payments:
        if first <= p.received_at:
            earned[int((p.received_at - first) // 3600)] += p.amount
    failed = sorted((r for r in rows if r.state is RequestState.FAILED), key=lambda r: -r.updated_at)
    return {
        "counts": {s.value: n for s, n in counts.items()},
        "proofs": proofs,
        "earned": earned,
        "completed": sum(1 for r in rows if r.state is RequestState.SUBMITTED),
        "earned_total": payments[-1].cumulative_amount,
        "failures": [(r.request_cid, (r.last_error or "").splitlines()[0]) for r in failed],
    }


def test_the_page_shows_what_status_and_the_store_hold(challenge_pool: Any, tmp_path: Path) -> None:
    chromium = binary_or_skip(
        "chromium", "chromium-browser", what="the distribution's `chromium`", package="chromium"
    )
    store_path = tmp_path / "agent.db"
    live = (
        AgentThread(
            Scenario("live", devices=2, water=2, slots=2, delay_s=0.2, faults="fetch:corrupt#3"),
            challenge_pool,
            tmp_path,
            store=store_path,
        )
        .serve()
        .run()
    )
    try:
        wait_for(
            "4 proofs accepted and one failure",
            lambda: live.accepted() >= 4 and live.store.counts()[RequestState.FAILED] >= 1,
            timeout=60,
        )
        live.market.state.rules = replace(
            live.market.state.rules, demand_open=0
        )  # no more work: let it settle
        unfinished = (RequestState.QUEUED, RequestState.FETCHED, RequestState.PROVING, RequestState.COMPUTED)
        wait_for("no unfinished request", lambda: not live.store.list_requests(list(unfinished)), timeout=30)
    finally:
        live.stop()
    history = _history(store_path, now=time.time())
    again = AgentThread(
        Scenario("restarted", devices=2, demand=0), challenge_pool, tmp_path, store=store_path
    )
    again.serve().run()
    try:
        wait_for("the gate open", lambda: again.status()["gate"]["state"] == "open", timeout=30)
        for _ in range(3):  # read /status, the page and the store within one clock hour
            doc = again.status()
            r = chromium_run(chromium, "--dump-dom", again.url + "/")
            store = _from_store(store_path, doc["now"])
            if (time.time() - time.time() % 3600) == doc["now"] - doc["now"] % 3600:
                break
        assert r.returncode == 0 and "</html>" in r.stdout, r.stderr[-2000:]
        shot = tmp_path / "status-page.png"
        s = chromium_run(chromium, "--window-size=1280,1320", f"--screenshot={shot}", again.url + "/")
        assert shot.is_file() and shot.stat().st_size > 10_000, s.stderr[-2000:]
        keep_screenshot(shot, "status-page.png")
        print("status page screenshot:", shot)
    finally:
        again.stop()

    page = _Figures()
    page.feed(r.stdout)
    f = {k: v[0] for k, v in page.figures.items()}

    # the store, computed here
    assert store["completed"] >= history + 4 and store["counts"]["failed"] >= 1
    assert sum(store["proofs"]) == store["completed"]  # every proof of the run and the history is within 24 h
    # /status agrees with the store
    assert doc["requests"] == store["counts"]
    assert [h["proofs"] for h in doc["last_24h"]["hours"]] == store["proofs"]
    assert [int(h["earned_attofil"]) for h in doc["last_24h"]["hours"]] == store["earned"]
    assert doc["totals"]["proofs_completed"] == store["completed"]
    assert int(doc["totals"]["earned_attofil"]) == store["earned_total"]
    assert [(x["request_cid"], x["error"]) for x in doc["recent_failures"]] == store["failures"][:10]
    # the page agrees with both
    assert [int(page.charts["last_24h.proofs_per_hour"][i]) for i in range(24)] == store["proofs"]
    assert [int(page.charts["last_24h.earned_per_hour"][i]) for i in range(24)] == store["earned"]
    assert f["last_24h.proofs"] == (str(sum(store["proofs"])), str(sum(store["proofs"])))
    assert f["last_24h.earned_attofil"] == (str(sum(store["earned"])), fil(sum(store["earned"])))
    assert f["totals.proofs_completed"] == (str(store["completed"]),) * 2
    assert f["totals.earned_attofil"] == (str(store["earned_total"]), fil(store["earned_total"]))
    assert f["totals.proofs_failed"] == (str(store["counts"]["failed"]),) * 2
    for state, n in store["counts"].items():
        assert f[f"requests.{state}"] == (str(n), str(n))
    for i, (cid, error) in enumerate(store["failures"][:10]):
        assert f[f"recent_failures.{i}.request_cid"] == (cid, cid)
        assert f[f"recent_failures.{i}.error"] == (error, error)
    assert store["failures"][0][1].startswith("fetch:")  # the corrupt answer, with its one-line reason
    assert f["gate.state"] == ("open", "open") == (doc["gate"]["state"],) * 2
    assert f["price_attofil"] == (doc["price_attofil"], fil(doc["price_attofil"]))
    assert [d["device"] for d in doc["devices"]] == ["0", "1"]
    for d in doc["devices"]:
        assert f[f"devices.{d['device']}.jobs_done"] == (str(d["jobs_done"]),) * 2
        assert f[f"devices.{d['device']}.busy_seconds"][0] == str(d["busy_seconds"])
    assert [v for v, _ in page.figures["loaded_parameters"]] == [
        p["proof_type"] for p in doc["loaded_parameters"]
    ]
