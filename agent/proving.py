"""One proving pipeline for every path that proves a C1: ``psagent prove``, ``bench e2e`` and the agent.

:class:`ProofPipeline` turns a PoRep C1 into a verified proof:

* parameters read once per process and kept with the proving key (bases resident on the device). The
  per-point subgroup check of a ``.params`` file (minutes of CPU at 2KiB, ~10^7 points) runs once per file:
  its success is recorded by the file's BLAKE2b digest, size and mtime (:class:`CheckedParams`, in the cache
  directory), so later starts read it without the check; a changed file is checked again. Files this machine
  generated (:func:`ensure_dev_params`) are recorded when they are written.
* opt-in (``PSAGENT_PARAMS_TO_DEVICE=1``, read by :func:`params_to_device_default` only; not the default until
  it has run on a GPU): a CUDA engine decodes the ``.params`` file straight onto its device by memory map
  (``gpu.groth16.params_device.load_to_device``, H placed bit-reversed) and builds the key over those resident
  bases (``ProvingKey.from_device_parameters``): the host never holds the bases (~47 GB at 32GiB). That
  loader makes no subgroup check, so it only reads a file the record above trusts; a file not yet recorded is
  checked on the host first (once, as the default path does), recorded, dropped, then loaded to the device.
* device memory: a job reserves its proof's working bytes (``device_bytes``); the keys' resident bytes (the
  bases and, with ``PSAGENT_DEVICE_SPMV=1``, the resident R1CS) are taken off the device's admission budget
  once per loaded key (:meth:`CircuitProver.charge_resident`), not per job. Host memory: an assignment holds
  the witness and, unless the CUDA engine evaluates A·w, B·w, C·w on the device, those three vectors
  (:func:`assignment_host_bytes`).
* the circuit is asked the two questions of ``porep.circuit.partition`` (the R1CS of a shape, cached here per
  proof type; the assignment of one partition) through :class:`Circuit`, the seam behind which the
  pre-compiled circuit and the vectorised witness replace direct synthesis.
* partitions are synthesised on a CPU thread while the previous one proves: at most one partition ahead, and
  each in-flight assignment holds its host bytes from ``agent.admission.HostBudget`` until it is proven.
* every partition is verified with the pairing (pyblst) against public inputs the caller computed without the
  circuit, before the result is returned; the result (:class:`ProofResult`) carries per-partition verdicts,
  per-stage seconds, the host RSS peak and the device-memory peak.

:class:`CircuitProver` is the agent's thin adapter: it asks ``agent.admission`` for a slot on its device and
the proving key's ``device_bytes``, then runs the pipeline in a worker thread with the grant as
``memory_bytes``. SnapDeals update requests take the same path through a second pipeline whose circuit seam
is ``porep.snap.partition.UpdateCircuit``.
:meth:`CircuitProver.warm_up` is the readiness gate's work (parameters of every accepted proof type loaded,
kernels compiled, a self-test proof of a small synthetic circuit proven and verified on the same engine).

:class:`PairingChecker` verifies a proof independently of the prover (public inputs from the request's public
values, never from the circuit), one bool per partition.

:func:`ensure_dev_params` makes development parameters for a proof type once (a fresh trusted setup with
CSPRNG toxic waste, which is discarded: fine for a dry run, not what the market verifies against).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from agent.admission import CPU_SLOT, Admission, HostBudget
from agent.pipeline import VerifyReport
from market.proofdata import ProofData

__all__ = [
    "PRODUCTION_PROOF_TYPES",
    "PRODUCTION_UPDATE_TYPES",
    "CheckedParams",
    "Circuit",
    "CircuitProver",
    "Engine",
    "Groth16Engine",
    "PairingChecker",
    "PartitionResult",
    "PorepCircuit",
    "ProofPipeline",
    "ProofResult",
    "StageEvent",
    "ensure_dev_params",
    "params_paths",
    "params_to_device_default",
    "work_inputs",
]

log = logging.getLogger(__name__)
PROOF_BYTES = 192
PRODUCTION_PROOF_TYPES = ("StackedDrg32GiBV1_1",)  # what the market sends (issue P15)
# and its SnapDeals work (an ask cannot refuse Snap): the gate waits for these parameters as well
PRODUCTION_UPDATE_TYPES = ("StackedDrg32GiBV1",)

PARAMS_TO_DEVICE_ENV = "PSAGENT_PARAMS_TO_DEVICE"

Progress = Callable[[str, float, float], None]


def params_to_device_default() -> bool:
    """Whether a CUDA :class:`Groth16Engine` loads parameters straight to its device when its caller does not
    say: the one place PSAGENT_PARAMS_TO_DEVICE is read (=1: yes; unset or anything else: no, the host reader
    and an upload, the default)."""
    return os.environ.get(PARAMS_TO_DEVICE_ENV) == "1"


def params_paths(params_dir: Path, pt: Any) -> tuple[Path, Path]:
    """``(…/<stem>.params, …/<stem>.vk)`` for a ``porep.prooftypes.ProofType`` (Filecoin's names)."""
    return params_dir / f"{pt.param_stem}.params", params_dir / f"{pt.param_stem}.vk"


def _porep(work: ProofData) -> Any:
    if work.porep is None:
        raise ValueError("not a PoRep request (ProofData.PoRep is null)")
    return work.porep


def _update_type(work: ProofData) -> Any:
    """The ``porep.snap.params.UpdateProofType`` of a Snap request."""
    from porep.snap.params import update_proof_type

    assert work.snap is not None
    return update_proof_type(work.snap.proof_type)


def work_inputs(work: ProofData) -> list[list[int]]:
    """Every partition's public inputs from the request's public values only, never from the circuit.
    PoRep: prover id from the miner, sector, ticket, seed, comm_d, comm_r (replica_id recomputed); Snap: the
    commitments old_r, new_r, new_d (``porep.snap.partition.update_public_inputs``)."""
    from porep.ids import prover_id
    from porep.public_inputs import record_inputs

    if work.snap is not None:
        from porep.snap.partition import update_public_inputs

        return update_public_inputs(work.snap)
    c1 = _porep(work)
    arr = c1.arrays
    return list(
        record_inputs(
            c1.proof_type,
            prover_id=prover_id(work.sector_id.miner),
            sector_id=work.sector_id.number,
            ticket=arr.domain("ticket"),
            seed=arr.domain("seed"),
            comm_d=arr.domain("comm_d"),
            comm_r=arr.domain("comm_r"),
        )
    )


# -- parameters checked once ---------------------------------------------------------------------------------


def file_digest(path: Path, chunk: int = 1 << 22) -> str:
    """BLAKE2b-256 of a file, streamed (a 47 GB .params file never sits in memory)."""
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


class CheckedParams:
    """Parameter files whose full per-point check passed, by BLAKE2b digest, size and mtime (a JSON file in
    the cache directory). Same size and mtime as recorded: trusted without reading it; otherwise the digest
    decides (the same bytes copied or touched stay trusted, changed bytes are checked again)."""

    def __init__(self, cache: Path) -> None:
        self.path = Path(cache) / "params-checked.json"
        self._lock = threading.Lock()

    def _entries(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def trusted(self, path: Path) -> bool:
        st = path.stat()
        with self._lock:
            entries = self._entries()
        rec = entries.get(str(path.resolve()))
        if rec and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns:
            return True
        same_size = [r for r in entries.values() if r.get("size") == st.st_size]
        if not same_size:
            return False
        digest = file_digest(path)
        if any(r.get("blake2b") == digest for r in same_size):
            self.record(path, digest)
            return True
        return False

    def record(self, path: Path, digest: str | None = None) -> None:
        """Note that ``path`` (as it is now) passed the check, or was generated here."""
        st = path.stat()
        entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "blake2b": digest or file_digest(path)}
        with self._lock:
            entries = self._entries()
            entries[str(path.resolve())] = entry
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps(entries, indent=1) + "\n")
            os.replace(tmp, self.path)


