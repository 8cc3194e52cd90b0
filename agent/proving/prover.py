"""The agent's prover: the proof pipeline behind ``agent.admission``.

A job waits for a slot on any of the pipeline's engines (one per configured device; the CPU backend is one
slot) and for its device bytes there, then runs the pipeline in a worker thread with the grant as its memory
budget. Every device proves at once: as many jobs run as there are slots. The keys' resident bytes (bases,
resident R1CS) are taken off each device's budget once per loaded key, not per job.

:meth:`AdmittedProver.warm_up` is the readiness gate's work: the parameters of every accepted proof type
loaded on every engine (the kernels that load them compiled), then a self-test proof verified on each.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from agent.admission import CPU_SLOT, Admission, BudgetExceeded, Grant
from agent.opsview.metrics import ProverMetrics, device_label
from agent.opsview.progress import StageProgress
from agent.paramfiles import ParamDigests, fetch_hint, verdict
from agent.proving.kind import WorkKind
from agent.proving.parameters import params_paths
from agent.proving.pipeline import Events, ProofCancelled, ProofPipeline, ProofResult, StageEvent
from agent.proving.verifier import VerifyReport
from agent.proving.work import Work
from porep.official_params import DAMAGED, OFFICIAL
from porep.post.params import PoStProofType, post_proof_type
from porep.prooftypes import ProofType, proof_type
from porep.snap.params import UpdateProofType, update_proof_type

if TYPE_CHECKING:
    from gpu.device import Device

__all__ = ["AdmittedProver", "NotLendable", "ParamsRefused", "Proven"]

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 30.0  # the log's cadence for a proof or a warm-up stage that runs longer


class ParamsRefused(RuntimeError):
    """The gate refused a proof type's parameter files (development or damaged where only the official ones
    may serve); one line naming the file and the fix. A configuration fault: trying again does not help."""


@dataclass(frozen=True)
class Proven:
    """What the agent's prove stage receives: the proof bytes and the one verdict on them; ``result``: how it
    was made (stage times per partition), ``setup_s``: parameters and keys this call loaded before admission
    (None / 0 from a prover double)."""

    proof: bytes
    report: VerifyReport
    result: ProofResult | None = None
    setup_s: float = 0.0


class NotLendable(RuntimeError):
    """A lent grant is smaller than what the job needs: it must wait for a slot of its own."""


class AdmittedProver:
    """``pipeline`` behind admission. ``accepted``: the PoRep proof types the readiness gate loads before the
    first ask; ``accepted_update``: the SnapDeals update proof types it loads too (``RegisteredUpdateProof``
    names: a separate list, since "StackedDrg2KiBV1" names both a seal and an update proof);
    ``accepted_post``: the PoSt proof types it loads (``RegisteredPoStProof`` names; the cuzk server's)."""

    def __init__(
        self,
        pipeline: ProofPipeline,
        *,
        accepted: Sequence[str] = (),
        accepted_update: Sequence[str] = (),
        accepted_post: Sequence[str] = (),
        admission: Admission | None = None,
        device_budget_bytes: int | None = None,
        verify: bool = True,
        metrics: ProverMetrics | None = None,
        jobs_per_device: int = 1,
        official_only: bool = False,
    ) -> None:
        """``jobs_per_device``: proofs admitted to one device at once (their synthesis overlaps; their device
        work takes turns, so each needs its working bytes beside the resident keys only);
        ``device_budget_bytes``: the device memory each device's proofs may hold, key included (None: each
        engine's own budget, ``Groth16Engine.memory_budget``: prover.device_memory_gib or what the device has
        free once its kernels have run, asked the first time a proof type is made ready); ``verify``:
        pairing-check every partition
        (False only under the debug switch of ``prover.verify_before_submit``); ``metrics``: where proofs,
        partition stages, device use and loaded parameters are recorded (the agent's or the cuzk
        server's); ``official_only``: parameter files that are not the published ones are refused before
        they load, at the warm-up and at any later first use of a proof type (the real market and the chain
        verify against the official keys: a proof made with development parameters verifies here, against
        the same development key, and is refused there)."""
        self.pipeline = pipeline
        self.slots: tuple[Device, ...] = tuple(e.device or CPU_SLOT for e in pipeline.engines)
        if len({s.index for s in self.slots}) != len(self.slots):
            raise ValueError(f"one engine per device: got devices {[s.index for s in self.slots]}")
        budget = {s.index: device_budget_bytes for s in self.slots} if device_budget_bytes else None
        self.admission = admission or Admission(
            list(self.slots), jobs_per_device=jobs_per_device, budget_bytes=budget, host=pipeline.host,
            serialized=True,
        )
        self._budget_set: set[int] = set(range(len(self.slots))) if (budget or admission) else set()
        self.accepted = tuple(accepted)
        self.accepted_update = tuple(accepted_update)
        self.accepted_post = tuple(accepted_post)
        self.verify = verify
        self.official_only = official_only
        self.last: ProofResult | None = None
        self._charged: set[tuple[int, str]] = set()
        self._origins: dict[str, str] = {}  # parameter stem -> its .params file's kind, as the gate found it
        self._gated: set[str] = set()  # proof types whose files the gate has judged (and let through)
        self._charge_lock = threading.Lock()
        self.metrics = metrics
        if metrics is not None:
            for slot in self.slots:
                held = self.admission.budgets.get(slot.index)
                metrics.devices.add(
                    device_label(slot.index), name=slot.name, backend=self.backend,
                    total_bytes=0 if slot.simulated else slot.total_memory(),
                    budget_bytes=held.total if held is not None else 0,
                )

    @property
    def capacity(self) -> int:
        """Jobs that can run at once (the agent runs as many prove loops)."""
        return self.admission.capacity

    @property
    def backend(self) -> str:
        return self.pipeline.backend

    @property
    def params_dir(self) -> Path:
        return self.pipeline.params_dir

    def charge_resident(self, pt: ProofType | UpdateProofType | PoStProofType, engine: int) -> int:
        """Take the resident bytes of ``pt``'s key on ``engine`` off that device's budget, once per key: they
        occupy the device for every job, so they belong to no job's reservation. Returns the bytes charged
        now (0 when already charged); BudgetExceeded when nothing would be left."""
        slot = self.slots[engine]
        nbytes = self.pipeline.resident_bytes(pt, engine)
        with self._charge_lock:
            if (engine, pt.param_stem) in self._charged:
                return 0
            budget = self.admission.budgets.get(slot.index)
            if budget is not None and nbytes:
                if nbytes >= budget.total:
                    raise BudgetExceeded(
                        f"{pt.name}: the key keeps {nbytes} bytes resident, the device budget is "
                        f"{budget.total}"
                    )
                budget.total -= nbytes
                if self.metrics is not None:
                    self.metrics.devices.set_budget(device_label(slot.index), budget.total)
            self._charged.add((engine, pt.param_stem))
        return nbytes

    def _set_budget(self, engine: int) -> None:
        """The device budget of engine ``engine`` as the engine decides it (``memory_budget``: the configured
        figure, or the free memory once its kernels have run once, less a reserve), asked once and before any
        key is charged to it."""
        with self._charge_lock:
            if engine in self._budget_set:
                return
            self._budget_set.add(engine)
            ask = getattr(self.pipeline.engines[engine], "memory_budget", None)
            got = ask() if ask is not None else None
            slot = self.slots[engine]
            budget = self.admission.budgets.get(slot.index)
            if got and budget is not None:
                budget.total = int(got)
                if self.metrics is not None:
                    self.metrics.devices.set_budget(device_label(slot.index), budget.total)
                log.info(
                    "device %s: %.2f GB of device memory for proving (key included)", slot.index, got / 1e9
                )

    def _ready(
        self,
        pt: ProofType | UpdateProofType | PoStProofType,
        setup: dict[str, float] | None = None,
        events: Events | None = None,
    ) -> int:
        """``pt`` loaded and charged on every engine (a job may be granted any of them); the bytes a job
        reserves. ``setup`` / ``events``: the loading's seconds and stage events, as ``pipeline.shape``.
        The gate judges ``pt``'s files first, whichever path asks (warm-up, a proof, a preload)."""
        self._gate(pt)
        for i in range(len(self.slots)):
            self._set_budget(i)
            self.pipeline.shape(pt, engine=i, setup=setup, events=events)
            self.charge_resident(pt, i)
        if self.metrics is not None:
            self.metrics.params_loaded(pt.name, WorkKind.of(pt).value, self._origins.get(pt.param_stem))
        return self.pipeline.job_device_bytes(pt)

    async def prove(
        self,
        work: Work,
        job_id: str,
        *,
        cancel: threading.Event | None = None,
        admitted: Callable[[Grant], None] | None = None,
        events: Events | None = None,
        turn: Callable[[Device], AbstractContextManager[object]] | None = None,
        lent: Grant | None = None,
    ) -> Proven:
        """The proof of every partition and the pipeline's verdict (each partition pairing-checked as it was
        proven, unless ``verify`` is off). ``admitted`` is told the grant once the job has its device slot;
        ``cancel`` set: :class:`~agent.proving.pipeline.ProofCancelled` before admission's grant is used, or
        at the pipeline's next partition boundary (the slot is free once this returns). ``turn(device)``: a
        context entered around each partition's prove call (the cuzk scheduler's priority turns). ``lent``:
        run on another job's grant (its device and bytes, the cuzk scheduler lends them while that job waits
        at a partition boundary) instead of admission's; :class:`NotLendable` when the job needs more
        bytes."""
        kind = work.kind.value
        t0 = time.perf_counter()
        try:
            result, device, setup_s = await self._prove(work, job_id, cancel, admitted, events, turn, lent)
        except ProofCancelled:
            if self.metrics is not None:
                self.metrics.proof_done(kind, "cancelled", seconds=time.perf_counter() - t0)
            raise
        except Exception:
            if self.metrics is not None:
                self.metrics.proof_done(kind, "error", seconds=time.perf_counter() - t0)
            raise
        self.last = result
        st = result.stages()
        report = result.report()
        if self.metrics is not None:
            outcome = "verified" if report.ok else "invalid" if False in report.partitions else "unchecked"
            self.metrics.proof_done(
                kind, outcome, seconds=result.wall_s, partitions=[p.stages for p in result.partitions]
            )
            self.metrics.devices.peak(device_label(device.index), result.device_peak_bytes)
        log.info(
            "%s: %d partition(s) %s in %.1f s on %s%s (witness %.1f s, Groth16 %.1f s, verify %.2f s; "
            "RSS peak %s)",
            job_id, len(result.partitions), report.diagnosis(), result.wall_s, result.backend,
            "" if device is CPU_SLOT else f" device {device.index}",
            st.get("witness", 0.0), st.get("groth16", 0.0), st.get("verify", 0.0),
            _gib(result.rss_peak_bytes),
        )
        return Proven(result.proof, report, result, setup_s)

    async def _prove(
        self,
        work: Work,
        job_id: str,
        cancel: threading.Event | None,
        admitted: Callable[[Grant], None] | None,
        events: Events | None = None,
        turn: Callable[[Device], AbstractContextManager[object]] | None = None,
        lent: Grant | None = None,
    ) -> tuple[ProofResult, Device, float]:
        pt = work.proof_type
        self.pipeline.params_file(pt)  # a missing file is named before minutes of synthesis
        t0 = time.perf_counter()
        setup: dict[str, float] = {}
        nbytes = await anyio.to_thread.run_sync(lambda: self._ready(pt, setup, events))
        setup_s = time.perf_counter() - t0

        async def run(grant: Grant) -> ProofResult:
            if cancel is not None and cancel.is_set():
                raise ProofCancelled(f"{job_id}: cancelled before it started")
            if admitted is not None:
                admitted(grant)
            engine = next(i for i, s in enumerate(self.slots) if s.index == grant.device.index)
            memory = grant.nbytes if grant.nbytes > 0 else None
            # a proof of minutes says where it is every PROGRESS_EVERY_S (the log) and on the status page
            progress = StageProgress(job_id, _say, every_s=PROGRESS_EVERY_S)
            # the cuzk scheduler's turns; not passed otherwise (older pipeline doubles lack the keyword)
            extra: dict[str, Any] = {"device_turn": lambda: turn(grant.device)} if turn is not None else {}
            with self._busy(
                device_label(grant.device.index), job_id, work.kind.value, grant.nbytes, progress.snapshot
            ), progress:
                return await anyio.to_thread.run_sync(
                    lambda: self.pipeline.prove(
                        work, job_id=job_id, engine=engine, memory_bytes=memory, verify=self.verify,
                        cancel=cancel, events=_both(progress, events), **extra,
                    )
                )

        if lent is not None:
            if nbytes > lent.nbytes:
                raise NotLendable(f"{job_id}: needs {nbytes} device bytes, the lent grant has {lent.nbytes}")
            result, device = await run(lent), lent.device
        else:
            async with self.admission.run_on_any(nbytes) as grant:
                result, device = await run(grant), grant.device
        for key, seconds in setup.items():  # what loading the shape cost this call, before admission
            result.setup.setdefault(key, seconds)
        return result, device, setup_s

    def prove_now(self, work: Work, job_id: str, *, events: Events | None = None) -> ProofResult:
        """:meth:`prove` from synchronous code (``psagent prove``, ``bench e2e``): the same admission, budget
        and pipeline as the agent's and the cuzk server's; the pipeline's result."""

        async def run() -> Proven:
            return await self.prove(work, job_id, events=events)

        proven = anyio.run(run)
        assert proven.result is not None
        return proven.result

    def _busy(
        self, label: str, job_id: str, kind: str, nbytes: int, progress: Callable[[], dict[str, object]]
    ) -> AbstractContextManager[None]:
        if self.metrics is None:
            return nullcontext()
        return self.metrics.devices.busy(label, job_id, kind, nbytes, progress=progress)

    def loaded(self, pt: ProofType | UpdateProofType | PoStProofType) -> bool:
        """Whether ``pt``'s key is loaded on every engine."""
        return all(self.pipeline.loaded(pt, i) for i in range(len(self.slots)))

    async def preload(self, pt: ProofType | UpdateProofType | PoStProofType) -> float:
        """Load ``pt``'s parameters and key on every engine now (what a first proof would do); seconds."""
        self.pipeline.params_file(pt)
        t0 = time.perf_counter()
        await anyio.to_thread.run_sync(self._ready, pt)
        return time.perf_counter() - t0

    def evict(self, pt: ProofType | UpdateProofType | PoStProofType) -> int:
        """Drop ``pt``'s key from every engine and give its resident bytes back to the devices' budgets;
        the bytes freed (0 when it was not loaded)."""
        freed = 0
        with self._charge_lock:
            for i in range(len(self.slots)):
                if not self.pipeline.loaded(pt, i):
                    continue
                nbytes = self.pipeline.resident_bytes(pt, i) if (i, pt.param_stem) in self._charged else 0
                budget = self.admission.budgets.get(self.slots[i].index)
                if budget is not None and nbytes:
                    budget.total += nbytes
                self._charged.discard((i, pt.param_stem))
                freed += nbytes
            self.pipeline.evict(pt)
        if self.metrics is not None:
            self.metrics.params_evicted(pt.name, WorkKind.of(pt).value)
        return freed

    def warm_up(self) -> None:
        """The readiness gate's work: parameters of every accepted proof type (PoRep and update) present and
        loaded on every engine, then a self-test proof verified on each. Raises with the reason when any of
        it fails."""
        todo: list[tuple[ProofType | UpdateProofType | PoStProofType, str]] = [
            (proof_type(n), n) for n in self.accepted
        ]
        todo += [(update_proof_type(n), f"{n} (update)") for n in self.accepted_update]
        todo += [(post_proof_type(n), n) for n in self.accepted_post]
        for pt, label in todo:
            t0 = time.perf_counter()
            with StageProgress(f"warm-up {label}", _say, every_s=PROGRESS_EVERY_S) as progress:
                self._ready(pt, events=progress)
            log.info("warm-up: %s parameters and circuit loaded in %.1f s", label, time.perf_counter() - t0)
        for i, slot in enumerate(self.slots):
            seconds = self.pipeline.self_test(i)
            where = self.backend if slot is CPU_SLOT else f"{self.backend} device {slot.index}"
            log.info("warm-up: self-test proof verified on %s in %.1f s", where, seconds)

    def _gate(self, pt: ProofType | UpdateProofType | PoStProofType) -> None:
        """:meth:`_log_verdicts` once per proof type that passes (a refused one is judged again next time:
        the operator may have fetched the official files meanwhile)."""
        if pt.name not in self._gated:
            self._log_verdicts(pt)
            if all(path.is_file() for path in params_paths(self.params_dir, pt)):
                self._gated.add(pt.name)

    def _log_verdicts(self, pt: ProofType | UpdateProofType | PoStProofType) -> None:
        """The gate's log line per parameter file: official, development or damaged (agent.paramfiles).
        With ``official_only``, any file that is not official is refused here, before it is loaded: the
        self-test would pass (it verifies against the same key) and every proof would then be refused by the
        market, each missed deadline costing 50 challenge proofs."""
        digests = ParamDigests(self.pipeline.cache)
        for path in params_paths(self.params_dir, pt):
            if path.is_file():
                v = verdict(path, digests)
                level = logging.ERROR if v.kind == DAMAGED else logging.INFO
                log.log(level, "parameters %s", v.line(str(path)))
                if path.suffix == ".params":
                    self._origins[pt.param_stem] = v.kind
                if self.official_only and v.kind != OFFICIAL:
                    update = WorkKind.of(pt) is WorkKind.SNAP
                    fix = fetch_hint(pt.size_label, self.params_dir, update=update, official=True)
                    raise ParamsRefused(
                        f"{path.name} is {v.kind} ({v.reason}), not the official file: the market and the "
                        f"chain verify against the official keys ({fix}; "
                        "a test market only: prover.allow_development_params = true)"
                    )


def _say(text: str) -> None:
    log.info("%s", text)


def _both(first: Events, second: Events | None) -> Events:
    """One stage-event sink that tells ``first`` and then ``second`` (when there is one)."""
    if second is None:
        return first

    def tell(ev: StageEvent) -> None:
        first(ev)
        second(ev)

    return tell


def _gib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f} GiB"
