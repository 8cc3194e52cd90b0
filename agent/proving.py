"""The real prover and checker behind the pipeline's ``Prover`` / ``ProofChecker`` protocols.

:class:`CircuitProver` proves each partition of a PoRep C1 with the StackedDRG circuit (porep.circuit: the
partition's witness and its R1CS) and the engine's Groth16 prover (gpu.groth16), with the parameters of the
proof type read from ``prover.params_dir`` under Filecoin's file names (``ProofType.param_stem``).

:class:`PairingChecker` verifies the proof independently of the prover: the public inputs are derived
from the request's public values only (porep.public_inputs.record_inputs: prover id from the miner, sector,
ticket, seed, comm_d, comm_r — replica_id recomputed), never from the circuit, and each partition is checked
with a pairing against the verifying key. One bool per partition, so a failure is diagnosed per partition.

:func:`ensure_dev_params` makes development parameters for a proof type once (a fresh trusted setup with
CSPRNG toxic waste, which is discarded: fine for a dry run, not what the market verifies against).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.pipeline import VerifyReport
from market.proofdata import ProofData

__all__ = [
    "CircuitProver",
    "PairingChecker",
    "ensure_dev_params",
    "params_paths",
]

log = logging.getLogger(__name__)
PROOF_BYTES = 192

Progress = Callable[[str, float, float], None]


def params_paths(params_dir: Path, pt: Any) -> tuple[Path, Path]:
    """``(…/<stem>.params, …/<stem>.vk)`` for a ``porep.prooftypes.ProofType`` (Filecoin's names)."""
    return params_dir / f"{pt.param_stem}.params", params_dir / f"{pt.param_stem}.vk"


def _porep(work: ProofData) -> Any:
    if work.porep is None:
        raise ValueError("not a PoRep request (SnapDeals proofs are not proven by this prover)")
    return work.porep


class CircuitProver:
    """Groth16 proofs of every partition of a PoRep C1 (192 bytes each, in partition order).

    The proving key of a proof type is built once (parameters read, bases resident on the device) from the
    parameters file and the circuit's density, and kept for later proofs."""

    def __init__(self, params_dir: Path, *, backend: Any = "auto", device: int | None = None) -> None:
        from gpu.device import resolve_backend

        self.params_dir = Path(params_dir)
        self.backend = resolve_backend(backend)
        self.device = device
        self._keys: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _device(self) -> Any:
        from gpu import Backend
        from gpu.device import devices

        if self.backend is not Backend.cuda:
            return None

        found = devices()
        index = self.device if self.device is not None else 0
        for d in found:
            if d.index == index:
                return d
        raise ValueError(f"CUDA device {index} not found ({len(found)} device(s))")

    def proving_key(self, pt: Any, r1cs: Any) -> Any:
        """The resident key for ``pt`` (built from its .params file on first use)."""
        with self._lock:
            pk = self._keys.get(pt.param_stem)
            if pk is None:
                from gpu.groth16.params import Parameters
                from gpu.groth16.prover import ProvingKey

                path, _ = params_paths(self.params_dir, pt)
                if not path.is_file():
                    raise FileNotFoundError(f"Groth16 parameters for {pt.name} not found: {path}")
                # no per-point subgroup check on the ~1 GB of bases (4.2 M G1 + 0.7 M G2 points at 2KiB):
                # a bad base can only make a proof that fails our own pairing check (with the checked vk)
                params = Parameters.read(path, subgroup_check=False)
                pk = ProvingKey(params, r1cs.density(), backend=self.backend, device=self._device())
                self._keys[pt.param_stem] = pk
            return pk

    def prove(self, work: ProofData, job_id: str) -> bytes:
        from gpu.groth16.prover import Assignment, prove
        from porep.circuit.stacked import synthesize_c1

        c1 = _porep(work)
        pt = c1.proof_type
        path, _ = params_paths(self.params_dir, pt)
        if pt.param_stem not in self._keys and not path.is_file():  # before minutes of synthesis
            raise FileNotFoundError(f"Groth16 parameters for {pt.name} not found: {path}")
        out = []
        for k in range(pt.partitions):
            t0 = time.perf_counter()
            cs = synthesize_c1(c1, k)
            r1cs = cs.to_r1cs()
            pk = self.proving_key(pt, r1cs)
            asg = Assignment.from_r1cs(r1cs, cs.witness_array())
            del cs
            t1 = time.perf_counter()
            out.append(prove(pk, asg)[0].to_bytes())
            log.info(
                "%s: partition %d/%d proven (witness %.1f s, Groth16 %.1f s on %s)",
                job_id, k + 1, pt.partitions, t1 - t0, time.perf_counter() - t1, self.backend,
            )
        return b"".join(out)


class PairingChecker:
    """Per-partition Groth16 verification with the proof type's verifying key and circuit-free inputs."""

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
        from porep.ids import prover_id
        from porep.public_inputs import record_inputs

        c1 = _porep(work)
        pt, arr = c1.proof_type, c1.arrays
        n = int(pt.partitions)
        if len(proof) != PROOF_BYTES * n:
            return VerifyReport((False,) * n, f"proof is {len(proof)} bytes, want {PROOF_BYTES * n}")
        inputs = record_inputs(
            pt,
            prover_id=prover_id(work.sector_id.miner),
            sector_id=work.sector_id.number,
            ticket=arr.domain("ticket"),
            seed=arr.domain("seed"),
            comm_d=arr.domain("comm_d"),
            comm_r=arr.domain("comm_r"),
        )
        pvk = self._pvk(pt)
        parts = tuple(
            bool(verify(pvk, proof[k * PROOF_BYTES : (k + 1) * PROOF_BYTES], inputs[k])) for k in range(n)
        )
        return VerifyReport(parts)


def blank_r1cs(pt: Any) -> Any:
    """The R1CS of one partition of ``pt`` without a witness (what the setup needs)."""
    from porep.circuit.stacked import blank_system

    return blank_system(pt).to_r1cs()


def ensure_dev_params(pt: Any, directory: Path, *, progress: Progress | None = None) -> tuple[Path, Path]:
    """Development parameters for ``pt`` in ``directory`` (made once; later calls find them).

    Written under a temporary name and renamed, so an interrupted setup never leaves a half file that a later
    run would take for parameters."""
    import inspect

    from gpu.groth16.setup import describe, generate

    params_path, vk_path = params_paths(directory, pt)
    if params_path.is_file() and vk_path.is_file():
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
    (directory / f"{pt.param_stem}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    os.replace(tmp.with_suffix(".vk"), vk_path)
    os.replace(tmp.with_suffix(".params"), params_path)
    return params_path, vk_path
