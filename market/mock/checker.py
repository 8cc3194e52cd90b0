"""How the mock market judges a submitted proof: an injected :class:`ProofChecker`.

The real market verifies every proof against the request's public inputs with the Groth16 verifying key.
:class:`PairingChecker` does the same with our verifier (``gpu.groth16.verifier``) and the circuit-free
public inputs of ``porep.sdr.public_inputs`` (computed from the request's C1, never from the prover's
circuit). It needs the verifying key of the proof type (``params generate``), which exists once the StackedDRG
circuit does; the mock refuses to start with it when the key or those modules are missing.

:class:`DigestStandInChecker` is the test double, named for what it is: it accepts exactly the bytes of
:func:`stand_in_proof` (a SHA-256 expansion of the request bytes, 192 bytes per partition), so end-to-end
tests can drive every market rule without a prover. It checks nothing cryptographic; the mock's state page
says which checker is in use.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gpu.groth16 import PROOF_BYTES

__all__ = ["CheckResult", "DigestStandInChecker", "PairingChecker", "ProofChecker", "stand_in_proof"]

@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    diagnosis: str = ""


class ProofChecker(Protocol):
    """(proof kind, request data, proof bytes) → verdict. Called in a worker thread: it may be slow."""

    name: str

    def check(self, kind: str, request: bytes, proof: bytes) -> CheckResult: ...


def _partitions(request: bytes) -> tuple[Any, int]:
    from market.proofdata import ProofData

    pd = ProofData.parse(request)
    if pd.snap is not None:
        from porep.snap.params import update_proof_type

        return pd, update_proof_type(pd.snap.proof_type).partitions
    assert pd.porep is not None
    pt = pd.porep.proof_type
    return pd, int(pt.partitions)


def stand_in_proof(request: bytes, partitions: int | None = None) -> bytes:
    """The bytes :class:`DigestStandInChecker` accepts for ``request``: NOT a proof, a test token
    (192 bytes per partition of the request's proof type unless ``partitions`` says otherwise)."""
    if partitions is None:
        partitions = _partitions(request)[1]
    out = b""
    counter = 0
    while len(out) < PROOF_BYTES * partitions:
        out += hashlib.sha256(b"psagent mock stand-in proof" + counter.to_bytes(4, "big") + request).digest()
        counter += 1
    return out[: PROOF_BYTES * partitions]


class DigestStandInChecker:
    """Test double: a proof is 'valid' iff it equals :func:`stand_in_proof` of the request (no crypto)."""

    name = "digest-stand-in (no cryptographic check)"

    def check(self, kind: str, request: bytes, proof: bytes) -> CheckResult:
        if kind not in ("PoRep", "Snap"):
            return CheckResult(False, f"{kind} requests are not issued by the mock")
        try:
            _, partitions = _partitions(request)
        except Exception as exc:  # noqa: BLE001 - a diagnosis, not a crash
            return CheckResult(False, f"request data does not parse: {exc}")
        want = PROOF_BYTES * partitions
        if len(proof) != want:
            return CheckResult(
                False, f"proof is {len(proof)} bytes, want {want} ({partitions} partitions × 192)"
            )
        if proof != stand_in_proof(request, partitions):
            return CheckResult(False, "proof bytes differ from the stand-in token for this request")
        return CheckResult(True)


class PairingChecker:
    """Groth16 verification of every partition with the proof type's verifying key (pairing checks)."""

    name = "groth16-pairing"

    def __init__(self, vk: Path | Any, update_vk: Path | Any | None = None) -> None:
        """``vk``: a verifying key file (``params generate``) or a ``gpu.groth16.params.VerifyingKey``;
        ``update_vk`` the same for Snap requests (``params generate --update``; without it Snap proofs are
        refused)."""
        try:
            from gpu.groth16.params import VerifyingKey
            from gpu.groth16.verifier import prepare_verifying_key
            from porep.sdr import public_inputs  # noqa: F401 - the check below needs it
        except ImportError as exc:
            raise RuntimeError(f"pairing verification is not available yet: {exc}") from exc
        self._pvk = prepare_verifying_key(VerifyingKey.read(vk) if isinstance(vk, Path) else vk)
        self._update_pvk = None
        if update_vk is not None:
            uvk = VerifyingKey.read(update_vk) if isinstance(update_vk, Path) else update_vk
            self._update_pvk = prepare_verifying_key(uvk)

    def check(self, kind: str, request: bytes, proof: bytes) -> CheckResult:
        from gpu.groth16.verifier import diagnose
        from porep.sdr.public_inputs import from_c1
        from porep.snap.partition import update_public_inputs

        pvk = self._update_pvk if kind == "Snap" else self._pvk
        if kind not in ("PoRep", "Snap") or pvk is None:
            return CheckResult(False, f"{kind} requests are not issued by the mock")
        try:
            pd, partitions = _partitions(request)
            inputs = update_public_inputs(pd.snap) if pd.snap is not None else from_c1(pd.porep)
        except Exception as exc:  # noqa: BLE001
            return CheckResult(False, f"request data does not give public inputs: {exc}")
        want = PROOF_BYTES * partitions
        if len(proof) != want:
            return CheckResult(
                False, f"proof is {len(proof)} bytes, want {want} ({partitions} partitions × 192)"
            )
        parts = [proof[k * PROOF_BYTES : (k + 1) * PROOF_BYTES] for k in range(partitions)]
        bad = [k for k, good in enumerate(diagnose(pvk, parts, inputs)) if not good]
        if bad:
            return CheckResult(False, f"partitions {bad} do not verify")
        return CheckResult(True)
