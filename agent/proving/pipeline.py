"""The proof pipeline: a checked :class:`~agent.proving.work.Work` to a verified proof, in one pass.

One code path for ``psagent prove``, ``bench e2e`` and the agent:

* a shape per proof type (the circuit's R1CS, the parameters, the proving key) is loaded on first use and
  kept. The R1CS is shared by every engine; each engine (one per device) has its own key. Parameters are
  read with the per-point subgroup check once per file (``agent.proving.parameters.CheckedParams``); an
  engine that loads parameters straight onto its device (``params_to_device``) only reads a file the record
  trusts (a file not yet recorded is checked on the host first, recorded, dropped, then loaded).
* the circuit is asked two questions (``porep.circuit.partition`` / ``porep.snap.partition``): the R1CS of a
  shape, and the assignment of one partition (:class:`Circuits`).
* partitions are synthesised on CPU threads ahead of the prover: ``workers`` partitions of one proof are in
  flight at once (proving concurrently on the engine, each with one more synthesised ahead), and every
  in-flight assignment holds its host bytes from ``agent.admission.HostBudget`` until it is proven.
* every partition is verified by the :class:`~agent.proving.verifier.HostVerifier` against the Work's public
  inputs (computed without the circuit) as it is proven: one pairing check per partition, and the
  :class:`ProofResult` carries that verdict, which is the one the agent's stage acts on.

:meth:`ProofPipeline.self_test` proves and verifies a small synthetic circuit on an engine (the readiness
gate's last step, after the parameters of every accepted proof type were loaded).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from agent.admission import HostBudget
from agent.proving.engine import Engine, Groth16Engine
from agent.proving.parameters import CheckedParams, params_paths, read_params
from agent.proving.verifier import HostVerifier, VerifyReport
from agent.proving.work import Work

if TYPE_CHECKING:
    from gpu.groth16.params import Parameters
    from gpu.groth16.params_device import DeviceParameters
    from gpu.groth16.plan import Layout, ProofSizes, Stage
    from gpu.groth16.prover import Assignment, ProvingKey
    from gpu.groth16.r1cs import R1CS
    from porep.c1 import SealCommitPhase1Output
    from porep.circuit.pce import PartitionTemplate
    from porep.post.params import PoStProofType
    from porep.post.verify import CheckedPoSt
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType
    from porep.snap.partition import UpdateWork

__all__ = [
    "Circuits",
    "memory_plan_of",
    "sizes_of",
    "PartitionResult",
    "ProofCancelled",
    "ProofPipeline",
    "ProofResult",
    "SealCircuit",
    "StageEvent",
    "UpdateCircuit",
]

log = logging.getLogger(__name__)

Sample = tuple["R1CS", np.ndarray, list[int]]


class ProofCancelled(RuntimeError):
    """The caller cancelled the proof: raised at the next partition boundary (a partition being synthesised or
    proven runs to its end; nothing after it starts)."""


# -- the circuit seam ----------------------------------------------------------------------------------------


class SealCircuit(Protocol):
    """The StackedDRG circuit's two answers (``porep.circuit.partition.StackedCircuit``)."""

    def r1cs(self, pt: ProofType) -> R1CS: ...
    def assignment(self, c1: SealCommitPhase1Output, k: int) -> np.ndarray: ...


class UpdateCircuit(Protocol):
    """The SnapDeals update circuit's two answers (``porep.snap.partition.UpdateCircuit``)."""

    def r1cs(self, pt: UpdateProofType) -> R1CS: ...
    def assignment(self, work: UpdateWork, k: int) -> np.ndarray: ...


