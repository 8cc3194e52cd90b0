"""The proof pipeline: a checked :class:`~agent.proving.work.Work` to a verified proof, in one pass.

One code path for ``psagent prove``, ``bench e2e`` and the agent:

* a shape per proof type (the circuit's R1CS, the parameters, the proving key) is loaded on first use and
  kept. The R1CS is shared by every engine; each engine (one per device) has its own key. Parameters are
  read with the per-point subgroup check once per file (``agent.proving.parameters.CheckedParams``); an
  engine that loads parameters straight onto its device (``params_to_device``) only reads a file the record
  trusts (a file not yet recorded is checked on the host first, recorded, dropped, then loaded).
* the circuit is asked two questions (``agent.proving.circuits``): the R1CS of a shape, and the assignment of
  one partition.
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
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from agent.admission import HostBudget
from agent.config import cache_dir
from agent.host import DeviceSampler, PeakRss
from agent.paramfiles import ParamDigests, fetch_hint, verdict
from agent.proving.circuits import Circuits
from agent.proving.engine import Engine, Groth16Engine
from agent.proving.kind import WorkKind
from agent.proving.parameters import CheckedParams, params_paths, read_params
from agent.proving.result import Events, PartitionResult, ProofResult, StageEvent, emit
from agent.proving.schedule import PartitionSchedule, ProofCancelled
from agent.proving.verifier import HostVerifier
from agent.proving.work import Work
from gpu.arith.fields.constants import R_MODULUS
from gpu.groth16 import reference
from gpu.groth16 import verifier as groth16_verifier
from gpu.groth16.params import check_file
from gpu.groth16.synthetic import SyntheticCircuit
from porep.official_params import OFFICIAL

if TYPE_CHECKING:
    from gpu.groth16.params import Parameters
    from gpu.groth16.params_device import DeviceParameters
    from gpu.groth16.prover import Assignment, ProvingKey
    from gpu.groth16.r1cs import R1CS
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = [
    "Circuits",
    "Events",
    "PartitionResult",
    "ProofCancelled",
    "ProofPipeline",
    "ProofResult",
    "StageEvent",
]

log = logging.getLogger(__name__)

Sample = tuple["R1CS", np.ndarray, list[int]]


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
    secret = [secrets.randbelow(R_MODULUS - 2) + 2 for _ in range(5)]
    return reference.setup(r1cs, reference.ToxicWaste(*secret))


def _synthetic_sample(constraints: int = 256) -> Sample:
    """The self-test's circuit: gpu.groth16.synthetic's Filecoin-like one (bits, packing, full values)."""
    sc = SyntheticCircuit(constraints, 2, seed=int.from_bytes(os.urandom(4), "little"))
    return sc.r1cs(), sc.witness(), sc.public_inputs()


# -- the pipeline --------------------------------------------------------------------------------------------


@dataclass
class _Shape:
    pt: ProofType | UpdateProofType | PoStProofType
    r1cs: R1CS
    key: ProvingKey
    host_bytes: int


def _streams(eng: Engine, r1cs: R1CS) -> bool:
    """Whether ``eng`` keeps ``r1cs``'s bases on the host (a streamed layout): then one page-locked copy
    serves every engine of the process."""
    layout = getattr(eng, "layout", None)  # engines without layouts (the CPU's, test doubles): never
    lay = layout(r1cs) if layout is not None else None
    return lay is not None and not lay.key_on_device


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
        # a streamed layout's page-locked bases, by parameter stem: loaded once, shared by every engine's key
        self._host_keys: dict[str, Parameters] = {}
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
            kind = WorkKind.of(pt)
            post = kind.post_kind.value if kind.post_kind is not None else None
            hint = fetch_hint(pt.size_label, self.params_dir, update=kind is WorkKind.SNAP, post=post)
            raise FileNotFoundError(f"Groth16 parameters for {pt.name} not found: {path} ({hint})")
        return path

    def _official(self, path: Path) -> bool:
        """Whether ``path`` is an official file (its published digest matches): then the digest vouches for
        every point, as paramfetch's check does for lotus, and the per-point check is not needed (it is
        recorded as checked). The digest is computed once per file version."""
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
                emit(events, StageEvent("", -1, 0, "synthesis"))
                t0 = time.perf_counter()
                r1cs = self._r1cs[pt.param_stem] = self.circuits.r1cs(pt)
                setup["synthesis"] = time.perf_counter() - t0
                emit(events, StageEvent("", -1, 0, "synthesis", setup["synthesis"]))
            t0 = time.perf_counter()
            trusted = self.checked.trusted(path) or self._official(path)
            if not trusted:
                log.info("%s: first use, reading with the per-point subgroup check (once per file)", path)
            emit(events, StageEvent("", -1, 0, "params" if trusted else "params (first use: point checks)"))
            params: Parameters | DeviceParameters
            shared = self._host_keys.get(pt.param_stem) if _streams(eng, r1cs) else None
            if shared is not None:  # another engine's page-locked bases: one host copy for every device
                params = shared
                setup["params_shared"] = 0.0
            elif eng.params_to_device:
                params = self._params_to_device(eng, path, r1cs, trusted, setup)
            else:
                params = self._read_checked(path, trusted, events)
                if not trusted:
                    self.checked.record(path)
            setup["params"] = time.perf_counter() - t0
            if not trusted:
                setup.setdefault("params_point_check", setup["params"])  # the once-per-file check: this load
            emit(events, StageEvent("", -1, 0, "params", setup["params"]))
            if params.vk.num_inputs != r1cs.num_inputs or params.l.shape[0] != r1cs.num_aux:
                raise ValueError(
                    f"{path.name}: parameters for {params.vk.num_inputs} inputs / {params.l.shape[0]} aux, "
                    f"the {pt.name} circuit has {r1cs.num_inputs} / {r1cs.num_aux}"
                )
            emit(events, StageEvent("", -1, 0, "key"))
            t0 = time.perf_counter()
            key = eng.key(params, r1cs)
            self.verifier.use_key(pt, params.vk)
            setup["key"] = time.perf_counter() - t0
            emit(events, StageEvent("", -1, 0, "key", setup["key"]))
            if _streams(eng, r1cs) and shared is None:
                self._host_keys[pt.param_stem] = params  # type: ignore[assignment]  # host Parameters
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
            self._host_keys.pop(pt.param_stem, None)
        return engines

    def _read_checked(self, path: Path, trusted: bool, events: Events | None) -> Parameters:
        """The host read of ``path``, with the per-point check unless ``trusted``. The default reader checks
        first, chunk by chunk, telling the fraction done (a first check takes minutes to tens of minutes: the
        time left is then known), then decodes without the subgroup check (what was just checked)."""
        if trusted or self.read_params is not read_params or events is None:
            return self.read_params(path, not trusted)
        stage = "params (first use: point checks)"
        check_file(path, lambda done, total: emit(events, StageEvent("", -1, 0, stage, None, done / total)))
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
        t_start = time.perf_counter()
        setup: dict[str, float] = {}
        shape = self.shape(work.proof_type, engine=engine, setup=setup, events=events)
        lanes = max(1, min(self.workers, work.partitions))
        # the engine holds its device for a partition's whole device part, so the lanes' proofs never hold
        # device memory at once: each may use the whole grant
        run = _ProofRun(
            self, work, job_id, shape, self.engines[engine], memory_bytes, events, verify, device_turn
        )
        schedule: PartitionSchedule[Assignment, _Proven] = PartitionSchedule(
            work.partitions, lanes, host=self.host, host_bytes=shape.host_bytes, job_id=job_id, cancel=cancel
        )
        with PeakRss() as rss, DeviceSampler(run.eng.device_used) as dev:
            schedule.run(run)
        return ProofResult(
            job_id=job_id,
            proof_type=work.proof_type.name,
            backend=run.eng.backend,
            proof=b"".join(run.proofs),
            partitions=[r for r in run.results if r is not None],
            setup=setup,
            wall_s=time.perf_counter() - t_start,
            rss_peak_bytes=rss.peak,
            device_peak_bytes=dev.peak,
            host_reserved_peak_bytes=schedule.host_peak,
        )

    def self_test(self, engine: int = 0) -> float:
        """Prove and verify a small circuit on engine ``engine`` (a fresh setup by the reference
        implementation); also check that a wrong public input is rejected. Warms the kernels the real proofs
        use. Returns seconds; raises RuntimeError saying what failed."""
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
            good = groth16_verifier.verify(params.vk, proof, xs)
        except ValueError as e:  # malformed proof bytes
            raise RuntimeError(f"{what} did not verify: {e}") from e
        if not good:
            raise RuntimeError(f"{what} did not verify")
        if groth16_verifier.verify(params.vk, proof, [xs[0] ^ 1, *xs[1:]]):
            raise RuntimeError("self-test: a wrong public input was accepted")
        return time.perf_counter() - t0


_Proven = tuple[bytes, dict[str, float]]  # a partition's proof and the engine's stage times


class _ProofRun:
    """One proof's partitions as the scheduler's lanes drive them (:class:`PartitionWork`): the witness and
    A·w, B·w, C·w on a synthesis thread, the Groth16 proof on a lane, then the pairing check once the
    assignment was given back; the verdicts and proofs by partition."""

    def __init__(
        self,
        pipeline: ProofPipeline,
        work: Work,
        job_id: str,
        shape: _Shape,
        eng: Engine,
        memory_bytes: int | None,
        events: Events | None,
        verify: bool,
        device_turn: Callable[[], AbstractContextManager[object]] | None,
    ) -> None:
        self.pipeline, self.work, self.job_id, self.shape, self.eng = pipeline, work, job_id, shape, eng
        self.memory_bytes, self.events, self.verify = memory_bytes, events, verify
        self.device_turn = device_turn
        n = self.n = work.partitions
        self.stages: list[dict[str, float]] = [{} for _ in range(n)]
        self.results: list[PartitionResult | None] = [None] * n
        self.proofs: list[bytes] = [b""] * n

    def _event(self, k: int, stage: str, seconds: float | None = None) -> None:
        emit(self.events, StageEvent(self.job_id, k, self.n, stage, seconds))

    def synthesise(self, k: int) -> Assignment:
        st = self.stages[k]
        self._event(k, "witness")
        t0 = time.perf_counter()
        witness = self.pipeline.circuits.assignment(self.work, k)
        st["witness"] = time.perf_counter() - t0
        self._event(k, "witness", st["witness"])
        self._event(k, "a/b/c")
        t0 = time.perf_counter()
        asg = self.eng.assign(self.shape.r1cs, witness)
        del witness
        st["a/b/c"] = time.perf_counter() - t0
        self._event(k, "a/b/c", st["a/b/c"])
        return asg

    def prove(self, k: int, assignment: Assignment) -> _Proven:
        """The Groth16 proof, inside the device turn when there is one (its wait: stage ``device_wait``)."""
        t0 = time.perf_counter()
        with self.device_turn() if self.device_turn is not None else nullcontext():
            if self.device_turn is not None:
                self.stages[k]["device_wait"] = time.perf_counter() - t0
            self._event(k, "prove")
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            proof = self.eng.prove(
                self.shape.key, assignment, memory_bytes=self.memory_bytes, timings=timings
            )
            prove_s = time.perf_counter() - t0
        return proof, _engine_stages(timings, prove_s)

    def release(self, assignment: Assignment) -> None:
        self.eng.release(assignment)

    def finish(self, k: int, proven: _Proven) -> None:
        proof, engine_stages = proven
        st = self.stages[k]
        st.update(engine_stages)
        self._event(k, "prove", engine_stages["groth16"])
        good: bool | None = None
        if self.verify:
            t0 = time.perf_counter()
            good = self.pipeline.verifier.partition(self.work, k, proof)
            st["verify"] = time.perf_counter() - t0
            self._event(k, "verified" if good else "NOT VERIFIED", st["verify"])
        self.results[k] = PartitionResult(k, good, st)
        self.proofs[k] = proof
