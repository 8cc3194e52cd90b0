"""Filecoin's published Groth16 parameter files: names, IPFS CIDs and digests (``official_params.tsv``).

Why: the official directory (``$FIL_PROOFS_PARAMETER_CACHE``, else ``/var/tmp/filecoin-proof-parameters``) is
shared with the host's lotus / curio, and our development parameters carry the same file names (the names
come from the circuit, not from who made the file). Only the published digest tells an official file from a
development one, or from a damaged or truncated download. The digest is paramfetch's: the first 16 bytes of
BLAKE2b-512 over the whole file, as hex (BLAKE2b with a 16-byte output is another function).

A file whose name is published is *official* when its digest matches, and otherwise *damaged* unless it says
it is ours (a ``.meta.json`` beside it, as ``psagent params generate`` writes); a file whose name is not
published is *development*. A matching published digest is as strong as the per-point subgroup check for
deciding that the file holds the ceremony's points, so a reader may skip that check for such a file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "DAMAGED",
    "DEVELOPMENT",
    "OFFICIAL",
    "OfficialFile",
    "Registry",
    "Verdict",
    "classify",
    "paramfetch_digest",
    "registry",
]

OFFICIAL, DEVELOPMENT, DAMAGED = "official", "development", "damaged"
CHUNK = 1 << 22


@dataclass(frozen=True)
class OfficialFile:
    name: str  # file name, e.g. v28-stacked-proof-of-replication-…-82a3….params
    cid: str  # where IPFS serves it
    digest: str  # 32 hex characters: BLAKE2b-512 of the file, first 16 bytes
    circuit: str  # stacked-proof-of-replication, empty-sector-update, …
    sector_size: str  # 2KiB … 64GiB


class Registry:
    """Published files by name."""

    def __init__(self, files: list[OfficialFile]) -> None:
        self.by_name = {f.name: f for f in files}

    def get(self, name: str) -> OfficialFile | None:
        return self.by_name.get(name)

    @staticmethod
    def parse(text: str) -> Registry:
        files = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 5 or len(cols[2]) != 32:
                raise ValueError(f"official_params.tsv line {n}: want 5 tab-separated columns")
            files.append(OfficialFile(*cols))
        return Registry(files)


_registry: Registry | None = None


def registry() -> Registry:
    """The published table (loaded once; tests replace the module's ``_registry``)."""
    global _registry
    if _registry is None:
        _registry = Registry.parse(resources.files(__package__).joinpath("official_params.tsv").read_text())
    return _registry


def paramfetch_digest(path: Path) -> str:
    """paramfetch's digest of a file, streamed (a 47 GB file never sits in memory)."""
    h = hashlib.blake2b()  # 64-byte output; the published digest is its first 16 bytes
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class Verdict:
    """What a parameter file is: ``kind`` official / development / damaged, and why (one line)."""

    kind: str
    reason: str
    digest: str | None = None  # computed only for published names
    published: OfficialFile | None = None

    def line(self, name: str) -> str:
        return f"{name}: {self.kind} ({self.reason})"


def classify(path: Path, *, digest: str | None = None, ours: bool | None = None) -> Verdict:
    """The verdict for ``path``; ``digest`` when the caller knows it already (a cache), ``ours`` whether it
    was made here (default: a ``.meta.json`` beside it)."""
    pub = registry().get(path.name)
    if ours is None:
        ours = path.with_name(path.name.rsplit(".", 1)[0] + ".meta.json").is_file()
    if pub is None:
        why = "made by psagent params generate" if ours else "not a published file name"
        return Verdict(DEVELOPMENT, why)
    got = digest if digest is not None else paramfetch_digest(path)
    if got == pub.digest:
        return Verdict(OFFICIAL, f"digest {got} is the published one", got, pub)
    if ours:
        return Verdict(DEVELOPMENT, f"made here under the published name (digest {got})", got, pub)
    return Verdict(DAMAGED, f"digest {got}, the published file's is {pub.digest}", got, pub)
