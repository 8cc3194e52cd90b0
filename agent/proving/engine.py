"""The Groth16 engine as the proof pipeline sees it: one typed protocol, and ``gpu.groth16`` behind it.

Why a seam: the pipeline's logic (synthesis ahead of the prover, host reservations, per-partition verdicts)
is tested in seconds with a reference engine (Python integers + pyblst) in place of the compiled one, and
every question the pipeline asks of an engine is in :class:`Engine`, so nothing is read from an engine's or
a key's internals. Byte accounting is asked of the engine, which asks ``gpu.groth16``.

:class:`Groth16Engine` is ``gpu.groth16`` on one backend and, for CUDA, one named device. On CUDA the
assignments are written into a page-locked pool kept for the process (allocating pinned memory per proof
costs seconds).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from gpu import device as gpu_device
from gpu import memory
from gpu.groth16 import plan
from gpu.groth16 import prover as groth16
from gpu.groth16.budget import default_budget
from gpu.groth16.params_device import DeviceParameters, load_to_device, load_to_host
from gpu.groth16.prover import Assignment, ProvingKey
from gpu.options import EngineOptions
from gpu.placement import Backend
from gpu.transfer import PinnedPool

if TYPE_CHECKING:
    from gpu.device import Device
    from gpu.groth16.params import Parameters
    from gpu.groth16.plan import Layout, ProofSizes
    from gpu.groth16.r1cs import R1CS

__all__ = ["Engine", "Groth16Engine", "assignment_host_bytes", "resident_r1cs_bytes"]


class Engine(Protocol):
    """Everything the pipeline asks of a Groth16 engine (``gpu.groth16``; a reference engine in tests)."""

    @property
    def backend(self) -> str: ...
    @property
    def device(self) -> Device | None:
        """The CUDA device this engine proves on (its admission slot); None on the CPU."""
    @property
    def params_to_device(self) -> bool:
        """Whether parameter files are decoded straight onto the device (:meth:`load_params`)."""

    def load_params(self, path: Path, r1cs: R1CS) -> Parameters | DeviceParameters:
        """``path`` decoded on the device, into the memory ``r1cs``'s layout keeps the key in."""
    def key(self, params: Parameters | DeviceParameters, r1cs: R1CS) -> ProvingKey: ...
    def memory_budget(self) -> int | None:
        """Device bytes this engine may hold, key included (None: no device figure, as on the CPU)."""
    def device_bytes(self, key: ProvingKey) -> int:
        """Device bytes one proof needs beyond the key (what a job reserves)."""
    def resident_bytes(self, key: ProvingKey, r1cs: R1CS) -> int:
        """Device bytes the key keeps for as long as it lives (charged once per key, not per job)."""
    def host_bytes(self, r1cs: R1CS) -> int:
        """Host bytes one partition's assignment holds while it waits for and goes through the prover."""
    def assign(self, r1cs: R1CS, witness: np.ndarray) -> Assignment: ...
    def release(self, asg: Assignment) -> None: ...
    def prove(
        self, key: ProvingKey, asg: Assignment, *, memory_bytes: int | None, timings: dict[str, float]
    ) -> bytes: ...
    def device_used(self) -> int | None:
        """Bytes in use on the device now (all processes); None where there is no such figure."""