def _read_params(path: Path, subgroup_check: bool) -> Any:
    from gpu.groth16.params import Parameters

    return Parameters.read(path, subgroup_check=subgroup_check)


# -- the circuit and the engine, as the pipeline sees them ---------------------------------------------------


class Circuit(Protocol):
    """The two questions a prover asks of the circuit (``porep.circuit.partition``)."""

    def r1cs(self, pt: Any) -> Any: ...
    def assignment(self, c1: Any, k: int) -> np.ndarray: ...


class PorepCircuit:
    """The StackedDRG circuit through ``porep.circuit.partition`` (the pre-compiled R1CS and the compiled
    witness programs kept under ``cache``)."""

    def __init__(self, cache: Path | None = None) -> None:
        self.cache = cache

    def r1cs(self, pt: Any) -> Any:
        from porep.circuit.partition import partition_r1cs

        return partition_r1cs(pt, self.cache)

    def assignment(self, c1: Any, k: int) -> np.ndarray:
        from porep.circuit.partition import partition_assignment

        return partition_assignment(c1, k, cache_dir=self.cache)


class Engine(Protocol):
    """The Groth16 operations the pipeline needs (``gpu.groth16``; a reference engine in tests)."""

    backend: str

    def key(self, params: Any, r1cs: Any) -> Any: ...
    def device_bytes(self, key: Any) -> int: ...
    def assign(self, r1cs: Any, witness: np.ndarray) -> Any: ...
    def release(self, asg: Any) -> None: ...
    def prove(self, key: Any, asg: Any, *, memory_bytes: int | None, timings: dict[str, float]) -> bytes: ...
    def device_used(self) -> int | None: ...


