"""Groth16 parameter files: where they are, which ones were checked, and development ones made here.

* Paths: Filecoin's names (``<param_stem>.params`` / ``.vk``) in one directory, by default
  ``$FIL_PROOFS_PARAMETER_CACHE`` or ``/var/tmp/filecoin-proof-parameters`` (lotus, curio and
  rust-fil-proofs look there too), so official parameters work unchanged.
* :class:`CheckedParams`: the per-point subgroup check of a ``.params`` file costs minutes of CPU at 2KiB
  (~10^7 points), so it runs once per file; its success is recorded by the file's BLAKE2b digest, size and
  mtime in the cache directory. Files made here are recorded as they are written.
* :func:`ensure_dev_params`: development parameters for a proof type (a fresh trusted setup with CSPRNG
  toxic waste, which is discarded: fine for a dry run, not what the market verifies against).

A leaf of the agent: it imports nothing else of it, so the configuration can take its default directory
from here (the cache directory is always passed in).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpu.groth16.params import Parameters
    from gpu.groth16.r1cs import R1CS
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = [
    "FILECOIN_PARAMS_DIR",
    "CheckedParams",
    "Progress",
    "blank_r1cs",
    "default_params_dir",
    "ensure_dev_params",
    "file_digest",
    "params_paths",
    "read_params",
]

FILECOIN_PARAMS_DIR = Path("/var/tmp/filecoin-proof-parameters")
Progress = Callable[[str, float, float], None]


def default_params_dir() -> Path:
    """``$FIL_PROOFS_PARAMETER_CACHE`` if set, else Filecoin's ``/var/tmp/filecoin-proof-parameters``."""
    env = os.environ.get("FIL_PROOFS_PARAMETER_CACHE")
    return Path(env) if env else FILECOIN_PARAMS_DIR


def params_paths(params_dir: Path, pt: ProofType | UpdateProofType) -> tuple[Path, Path]:
    """``(…/<stem>.params, …/<stem>.vk)`` of a seal or update proof type (Filecoin's names)."""
    return params_dir / f"{pt.param_stem}.params", params_dir / f"{pt.param_stem}.vk"


def read_params(path: Path, subgroup_check: bool) -> Parameters:
    """The host reader (``gpu.groth16.params.Parameters.read``)."""
    from gpu.groth16.params import Parameters

    return Parameters.read(path, subgroup_check=subgroup_check)


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

    def _entries(self) -> dict[str, dict[str, object]]:
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


def blank_r1cs(pt: ProofType | UpdateProofType, cache: Path | None = None) -> R1CS:
    """The R1CS of one partition of ``pt`` without a witness (what the setup needs): the update circuit for
    an update proof type, the StackedDRG circuit for a seal proof type ("StackedDrg2KiBV1" names both)."""
    from porep.circuit.partition import partition_r1cs
    from porep.snap.params import UpdateProofType
    from porep.snap.partition import update_r1cs

    if isinstance(pt, UpdateProofType):
        return update_r1cs(pt, cache)
    return partition_r1cs(pt, cache)


def ensure_dev_params(
    pt: ProofType | UpdateProofType,
    directory: Path,
    *,
    cache: Path,
    progress: Progress | None = None,
) -> tuple[Path, Path]:
    """Development parameters for ``pt`` in ``directory`` (made once; later calls find them).

    Written under a temporary name and renamed, so an interrupted setup never leaves a half file that a later
    run would take for parameters. Files made here (this function's ``.meta.json`` beside them) are recorded
    in :class:`CheckedParams` (under ``cache``), so the prover never spends minutes checking points this
    machine computed."""
    from gpu.groth16.setup import describe, generate

    checked = CheckedParams(cache)
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
    params = generate(r1cs, progress=progress)
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
