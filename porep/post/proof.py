"""The vanilla PoSt proof of one sector (``FallbackPoStSectorProof``) and its wire form, bincode 1.x (docs
post.md §3).

What Curio's engine call carries in ``vanilla_proofs`` (one per challenged sector, as filecoin-ffi's
``GenerateSingleVanillaProof`` returns it): ``sector_id`` (u64), ``comm_r`` (32 bytes), then the
``vanilla_proof``: a Vec of ``SectorProof`` (one, as generated) with each ``inclusion_proofs`` (a Vec of
MerkleProof in tree R_last's variant: Single for 8-0-0, Sub for 8-8-0, Top for 8-8-2), ``comm_c`` and
``comm_r_last``. Integers little endian, a Vec is a u64 count then its items, MerkleProof as in the SnapDeals
wire (``porep.snap.proof``: the same Rust type, the same encoding).

Decoding is exact: a truncated or malformed proof names the field and byte offset; bytes after a complete
proof are counted (Rust ignores them, the strict check refuses them). Encoding gives the same bytes back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from porep.snap.proof import (  # the MerkleProof wire is shared with SnapDeals
    MerkleProof,
    PathElement,
    SnapFormatError,
    _merkle,
    _read_merkle,
    _Reader,
)

__all__ = [
    "FallbackPoStSectorProof",
    "MerkleProof",
    "PathElement",
    "PoStFormatError",
    "SectorProof",
    "decode_sector_proof",
    "encode_sector_proof",
]

NODE = 32


class PoStFormatError(ValueError):
    """Bytes that are not a bincode ``FallbackPoStSectorProof``."""


@dataclass(frozen=True)
class SectorProof:
    """``fallback::SectorProof``: the inclusion proofs of one sector's challenges and its two roots."""

    inclusion_proofs: tuple[MerkleProof, ...]
    comm_c: bytes
    comm_r_last: bytes


@dataclass(frozen=True)
class FallbackPoStSectorProof:
    """``filecoin_proofs::FallbackPoStSectorProof``: a sector, its comm_r and its vanilla proof."""

    sector_id: int
    comm_r: bytes
    sectors: tuple[SectorProof, ...]

    def to_bytes(self) -> bytes:
        return encode_sector_proof(self)


def encode_sector_proof(proof: FallbackPoStSectorProof) -> bytes:
    out: list[bytes] = [struct.pack("<Q", proof.sector_id), _domain(proof.comm_r)]
    out.append(struct.pack("<Q", len(proof.sectors)))
    for sp in proof.sectors:
        out.append(struct.pack("<Q", len(sp.inclusion_proofs)))
        for mp in sp.inclusion_proofs:
            _merkle(mp, out)
        out += [_domain(sp.comm_c), _domain(sp.comm_r_last)]
    return b"".join(out)


def _domain(value: bytes) -> bytes:
    if len(value) != NODE:
        raise ValueError(f"a domain value is {NODE} bytes, got {len(value)}")
    return bytes(value)


def decode_sector_proof(data: bytes) -> tuple[FallbackPoStSectorProof, int]:
    """(proof, trailing byte count); :class:`PoStFormatError` naming the field and offset."""
    r = _Reader(bytes(data))
    try:
        sector_id = r.u64("sector_id")
        comm_r = r.domain("comm_r")
        sectors = []
        for s in range(r.count("vanilla_proof.sectors", 8 + 2 * NODE)):
            w = f"vanilla_proof.sectors[{s}]"
            proofs = tuple(
                _read_merkle(r, f"{w}.inclusion_proofs[{i}]")
                for i in range(r.count(f"{w}.inclusion_proofs", 4 + 2 * NODE))
            )
            sectors.append(SectorProof(proofs, r.domain(f"{w}.comm_c"), r.domain(f"{w}.comm_r_last")))
    except SnapFormatError as exc:
        raise PoStFormatError(str(exc)) from None
    return FallbackPoStSectorProof(sector_id, comm_r, tuple(sectors)), len(r.data) - r.pos
