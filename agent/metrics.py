"""Prometheus metrics of the agent, in their own registry (no global state shared between agents or tests).

Names follow Prometheus conventions (``psagent_`` prefix, ``_total`` counters, ``_seconds`` histograms).
The queue gauge is refreshed from the store, so it is right after a restart too.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from agent.store import RequestState

__all__ = ["AgentMetrics"]

_STAGE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.queue = Gauge("psagent_requests", "Requests in the store by state", ["state"], registry=r)
        self.asks = Counter("psagent_asks_created_total", "Work asks created", registry=r)
        self.rate_limited = Counter(
            "psagent_asks_rate_limited_total", "Ask rounds ended by a 429", registry=r
        )
        self.proofs = Counter("psagent_proofs_total", "Proofs by outcome", ["outcome"], registry=r)
        self.stage_seconds = Histogram(
            "psagent_stage_seconds",
            "Seconds per pipeline stage",
            ["stage"],
            buckets=_STAGE_BUCKETS,
            registry=r,
        )
        self.paid = Counter("psagent_paid_attofil_total", "attoFIL paid by vouchers received", registry=r)
        self.cumulative = Gauge(
            "psagent_voucher_cumulative_attofil", "Latest voucher's cumulative amount", registry=r
        )
        self.ready = Gauge("psagent_ready", "1 when the readiness gate is open (asks allowed)", registry=r)
        self.gate = Gauge(
            "psagent_readiness_gate", "1 for the readiness gate's current state (warming, open, failed, …)",
            ["state"], registry=r,
        )
        self.clock_offset = Gauge(
            "psagent_market_clock_offset_seconds",
            "The market's clock minus ours, from its Date headers (signatures older than 60 s are refused)",
            registry=r,
        )
        self.errors = Counter("psagent_loop_errors_total", "Errors survived by a loop", ["loop"], registry=r)

    def set_queue(self, counts: dict[RequestState, int]) -> None:
        for state, n in counts.items():
            self.queue.labels(state=state.value).set(n)

    def serve(self, listen: str) -> None:
        """Expose /metrics on HOST:PORT (a daemon thread of prometheus_client)."""
        host, _, port = listen.rpartition(":")
        start_http_server(int(port), addr=host.strip("[]"), registry=self.registry)