class Groth16Engine:
    """``gpu.groth16`` on one backend (and, for CUDA, one named device). On CUDA the assignments are written
    into a page-locked pool kept for the process (allocating pinned memory per proof costs seconds)."""

    def __init__(
        self, backend: Any = "auto", device: int | None = None, *, params_to_device: bool | None = None
    ) -> None:
        """``params_to_device`` (None: :func:`params_to_device_default`, the environment; CUDA only): the
        pipeline loads parameter files with :meth:`load_params` instead of the host reader."""
        from gpu import Backend
        from gpu.device import get_device, resolve_backend

        chosen = resolve_backend(backend)
        self.backend = chosen.value
        self.device: Any = get_device(device if device is not None else 0) if chosen is Backend.cuda else None
        wanted = params_to_device if params_to_device is not None else params_to_device_default()
        self.params_to_device = self.device is not None and wanted
        self._pool: Any = None
        if self.device is not None and not self.device.simulated:
            from gpu.transfer import PinnedPool

            self._pool = PinnedPool()

    def load_params(self, path: Path) -> Any:
        """``path`` decoded straight onto this engine's device (``DeviceParameters``, H bit-reversed as the
        prover wants it). No subgroup check: only for a file the per-point check record trusts."""
        from gpu.groth16.params_device import load_to_device

        if self.device is None:
            raise ValueError("parameters go to a device only with the CUDA backend")
        return load_to_device(path, self.device, h_bitrev=True)

    def key(self, params: Any, r1cs: Any) -> Any:
        """The proving key over host ``Parameters`` (uploaded) or ``DeviceParameters`` (already resident)."""
        from gpu.groth16.params_device import DeviceParameters
        from gpu.groth16.prover import ProvingKey

        if isinstance(params, DeviceParameters):
            return ProvingKey.from_device_parameters(params, r1cs.density(), device=self.device)
        return ProvingKey(params, r1cs.density(), backend=self.backend, device=self.device)

    def device_bytes(self, key: Any) -> int:
        """One proof's device working bytes beyond the key (``gpu.groth16.prover.device_bytes``)."""
        from gpu.groth16.prover import device_bytes

        return int(device_bytes(key)) if self.device is not None else 0

    def resident_bytes(self, key: Any, r1cs: Any) -> int:
        """Device bytes the key keeps for as long as it lives: the five bases and the A/B gather indices, and
        with the device SpMV switch on (``gpu.groth16.prover.device_spmv_default``) the R1CS that
        ``ProvingKey.device_r1cs`` uploads at the first proof. 0 on the CPU."""
        import math

        from gpu.groth16.prover import device_spmv_default

        if self.device is None:
            return 0
        n = sum(int(c.n) * 4 * math.prod(c.group.affine_shape) for c in key.ctx.values())
        n += int(key.d_a_idx.nbytes) + int(key.d_b_idx.nbytes)
        if device_spmv_default():
            n += resident_r1cs_bytes(r1cs)
        return n

    def assign(self, r1cs: Any, witness: np.ndarray) -> Any:
        from gpu.groth16.prover import Assignment

        return Assignment.from_r1cs(r1cs, witness, pool=self._pool)

    def release(self, asg: Any) -> None:
        if self._pool is not None:
            asg.release(self._pool)

    def prove(self, key: Any, asg: Any, *, memory_bytes: int | None, timings: dict[str, float]) -> bytes:
        from gpu.groth16.prover import prove

        out: list[dict[str, float]] = []
        (proof,) = prove(key, asg, timings=out, memory_bytes=memory_bytes)
        timings.update(out[0])
        return bytes(proof.to_bytes())

    def device_used(self) -> int | None:
        """Bytes in use on the device now (all of it, other processes included); None on the CPU. Asked
        without the device lock (a sampler thread reads it while a proof holds the device)."""
        if self.device is None or self.device.simulated:
            return None
        from numba import cuda

        with cuda.gpus[self.device.index]:
            free, total = cuda.current_context().get_memory_info()
        return int(total - free)


# -- results -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageEvent:
    """Progress of one proof: ``seconds`` is None when ``stage`` starts, its duration when it ended."""

    job_id: str
    partition: int
    partitions: int
    stage: str
    seconds: float | None = None


Events = Callable[[StageEvent], None]


@dataclass
class PartitionResult:
    index: int
    verified: bool
    stages: dict[str, float]


@dataclass
class ProofResult:
    """A proof and how it was made. ``proof`` is returned even when a partition failed its pairing check:
    callers decide (the CLI writes nothing, the agent's checker diagnoses and retries)."""

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
    def ok(self) -> bool:
        return bool(self.partitions) and all(p.verified for p in self.partitions)

    @property
    def verified(self) -> tuple[bool, ...]:
        return tuple(p.verified for p in self.partitions)

    def report(self) -> VerifyReport:
        return VerifyReport(self.verified)

    def stages(self) -> dict[str, float]:
        """Seconds per stage summed over the partitions (sub-stages such as ``msm_h.sort`` left out)."""
        out: dict[str, float] = {}
        for p in self.partitions:
            for k, v in p.stages.items():
                if "." not in k and k not in ("total", "batch"):
                    out[k] = out.get(k, 0.0) + v
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "proof_type": self.proof_type,
            "backend": self.backend,
            "partitions": len(self.partitions),
            "verified": f"{sum(self.verified)}/{len(self.partitions)}",
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


