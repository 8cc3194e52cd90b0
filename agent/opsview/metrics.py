"""Prometheus metrics of the agent and of the cuzk server, each process in its own registry (no global
state shared between agents or tests).

Named like Curio's (``curio_psvc_proofshare_*``, ``curio_harmonytask_*``) and cuzk's
(``cuzk_proofs_completed``, ``cuzk_queue_depth``) where the meaning is the same, under ``psagent_``
(``_total`` counters, ``_seconds`` histograms, ``_bytes`` / ``_attofil`` units in the name). Two sets:

* :class:`ProverMetrics`: what a prover knows, recorded by ``agent.proving.prover.AdmittedProver`` when it
  is given one: proofs by kind and outcome, whole-proof and per-partition stage durations, each device (busy
  time, jobs, memory), parameters loaded, the queue depth, build info and start time. The cuzk server
  exports the same set; :meth:`ProverMetrics.snapshot` is the prover half of ``/status`` (cuzk's GetStatus:
  devices, loaded parameters, totals, uptime).
* :class:`AgentMetrics`: the provider on top (recorded by ``agent.service``): requests matched, asks and 429s,
  the price asked, submissions by outcome, the deadline margin of each submitted proof, earnings, the
  readiness gate, loop errors and the last one per loop, per-stage durations.

The queue gauge is refreshed from the store, so it is right after a restart too. Label values are bounded:
kinds (porep, snap), outcomes, stage and loop names, device labels, proof type names.
"""

from __future__ import annotations

import logging
import platform
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from agent.opsview.exporter import Exporter
from agent.store import RequestState

log = logging.getLogger(__name__)

__all__ = [
    "AgentMetrics",
    "DeviceLedger",
    "KINDS",
    "PROOF_OUTCOMES",
    "ProverMetrics",
    "QueueDepth",
    "SUBMIT_OUTCOMES",
    "device_label",
]

KINDS = ("porep", "snap")
# computed proofs: every partition verified / a partition failed its pairing check / the prover raised /
# not checked (verify_before_submit = false under its debug switch) / stopped by its caller (the cuzk server's
# CancelProof, or a Prove call gone away)
PROOF_OUTCOMES = ("verified", "invalid", "error", "unchecked", "cancelled")
# the market's answer to a submission: accepted (a 409 after our own lost answer counts: the market has it),
# rejected (refused), gone (410, or the deadline passed while the market kept failing)
SUBMIT_OUTCOMES = ("accepted", "rejected", "gone")

_STAGE_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_PARTITION_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300)
_PROOF_BUCKETS = (0.1, 0.5, 1, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 2700)
# the fraction of a request's deadline window left when its proof was accepted; 0.1 is the alert's line
_MARGIN_RATIO_BUCKETS = (0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0)
_MARGIN_SECONDS_BUCKETS = (0, 30, 60, 120, 300, 600, 900, 1200, 1800, 2400, 2700)


