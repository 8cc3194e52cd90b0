"""The vanilla update proof (``PartitionProof``) and its wire form, bincode 1.x (docs snap.md §4.1–4.2).

The market carries one ``bincode::serialize(&PartitionProof)`` per partition: little endian, fixed-width
integers, no headers. Structs are their fields in declaration order, 32-byte domains are raw bytes, a Vec
is a u64 count then its elements, ``PathElement.index`` (usize) is a u64, and the ``ProofData`` enum is a
u32 variant (Single 0, Sub 1, Top 2) followed by that variant's fields: Single (root, leaf, path), Sub
(base_proof, sub_proof, root, leaf), Top (base_proof, sub_proof, top_proof, root, leaf).

Decoding is exact: :func:`decode_partition_proof` reports where the bytes stop making sense and how many
bytes follow a complete proof (Rust ignores them; the strict check does not). Encoding a decoded proof gives
the same bytes back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

NODE = 32
SINGLE, SUB, TOP = 0, 1, 2
VARIANTS = ("Single", "Sub", "Top")


class SnapFormatError(ValueError):
    """Bytes that are not a bincode ``PartitionProof``."""


@dataclass(frozen=True)
class PathElement:
    """The arity − 1 siblings left to right (without the node on the path) and the insertion index."""

    hashes: tuple[bytes, ...]
    index: int


@dataclass(frozen=True)
class MerkleProof:
    """``MerkleProof { data: ProofData }``; ``sub``/``top`` are empty for the variants without them."""

    variant: int
    root: bytes
    leaf: bytes
    base: tuple[PathElement, ...]
    sub: tuple[PathElement, ...] = ()
    top: tuple[PathElement, ...] = ()

    @property
    def segments(self) -> tuple[tuple[PathElement, ...], ...]:
        if self.variant == SINGLE:
            return (self.base,)
        if self.variant == SUB:
            return (self.base, self.sub)
        return (self.base, self.sub, self.top)

    def path_index(self, arities: tuple[int, ...]) -> int:
        """The leaf index the path proves (``path_index``: base, then sub, then top digits), with the
        arities of the tree's type (base, sub, top), not the sibling counts found in the proof."""
        index, scale = 0, 1
        for seg, arity in zip(self.segments, arities, strict=False):
            for el in seg:
                index += el.index * scale
                scale *= arity
        return index


@dataclass(frozen=True)
class ChallengeProof:
    proof_r_old: MerkleProof
    proof_d_new: MerkleProof
    proof_r_new: MerkleProof


@dataclass(frozen=True)
class PartitionProof:
    comm_c: bytes
    apex_leafs: tuple[bytes, ...]
    challenge_proofs: tuple[ChallengeProof, ...]

    def to_bytes(self) -> bytes:
        return encode_partition_proof(self)


# ------------------------------------------------------------------------------------------------ encode


def _u64(n: int) -> bytes:
    return struct.pack("<Q", n)


def _domain(value: bytes) -> bytes:
    if len(value) != NODE:
        raise ValueError(f"a domain value is {NODE} bytes, got {len(value)}")
    return bytes(value)


def _path(path: tuple[PathElement, ...], out: list[bytes]) -> None:
    out.append(_u64(len(path)))
    for el in path:
        out.append(_u64(len(el.hashes)))
        out.extend(_domain(h) for h in el.hashes)
        out.append(_u64(el.index))


def _merkle(proof: MerkleProof, out: list[bytes]) -> None:
    out.append(struct.pack("<I", proof.variant))
    if proof.variant == SINGLE:
        out += [_domain(proof.root), _domain(proof.leaf)]
        _path(proof.base, out)
        return
    _path(proof.base, out)
    _path(proof.sub, out)
    if proof.variant == TOP:
        _path(proof.top, out)
    elif proof.variant != SUB:
        raise ValueError(f"unknown MerkleProof variant {proof.variant}")
    out += [_domain(proof.root), _domain(proof.leaf)]


def encode_partition_proof(proof: PartitionProof) -> bytes:
    out: list[bytes] = [_domain(proof.comm_c), _u64(len(proof.apex_leafs))]
    out.extend(_domain(a) for a in proof.apex_leafs)
    out.append(_u64(len(proof.challenge_proofs)))
    for cp in proof.challenge_proofs:
        _merkle(cp.proof_r_old, out)
        _merkle(cp.proof_d_new, out)
        _merkle(cp.proof_r_new, out)
    return b"".join(out)


# ------------------------------------------------------------------------------------------------ decode


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise SnapFormatError(
                f"truncated at byte {self.pos}: {what} needs {n} bytes, {len(self.data) - self.pos} left"
            )
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def u32(self, what: str) -> int:
        return int(struct.unpack("<I", self.take(4, what))[0])

    def u64(self, what: str) -> int:
        return int(struct.unpack("<Q", self.take(8, what))[0])

    def count(self, what: str, min_item: int) -> int:
        """A Vec length that the remaining bytes can hold (a huge count is an error, not an allocation)."""
        at = self.pos
        n = self.u64(f"{what} length")
        if n * min_item > len(self.data) - self.pos:
            raise SnapFormatError(
                f"{what} at byte {at} claims {n} elements; only {len(self.data) - self.pos} bytes follow"
            )
        return n

    def domain(self, what: str) -> bytes:
        return self.take(NODE, what)


def _read_path(r: _Reader, what: str) -> tuple[PathElement, ...]:
    n = r.count(f"{what}.path", 16)
    out = []
    for i in range(n):
        m = r.count(f"{what}.path[{i}].hashes", NODE)
        hashes = tuple(r.domain(f"{what}.path[{i}].hashes[{j}]") for j in range(m))
        out.append(PathElement(hashes, r.u64(f"{what}.path[{i}].index")))
    return tuple(out)


def _read_merkle(r: _Reader, what: str) -> MerkleProof:
    at = r.pos
    variant = r.u32(f"{what} variant")
    if variant == SINGLE:
        root, leaf = r.domain(f"{what}.root"), r.domain(f"{what}.leaf")
        return MerkleProof(SINGLE, root, leaf, _read_path(r, f"{what}.path"))
    if variant in (SUB, TOP):
        base = _read_path(r, f"{what}.base_proof")
        sub = _read_path(r, f"{what}.sub_proof")
        top = _read_path(r, f"{what}.top_proof") if variant == TOP else ()
        root, leaf = r.domain(f"{what}.root"), r.domain(f"{what}.leaf")
        return MerkleProof(variant, root, leaf, base, sub, top)
    raise SnapFormatError(
        f"{what} at byte {at}: unknown ProofData variant {variant} (0 Single, 1 Sub, 2 Top)"
    )


def decode_partition_proof(data: bytes) -> tuple[PartitionProof, int]:
    """(proof, trailing byte count); raises :class:`SnapFormatError` naming the field and offset."""
    r = _Reader(bytes(data))
    comm_c = r.domain("comm_c")
    apex = tuple(r.domain(f"apex_leafs[{i}]") for i in range(r.count("apex_leafs", NODE)))
    proofs = []
    for i in range(r.count("challenge_proofs", 3 * 4)):
        w = f"challenge_proofs[{i}]"
        proofs.append(
            ChallengeProof(
                _read_merkle(r, f"{w}.proof_r_old"),
                _read_merkle(r, f"{w}.proof_d_new"),
                _read_merkle(r, f"{w}.proof_r_new"),
            )
        )
    return PartitionProof(comm_c, apex, tuple(proofs)), len(r.data) - r.pos
