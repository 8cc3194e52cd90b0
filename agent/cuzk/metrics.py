"""The cuzk server's Prometheus metrics (``GetMetrics``): the job table's series beside the prover's
(agent.opsview.metrics.ProverMetrics, role "engine": proofs by kind and outcome, partition stages, devices,
parameters, build) in one registry, so the dashboard's prover panels read the server as they read the agent.
The series keep the operator's word (``psagent_engine_*``, like ``psagent engine serve``).

Counters move when a job ends; the gauges (queue, running, open, uptime) are read from the job table when the
text is rendered, so they are never stale.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["CuzkMetrics"]

_SECONDS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600)


class CuzkMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        """``registry``: the prover's (its series then come out of ``text`` too); a new one by default."""
        self.registry = r = registry if registry is not None else CollectorRegistry()
        self.jobs = Counter(
            "psagent_engine_jobs_total", "Jobs ended, by proof kind and status", ["proof_kind", "status"],
            registry=r,
        )
        self.partitions = Counter(
            "psagent_engine_partitions_verified_total", "Partition proofs pairing-checked before answering",
            ["proof_kind"], registry=r,
        )
        self.attached = Counter(
            "psagent_engine_calls_attached_total",
            "Calls that joined a running job (same request id and payload)",
            registry=r,
        )
        self.refused = Counter(
            "psagent_engine_calls_refused_total", "Calls refused before any work, by reason", ["reason"],
            registry=r,
        )
        self.seconds = Histogram(
            "psagent_engine_proof_seconds", "Seconds from submission to answer of completed jobs",
            ["proof_kind"],
            buckets=_SECONDS, registry=r,
        )
        self.queue_wait = Histogram(
            "psagent_engine_queue_wait_seconds", "Seconds a job waited for a device slot", ["proof_kind"],
            buckets=_SECONDS, registry=r,
        )
        self.queued = Gauge("psagent_engine_jobs_queued", "Jobs waiting for a device slot", ["proof_kind"],
                            registry=r)
        self.running = Gauge("psagent_engine_jobs_running", "Jobs proving now", ["proof_kind"], registry=r)
        self.max_pending = Gauge("psagent_engine_max_pending", "Open jobs allowed (engine.max_pending)",
                                 registry=r)
        self.uptime = Gauge("psagent_engine_uptime_seconds", "Seconds since the engine started", registry=r)

    def text(self) -> str:
        return generate_latest(self.registry).decode()