def assignment_host_bytes(r1cs: Any, *, device_spmv: bool = False) -> int:
    """Host bytes one partition's assignment holds: the witness and, unless A·w, B·w, C·w are evaluated on
    the device (``device_spmv``: a CUDA engine with PSAGENT_DEVICE_SPMV=1), those three
    (``gpu.groth16.plan.assignment_host_bytes``)."""
    from gpu.groth16 import plan

    rows = int(r1cs.num_constraints) + int(r1cs.num_inputs)
    sizes = plan.ProofSizes(0, int(r1cs.num_inputs), int(r1cs.num_aux), 0, 0, 0, rows=rows)
    return plan.assignment_host_bytes(sizes, device_spmv=device_spmv)


def _device_spmv_default() -> bool:
    from gpu.groth16.prover import device_spmv_default

    return device_spmv_default()


def resident_r1cs_bytes(r1cs: Any) -> int:
    """Device bytes of ``r1cs`` made resident by ``gpu.groth16.spmv_cuda.DeviceR1CS.upload``: per matrix the
    row pointers (uint32, int64 from 2^32 entries), uint32 columns, the coefficient indices, the Montgomery
    coefficient table (32 bytes a row), each at least one element. Exact for interned (compact) matrices; a
    plain CSR is interned on upload, so its count is an upper bound (4-byte indices, one table row per
    entry)."""
    from gpu.groth16 import plan

    rows = int(r1cs.num_constraints) + int(r1cs.num_inputs)
    sizes = plan.ProofSizes(0, int(r1cs.num_inputs), int(r1cs.num_aux), 0, 0, 0, rows=rows,
                            matrices=plan.matrix_sizes(r1cs))
    return plan.resident_r1cs_bytes(sizes)


def memory_plan_of(
    pt: Any,
    *,
    update: bool,
    cuda: bool,
    device_spmv: bool,
    params_to_device: bool = True,
    cache: Path | None = None,
) -> tuple[Any, list[Any]]:
    """(``gpu.groth16.plan.ProofSizes``, the plan's stages) of one proof of ``pt`` (a seal proof type, or an
    update one with ``update``), from the circuit template's counts: no matrix is tiled and nothing large is
    allocated, so a 32GiB plan costs the template (recorded once, cached) and not the 7.5 GB R1CS. The same
    formulas as admission (``device_bytes``, ``resident_bytes``, ``assignment_host_bytes``)."""
    from agent.config import cache_dir
    from gpu.groth16 import plan

    cache = cache if cache is not None else cache_dir()
    if update:
        from porep.snap.partition import update_template

        t = update_template(pt, cache)
    else:
        from porep.circuit.partition import partition_template

        t = partition_template(pt, cache)
    sizes = plan.ProofSizes.of_stats(
        t.stats(), coeff_bytes=int(t.coeff[0].dtype.itemsize), table_rows=int(t.table.shape[0])
    )
    return sizes, plan.memory_plan(
        sizes, device_spmv=device_spmv, cuda=cuda, params_to_device=params_to_device
    )


# -- the pipeline --------------------------------------------------------------------------------------------


@dataclass
class _Shape:
    r1cs: Any
    key: Any
    vk: Any  # prepared verifying key (from the parameters file's own vk)
    host_bytes: int