def _version() -> str:
    """The installed distribution's version (what ``pip install`` put here)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("psagent")
    except PackageNotFoundError:
        return "unknown"


def _by_kind_and_outcome(name: str, doc: str, outcomes: Iterable[str], r: CollectorRegistry) -> Counter:
    """A counter by kind and outcome with every (kind, outcome) series present from the start, at 0."""
    counter = Counter(name, doc, ["kind", "outcome"], registry=r)
    for kind in KINDS:
        for outcome in outcomes:
            counter.labels(kind=kind, outcome=outcome)
    return counter


def device_label(index: int) -> str:
    """A device's label value: its CUDA index, or ``cpu`` for the CPU backend's one slot (index -1)."""
    return "cpu" if index < 0 else str(index)


@dataclass
class _Device:
    label: str
    name: str
    backend: str
    total_bytes: int = 0
    budget_bytes: int = 0
    reserved_bytes: int = 0
    peak_bytes: int = 0  # the device memory in use at the peak of its last proof (0: not measured)
    busy_s: float = 0.0  # ended jobs; the running ones are added when read
    jobs_done: int = 0
    running: dict[str, tuple[float, str]] = field(default_factory=dict)  # job id -> (monotonic start, kind)
    progress: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)  # job id -> its stage


class DeviceLedger(Collector):
    """Each proving device's busy time (a job holding its admission slot), jobs and memory, read live: a
    scrape during a proof of minutes counts the minutes so far, so an idle device is told from a busy one
    without waiting for the proof to end."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._devices: dict[str, _Device] = {}
        self._lock = threading.Lock()

    def add(
        self, label: str, *, name: str, backend: str, total_bytes: int = 0, budget_bytes: int = 0
    ) -> None:
        with self._lock:
            d = self._devices.setdefault(label, _Device(label, name, backend))
            d.name, d.backend, d.total_bytes, d.budget_bytes = name, backend, total_bytes, budget_bytes

    def set_budget(self, label: str, budget_bytes: int) -> None:
        with self._lock:
            self._devices[label].budget_bytes = budget_bytes

    @contextmanager
    def busy(
        self,
        label: str,
        job_id: str,
        kind: str,
        reserved_bytes: int = 0,
        *,
        progress: Callable[[], dict[str, Any]] | None = None,
    ) -> Iterator[None]:
        """The device holds ``job_id`` for the block (its admission slot and ``reserved_bytes``);
        ``progress``: where the job is (``agent.opsview.progress.StageProgress.snapshot``: stage, time
        left)."""
        with self._lock:
            d = self._devices[label]
            d.running[job_id] = (self._clock(), kind)
            d.reserved_bytes += reserved_bytes
            if progress is not None:
                d.progress[job_id] = progress
        try:
            yield
        finally:
            with self._lock:
                d.progress.pop(job_id, None)
                started, _ = d.running.pop(job_id)
                d.busy_s += self._clock() - started
                d.reserved_bytes -= reserved_bytes
                d.jobs_done += 1

    def peak(self, label: str, nbytes: int | None) -> None:
        if nbytes is not None:
            with self._lock:
                self._devices[label].peak_bytes = int(nbytes)

    def snapshot(self) -> list[dict[str, Any]]:
        """The devices as ``/status`` shows them (cuzk's GPUStatus and more)."""
        now = self._clock()
        with self._lock:
            out = []
            for d in self._devices.values():
                running = sorted(d.running.items(), key=lambda kv: kv[1][0])
                where = d.progress.get(running[0][0]) if running else None
                out.append(
                    {
                        "device": d.label,
                        "name": d.name,
                        "backend": d.backend,
                        "busy": bool(running),
                        "busy_seconds": round(d.busy_s + sum(now - t for _, (t, _k) in running), 3),
                        "jobs_running": len(running),
                        "jobs_done": d.jobs_done,
                        "current_job_id": running[0][0] if running else "",
                        "current_proof_kind": running[0][1][1] if running else "",
                        # the running proof's stage and time left (None: no proof, or no estimate yet)
                        "current_progress": _progress(where),
                        "memory_total_bytes": d.total_bytes,
                        "memory_budget_bytes": d.budget_bytes,
                        "memory_reserved_bytes": d.reserved_bytes,
                        "memory_peak_bytes": d.peak_bytes,
                    }
                )
            return out

    def collect(self) -> Iterable[Any]:
        devices = self.snapshot()
        busy = CounterMetricFamily(
            "psagent_device_busy_seconds",
            "Seconds a device held a proving job (running jobs counted so far)",
            labels=["device"],
        )
        jobs = GaugeMetricFamily("psagent_device_jobs", "Proving jobs running on a device", labels=["device"])
        done = CounterMetricFamily(
            "psagent_device_jobs_done", "Proving jobs a device finished", labels=["device"]
        )
        info = GaugeMetricFamily(
            "psagent_device_info",
            "A proving device (1): its name and backend",
            labels=["device", "name", "backend"],
        )
        memory = {
            key: GaugeMetricFamily(f"psagent_device_memory_{key}_bytes", text, labels=["device"])
            for key, text in (
                ("total", "Device memory (0: the CPU backend or the simulator, no figure)"),
                ("budget", "Device bytes admission may reserve for proofs (resident keys taken off)"),
                ("reserved", "Device bytes reserved by the running proofs"),
                ("peak", "Device memory in use at the peak of the device's last proof (0: not measured)"),
            )
        }
        for d in devices:
            label = [d["device"]]
            busy.add_metric(label, d["busy_seconds"])
            jobs.add_metric(label, d["jobs_running"])
            done.add_metric(label, d["jobs_done"])
            info.add_metric([d["device"], d["name"], d["backend"]], 1)
            for key, family in memory.items():
                family.add_metric(label, d[f"memory_{key}_bytes"])
        yield from (busy, jobs, done, info, *memory.values())


