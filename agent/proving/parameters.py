"""Groth16 parameter files: where they are, which ones were checked, and development ones made here.

* Paths: Filecoin's names (``<param_stem>.params`` / ``.vk``) in one directory, by default
  ``agent.config.default_params_dir()`` (where lotus, curio and rust-fil-proofs look too), so official
  parameters work unchanged.
* :class:`CheckedParams`: the per-point subgroup check of a ``.params`` file costs minutes of CPU at 2KiB
  (~10^7 points; a 32GiB file is 47 GB), so it runs once per file, not once per user: its success is
  recorded beside the file where the file's owner can write (``<name>.checked.json``), else in the cache
  directory as before. Files made here are recorded as they are written.
* :func:`ensure_dev_params`: development parameters for a proof type (a fresh trusted setup with CSPRNG
  toxic waste, which is discarded: fine for a dry run, not what the market verifies against).

The reader, the setup and the circuits load numba, so they are imported in the functions: ``psagent prove``,
``bench e2e`` and ``params`` import this module before they read their configuration, which places Numba's
kernel cache (numba reads that once, when first imported).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from agent.paramfiles import FileRecord, official_dir_of
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


CHECKED_SUFFIX = ".checked.json"  # the record beside a file: <name>.checked.json


def _identity(st: os.stat_result) -> dict[str, int]:
    """What the kernel keeps of one version of a file: a file replaced by rename has a new inode; changed in
    place (even with its mtime set back) a new ctime, which no process short of root can choose."""
    return {
        "dev": st.st_dev,
        "ino": st.st_ino,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
    }


class CheckedParams:
    """Parameter files whose full per-point check passed: one record per file, beside it, shared by every user
    and the service; the cache directory's ``params-checked.json`` where none can be kept beside.

    Who may vouch: the check catches points off the curve or outside the subgroup, not wrong ones, and whoever
    can write a file can already make every proof with it fail (with points the check passes; the local
    verification catches either). So a record by the file's owner gives the owner no power they lack, and
    every user trusts it: ``<name>.checked.json`` beside the resolved file, a regular file (not a link) owned
    by the file's owner, writable by nobody else, naming the file's device, inode, size, mtime and ctime
    (:func:`_identity`): bytes changed in place by anyone in the file's group, or a copy renamed into its
    place, no longer match. Only the file's owner writes it, where that owner can write, never in Filecoin's
    official directories (lotus' and curio's: psagent puts nothing there), world-readable (the service's umask
    is 0077). Anyone else (the service reading an operator's read-only directory) records in its own cache
    directory, by path, size and mtime. The paramfetch digest that makes a file official is not shared so:
    a record could then pass a development file as official, which its owner cannot do today.

    No record current: the BLAKE2b digest decides (the same bytes copied, renamed or touched stay trusted and
    are recorded again; changed bytes are checked again)."""

    def __init__(self, cache: Path) -> None:
        self.record_file = FileRecord(Path(cache) / "params-checked.json")

    @staticmethod
    def beside(path: Path) -> Path:
        """Where the shared record of ``path`` is (beside the file links resolve to)."""
        real = path.resolve()
        return real.with_name(real.name + CHECKED_SUFFIX)

    def _shared(self, path: Path, st: os.stat_result) -> dict[str, object] | None:
        """The record beside ``path`` when its owner may vouch for the file, else None."""
        try:
            fd = os.open(self.beside(path), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            rec_st = os.fstat(fd)
            if not stat.S_ISREG(rec_st.st_mode) or rec_st.st_uid != st.st_uid or rec_st.st_mode & 0o022:
                return None
            with os.fdopen(os.dup(fd), "rb") as f:
                data = json.loads(f.read(1 << 16))
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)
        return data if isinstance(data, dict) else None

    def trusted(self, path: Path) -> bool:
        st = path.stat()
        shared = self._shared(path, st)
        if shared is not None and {k: shared.get(k) for k in _identity(st)} == _identity(st):
            return True
        if self.record_file.current(path) is not None:
            return True
        same_size = [r for r in self.record_file.entries().values() if r.get("size") == st.st_size]
        if shared is not None and shared.get("size") == st.st_size:
            same_size.append(shared)
        if not same_size:
            return False
        digest = file_digest(path)
        if any(r.get("blake2b") == digest for r in same_size):
            self.record(path, digest)
            return True
        return False

    def record(self, path: Path, digest: str | None = None) -> None:
        """Note that ``path`` (as it is now) passed the check, or was generated here: beside it when this user
        owns it and may write there, else in the cache directory."""
        digest = digest or file_digest(path)
        if not self._record_beside(path, digest):
            self.record_file.put(path, {"blake2b": digest})

    def _record_beside(self, path: Path, digest: str) -> bool:
        real = path.resolve()
        st = real.stat()
        if st.st_uid != os.geteuid() or official_dir_of(real.parent) is not None:
            return False
        if not os.access(real.parent, os.W_OK | os.X_OK):
            return False
        entry = {"file": real.name, **_identity(st), "blake2b": digest}
        target = self.beside(real)
        try:
            atomic_write(target, json.dumps(entry, indent=1) + "\n")
            os.chmod(target, 0o644)  # every user reads it; nobody but the owner writes it
        except OSError:
            return False
        return True


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