class ProofPipeline:
    """C1 → verified proof, one code path for the CLI, the benchmark and the agent (see the module docstring).

    Thread-safe: loading a shape takes a lock; concurrent proofs of one process share the keys."""

    def __init__(
        self,
        params_dir: Path,
        *,
        engine: Engine | None = None,
        circuit: Circuit | None = None,
        cache: Path | None = None,
        host: HostBudget | None = None,
        read_params: Callable[[Path, bool], Any] = _read_params,
        setup: Callable[[Any], Any] | None = None,
        sample: Callable[[], tuple[Any, np.ndarray, list[int]]] | None = None,
    ) -> None:
        """``engine``/``circuit``: the seams (default gpu.groth16, porep.circuit.partition). ``read_params``
        (path, subgroup_check), and for the self-test ``setup`` (R1CS → Parameters) and ``sample`` (R1CS,
        witness, public inputs): the reference setup and a 256-constraint synthetic circuit."""
        from agent.config import cache_dir

        self.params_dir = Path(params_dir)
        cache = cache if cache is not None else cache_dir()
        self.engine: Engine = engine if engine is not None else Groth16Engine()
        self.circuit: Circuit = circuit if circuit is not None else PorepCircuit(cache)
        self.cache = cache
        self.checked = CheckedParams(cache)
        self.host = host or HostBudget()
        self.read_params = read_params
        self.setup = setup
        self.sample = sample or _synthetic_sample
        self._shapes: dict[str, _Shape] = {}
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        return self.engine.backend

    def loaded(self, pt: Any) -> bool:
        return pt.name in self._shapes

    def params_file(self, pt: Any) -> Path:
        """The .params file of ``pt``; FileNotFoundError naming it (before any synthesis) when absent."""
        path, _ = params_paths(self.params_dir, pt)
        if not path.is_file():
            from agent.paramfiles import fetch_hint

            size, update = getattr(pt, "size_label", pt.name), "empty-sector-update" in pt.param_stem
            hint = fetch_hint(size, self.params_dir, update=update)
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

    def shape(self, pt: Any, setup: dict[str, float] | None = None, events: Events | None = None) -> _Shape:
        """The R1CS, proving key and verifying key of ``pt``, loaded on first use and kept."""
        from gpu.groth16.verifier import prepare_verifying_key

        with self._lock:
            got = self._shapes.get(pt.name)
            if got is not None:
                return got
            setup = setup if setup is not None else {}
            path = self.params_file(pt)
            _emit(events, StageEvent("", -1, 0, "synthesis"))
            t0 = time.perf_counter()
            r1cs = self.circuit.r1cs(pt)
            setup["synthesis"] = time.perf_counter() - t0
            _emit(events, StageEvent("", -1, 0, "synthesis", setup["synthesis"]))
            t0 = time.perf_counter()
            trusted = self.checked.trusted(path) or self._official(path)
            if not trusted:
                log.info("%s: first use, reading with the per-point subgroup check (once per file)", path)
            _emit(events, StageEvent("", -1, 0, "params" if trusted else "params (first use: point checks)"))
            if getattr(self.engine, "params_to_device", False):
                params = self._params_to_device(path, trusted, setup)
            else:
                params = self.read_params(path, not trusted)
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
            key = self.engine.key(params, r1cs)
            vk = prepare_verifying_key(params.vk)
            setup["key"] = time.perf_counter() - t0
            _emit(events, StageEvent("", -1, 0, "key", setup["key"]))
            device_spmv = self.engine.backend == "cuda" and _device_spmv_default()
            host_bytes = assignment_host_bytes(r1cs, device_spmv=device_spmv)
            got = self._shapes[pt.name] = _Shape(r1cs, key, vk, host_bytes)
            return got

    def _params_to_device(self, path: Path, trusted: bool, setup: dict[str, float]) -> Any:
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
        params = self.engine.load_params(path)  # type: ignore[attr-defined]
        setup["params_device_load"] = time.perf_counter() - t0
        return params

    def device_bytes(self, pt: Any) -> int:
        """Device bytes one proof of ``pt`` needs beyond the resident key (what the agent reserves)."""
        return self.engine.device_bytes(self.shape(pt).key)

    def resident_bytes(self, pt: Any) -> int:
        """Device bytes the key of ``pt`` keeps resident (0 for an engine that does not say)."""
        shape = self.shape(pt)
        fn = getattr(self.engine, "resident_bytes", None)
        return int(fn(shape.key, shape.r1cs)) if fn is not None else 0

    def prove(
        self,
        c1: Any,
        inputs: Sequence[Sequence[int]],
        *,
        job_id: str,
        memory_bytes: int | None = None,
        events: Events | None = None,
    ) -> ProofResult:
        """Prove every partition of ``c1``; verify each against ``inputs`` (computed without the circuit)."""
        from gpu.groth16.verifier import verify

        pt = c1.proof_type
        n = len(c1.vanilla_proofs)
        if len(inputs) != n:
            raise ValueError(f"{len(inputs)} public-input vectors for {n} partitions")
        t_start = time.perf_counter()
        setup: dict[str, float] = {}
        shape = self.shape(pt, setup, events)
        rss_reset = _reset_peak_rss()
        results: list[PartitionResult] = []
        proofs: list[bytes] = []
        host_peak = 0
        held: dict[int, Any] = {}  # partition -> the host reservation's context manager

        def synthesise(k: int) -> tuple[Any, dict[str, float]]:
            """Partition k's assignment, on the synthesis thread; its host bytes are held until proven."""
            nonlocal host_peak
            reservation = self.host.reserve(shape.host_bytes)
            reservation.__enter__()
            held[k] = reservation
            host_peak = max(host_peak, self.host.used)
            try:
                st: dict[str, float] = {}
                _emit(events, StageEvent(job_id, k, n, "witness"))
                t0 = time.perf_counter()
                witness = self.circuit.assignment(c1, k)
                st["witness"] = time.perf_counter() - t0
                _emit(events, StageEvent(job_id, k, n, "witness", st["witness"]))
                _emit(events, StageEvent(job_id, k, n, "a/b/c"))
                t0 = time.perf_counter()
                asg = self.engine.assign(shape.r1cs, witness)
                del witness
                st["a/b/c"] = time.perf_counter() - t0
                _emit(events, StageEvent(job_id, k, n, "a/b/c", st["a/b/c"]))
                return asg, st
            except BaseException:
                held.pop(k).__exit__(None, None, None)
                raise

        def release(k: int, asg: Any) -> None:
            try:
                if asg is not None:
                    self.engine.release(asg)
            finally:
                res = held.pop(k, None)
                if res is not None:
                    res.__exit__(None, None, None)

        with ThreadPoolExecutor(1, thread_name_prefix="psagent-synth") as pool, _DeviceSampler(
            self.engine.device_used
        ) as dev:
            ahead: Future[tuple[Any, dict[str, float]]] | None = pool.submit(synthesise, 0)
            try:
                for k in range(n):
                    assert ahead is not None
                    asg, st = ahead.result()
                    # one partition ahead, never more: its bytes wait for the host budget
                    ahead = pool.submit(synthesise, k + 1) if k + 1 < n else None
                    try:
                        _emit(events, StageEvent(job_id, k, n, "prove"))
                        timings: dict[str, float] = {}
                        t0 = time.perf_counter()
                        proof = self.engine.prove(shape.key, asg, memory_bytes=memory_bytes, timings=timings)
                        prove_s = time.perf_counter() - t0
                    finally:
                        release(k, asg)
                        del asg
                    st.update(_engine_stages(timings, prove_s))
                    _emit(events, StageEvent(job_id, k, n, "prove", prove_s))
                    t0 = time.perf_counter()
                    good = bool(verify(shape.vk, proof, list(inputs[k])))
                    st["verify"] = time.perf_counter() - t0
                    verdict = "verified" if good else "NOT VERIFIED"
                    _emit(events, StageEvent(job_id, k, n, verdict, st["verify"]))
                    results.append(PartitionResult(k, good, st))
                    proofs.append(proof)
            finally:
                # a failure left a partition synthesised ahead: give its buffers and host bytes back
                if ahead is not None and not ahead.cancel():
                    try:
                        left, _ = ahead.result()
                    except BaseException:  # noqa: BLE001 - synthesise released its bytes; the first error wins
                        left = None
                    if left is not None:
                        release(len(results) + 1, left)
        wall = time.perf_counter() - t_start
        return ProofResult(
            job_id=job_id,
            proof_type=pt.name,
            backend=self.engine.backend,
            proof=b"".join(proofs),
            partitions=results,
            setup=setup,
            wall_s=wall,
            rss_peak_bytes=_peak_rss() if rss_reset else None,
            device_peak_bytes=dev.peak,
            host_reserved_peak_bytes=host_peak,
        )

    def self_test(self) -> float:
        """Prove and verify a small circuit on this engine (a fresh setup by the reference implementation);
        also check that a wrong public input is rejected. Warms the kernels the real proofs use. Returns
        seconds; raises RuntimeError saying what failed."""
        from gpu.groth16.verifier import verify

        setup = self.setup if self.setup is not None else _reference_setup
        t0 = time.perf_counter()
        r1cs, witness, xs = self.sample()
        params = setup(r1cs)
        key = self.engine.key(params, r1cs)
        asg = self.engine.assign(r1cs, witness)
        try:
            proof = self.engine.prove(key, asg, memory_bytes=None, timings={})
        finally:
            self.engine.release(asg)
        what = f"self-test: the {r1cs.num_constraints}-constraint proof on {self.backend}"
        try:
            good = verify(params.vk, proof, xs)
        except ValueError as e:  # malformed proof bytes
            raise RuntimeError(f"{what} did not verify: {e}") from e
        if not good:
            raise RuntimeError(f"{what} did not verify")
        if verify(params.vk, proof, [xs[0] ^ 1, *xs[1:]]):
            raise RuntimeError("self-test: a wrong public input was accepted")
        return time.perf_counter() - t0