class Groth16Engine:
    """``gpu.groth16`` on one backend (and, for CUDA, one named device), as ``options`` say."""

    def __init__(
        self,
        backend: Backend | str = "auto",
        device: Device | int | None = None,
        *,
        options: EngineOptions | None = None,
    ) -> None:
        """``device``: the CUDA device or its ordinal (None: 0); ``options`` (``gpu.options.EngineOptions``,
        None: the defaults; the agent fills them from ``[prover]`` with ``agent.config.engine_options``):
        ``device_spmv``, ``params_to_device``, ``device_memory`` and ``layout`` act on the CUDA backend only
        (the pipeline then loads parameter files with :meth:`load_params` instead of the host reader)."""
        chosen = gpu_device.resolve_backend(backend)  # lists devices; enters no context
        if chosen is Backend.cuda:
            memory.install()  # before this process's first CUDA context: every allocation is counted
        self.options = options if options is not None else EngineOptions()
        self._backend = chosen.value
        self._device: Device | None = (
            gpu_device.get_device(device if device is not None else 0) if chosen is Backend.cuda else None
        )
        self._params_to_device = self._device is not None and self.options.params_to_device
        self._pool: PinnedPool | None = None
        self._budget: int | None = None
        self._budget_known = False
        self._layouts: dict[ProofSizes, Layout] = {}
        if self._device is not None and not self._device.simulated:
            self._pool = PinnedPool()

    @property
    def backend(self) -> str:
        return self._backend

    @property
    def device(self) -> Device | None:
        return self._device

    @property
    def params_to_device(self) -> bool:
        return self._params_to_device

    def memory_budget(self) -> int | None:
        """The device bytes this engine may hold, key included: ``options.device_memory``, or by default the
        free memory once the context is up and every kernel has run once, less a reserve
        (``gpu.groth16.budget``). Set as the device ledger's cap the first time it is asked, so an allocation
        past it is refused naming its phase (``gpu.memory``). None on the CPU and under the simulator unless
        named."""
        if self._device is None:
            return None
        if not self._budget_known:
            self._budget = self.options.device_memory or default_budget(self._device)
            self._budget_known = True
            memory.ledger(self._device.index).cap = self._budget
        return self._budget

    def layout(self, r1cs: R1CS) -> Layout | None:
        """Where ``r1cs``'s proofs keep their bytes on this engine's device (``gpu.groth16.plan``): the
        configured layout (or the first that fits) under :meth:`memory_budget`; None on the CPU. A
        ``gpu.groth16.plan.LayoutError`` names the smallest that would have fitted."""
        if self._device is None:
            return None
        sizes = plan.ProofSizes.of_r1cs(r1cs)
        got = self._layouts.get(sizes)
        if got is None:
            got = self._layouts[sizes] = plan.choose_layout(
                sizes, self.memory_budget(), device_spmv=self.options.device_spmv, force=self.options.layout
            )
        return got

    def load_params(self, path: Path, r1cs: R1CS) -> Parameters | DeviceParameters:
        """``path`` decoded on this engine's device, into its layout's home: the device (``DeviceParameters``,
        H bit-reversed as the prover wants it) or page-locked host memory (a streamed layout). No subgroup
        check: only for a file the per-point check record trusts."""
        lay = self.layout(r1cs)
        if self._device is None or lay is None:
            raise ValueError("parameters go to a device only with the CUDA backend")
        if lay.key_on_device:
            return load_to_device(path, self._device, h_bitrev=True)
        return load_to_host(path, self._device)

    def key(self, params: Parameters | DeviceParameters, r1cs: R1CS) -> ProvingKey:
        """The proving key over host ``Parameters`` (uploaded, or streamed as the layout says) or
        ``DeviceParameters`` (already resident)."""
        lay = self.layout(r1cs)
        if isinstance(params, DeviceParameters):
            return ProvingKey.from_device_parameters(params, r1cs.density(), device=self._device, layout=lay)
        return ProvingKey(params, r1cs.density(), backend=self._backend, device=self._device, layout=lay)

    def device_bytes(self, key: ProvingKey) -> int:
        """One proof's device working bytes beyond the key: its layout's largest phase (0 on the CPU)."""
        if self._device is None or key.layout is None:
            return 0
        return key.layout.working()

    def resident_bytes(self, key: ProvingKey, r1cs: R1CS) -> int:
        """Device bytes the key keeps for as long as it lives: its layout's resident bytes (bases when
        resident, gather indices, NTT tables and, with the device SpMV, the R1CS that
        ``ProvingKey.device_r1cs`` uploads at the first proof). 0 on the CPU."""
        if self._device is None or key.layout is None:
            return 0
        return sum(key.layout.resident().values())

    def _device_spmv(self, r1cs: R1CS) -> bool:
        lay = self.layout(r1cs)
        return lay is not None and lay.device_spmv

    def host_bytes(self, r1cs: R1CS) -> int:
        return assignment_host_bytes(r1cs, device_spmv=self._device_spmv(r1cs))

    def assign(self, r1cs: R1CS, witness: np.ndarray) -> Assignment:
        return Assignment.from_r1cs(r1cs, witness, pool=self._pool, device_spmv=self._device_spmv(r1cs))

    def release(self, asg: Assignment) -> None:
        if self._pool is not None:
            asg.release(self._pool)

    def prove(
        self, key: ProvingKey, asg: Assignment, *, memory_bytes: int | None, timings: dict[str, float]
    ) -> bytes:
        out: list[dict[str, float]] = []
        (proof,) = groth16.prove(key, asg, timings=out, memory_bytes=memory_bytes)
        timings.update(out[0])
        return bytes(proof.to_bytes())

    def device_used(self) -> int | None:
        """Asked without the device lock (a sampler thread reads it while a proof holds the device)."""
        info = self._device.memory_info() if self._device is not None else None
        return None if info is None else info[1] - info[0]


def _sizes(r1cs: R1CS, *, matrices: bool = False) -> ProofSizes:
    rows = int(r1cs.num_constraints) + int(r1cs.num_inputs)
    return plan.ProofSizes(
        0, int(r1cs.num_inputs), int(r1cs.num_aux), 0, 0, 0, rows=rows,
        matrices=plan.matrix_sizes(r1cs) if matrices else (),
    )


def assignment_host_bytes(r1cs: R1CS, *, device_spmv: bool = False) -> int:
    """Host bytes one partition's assignment holds: the witness and, unless A·w, B·w, C·w are evaluated on
    the device (``device_spmv``), those three (``gpu.groth16.plan.assignment_host_bytes``)."""
    return plan.assignment_host_bytes(_sizes(r1cs), device_spmv=device_spmv)


def resident_r1cs_bytes(r1cs: R1CS) -> int:
    """Device bytes of ``r1cs`` made resident by ``gpu.groth16.spmv_cuda.DeviceR1CS.upload``
    (``gpu.groth16.plan.resident_r1cs_bytes``): exact for interned (compact) matrices, an upper bound for a
    plain CSR (interned on upload)."""
    return plan.resident_r1cs_bytes(_sizes(r1cs, matrices=True))
