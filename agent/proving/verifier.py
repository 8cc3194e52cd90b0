"""The host's pairing check of a proof for a :class:`~agent.proving.work.Work`: the one verifier behind the
proof pipeline (each partition as it is proven) and ``psagent verify`` (a whole proof from a file).

Independent of the prover: the public inputs are the Work's, computed from the request's public values
without the circuit, and the verifying key is the proof type's, found by its parameter stem (seal and update
proof types have different stems, so "StackedDrg2KiBV1" cannot pick the wrong key). The check itself is
``gpu.groth16.verifier.verify`` (pyblst, the library Filecoin verifies with).

``gpu.groth16.verifier`` loads numba, so it is imported in the methods: ``psagent verify`` imports this module
before it reads its configuration, which places Numba's kernel cache (numba reads that once, when first
imported).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.proving.parameters import params_paths
from gpu.groth16 import PROOF_BYTES

if TYPE_CHECKING:
    from agent.proving.work import Work
    from gpu.groth16.params import VerifyingKey
    from gpu.groth16.verifier import PreparedVerifyingKey
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = ["HostVerifier", "VerifyReport"]


@dataclass(frozen=True)
class VerifyReport:
    """The verdict on a proof: ``partitions[i]`` is True when partition i verified, False when it did not and
    None when it was not checked (``prover.verify_before_submit = false`` under the debug switch)."""

    partitions: tuple[bool | None, ...]
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Every partition checked and verified."""
        return bool(self.partitions) and all(p is True for p in self.partitions)

    @property
    def checked(self) -> bool:
        return all(p is not None for p in self.partitions)

    def diagnosis(self) -> str:
        bad = [i for i, ok in enumerate(self.partitions) if ok is False]
        if bad:
            text = f"partitions {bad} of {len(self.partitions)} did not verify"
        elif not self.checked:
            text = "not verified (prover.verify_before_submit = false)"
        else:
            text = "verified"
        return f"{text}{': ' + self.detail if self.detail else ''}"


class HostVerifier:
    """Groth16 verification of a Work's partitions against its public inputs. Thread-safe."""

    def __init__(self, params_dir: Path, *, keys: Mapping[str, VerifyingKey] | None = None) -> None:
        """``keys``: verifying keys by parameter stem, used before the ``.vk`` files (tests, embedding)."""
        from gpu.groth16.verifier import prepare_verifying_key  # numba: after the kernel-cache set-up

        self.params_dir = Path(params_dir)
        self._pvks: dict[str, PreparedVerifyingKey] = {
            k: prepare_verifying_key(v) for k, v in (keys or {}).items()
        }
        self._lock = threading.Lock()

    def use_key(self, pt: ProofType | UpdateProofType | PoStProofType, vk: VerifyingKey) -> None:
        """Verify ``pt`` with ``vk`` (the pipeline passes the key inside the ``.params`` file it proves with),
        unless a key for its stem is already held."""
        from gpu.groth16.verifier import prepare_verifying_key  # numba: after the kernel-cache set-up

        with self._lock:
            if pt.param_stem not in self._pvks:
                self._pvks[pt.param_stem] = prepare_verifying_key(vk)

    def vk_file(self, pt: ProofType | UpdateProofType | PoStProofType) -> Path:
        return params_paths(self.params_dir, pt)[1]

    def key(self, pt: ProofType | UpdateProofType | PoStProofType) -> PreparedVerifyingKey:
        """The prepared key of ``pt``; FileNotFoundError naming the ``.vk`` file when there is none."""
        with self._lock:
            pvk = self._pvks.get(pt.param_stem)
        if pvk is not None:
            return pvk
        from gpu.groth16.params import VerifyingKey  # numba: after the kernel-cache set-up
        from gpu.groth16.verifier import prepare_verifying_key

        path = self.vk_file(pt)
        if not path.is_file():
            raise FileNotFoundError(f"verifying key for {pt.name} not found: {path}")
        pvk = prepare_verifying_key(VerifyingKey.read(path))
        with self._lock:
            return self._pvks.setdefault(pt.param_stem, pvk)

    def partition(self, work: Work, k: int, proof: bytes) -> bool:
        """One pairing check: partition ``k``'s 192-byte proof against its public inputs."""
        from gpu.groth16.verifier import verify  # numba: after the kernel-cache set-up

        return bool(verify(self.key(work.proof_type), proof, list(work.public_inputs[k])))

    def verify(self, work: Work, proof: bytes) -> VerifyReport:
        """Every partition of a whole proof (the concatenation in partition order); a wrong length is a
        report that names it, not an exception."""
        n = work.partitions
        if len(proof) != work.proof_bytes:
            return VerifyReport((False,) * n, f"proof is {len(proof)} bytes, want {work.proof_bytes}")
        self.key(work.proof_type)  # a missing key is named before any check
        return VerifyReport(
            tuple(self.partition(work, k, proof[k * PROOF_BYTES : (k + 1) * PROOF_BYTES]) for k in range(n))
        )