def _reference_setup(r1cs: Any) -> Any:
    """The self-test's parameters: gpu.groth16.reference's setup (Python integers + pyblst: independent of
    the engine under test, nothing to compile), CSPRNG toxic waste, discarded."""
    import secrets

    from gpu.arith.fields.constants import R_MODULUS
    from gpu.groth16 import reference

    secret = [secrets.randbelow(R_MODULUS - 2) + 2 for _ in range(5)]
    return reference.setup(r1cs, reference.ToxicWaste(*secret))


def _synthetic_sample(constraints: int = 256) -> tuple[Any, np.ndarray, list[int]]:
    """The self-test's circuit: gpu.groth16.synthetic's Filecoin-like one (bits, packing, full values)."""
    from gpu.groth16.synthetic import SyntheticCircuit

    sc = SyntheticCircuit(constraints, 2, seed=int.from_bytes(os.urandom(4), "little"))
    return sc.r1cs(), sc.witness(), sc.public_inputs()


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


# -- the agent's adapter, checker, development parameters ----------------------------------------------------


class CircuitProver:
    """The agent's prover: the pipeline behind ``agent.admission`` (a job slot on the device and the proving
    key's ``device_bytes`` of its memory budget; the CPU backend is one slot). ``accepted``: the PoRep proof
    types the readiness gate loads before the first ask; ``accepted_update``: the SnapDeals update proof types
    it loads too (``RegisteredUpdateProof`` names: a separate list, since "StackedDrg2KiBV1" names both a
    seal and an update proof).

    Snap work goes through its own pipeline (``update_pipeline``: the update circuit behind the circuit seam),
    sharing the PoRep pipeline's engine (device, pinned pool) and host budget. Two pipelines rather than one
    shape cache keyed by parameter stem because the circuit is the pipeline's seam: one pipeline answers for
    one circuit, and its shape cache (keyed by proof-type name) can then never hand a seal shape to an update
    proof of the same name."""

    def __init__(
        self,
        params_dir: Path,
        *,
        backend: Any = "auto",
        device: int | None = None,
        accepted: Sequence[str] = PRODUCTION_PROOF_TYPES,
        accepted_update: Sequence[str] = (),
        pipeline: ProofPipeline | None = None,
        update_pipeline: ProofPipeline | None = None,
        admission: Admission | None = None,
        cache: Path | None = None,
        device_budget_bytes: int | None = None,
    ) -> None:
        """``device_budget_bytes``: the device memory proofs may reserve (config prover.memory_budget_gib;
        None: 90 % of the device's)."""
        from porep.snap.partition import UpdateCircuit

        self.pipeline = pipeline or ProofPipeline(
            params_dir, engine=Groth16Engine(backend, device), cache=cache
        )
        self.update_pipeline = update_pipeline or ProofPipeline(
            self.pipeline.params_dir,
            engine=self.pipeline.engine,
            circuit=UpdateCircuit(self.pipeline.cache),
            cache=self.pipeline.cache,
            host=self.pipeline.host,
            read_params=self.pipeline.read_params,
            setup=self.pipeline.setup,
            sample=self.pipeline.sample,
        )
        dev = getattr(self.pipeline.engine, "device", None)
        self.slot = dev if dev is not None else CPU_SLOT
        budget = {self.slot.index: device_budget_bytes} if device_budget_bytes else None
        self.admission = admission or Admission([self.slot], budget_bytes=budget, host=self.pipeline.host)
        self.accepted = tuple(accepted)
        self.accepted_update = tuple(accepted_update)
        self.last: ProofResult | None = None
        self._charged: dict[tuple[int, str], int] = {}
        self._charge_lock = threading.Lock()

    def charge_resident(self, pipe: ProofPipeline, pt: Any) -> int:
        """Take the resident bytes of ``pt``'s key (bases, resident R1CS) off this slot's device budget, once
        per key: they occupy the device for every job, so they belong to no job's reservation (counting them
        per job would count one key twice with two jobs in flight and miss the other pipeline's key).
        Returns the bytes charged now (0 when already charged); BudgetExceeded when nothing would be left."""
        from agent.admission import BudgetExceeded

        key = (id(pipe), pt.name)
        nbytes = pipe.resident_bytes(pt)
        with self._charge_lock:
            if key in self._charged:
                return 0
            budget = self.admission.budgets.get(self.slot.index)
            if budget is not None and nbytes:
                if nbytes >= budget.total:
                    raise BudgetExceeded(
                        f"{pt.name}: the key keeps {nbytes} bytes resident, the device budget is "
                        f"{budget.total}"
                    )
                budget.total -= nbytes
            self._charged[key] = nbytes
        return nbytes

    @property
    def params_dir(self) -> Path:
        return self.pipeline.params_dir

    @property
    def backend(self) -> str:
        return self.pipeline.backend

    async def prove_async(self, work: ProofData, job_id: str) -> bytes:
        """Proof bytes of every partition (each pairing-checked here; the caller's checker decides)."""
        import anyio

        pipe, item = self.route(work)
        pt = item.proof_type
        pipe.params_file(pt)  # a missing file is named before minutes of synthesis
        inputs = await anyio.to_thread.run_sync(work_inputs, work)
        nbytes = await anyio.to_thread.run_sync(pipe.device_bytes, pt)
        await anyio.to_thread.run_sync(self.charge_resident, pipe, pt)
        async with self.admission.run_on(self.slot, nbytes) as grant:
            memory = grant.nbytes if grant.nbytes > 0 else None
            result = await anyio.to_thread.run_sync(
                lambda: pipe.prove(item, inputs, job_id=job_id, memory_bytes=memory)
            )
        self.last = result
        st = result.stages()
        log.info(
            "%s: %d partition(s) %s in %.1f s on %s (witness %.1f s, Groth16 %.1f s, verify %.2f s; "
            "RSS peak %s)",
            job_id, len(result.partitions), "verified" if result.ok else f"NOT verified {result.verified}",
            result.wall_s, result.backend, st.get("witness", 0.0), st.get("groth16", 0.0),
            st.get("verify", 0.0), _gib(result.rss_peak_bytes),
        )
        return result.proof

    def route(self, work: ProofData) -> tuple[ProofPipeline, Any]:
        """The pipeline that proves ``work`` and the item it proves: the PoRep pipeline and the C1, or the
        update pipeline and ``porep.snap.partition.UpdateWork`` (proof type, one vanilla proof per
        partition) for a Snap request."""
        if work.snap is not None:
            from porep.snap.partition import UpdateWork

            return self.update_pipeline, UpdateWork(work.snap)
        return self.pipeline, _porep(work)

    def warm_up(self) -> None:
        """The readiness gate's work: parameters of every accepted proof type (PoRep and update) present and
        loaded (proving key built, so the kernels that load it are compiled), then a self-test proof verified
        on this engine. Raises with the reason when any of it fails."""
        from porep.prooftypes import proof_type
        from porep.snap.params import update_proof_type

        todo: list[tuple[ProofPipeline, Any, str]] = [
            (self.pipeline, proof_type(n), n) for n in self.accepted
        ]
        todo += [(self.update_pipeline, update_proof_type(n), f"{n} (update)") for n in self.accepted_update]
        for pipe, pt, label in todo:
            t0 = time.perf_counter()
            _log_verdicts(pipe, pt)
            pipe.shape(pt)
            self.charge_resident(pipe, pt)
            log.info("warm-up: %s parameters and circuit loaded in %.1f s", label, time.perf_counter() - t0)
        seconds = self.pipeline.self_test()
        log.info("warm-up: self-test proof verified on %s in %.1f s", self.backend, seconds)


