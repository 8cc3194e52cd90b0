"""Parameter files on this host: official or development, where Filecoin keeps them, and their digests.

Why here: the official directory is shared with the host's lotus / curio (they read it before every seal), so
psagent must never put development files there, and every tool that lists or loads parameters says which
files are official (published name and digest, :mod:`porep.official_params`), which are development, and
which are damaged. A digest reads the whole file (47 GB for 32GiB), so it is remembered by path, size and
mtime (``params-digests.json`` in the cache directory: a :class:`FileRecord`), like
:class:`agent.proving.parameters.CheckedParams` remembers the per-point check.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path

from agent.config import FILECOIN_PARAMS_DIR, cache_dir, default_params_dir
from gpu.files import atomic_write
from porep.official_params import CHUNK, Verdict, classify, registry

__all__ = [
    "FileRecord",
    "ParamDigests",
    "fetch_hint",
    "official_dir_of",
    "official_dirs",
    "verdict",
]


def official_dirs() -> list[Path]:
    """Filecoin's parameter directories on this host: ``$FIL_PROOFS_PARAMETER_CACHE`` (when set) and
    ``/var/tmp/filecoin-proof-parameters`` (lotus' and curio's default), resolved."""
    dirs = dict.fromkeys([default_params_dir(), FILECOIN_PARAMS_DIR])
    return [d.expanduser().resolve() for d in dirs]


def official_dir_of(path: Path) -> Path | None:
    """The official directory ``path`` is (or lies in), else None."""
    p = path.expanduser().resolve()
    for d in official_dirs():
        if p == d or d in p.parents:
            return d
    return None


def fetch_hint(
    size_label: str, directory: Path, *, update: bool = False, official: bool = False, post: str | None = None
) -> str:
    """What to do about missing parameters in ``directory``: fetch the official files into Filecoin's
    directory; development ones only elsewhere (``params generate`` refuses the official directory), and
    never for the real market (``official``: only the official files are named). ``post``: the PoSt circuit
    (winning / window) they are for."""
    if official:
        where = "" if official_dir_of(directory) is not None else f"FIL_PROOFS_PARAMETER_CACHE={directory} "
        return (
            f"fetch the official files: {where}lotus fetch-params {size_label} (or curio fetch-params "
            f"{size_label})"
        )
    which = " --update" if update else f" --post {post}" if post else ""
    if official_dir_of(directory) is not None:
        return (
            f"fetch the official files: lotus fetch-params {size_label} (or curio fetch-params "
            f"{size_label}); development parameters go elsewhere: psagent params generate --sector-size "
            f"{size_label}{which} --out ./params, then point prover.params_dir / --params-dir there"
        )
    return (
        f"official: FIL_PROOFS_PARAMETER_CACHE={directory} lotus fetch-params {size_label}; or make a "
        f"development one with: psagent params generate --sector-size {size_label}{which} --out {directory}"
    )


class FileRecord:
    """Facts about files, kept by resolved path in one JSON file of the cache directory and valid while a file
    keeps its size and mtime: reading a 47 GB parameter file again to learn the same fact costs minutes. The
    record is rewritten whole or not at all (``gpu.files``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def entries(self) -> dict[str, dict[str, object]]:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def current(self, path: Path) -> dict[str, object] | None:
        """What is recorded of ``path``, when it still has the recorded size and mtime."""
        st = path.stat()
        with self._lock:
            rec = self.entries().get(str(path.resolve()))
        if rec and rec.get("size") == st.st_size and rec.get("mtime_ns") == st.st_mtime_ns:
            return rec
        return None

    def put(self, path: Path, facts: Mapping[str, object]) -> dict[str, object]:
        """Record ``facts`` of ``path`` as it is now (its size and mtime with them); returns the entry."""
        st = path.stat()
        entry = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, **facts}
        with self._lock:
            entries = self.entries()
            entries[str(path.resolve())] = entry
            atomic_write(self.path, json.dumps(entries, indent=1) + "\n")
        return entry


class ParamDigests:
    """paramfetch digests (and BLAKE2b-256, computed in the same pass, for CheckedParams) of files, by path,
    size and mtime (``params-digests.json`` in the cache directory)."""

    def __init__(self, cache: Path) -> None:
        self.record = FileRecord(Path(cache) / "params-digests.json")

    def known(self, path: Path) -> dict[str, object] | None:
        return self.record.current(path)

    def digests(self, path: Path) -> tuple[str, str]:
        """(paramfetch digest, BLAKE2b-256 hex) of ``path``; read once per file version."""
        rec = self.known(path)
        if rec is not None:
            return str(rec["paramfetch"]), str(rec["blake2b"])
        fetch, b256 = hashlib.blake2b(), hashlib.blake2b(digest_size=32)
        with open(path, "rb") as f:
            while block := f.read(CHUNK):
                fetch.update(block)
                b256.update(block)
        facts = {"paramfetch": fetch.hexdigest()[:32], "blake2b": b256.hexdigest()}
        try:
            self.record.put(path, facts)
        except OSError:
            pass  # a read-only cache: computed again next time
        return facts["paramfetch"], facts["blake2b"]


def verdict(path: Path, digests: ParamDigests | None = None) -> Verdict:
    """Official / development / damaged for ``path``; the file is hashed only when its name is published."""
    if registry().get(path.name) is None:
        return classify(path)
    if digests is None:
        digests = ParamDigests(cache_dir())
    return classify(path, digest=digests.digests(path)[0])
