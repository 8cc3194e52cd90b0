"""The status document: what ``/status`` serves and the status page (:mod:`agent.opsview.page`) shows, the
running agent's view in one JSON document.

Shaped like cuzk's GetStatus (devices, loaded parameters, queues, totals, uptime) with the provider's part on
top: the readiness gate, the request queue by state, asks and the price, proofs and earnings per hour over
the last 24 hours, recent failures with their one-line reasons, and each loop's last error. Lifetime
figures (proofs completed, earnings, failures, per-hour series) are read from the store, so they survive
restarts and agree with ``psagent status`` (the status report, :mod:`agent.opsview.report`); figures since
this process started come from the metrics.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from agent.opsview.gate import Gate
from agent.opsview.metrics import AgentMetrics
from agent.opsview.page import render
from agent.store import ACTIVE_STATES, AskState, RequestState, Store

__all__ = ["Gated", "HOURS", "StatusView", "hour_buckets"]

HOURS = 24
RECENT_FAILURES = 10


class Gated(Protocol):
    """What the document reads of the running agent (``agent.service.Agent``): its readiness gate now."""

    def gate(self) -> Gate: ...


def hour_buckets(now: float, hours: int = HOURS) -> list[float]:
    """The starts of the last ``hours`` clock hours, oldest first; the last is the hour now running."""
    this_hour = now - now % 3600
    return [this_hour - 3600 * (hours - 1 - i) for i in range(hours)]


class StatusView:
    """The document behind ``/status`` and ``/``: ``store`` and ``metrics`` always, the agent once it is built
    (:meth:`attach`: until then the gate reads ``starting``)."""

    def __init__(
        self,
        store: Store,
        metrics: AgentMetrics,
        *,
        price_attofil: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.price_attofil = price_attofil
        self.clock = clock
        self.agent: Gated | None = None

    def attach(self, agent: Gated) -> None:
        self.agent = agent

    def gate(self) -> Gate | None:
        return self.agent.gate() if self.agent is not None else None

    def document(self) -> dict[str, Any]:
        now = self.clock()
        doc = self.metrics.snapshot()
        gate = self.gate()
        doc["now"] = now
        doc["gate"] = (
            {"state": gate.state, "reason": gate.reason, "since": gate.since, "ready": gate.open}
            if gate is not None
            else {"state": "starting", "reason": "", "since": doc["started_at"], "ready": False}
        )
        counts = self.store.counts()
        rows = self.store.list_requests()
        payments = self.store.payments()
        asks = self.store.asks()
        doc["requests"] = {s.value: counts[s] for s in RequestState}
        doc["queues"] = _queues(rows)
        unfinished = [r.obtained_at for r in rows if r.state in ACTIVE_STATES]
        doc["oldest_unfinished_s"] = round(now - min(unfinished), 1) if unfinished else None
        doc["asks"] = {s.value: sum(1 for a in asks if a.state is s) for s in AskState}
        doc["price_attofil"] = str(self.price_attofil) if self.price_attofil is not None else None
        submitted = [r for r in rows if r.state is RequestState.SUBMITTED]
        doc["totals"] = {
            "proofs_completed": len(submitted),
            "proofs_paid": sum(1 for r in submitted if not r.pow),
            "proofs_failed": counts[RequestState.FAILED],
            "proofs_gone": counts[RequestState.GONE],
            "vouchers": len(payments),
            "earned_attofil": str(payments[-1].cumulative_amount if payments else 0),
            "last_voucher_nonce": payments[-1].nonce if payments else None,
        }
        starts = hour_buckets(now)
        proofs = [0] * HOURS
        earned = [0] * HOURS
        for r in submitted:
            i = _bucket(r.updated_at, starts)
            if i is not None:
                proofs[i] += 1
        for p in payments:
            i = _bucket(p.received_at, starts)
            if i is not None:
                earned[i] += p.amount
        doc["last_24h"] = {
            "proofs": sum(proofs),
            "earned_attofil": str(sum(earned)),
            "hours": [
                {"start": s, "proofs": n, "earned_attofil": str(a)}
                for s, n, a in zip(starts, proofs, earned, strict=True)
            ],
        }
        failed = sorted(
            (r for r in rows if r.state is RequestState.FAILED), key=lambda r: r.updated_at, reverse=True
        )
        doc["recent_failures"] = [
            {
                "request_cid": r.request_cid,
                "kind": r.kind,
                "at": r.updated_at,
                "error": (r.last_error or "").splitlines()[0] if r.last_error else "",
            }
            for r in failed[:RECENT_FAILURES]
        ]
        return doc

    def page(self) -> str:
        return render(self.document())


def _bucket(t: float, starts: list[float]) -> int | None:
    if t < starts[0] or t >= starts[-1] + 3600:
        return None
    return int((t - starts[0]) // 3600)


def _queues(rows: list[Any]) -> list[dict[str, Any]]:
    """Unfinished work per kind, as cuzk's QueueStatus (pending, in progress) plus proofs waiting to be
    submitted; requests not yet fetched have no kind yet (``""``)."""
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.state not in ACTIVE_STATES:
            continue
        q = out.setdefault(r.kind, {"proof_kind": r.kind, "pending": 0, "in_progress": 0, "computed": 0})
        if r.state in (RequestState.QUEUED, RequestState.FETCHED):
            q["pending"] += 1
        elif r.state is RequestState.PROVING:
            q["in_progress"] += 1
        else:
            q["computed"] += 1
    return [out[k] for k in sorted(out)]