def _progress(read: Callable[[], dict[str, Any]] | None) -> dict[str, Any] | None:
    if read is None:
        return None
    try:
        return read()
    except Exception as e:  # noqa: BLE001 - a status read never fails for a progress figure
        log.warning("progress: %s: %s", type(e).__name__, e)
        return None


class QueueDepth(Collector):
    """``psagent_queue_depth{state}``: the last counts set, or, given a ``source``, the counts it reads when
    scraped (the agent's store: right at every scrape, and after a restart)."""

    def __init__(self) -> None:
        self._values: dict[str, int] = {}
        self._source: Callable[[], Mapping[Any, int]] | None = None
        self._lock = threading.Lock()

    def set(self, counts: Mapping[Any, int]) -> None:
        with self._lock:
            self._values = {str(k): int(v) for k, v in counts.items()}

    def read_from(self, source: Callable[[], Mapping[Any, int]]) -> None:
        self._source = source

    def values(self) -> dict[str, int]:
        if self._source is not None:
            try:
                self.set(self._source())
            except Exception as e:  # noqa: BLE001 - a scrape shows the last counts rather than failing
                log.warning("queue depth: %s: %s (showing the last counts)", type(e).__name__, e)
        with self._lock:
            return dict(self._values)

    def collect(self) -> Iterable[Any]:
        g = GaugeMetricFamily(
            "psagent_queue_depth", "Work by state (the agent: requests in the store)", labels=["state"]
        )
        for state, n in self.values().items():
            g.add_metric([state], n)
        yield g