def _log_verdicts(pipe: ProofPipeline, pt: Any) -> None:
    """The gate's log line per parameter file: official, development or damaged (agent.paramfiles)."""
    from agent.paramfiles import ParamDigests, verdict
    from porep.official_params import DAMAGED

    digests = ParamDigests(pipe.cache)
    for path in params_paths(pipe.params_dir, pt):
        if path.is_file():
            v = verdict(path, digests)
            log.log(logging.ERROR if v.kind == DAMAGED else logging.INFO, "parameters %s", v.line(str(path)))


def _gib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**30:.2f} GiB"


class PairingChecker:
    """Per-partition Groth16 verification with the proof type's verifying key and circuit-free inputs: the
    seal proof's for PoRep, the update proof's for Snap (each found by its parameter stem, which differ)."""

    def __init__(self, params_dir: Path, *, keys: dict[str, Any] | None = None) -> None:
        """``keys``: verifying keys by parameter stem, taking precedence over the files (tests, embedding)."""
        from gpu.groth16.verifier import prepare_verifying_key

        self.params_dir = Path(params_dir)
        self._pvks: dict[str, Any] = {k: prepare_verifying_key(v) for k, v in (keys or {}).items()}

    def _pvk(self, pt: Any) -> Any:
        pvk = self._pvks.get(pt.param_stem)
        if pvk is None:
            from gpu.groth16.params import VerifyingKey
            from gpu.groth16.verifier import prepare_verifying_key

            _, path = params_paths(self.params_dir, pt)
            if not path.is_file():
                raise FileNotFoundError(f"verifying key for {pt.name} not found: {path}")
            pvk = self._pvks[pt.param_stem] = prepare_verifying_key(VerifyingKey.read(path))
        return pvk

    def verify(self, work: ProofData, proof: bytes) -> VerifyReport:
        from gpu.groth16.verifier import verify

        pt = _update_type(work) if work.snap is not None else _porep(work).proof_type
        n = int(pt.partitions)
        if len(proof) != PROOF_BYTES * n:
            return VerifyReport((False,) * n, f"proof is {len(proof)} bytes, want {PROOF_BYTES * n}")
        inputs = work_inputs(work)
        pvk = self._pvk(pt)
        parts = tuple(
            bool(verify(pvk, proof[k * PROOF_BYTES : (k + 1) * PROOF_BYTES], inputs[k])) for k in range(n)
        )
        return VerifyReport(parts)


