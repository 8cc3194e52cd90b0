"""Groth16 parameter files: where they are, which ones were checked, and development ones made here.

* Paths: Filecoin's names (``<param_stem>.params`` / ``.vk``) in one directory, by default
  ``agent.config.default_params_dir()`` (where lotus, curio and rust-fil-proofs look too), so official
  parameters work unchanged.
* :class:`CheckedParams`: the per-point subgroup check of a ``.params`` file costs minutes of CPU at 2KiB
  (~10^7 points), so it runs once per file; its success is recorded by the file's BLAKE2b digest, size and
  mtime in the cache directory (an ``agent.paramfiles.FileRecord``). Files made here are recorded as they
  are written.
* :func:`ensure_dev_params`: development parameters for a proof type (a fresh trusted setup with CSPRNG
  toxic waste, which is discarded: fine for a dry run, not what the market verifies against).

The reader, the setup and the circuits load numba, so they are imported in the functions: ``psagent prove``,
``bench e2e`` and ``params`` import this module before they read their configuration, which places Numba's
kernel cache (numba reads that once, when first imported).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent.paramfiles import FileRecord
from agent.proving.kind import for_kind
from gpu.files import atomic_write

if TYPE_CHECKING:
    from gpu.device import Device
    from gpu.groth16.params import Parameters
    from gpu.groth16.r1cs import R1CS
    from gpu.placement import Backend
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = [
    "CheckedParams",
    "IN_PLACE",
    "Progress",
    "blank_r1cs",
    "ensure_dev_params",
    "file_digest",
    "params_paths",
    "read_params",
    "write_dev_params",
]

Progress = Callable[[str, float, float], None]
IN_PLACE = "params in place"  # write_dev_params' stage once the .params is renamed into place
DEV_NOTE = "development parameters: toxic waste drawn from the OS CSPRNG and discarded"


def params_paths(params_dir: Path, pt: ProofType | UpdateProofType | PoStProofType) -> tuple[Path, Path]:
    """``(…/<stem>.params, …/<stem>.vk)`` of a seal or update proof type (Filecoin's names)."""
    return params_dir / f"{pt.param_stem}.params", params_dir / f"{pt.param_stem}.vk"


def read_params(path: Path, subgroup_check: bool) -> Parameters:
    """The host reader (``gpu.groth16.params.Parameters.read``)."""
    from gpu.groth16.params import Parameters  # numba: after the kernel-cache set-up

    return Parameters.read(path, subgroup_check=subgroup_check)


def file_digest(path: Path, chunk: int = 1 << 22) -> str:
    """BLAKE2b-256 of a file, streamed (a 47 GB .params file never sits in memory)."""
    h = hashlib.blake2b(digest_size=32)
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


class CheckedParams:
    """Parameter files whose full per-point check passed, by BLAKE2b digest, size and mtime
    (``params-checked.json`` in the cache directory). Same size and mtime as recorded: trusted without reading
    it; otherwise the digest decides (the same bytes copied or touched stay trusted, changed bytes are checked
    again)."""

    def __init__(self, cache: Path) -> None:
        self.record_file = FileRecord(Path(cache) / "params-checked.json")

    def trusted(self, path: Path) -> bool:
        if self.record_file.current(path) is not None:
            return True
        size = path.stat().st_size
        same_size = [r for r in self.record_file.entries().values() if r.get("size") == size]
        if not same_size:
            return False
        digest = file_digest(path)
        if any(r.get("blake2b") == digest for r in same_size):
            self.record(path, digest)
            return True
        return False

    def record(self, path: Path, digest: str | None = None) -> None:
        """Note that ``path`` (as it is now) passed the check, or was generated here."""
        self.record_file.put(path, {"blake2b": digest or file_digest(path)})


def blank_r1cs(pt: ProofType | UpdateProofType | PoStProofType, cache: Path | None = None) -> R1CS:
    """The R1CS of one partition of ``pt`` without a witness (what the setup needs): the update circuit for
    an update proof type, the FallbackPoSt circuit for a PoSt proof type, the StackedDRG circuit for a seal
    proof type ("StackedDrg2KiBV1" names both a seal and an update proof)."""
    from porep.circuit.partition import partition_r1cs  # numba: after the kernel-cache set-up
    from porep.post.partition import post_r1cs
    from porep.snap.partition import update_r1cs

    return for_kind(
        pt,
        porep=lambda p: partition_r1cs(p, cache),
        snap=lambda u: update_r1cs(u, cache),
        post=lambda q: post_r1cs(q, cache),
    )


def write_dev_params(
    r1cs: R1CS,
    directory: Path,
    stem: str,
    *,
    cache: Path,
    meta: Mapping[str, object],
    backend: Backend | str = "cpu",
    device: Device | None = None,
    test_seed: int | None = None,
    progress: Progress | None = None,
) -> tuple[Path, Path]:
    """The one writer of parameters made on this machine (``params generate``, the dry run's development
    parameters): ``<stem>.params`` streamed to disk as the setup computes it (``gpu.groth16.setup``, on
    ``backend``; a whole file or none), then ``<stem>.vk`` and ``<stem>.meta.json`` (``meta`` and the section
    sizes). The file is recorded in :class:`CheckedParams` under ``cache`` by the digest computed while it was
    written, so the prover never spends minutes checking points this machine computed. Raises what the setup
    raises (``UnconstrainedVariable``, ``GpuError``, ``OSError`` for a full disk, a signal turned into an
    exception) and leaves a whole set or none of this run's files: the setup's writer removes its temporary
    file, and a new ``.params`` whose ``.vk`` or ``.meta.json`` could not follow is removed with them (the
    stage :data:`IN_PLACE` of ``progress`` says the ``.params`` was renamed into place)."""
    from gpu.groth16.setup import generate_file  # numba: after the kernel-cache set-up

    params_path, vk_path = directory / f"{stem}.params", directory / f"{stem}.vk"
    meta_path = directory / f"{stem}.meta.json"
    directory.mkdir(parents=True, exist_ok=True)
    made = generate_file(
        r1cs, params_path, backend=backend, device=device, test_seed=test_seed, progress=progress
    )
    try:
        if progress is not None:
            progress(IN_PLACE, 1.0, 1.0)
        made.vk.write(vk_path)
        atomic_write(meta_path, json.dumps({**meta, **made.sizes}, indent=1) + "\n")
    except BaseException:
        for path in (params_path, vk_path, meta_path):  # no parameter set without all three
            path.unlink(missing_ok=True)
        raise
    CheckedParams(cache).record(params_path, made.blake2b)
    return params_path, vk_path


def ensure_dev_params(
    pt: ProofType | UpdateProofType | PoStProofType,
    directory: Path,
    *,
    cache: Path,
    progress: Progress | None = None,
) -> tuple[Path, Path]:
    """Development parameters for ``pt`` in ``directory``, made once (:func:`write_dev_params`, on the CPU);
    later calls find them. Files with this function's ``.meta.json`` beside them are recorded as checked."""
    checked = CheckedParams(cache)
    params_path, vk_path = params_paths(directory, pt)
    meta_path = directory / f"{pt.param_stem}.meta.json"
    if params_path.is_file() and vk_path.is_file():
        if meta_path.is_file() and not checked.trusted(params_path):
            checked.record(params_path)  # made here, recorded by an older psagent (or the record was lost)
        return params_path, vk_path
    if progress is not None:
        progress("synthesising the blank circuit", 0.0, 1.0)
    meta = {"proof_type": pt.name, "toxic_waste": DEV_NOTE}
    r1cs = blank_r1cs(pt)
    return write_dev_params(r1cs, directory, pt.param_stem, cache=cache, meta=meta, progress=progress)