class ProverMetrics:
    """The prover's series (see the module docstring), in ``registry`` (a new one by default)."""

    def __init__(self, registry: CollectorRegistry | None = None, *, role: str = "agent") -> None:
        """``role``: the ``psagent_build_info`` label telling the agent from the cuzk server."""
        self.registry = r = registry if registry is not None else CollectorRegistry()
        self.started_at = time.time()
        self._started_mono = time.monotonic()
        self.build = {"version": _version(), "python": platform.python_version(), "role": role}
        Gauge("psagent_build_info", "psagent's version (1)", list(self.build), registry=r).labels(
            **self.build
        ).set(1)
        Gauge("psagent_start_time_seconds", "When this process started (Unix time)", registry=r).set(
            self.started_at
        )
        self.proofs = _by_kind_and_outcome(
            "psagent_proofs",
            "Proofs computed, by kind and outcome (verified, invalid, error, unchecked, cancelled)",
            PROOF_OUTCOMES,
            r,
        )
        self.proof_seconds = Histogram(
            "psagent_proof_seconds",
            "Seconds per proof on its device (every partition, verified)",
            ["kind"],
            buckets=_PROOF_BUCKETS,
            registry=r,
        )
        self.partition_seconds = Histogram(
            "psagent_partition_seconds",
            "Seconds per partition by stage (witness, a/b/c, groth16, verify, …)",
            ["kind", "stage"],
            buckets=_PARTITION_BUCKETS,
            registry=r,
        )
        self.queue = QueueDepth()
        r.register(self.queue)
        self.params = Gauge(
            "psagent_params_loaded",
            "1 when a proof type's parameters are loaded on every device",
            ["proof_type", "kind"],
            registry=r,
        )
        self.devices = DeviceLedger()
        r.register(self.devices)
        self._params: dict[tuple[str, str], float] = {}
        self._origins: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    # -- recording ---------------------------------------------------------------------------------------

    def set_queue(self, counts: Mapping[RequestState, int] | Mapping[str, int]) -> None:
        self.queue.set(counts)

    def params_loaded(self, proof_type: str, kind: str, origin: str | None = None) -> None:
        """``origin``: official / development / damaged (agent.paramfiles; None: not looked at)."""
        with self._lock:
            if origin is not None:
                self._origins[(proof_type, kind)] = origin
            if (proof_type, kind) in self._params:
                return
            self._params[(proof_type, kind)] = time.time()
        self.params.labels(proof_type=proof_type, kind=kind).set(1)

    def params_evicted(self, proof_type: str, kind: str) -> None:
        with self._lock:
            if self._params.pop((proof_type, kind), None) is None:
                return
        self.params.labels(proof_type=proof_type, kind=kind).set(0)

    def proof_done(
        self,
        kind: str,
        outcome: str,
        *,
        seconds: float | None = None,
        partitions: Iterable[dict[str, float]] = (),
    ) -> None:
        """One proof computed (``outcome`` of :data:`PROOF_OUTCOMES`) with its wall time and its partitions'
        stage seconds (sub-stages such as ``msm_h.sort`` left out)."""
        self.proofs.labels(kind=kind, outcome=outcome).inc()
        if seconds is not None:
            self.proof_seconds.labels(kind=kind).observe(seconds)
        for stages in partitions:
            for stage, s in stages.items():
                if "." not in stage and stage not in ("total", "batch"):
                    self.partition_seconds.labels(kind=kind, stage=stage).observe(s)

    # -- reading -----------------------------------------------------------------------------------------

    def uptime_s(self) -> float:
        return time.monotonic() - self._started_mono

    def count(self, counter: Counter, **labels: str) -> int:
        """A counter's value summed over the children matching ``labels``."""
        total = 0.0
        for metric in counter.collect():
            for s in metric.samples:
                if s.name.endswith("_total") and all(s.labels.get(k) == v for k, v in labels.items()):
                    total += s.value
        return int(total)

    def snapshot(self) -> dict[str, Any]:
        """The prover half of ``/status`` (shaped like cuzk's GetStatus)."""
        with self._lock:
            loaded = sorted(self._params.items())
            origins = dict(self._origins)
        return {
            "version": self.build["version"],
            "role": self.build["role"],
            "started_at": self.started_at,
            "uptime_seconds": round(self.uptime_s(), 1),
            "devices": self.devices.snapshot(),
            "loaded_parameters": [
                {"proof_type": pt, "kind": kind, "loaded_at": at, "origin": origins.get((pt, kind))}
                for (pt, kind), at in loaded
            ],
            "proofs": {outcome: self.count(self.proofs, outcome=outcome) for outcome in PROOF_OUTCOMES},
        }

    def serve(self, listen: str, **pages: Any) -> Exporter:
        """Expose /metrics (and, given ``status``/``page``, /status and /) on HOST:PORT: see
        :mod:`agent.opsview.exporter`. Returns the running listener."""
        return Exporter(self.registry, **pages).start(listen)