def blank_r1cs(pt: Any) -> Any:
    """The R1CS of one partition of ``pt`` (a seal proof type, or an update one: the update circuit) without a
    witness (what the setup needs)."""
    from porep.circuit.partition import partition_r1cs
    from porep.snap.params import UpdateProofType

    if isinstance(pt, UpdateProofType):
        from porep.snap.partition import update_r1cs

        return update_r1cs(pt)
    return partition_r1cs(pt)


def ensure_dev_params(
    pt: Any, directory: Path, *, progress: Progress | None = None, cache: Path | None = None
) -> tuple[Path, Path]:
    """Development parameters for ``pt`` in ``directory`` (made once; later calls find them).

    Written under a temporary name and renamed, so an interrupted setup never leaves a half file that a later
    run would take for parameters. Files made here (this function's ``.meta.json`` beside them) are recorded
    in :class:`CheckedParams`, so the prover never spends minutes checking points this machine computed."""
    import inspect

    from agent.config import cache_dir
    from gpu.groth16.setup import describe, generate

    checked = CheckedParams(cache if cache is not None else cache_dir())
    params_path, vk_path = params_paths(directory, pt)
    meta_path = directory / f"{pt.param_stem}.meta.json"
    if params_path.is_file() and vk_path.is_file():
        if meta_path.is_file() and not checked.trusted(params_path):
            checked.record(params_path)  # made by an earlier run of this function, before the record existed
        return params_path, vk_path
    directory.mkdir(parents=True, exist_ok=True)
    if progress is not None:
        progress("synthesising the blank circuit", 0.0, 1.0)
    r1cs = blank_r1cs(pt)
    kwargs: dict[str, Any] = {}
    if progress is not None and "progress" in inspect.signature(generate).parameters:
        kwargs["progress"] = progress
    params = generate(r1cs, **kwargs)
    tmp = directory / f".{pt.param_stem}.tmp-{os.getpid()}"
    params.write(tmp.with_suffix(".params"))
    params.vk.write(tmp.with_suffix(".vk"))
    meta = {
        "proof_type": pt.name,
        "toxic_waste": "development parameters: toxic waste drawn from the OS CSPRNG and discarded",
        **describe(params),
    }
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp.with_suffix(".vk"), vk_path)
    os.replace(tmp.with_suffix(".params"), params_path)
    checked.record(params_path)
    return params_path, vk_path
