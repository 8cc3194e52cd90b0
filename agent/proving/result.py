"""What a proof returns and tells while it runs: :class:`StageEvent` (progress), :class:`PartitionResult` (a
partition's verdict and stage times) and :class:`ProofResult` (the proof, its verdict, how it was made)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agent.proving.verifier import VerifyReport

__all__ = ["Events", "PartitionResult", "ProofResult", "StageEvent", "emit"]


@dataclass(frozen=True)
class StageEvent:
    """Progress of one proof: ``seconds`` is None when ``stage`` starts, its duration when it ended;
    ``fraction`` (seconds None): how much of the running stage is done (the per-point check says it)."""

    job_id: str
    partition: int
    partitions: int
    stage: str
    seconds: float | None = None
    fraction: float | None = None


Events = Callable[[StageEvent], None]


@dataclass
class PartitionResult:
    index: int
    verified: bool | None  # None: not checked (verify = False)
    stages: dict[str, float]


@dataclass
class ProofResult:
    """A proof and how it was made. ``proof`` is returned even when a partition failed its pairing check:
    callers decide on :meth:`report` (the CLI writes nothing, the agent retries)."""

    job_id: str
    proof_type: str
    backend: str
    proof: bytes
    partitions: list[PartitionResult]
    setup: dict[str, float]  # once-per-process work this call did (parameters, proving key, R1CS)
    wall_s: float
    rss_peak_bytes: int | None
    device_peak_bytes: int | None
    host_reserved_peak_bytes: int = 0

    @property
    def verified(self) -> tuple[bool | None, ...]:
        return tuple(p.verified for p in self.partitions)

    def report(self) -> VerifyReport:
        return VerifyReport(self.verified)

    @property
    def ok(self) -> bool:
        return self.report().ok

    def stages(self) -> dict[str, float]:
        """Seconds per stage summed over the partitions (sub-stages such as ``msm_h.sort`` left out)."""
        out: dict[str, float] = {}
        for p in self.partitions:
            for k, v in p.stages.items():
                if "." not in k and k not in ("total", "batch"):
                    out[k] = out.get(k, 0.0) + v
        return out

    def as_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "proof_type": self.proof_type,
            "backend": self.backend,
            "partitions": len(self.partitions),
            "verified": f"{sum(v is True for v in self.verified)}/{len(self.partitions)}",
            "wall_s": round(self.wall_s, 3),
            "setup_s": {k: round(v, 3) for k, v in self.setup.items()},
            "stages_s": {k: round(v, 3) for k, v in self.stages().items()},
            "per_partition": [
                {
                    "index": p.index,
                    "verified": p.verified,
                    "stages_s": {k: round(v, 4) for k, v in p.stages.items()},
                }
                for p in self.partitions
            ],
            "rss_peak_bytes": self.rss_peak_bytes,
            "device_peak_bytes": self.device_peak_bytes,
            "host_reserved_peak_bytes": self.host_reserved_peak_bytes,
        }


def emit(events: Events | None, ev: StageEvent) -> None:
    if events is not None:
        events(ev)