class AgentMetrics(ProverMetrics):
    """The agent's series: the prover's (the agent's ``AdmittedProver`` records into the same registry) and
    the provider's (see the module docstring)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry, role="agent")
        r = self.registry
        self.added = Counter(
            "psagent_requests_added", "Requests matched by the market and recorded", registry=r
        )
        self.asks = Counter("psagent_asks_created", "Work asks created", registry=r)
        self.rate_limited = Counter("psagent_asks_rate_limited", "Ask rounds ended by a 429", registry=r)
        self.price = Gauge("psagent_ask_price_attofil", "The price asked per proof (attoFIL)", registry=r)
        self.submissions = _by_kind_and_outcome(
            "psagent_submissions",
            "Proofs submitted, by kind and the market's answer (accepted, rejected, gone)",
            SUBMIT_OUTCOMES,
            r,
        )
        self.margin_seconds = Histogram(
            "psagent_deadline_margin_seconds",
            "Seconds left before the deadline when a proof was accepted",
            ["kind"],
            buckets=_MARGIN_SECONDS_BUCKETS,
            registry=r,
        )
        self.margin_ratio = Histogram(
            "psagent_deadline_margin_ratio",
            "Fraction of the deadline window left when a proof was accepted (0: at or past the deadline)",
            ["kind"],
            buckets=_MARGIN_RATIO_BUCKETS,
            registry=r,
        )
        for kind in KINDS:  # present from the start: a first late proof is an increase, not a new series
            self.margin_seconds.labels(kind=kind)
            self.margin_ratio.labels(kind=kind)
        self.stage_seconds = Histogram(
            "psagent_stage_seconds",
            "Seconds per request stage (fetch, prove_verify, submit)",
            ["stage"],
            buckets=_STAGE_BUCKETS,
            registry=r,
        )
        self.paid = Counter("psagent_paid_attofil", "attoFIL paid by vouchers received", registry=r)
        self.cumulative = Gauge(
            "psagent_voucher_cumulative_attofil", "Latest voucher's cumulative amount", registry=r
        )
        self.ready = Gauge("psagent_ready", "1 when the readiness gate is open (asks allowed)", registry=r)
        self.gate = Gauge(
            "psagent_readiness_gate",
            "1 for the readiness gate's current state (warming, open, failed, …)",
            ["state"],
            registry=r,
        )
        self.clock_offset = Gauge(
            "psagent_market_clock_offset_seconds",
            "The market's clock minus ours, from its Date headers (signatures older than 60 s are refused)",
            registry=r,
        )
        self.errors = Counter("psagent_loop_errors", "Errors survived by a loop", ["loop"], registry=r)
        self.last_error_at = Gauge(
            "psagent_loop_last_error_timestamp_seconds",
            "When a loop last survived an error (Unix time)",
            ["loop"],
            registry=r,
        )
        self.last_errors: dict[str, tuple[float, str]] = {}  # loop -> (time, one line): /status shows them

    def loop_error(self, loop: str, error: str) -> None:
        """A loop survived an error: counted, its time exported, its one line kept for ``/status``."""
        now = time.time()
        self.errors.labels(loop=loop).inc()
        self.last_error_at.labels(loop=loop).set(now)
        with self._lock:
            self.last_errors[loop] = (now, error)

    def submitted(
        self,
        kind: str,
        outcome: str,
        *,
        obtained_at: float | None = None,
        deadline: float | None = None,
        now: float | None = None,
    ) -> None:
        """A submission's outcome; an accepted proof's deadline margin (seconds, fraction of its window)."""
        kind = kind or "porep"
        self.submissions.labels(kind=kind, outcome=outcome).inc()
        if outcome != "accepted" or deadline is None:
            return
        now = time.time() if now is None else now
        left = deadline - now
        self.margin_seconds.labels(kind=kind).observe(max(left, 0.0))
        if obtained_at is not None and deadline > obtained_at:
            self.margin_ratio.labels(kind=kind).observe(max(left, 0.0) / (deadline - obtained_at))

    def snapshot(self) -> dict[str, Any]:
        out = super().snapshot()
        with self._lock:
            errors = dict(self.last_errors)
        loops = sorted({*errors, *(s.labels["loop"] for m in self.errors.collect() for s in m.samples)})
        out["loops"] = {
            loop: {
                "errors": self.count(self.errors, loop=loop),
                "last_error": errors[loop][1] if loop in errors else "",
                "last_error_at": errors[loop][0] if loop in errors else None,
            }
            for loop in loops
        }
        out["counters"] = {
            "requests_added": self.count(self.added),
            "asks_created": self.count(self.asks),
            "asks_rate_limited": self.count(self.rate_limited),
            "submissions": {o: self.count(self.submissions, outcome=o) for o in SUBMIT_OUTCOMES},
        }
        return out