class PoStCircuit(Protocol):
    """The FallbackPoSt circuit's two answers (``porep.post.partition.PoStCircuit``)."""

    def r1cs(self, pt: PoStProofType) -> R1CS: ...
    def assignment(self, checked: CheckedPoSt, k: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Circuits:
    """The circuit of each kind of work; ``default``: the real ones (compiled templates under ``cache``)."""

    seal: SealCircuit
    update: UpdateCircuit
    post: PoStCircuit | None = None

    @classmethod
    def default(cls, cache: Path | None) -> Circuits:
        from porep.circuit.partition import StackedCircuit
        from porep.post.partition import PoStCircuit as RealPoStCircuit
        from porep.snap.partition import UpdateCircuit as RealUpdateCircuit

        return cls(StackedCircuit(cache), RealUpdateCircuit(cache), RealPoStCircuit(cache))

    def r1cs(self, pt: ProofType | UpdateProofType | PoStProofType) -> R1CS:
        from porep.post.params import PoStProofType
        from porep.snap.params import UpdateProofType

        if isinstance(pt, UpdateProofType):
            return self.update.r1cs(pt)
        if isinstance(pt, PoStProofType):
            return self._post().r1cs(pt)
        return self.seal.r1cs(pt)

    def _post(self) -> PoStCircuit:
        if self.post is None:
            raise ValueError("no PoSt circuit behind this pipeline")
        return self.post

    def assignment(self, work: Work, k: int) -> np.ndarray:
        if work.update is not None:
            return self.update.assignment(work.update, k)
        if work.post is not None:
            return self._post().assignment(work.post, k)
        assert work.c1 is not None
        return self.seal.assignment(work.c1, k)


# -- results -------------------------------------------------------------------------------------------------


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


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (``VmHWM``; Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    except (ImportError, OSError):
        return None


class _DeviceSampler:
    """Peak device memory in use while a proof runs (polled: CUDA keeps no peak of its own)."""

    def __init__(self, read: Callable[[], int | None], every_s: float = 0.02) -> None:
        self.read, self.every_s = read, every_s
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        try:
            v = self.read()
        except Exception:  # noqa: BLE001 - a failing reading is a missing figure, not a failed proof
            self._stop.set()
            return
        if v is not None:
            self.peak = v if self.peak is None else max(self.peak, v)

    def __enter__(self) -> _DeviceSampler:
        self._sample()
        if self.peak is not None:

            def loop() -> None:
                while not self._stop.wait(self.every_s):
                    self._sample()

            self._thread = threading.Thread(target=loop, name="psagent-device-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()


def _emit(events: Events | None, ev: StageEvent) -> None:
    if events is not None:
        events(ev)


_ENGINE_NAMES = {"quotient": "NTT/H", "upload_abc": "upload", "upload_witness": "upload"}


def _engine_stages(timings: dict[str, float], prove_s: float) -> dict[str, float]:
    """The engine's phases under the pipeline's stage names (``NTT/H``, ``upload``, ``msm_*``, ``epilogue``,
    and the MSMs' own sub-stages ``msm_h.sort`` …); ``groth16`` is the engine call's wall time."""
    out: dict[str, float] = {"groth16": prove_s}
    for k, v in timings.items():
        if k in ("total", "batch"):
            continue
        name = _ENGINE_NAMES.get(k, k)
        out[name] = out.get(name, 0.0) + float(v)
    return out


def _reference_setup(r1cs: R1CS) -> Parameters:
    """The self-test's parameters: gpu.groth16.reference's setup (Python integers + pyblst: independent of
    the engine under test, nothing to compile), CSPRNG toxic waste, discarded."""
    import secrets

    from gpu.arith.fields.constants import R_MODULUS
    from gpu.groth16 import reference

    secret = [secrets.randbelow(R_MODULUS - 2) + 2 for _ in range(5)]
    return reference.setup(r1cs, reference.ToxicWaste(*secret))


def _synthetic_sample(constraints: int = 256) -> Sample:
    """The self-test's circuit: gpu.groth16.synthetic's Filecoin-like one (bits, packing, full values)."""
    from gpu.groth16.synthetic import SyntheticCircuit

    sc = SyntheticCircuit(constraints, 2, seed=int.from_bytes(os.urandom(4), "little"))
    return sc.r1cs(), sc.witness(), sc.public_inputs()


# -- the pipeline --------------------------------------------------------------------------------------------


@dataclass
class _Shape:
    pt: ProofType | UpdateProofType | PoStProofType
    r1cs: R1CS
    key: ProvingKey
    host_bytes: int


class ProofPipeline:
    """Work → verified proof (see the module docstring). Thread-safe: loading a shape takes a lock;
    concurrent proofs share the keys."""

    def __init__(
        self,
        params_dir: Path,
        *,
        engines: Sequence[Engine] | None = None,
        circuits: Circuits | None = None,
        cache: Path | None = None,
        host: HostBudget | None = None,
        verifier: HostVerifier | None = None,
        read_params: Callable[[Path, bool], Parameters] = read_params,
        setup: Callable[[R1CS], Parameters] | None = None,
        sample: Callable[[], Sample] | None = None,
        workers: int = 1,
    ) -> None:
        """``engines``: one per device (default: one ``gpu.groth16`` engine, backend auto); ``circuits``: the
        seams (default the real circuits); ``read_params`` (path, subgroup_check); for the self-test
        ``setup`` (R1CS → Parameters) and ``sample`` (R1CS, witness, public inputs): the reference setup and
        a 256-constraint synthetic circuit; ``workers``: partitions of one proof in flight per engine."""
        from agent.config import cache_dir

        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.params_dir = Path(params_dir)
        self.cache = cache if cache is not None else cache_dir()
        self.engines: tuple[Engine, ...] = tuple(engines) if engines else (Groth16Engine(),)
        self.circuits = circuits if circuits is not None else Circuits.default(self.cache)
        self.checked = CheckedParams(self.cache)
        self.host = host or HostBudget()
        self.verifier = verifier or HostVerifier(self.params_dir)
        self.read_params = read_params
        self.setup = setup
        self.sample = sample or _synthetic_sample
        self.workers = workers
        self._r1cs: dict[str, R1CS] = {}
        self._shapes: dict[tuple[int, str], _Shape] = {}
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        """The first engine (the only one outside the agent)."""
        return self.engines[0]

    @property
    def backend(self) -> str:
        return self.engine.backend

    def loaded(self, pt: ProofType | UpdateProofType | PoStProofType, engine: int = 0) -> bool:
        return (engine, pt.param_stem) in self._shapes

    def params_file(self, pt: ProofType | UpdateProofType | PoStProofType) -> Path:
        """The .params file of ``pt``; FileNotFoundError naming it (before any synthesis) when absent."""
        path, _ = params_paths(self.params_dir, pt)
        if not path.is_file():
            from agent.paramfiles import fetch_hint
            from porep.post.params import PoStProofType

            update = "empty-sector-update" in pt.param_stem
            post = pt.kind.value if isinstance(pt, PoStProofType) else None
            hint = fetch_hint(pt.size_label, self.params_dir, update=update, post=post)
            raise FileNotFoundError(f"Groth16 parameters for {pt.name} not found: {path} ({hint})")
        return path

    def _official(self, path: Path) -> bool:
        """Whether ``path`` is an official file (its published digest matches): then the digest vouches for
        every point, as paramfetch's check does for lotus, and the per-point check is not needed (it is
        recorded as checked). The digest is computed once per file version."""
        from agent.paramfiles import ParamDigests, verdict
        from porep.official_params import OFFICIAL

        digests = ParamDigests(self.cache)
        if verdict(path, digests).kind != OFFICIAL:
            return False
        self.checked.record(path, digests.digests(path)[1])
        return True

    def shape(
        self,
        pt: ProofType | UpdateProofType | PoStProofType,
        *,
        engine: int = 0,
        setup: dict[str, float] | None = None,
        events: Events | None = None,
    ) -> _Shape:
        """The R1CS and proving key of ``pt`` on engine ``engine``, loaded on first use and kept; the
        verifier gets the verifying key inside the parameters file."""
        with self._lock:
            got = self._shapes.get((engine, pt.param_stem))
            if got is not None:
                return got
            eng = self.engines[engine]
            setup = setup if setup is not None else {}
            path = self.params_file(pt)
            r1cs = self._r1cs.get(pt.param_stem)
            if r1cs is None:
                _emit(events, StageEvent("", -1, 0, "synthesis"))
                t0 = time.perf_counter()
                r1cs = self._r1cs[pt.param_stem] = self.circuits.r1cs(pt)
                setup["synthesis"] = time.perf_counter() - t0
                _emit(events, StageEvent("", -1, 0, "synthesis", setup["synthesis"]))
            t0 = time.perf_counter()
            trusted = self.checked.trusted(path) or self._official(path)
            if not trusted:
                log.info("%s: first use, reading with the per-point subgroup check (once per file)", path)
            _emit(events, StageEvent("", -1, 0, "params" if trusted else "params (first use: point checks)"))
            params: Parameters | DeviceParameters
            if eng.params_to_device:
                params = self._params_to_device(eng, path, r1cs, trusted, setup)
            else:
                params = self._read_checked(path, trusted, events)
                if not trusted:
                    self.checked.record(path)
            setup["params"] = time.perf_counter() - t0
            if not trusted:
                setup.setdefault("params_point_check", setup["params"])  # the once-per-file check: this load
            _emit(events, StageEvent("", -1, 0, "params", setup["params"]))
            if params.vk.num_inputs != r1cs.num_inputs or params.l.shape[0] != r1cs.num_aux:
                raise ValueError(
                    f"{path.name}: parameters for {params.vk.num_inputs} inputs / {params.l.shape[0]} aux, "
                    f"the {pt.name} circuit has {r1cs.num_inputs} / {r1cs.num_aux}"
                )
            _emit(events, StageEvent("", -1, 0, "key"))
            t0 = time.perf_counter()
            key = eng.key(params, r1cs)
            self.verifier.use_key(pt, params.vk)
            setup["key"] = time.perf_counter() - t0
            _emit(events, StageEvent("", -1, 0, "key", setup["key"]))
            got = self._shapes[(engine, pt.param_stem)] = _Shape(pt, r1cs, key, eng.host_bytes(r1cs))
            return got

    def loaded_shapes(self) -> list[tuple[int, ProofType | UpdateProofType | PoStProofType, int]]:
        """(engine, proof type, device bytes its key keeps resident) of every shape loaded now; read without
        the loading lock, so a status reader never waits for a load in progress."""
        snapshot = list(self._shapes.items())
        return [
            (engine, shape.pt, self.engines[engine].resident_bytes(shape.key, shape.r1cs))
            for (engine, _), shape in sorted(snapshot, key=lambda item: item[0])
        ]

    def evict(self, pt: ProofType | UpdateProofType | PoStProofType) -> list[int]:
        """Drop ``pt``'s proving key on every engine and its R1CS (the next proof of ``pt`` loads them again);
        the engines that had it loaded. A proof running on the key keeps its own reference until it ends."""
        with self._lock:
            engines = [e for (e, stem) in self._shapes if stem == pt.param_stem]
            for e in engines:
                del self._shapes[(e, pt.param_stem)]
            self._r1cs.pop(pt.param_stem, None)
        return engines

    def _read_checked(self, path: Path, trusted: bool, events: Events | None) -> Parameters:
        """The host read of ``path``, with the per-point check unless ``trusted``. The default reader checks
        first, chunk by chunk, telling the fraction done (a first check takes minutes to tens of minutes: the
        time left is then known), then decodes without the subgroup check (what was just checked)."""
        if trusted or self.read_params is not read_params or events is None:
            return self.read_params(path, not trusted)
        from gpu.groth16.params import check_file

        stage = "params (first use: point checks)"
        check_file(path, lambda done, total: _emit(events, StageEvent("", -1, 0, stage, None, done / total)))
        return self.read_params(path, False)

    def _params_to_device(
        self, eng: Engine, path: Path, r1cs: R1CS, trusted: bool, setup: dict[str, float]
    ) -> Parameters | DeviceParameters:
        """The engine's device load of ``path``. Its decoder makes no subgroup check and trusts the record, so
        a file not recorded yet gets the host reader's full check first (its arrays dropped before the load),
        exactly as the default path checks it, and is recorded once that passed."""
        if not trusted:
            t0 = time.perf_counter()
            checked = self.read_params(path, True)
            del checked
            self.checked.record(path)
            setup["params_point_check"] = time.perf_counter() - t0
        if not self.checked.trusted(path):  # changed since the check: refuse rather than load it unchecked
            raise RuntimeError(f"{path}: changed after its point check; not loaded to the device unchecked")
        t0 = time.perf_counter()
        params = eng.load_params(path, r1cs)
        setup["params_device_load"] = time.perf_counter() - t0
        return params

    def device_bytes(self, pt: ProofType | UpdateProofType | PoStProofType, engine: int = 0) -> int:
        """Device bytes one partition's proof of ``pt`` needs beyond the resident key."""
        return self.engines[engine].device_bytes(self.shape(pt, engine=engine).key)

    def job_device_bytes(self, pt: ProofType | UpdateProofType | PoStProofType, engine: int = 0) -> int:
        """What a job reserves: one partition's proof working bytes (its layout's largest phase). The lanes
        share them: the engine holds its device for a partition's whole device part, so two partitions'
        device buffers are never held at once."""
        return self.device_bytes(pt, engine)

    def resident_bytes(self, pt: ProofType | UpdateProofType | PoStProofType, engine: int = 0) -> int:
        """Device bytes the key of ``pt`` keeps resident on engine ``engine``'s device."""
        shape = self.shape(pt, engine=engine)
        return self.engines[engine].resident_bytes(shape.key, shape.r1cs)

    def prove(
        self,
        work: Work,
        *,
        job_id: str,
        engine: int = 0,
        memory_bytes: int | None = None,
        events: Events | None = None,
        verify: bool = True,
        cancel: threading.Event | None = None,
        device_turn: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> ProofResult:
        """Prove every partition of ``work`` on engine ``engine``; verify each against the Work's public
        inputs as it is proven (``verify=False``: no pairing check; the verdicts are then None).
        ``memory_bytes``: the device bytes granted to this job, shared by its partitions in flight.
        ``cancel``: once set, no further partition starts (:class:`ProofCancelled` at the next boundary).
        ``device_turn``: entered around each partition's prove call (a fresh context each time): the engine's
        priority turns (``agent.cuzk.scheduler``) make a partition wait there while higher-priority work
        proves on the device; the wait is the stage ``device_wait``."""
        pt = work.proof_type
        n = work.partitions
        eng = self.engines[engine]
        t_start = time.perf_counter()
        setup: dict[str, float] = {}
        shape = self.shape(pt, engine=engine, setup=setup, events=events)
        lanes = max(1, min(self.workers, n))
        # the engine holds its device for a partition's whole device part, so the lanes' proofs never hold
        # device memory at once: each may use the whole grant
        per_lane = memory_bytes
        rss_reset = _reset_peak_rss()
        results: list[PartitionResult | None] = [None] * n
        proofs: list[bytes] = [b""] * n
        host_peak = 0
        held: dict[int, AbstractContextManager[None]] = {}  # partition -> its host reservation
        lock = threading.Lock()
        pending: dict[int, Future[tuple[Assignment, dict[str, float]]]] = {}
        cursor = {"submitted": 0, "taken": 0}
        failed = threading.Event()
        turn = threading.Condition()
        reserving = [0]  # the partition whose host bytes are reserved next: in order, so none jumps ahead

        def synthesise(k: int) -> tuple[Assignment, dict[str, float]]:
            """Partition k's assignment, on a synthesis thread; its host bytes are held until proven."""
            nonlocal host_peak
            with turn:
                turn.wait_for(lambda: reserving[0] == k or failed.is_set())
                try:
                    if failed.is_set():
                        raise RuntimeError("another partition of this proof failed")
                    reservation = self.host.reserve(shape.host_bytes)
                    reservation.__enter__()
                finally:
                    reserving[0] = max(reserving[0], k + 1)
                    turn.notify_all()
            with lock:
                held[k] = reservation
                host_peak = max(host_peak, self.host.used)
            try:
                st: dict[str, float] = {}
                _emit(events, StageEvent(job_id, k, n, "witness"))
                t0 = time.perf_counter()
                witness = self.circuits.assignment(work, k)
                st["witness"] = time.perf_counter() - t0
                _emit(events, StageEvent(job_id, k, n, "witness", st["witness"]))
                _emit(events, StageEvent(job_id, k, n, "a/b/c"))
                t0 = time.perf_counter()
                asg = eng.assign(shape.r1cs, witness)
                del witness
                st["a/b/c"] = time.perf_counter() - t0
                _emit(events, StageEvent(job_id, k, n, "a/b/c", st["a/b/c"]))
                return asg, st
            except BaseException:
                with lock:
                    res = held.pop(k)
                res.__exit__(None, None, None)
                raise

        def release(k: int, asg: Assignment | None) -> None:
            try:
                if asg is not None:
                    eng.release(asg)
            finally:
                with lock:
                    res = held.pop(k, None)
                if res is not None:
                    res.__exit__(None, None, None)

        def lane() -> None:
            """Take the next partition, wait for its assignment, prove it, verify it; keep ``lanes``
            partitions synthesised ahead of the lanes (never more, so host memory stays bounded)."""
            while not failed.is_set():
                with lock:
                    k = cursor["taken"]
                    if k >= n:
                        return
                    stop = cancel is not None and cancel.is_set()
                    if not stop:  # a cancelled proof starts nothing more; what was synthesised ahead is freed
                        cursor["taken"] = k + 1
                        while cursor["submitted"] < min(n, k + 1 + lanes):
                            j = cursor["submitted"]
                            pending[j] = synth_pool.submit(synthesise, j)
                            cursor["submitted"] = j + 1
                        fut = pending.pop(k)
                if stop:
                    failed.set()
                    with turn:
                        turn.notify_all()
                    raise ProofCancelled(f"{job_id}: cancelled before partition {k} of {n}")
                try:
                    asg, st = fut.result()
                    try:
                        t0 = time.perf_counter()
                        with device_turn() if device_turn is not None else nullcontext():
                            if device_turn is not None:
                                st["device_wait"] = time.perf_counter() - t0
                            _emit(events, StageEvent(job_id, k, n, "prove"))
                            timings: dict[str, float] = {}
                            t0 = time.perf_counter()
                            proof = eng.prove(shape.key, asg, memory_bytes=per_lane, timings=timings)
                            prove_s = time.perf_counter() - t0
                    finally:
                        release(k, asg)
                        del asg
                    st.update(_engine_stages(timings, prove_s))
                    _emit(events, StageEvent(job_id, k, n, "prove", prove_s))
                    good: bool | None = None
                    if verify:
                        t0 = time.perf_counter()
                        good = self.verifier.partition(work, k, proof)
                        st["verify"] = time.perf_counter() - t0
                        _emit(events, StageEvent(job_id, k, n, "verified" if good else "NOT VERIFIED",
                                                 st["verify"]))
                    results[k] = PartitionResult(k, good, st)
                    proofs[k] = proof
                except BaseException:
                    failed.set()
                    with turn:
                        turn.notify_all()
                    raise

        with ThreadPoolExecutor(lanes, thread_name_prefix="psagent-synth") as synth_pool, _DeviceSampler(
            eng.device_used
        ) as dev:
            try:
                if lanes == 1:
                    lane()
                else:
                    with ThreadPoolExecutor(lanes, thread_name_prefix="psagent-prove") as provers:
                        done = [provers.submit(lane) for _ in range(lanes)]
                    for f in done:
                        f.result()  # the first failure, in lane order
            finally:
                # a failure left partitions synthesised ahead: give their buffers and host bytes back
                for k, fut in sorted(pending.items()):
                    if fut.cancel():
                        continue
                    try:
                        left, _ = fut.result()
                    except BaseException:  # noqa: BLE001 - synthesise released its bytes; the first error wins
                        continue
                    release(k, left)
                pending.clear()
        wall = time.perf_counter() - t_start
        return ProofResult(
            job_id=job_id,
            proof_type=pt.name,
            backend=eng.backend,
            proof=b"".join(proofs),
            partitions=[r for r in results if r is not None],
            setup=setup,
            wall_s=wall,
            rss_peak_bytes=_peak_rss() if rss_reset else None,
            device_peak_bytes=dev.peak,
            host_reserved_peak_bytes=host_peak,
        )

    def self_test(self, engine: int = 0) -> float:
        """Prove and verify a small circuit on engine ``engine`` (a fresh setup by the reference
        implementation); also check that a wrong public input is rejected. Warms the kernels the real proofs
        use. Returns seconds; raises RuntimeError saying what failed."""
        from gpu.groth16.verifier import verify

        eng = self.engines[engine]
        setup = self.setup if self.setup is not None else _reference_setup
        t0 = time.perf_counter()
        r1cs, witness, xs = self.sample()
        params = setup(r1cs)
        key = eng.key(params, r1cs)
        asg = eng.assign(r1cs, witness)
        try:
            proof = eng.prove(key, asg, memory_bytes=None, timings={})
        finally:
            eng.release(asg)
        what = f"self-test: the {r1cs.num_constraints}-constraint proof on {eng.backend}"
        try:
            good = verify(params.vk, proof, xs)
        except ValueError as e:  # malformed proof bytes
            raise RuntimeError(f"{what} did not verify: {e}") from e
        if not good:
            raise RuntimeError(f"{what} did not verify")
        if verify(params.vk, proof, [xs[0] ^ 1, *xs[1:]]):
            raise RuntimeError("self-test: a wrong public input was accepted")
        return time.perf_counter() - t0


def sizes_of(pt: ProofType | UpdateProofType | PoStProofType, cache: Path | None = None) -> ProofSizes:
    """``gpu.groth16.plan.ProofSizes`` of one partition of ``pt`` (a seal, an update or a PoSt proof type),
    from the circuit template's counts: no matrix is tiled and nothing large is allocated, so a 32GiB plan
    costs the template (recorded once, cached) and not the 7.5 GB R1CS."""
    from agent.config import cache_dir
    from gpu.groth16 import plan
    from porep.post.params import PoStProofType
    from porep.snap.params import UpdateProofType

    cache = cache if cache is not None else cache_dir()
    t: PartitionTemplate
    if isinstance(pt, UpdateProofType):
        from porep.snap.partition import update_template

        t = update_template(pt, cache)
    elif isinstance(pt, PoStProofType):
        from porep.post.partition import post_template

        t = post_template(pt, cache)
    else:
        from porep.circuit.partition import partition_template

        t = partition_template(pt, cache)
    return plan.ProofSizes.of_stats(
        t.stats(), coeff_bytes=int(t.coeff[0].dtype.itemsize), table_rows=int(t.table.shape[0])
    )


def memory_plan_of(
    pt: ProofType | UpdateProofType | PoStProofType,
    *,
    cuda: bool,
    device_spmv: bool,
    params_to_device: bool = True,
    cache: Path | None = None,
    budget: int | None = None,
    layout: str = "auto",
) -> tuple[ProofSizes, Layout | None, list[Stage]]:
    """(sizes, layout, the plan's stages) of one proof of ``pt`` on a device of ``budget`` bytes (None: no
    limit) with ``layout`` forced or ``auto``: the decision the engine makes (``Groth16Engine.layout``), from
    the template's counts (:func:`sizes_of`). ``cuda`` False: the CPU backend (no layout).
    ``gpu.groth16.plan.LayoutError`` when nothing of that kind fits the budget."""
    from gpu.groth16 import plan

    sizes = sizes_of(pt, cache)
    lay = plan.choose_layout(sizes, budget, device_spmv=device_spmv, force=layout) if cuda else None
    return sizes, lay, plan.memory_plan(sizes, lay, params_to_device=params_to_device)
