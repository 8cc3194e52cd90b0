"""Strict vanilla check of a PoSt request: everything rust-fil-proofs' ``FallbackPoSt::verify`` checks, and
what the circuit needs beyond it (docs post.md §4).

Rust checks, per sector: comm_r = H2(comm_c, the root of inclusion proof 0), the number of inclusion proofs,
every root equal to that one, the path length, and that each path hashes to its root and proves the
challenged leaf. The circuit additionally constrains every root to the proof's *own* ``comm_r_last`` field
(Rust's check reads the root of proof 0 instead) and needs each path's exact variant and sibling counts,
canonical field elements (a non-canonical value makes Rust panic while decoding) and nothing after the
proof's bytes (Rust ignores trailing bytes). A request that fails any check is refused before proving.

A failure names its sector (and its position among the request's vanilla proofs), the challenge and the
check (the keys of :data:`CHECKS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from porep.hashes.merkle import roots_from_paths
from porep.hashes.poseidon import R, hash2
from porep.post.challenges import sector_leaf_challenges
from porep.post.params import PoStKind, PoStProofType, post_proof_type
from porep.post.proof import FallbackPoStSectorProof, MerkleProof, PoStFormatError, decode_sector_proof
from porep.sdr.vanilla_verify import CheckError, Failure, Failures
from porep.snap.proof import VARIANTS
from porep.snap.verify import _arrays, _canonical_mask, _shape_ok  # the MerkleProof checks Snap uses

__all__ = ["CHECKS", "CheckedPoSt", "PoStProofError", "PoStReport", "check_post"]

NODE = 32
_Fail = Callable[[str, str, "int | None"], None]

CHECKS: dict[str, str] = {
    "header.proof_type": "registered_proof is a RegisteredPoStProof id (0..14) of the requested kind",
    "header.randomness": "the randomness is 32 bytes, a canonical Fr element",
    "header.partition": "WinningPoSt has partition 0 only; a WindowPoSt partition index fits sector indices",
    "header.sectors": "WinningPoSt: one sector proof; WindowPoSt: 1 to the partition's sector count",
    "header.sector_ids": "no sector appears twice in a partition",
    "header.public": "the sectors and comm_r values are the ones the caller expects",
    "format": "each vanilla proof is bincode of a FallbackPoStSectorProof",
    "format.trailing": "no bytes follow a vanilla proof",
    "shape.sectors": "each vanilla proof holds exactly one sector proof",
    "shape.challenges": "each sector proof holds the proof type's number of inclusion proofs",
    "shape.tree_r": "each inclusion proof has tree R_last's variant, path lengths and sibling counts",
    "values.comm_r": "comm_r is a canonical Fr element",
    "values.comm_c": "comm_c is a canonical Fr element",
    "values.comm_r_last": "comm_r_last is a canonical Fr element",
    "values.tree_r": "each inclusion proof's root, leaf and siblings are canonical Fr elements",
    "commitments.comm_r": "H2(comm_c, comm_r_last) = comm_r",
    "tree_r.root": "each inclusion proof's root is the sector proof's comm_r_last",
    "tree_r.index": "each inclusion proof proves its challenged leaf (derived from the randomness)",
    "tree_r.path": "each inclusion proof's path hashes to its root",
}


@dataclass
class PoStReport(Failures):
    """What :func:`check_post` found in a request (``randomness`` and ``partition_index``: the request's)."""

    proof_type: PoStProofType | None
    failures: list[Failure] = field(default_factory=list)
    proofs: list[FallbackPoStSectorProof] = field(default_factory=list)
    randomness: bytes = b""
    partition_index: int = 0

    def checked(self) -> CheckedPoSt:
        """The checked request, or :class:`PoStProofError` unless every check passed."""
        if not self.ok:
            raise PoStProofError(self)
        pt = self.proof_type
        assert pt is not None
        k = self.partition_index
        challenges = tuple(
            tuple(challenges_of(pt, self.randomness, k, i, p.sector_id)) for i, p in enumerate(self.proofs)
        )
        return CheckedPoSt(pt, self.randomness, k, tuple(self.proofs), challenges)


class PoStProofError(CheckError[PoStReport]):
    """A PoSt request failed the strict vanilla check (the message lists the first failures)."""


@dataclass(frozen=True)
class CheckedPoSt:
    """A PoSt request that passed every check: what the circuit's witness and the verifier read."""

    proof_type: PoStProofType
    randomness: bytes
    partition_index: int
    proofs: tuple[FallbackPoStSectorProof, ...]
    challenges: tuple[tuple[int, ...], ...]  # per vanilla sector, its challenged leaves

    @property
    def sector_ids(self) -> tuple[int, ...]:
        return tuple(p.sector_id for p in self.proofs)


def _canonical(value: bytes) -> bool:
    return len(value) == NODE and int.from_bytes(value, "little") < R


def _segments(pt: PoStProofType) -> list[tuple[int, int]]:
    """(arity, path elements) of a tree-R_last proof: base, then sub, then top."""
    t = pt.tree
    segs = [(t.base, pt.base_depth)]
    if t.sub:
        segs.append((t.sub, 1))
    if t.top:
        segs.append((t.top, 1))
    return segs


def _variant(pt: PoStProofType) -> int:
    return 2 if pt.tree.top else 1 if pt.tree.sub else 0


def sector_index(pt: PoStProofType, partition_index: int, i: int) -> int:
    """The index of a partition's ``i``-th sector over all partitions (what the challenge index counts)."""
    return partition_index * pt.circuit_sectors + i


def challenges_of(
    pt: PoStProofType, randomness: bytes, partition_index: int, i: int, sector_id: int
) -> list[int]:
    """The challenged leaves the ``i``-th vanilla sector proof of a request must prove."""
    return sector_leaf_challenges(
        randomness, sector_id, pt.nodes, api_version=pt.api_version,
        sector_index=sector_index(pt, partition_index, i), count=pt.vanilla_challenges,
    )


def check_post(
    proof_type: int | PoStProofType,
    randomness: bytes,
    vanilla_proofs: Sequence[bytes | FallbackPoStSectorProof],
    *,
    partition_index: int = 0,
    kind: PoStKind | None = None,
    expected: Sequence[tuple[int, bytes]] | None = None,
) -> PoStReport:
    """Check a request's vanilla proofs (bincode bytes as Curio sends them, or decoded); ``kind``: the kind
    the request claims (its ``proof_kind``), ``expected``: the (sector id, comm_r) pairs the caller knows
    from the chain, in order. Every failure is reported, not only the first; ``.checked()`` of the report: the
    checked request, or :class:`PoStProofError`."""
    try:
        pt = proof_type if isinstance(proof_type, PoStProofType) else post_proof_type(proof_type)
    except ValueError as exc:
        return PoStReport(None, [Failure("header.proof_type", str(exc))])
    report = PoStReport(pt, randomness=bytes(randomness), partition_index=partition_index)
    fails = report.failures
    if kind is not None and pt.kind is not kind:
        why = f"{pt.name} is a {pt.kind.value} PoSt, the request is {kind.value}"
        fails.append(Failure("header.proof_type", why))
    rand_ok = _canonical(bytes(randomness))
    if not rand_ok:
        fails.append(Failure(
            "header.randomness",
            f"randomness ({len(randomness)} bytes) is not a canonical 32-byte Fr element (Curio masks the "
            "top two bits of the chain randomness)",
        ))
    if pt.kind is PoStKind.WINNING and partition_index != 0:
        fails.append(Failure("header.partition", f"partition index {partition_index}: WinningPoSt has one"))
    if (partition_index + 1) * pt.circuit_sectors * pt.vanilla_challenges >= 1 << 64:
        fails.append(Failure("header.partition", f"partition index {partition_index} is out of range"))
    n = len(vanilla_proofs)
    most = pt.vanilla_sectors
    if not 1 <= n <= most:
        want = "exactly 1" if pt.kind is PoStKind.WINNING else f"1 to {most}"
        fails.append(Failure("header.sectors", f"{n} vanilla proofs, a {pt.name} request carries {want}"))
    proofs: list[FallbackPoStSectorProof | None] = []
    for i, item in enumerate(vanilla_proofs):
        if isinstance(item, FallbackPoStSectorProof):
            proofs.append(item)
            continue
        try:
            proof, trailing = decode_sector_proof(bytes(item))
        except PoStFormatError as exc:
            fails.append(Failure("format", f"vanilla proof {i}: {exc}"))
            proofs.append(None)
            continue
        if trailing:
            fails.append(Failure("format.trailing", f"vanilla proof {i}: {trailing} bytes after it"))
        proofs.append(proof)
    ids = [p.sector_id for p in proofs if p is not None]
    dup = sorted({s for s in ids if ids.count(s) > 1})
    if dup:
        fails.append(Failure("header.sector_ids", f"sector(s) {dup} appear more than once"))
    if expected is not None:
        got = [(p.sector_id, p.comm_r) if p is not None else None for p in proofs]
        want_pairs = [(int(s), bytes(c)) for s, c in expected]
        if got != want_pairs:
            fails.append(Failure(
                "header.public",
                f"the vanilla proofs are for sectors {[g[0] if g else None for g in got]}, expected "
                f"{[s for s, _ in want_pairs]} with their comm_r",
            ))
    for i, p in enumerate(proofs):
        if p is not None:
            _SectorCheck(pt, i, p, randomness if rand_ok else None, partition_index).run(fails)
    report.proofs = [p for p in proofs if p is not None]
    return report


class _SectorCheck:
    def __init__(
        self, pt: PoStProofType, i: int, proof: FallbackPoStSectorProof, randomness: bytes | None, k: int
    ) -> None:
        self.pt, self.i, self.p = pt, i, proof
        self.challenges = (
            challenges_of(pt, randomness, k, i, proof.sector_id) if randomness is not None else None
        )

    def run(self, fails: list[Failure]) -> None:
        pt, i, p = self.pt, self.i, self.p

        def fail(check: str, detail: str, j: int | None) -> None:
            node = self.challenges[j] if j is not None and self.challenges is not None else None
            fails.append(Failure(check, f"sector {p.sector_id} (vanilla proof {i}): {detail}", None, j, node))

        if not _canonical(p.comm_r):
            fail("values.comm_r", "comm_r is not a canonical Fr element", None)
        if len(p.sectors) != 1:
            fail("shape.sectors", f"{len(p.sectors)} sector proofs in the vanilla proof, expected 1", None)
            if not p.sectors:
                return
        sp = p.sectors[0]
        for name, value in (("comm_c", sp.comm_c), ("comm_r_last", sp.comm_r_last)):
            if not _canonical(value):
                fail(f"values.{name}", f"{name} is not a canonical Fr element", None)
        if _canonical(p.comm_r) and _canonical(sp.comm_c) and _canonical(sp.comm_r_last):
            if hash2(sp.comm_c, sp.comm_r_last) != p.comm_r:
                fail("commitments.comm_r", "H2(comm_c, comm_r_last) is not comm_r", None)
        if len(sp.inclusion_proofs) != pt.vanilla_challenges:
            fail(
                "shape.challenges",
                f"{len(sp.inclusion_proofs)} inclusion proofs, a {pt.name} sector has "
                f"{pt.vanilla_challenges}",
                None,
            )
        segs = _segments(pt)
        good: list[int] = []
        for j, mp in enumerate(sp.inclusion_proofs):
            why = _shape_ok(mp, _variant(pt), segs)
            if why is not None:
                fail("shape.tree_r", why if mp.variant < len(VARIANTS) else f"variant {mp.variant}", j)
            else:
                good.append(j)
        if good:
            self._paths([sp.inclusion_proofs[j] for j in good], good, sp.comm_r_last, fail)

    def _paths(self, mps: list[MerkleProof], good: list[int], comm_r_last: bytes, fail: _Fail) -> None:
        leaves, roots, segs = _arrays(mps)
        n = len(mps)
        flat = np.concatenate(
            [leaves.reshape(n, 1, NODE), roots.reshape(n, 1, NODE)]
            + [s[0].reshape(n, -1, NODE) for s in segs],
            axis=1,
        )
        canon = _canonical_mask(np.ascontiguousarray(flat).view("<u4").reshape(n, -1, 8)).all(axis=1)
        for bad in np.nonzero(~canon)[0]:
            fail("values.tree_r", "a root, leaf or sibling is not a canonical Fr element", good[int(bad)])
        pos_ok = np.ones(n, dtype=bool)
        for (_, index), (arity, _) in zip(segs, _segments(self.pt), strict=True):
            pos_ok &= (index < arity).all(axis=1)
        for row, (mp, j) in enumerate(zip(mps, good, strict=True)):
            if mp.root != comm_r_last:
                fail("tree_r.root", "the inclusion proof's root is not comm_r_last", j)
            if not pos_ok[row]:
                fail("tree_r.index", "a path index is outside [0, arity)", j)
            elif self.challenges is not None and j < len(self.challenges):
                got = mp.path_index(_seg_arities(self.pt))
                if got != self.challenges[j]:
                    why = f"the path proves leaf {got}, the challenge is {self.challenges[j]}"
                    fail("tree_r.index", why, j)
        run = canon & pos_ok
        if not run.any():
            return
        sel = np.nonzero(run)[0]
        computed = roots_from_paths(
            "poseidon", leaves[sel], [(h[sel], ix[sel].astype(np.int64)) for h, ix in segs]
        )
        for at, got in zip(sel, computed, strict=True):
            if got.tobytes() != roots[at].tobytes():
                fail("tree_r.path", "the path does not hash to its root", good[int(at)])


def _seg_arities(pt: PoStProofType) -> tuple[int, ...]:
    """(base, sub, top) arities as ``MerkleProof.path_index`` takes them (one per segment)."""
    return tuple(a for a, _ in _segments(pt))
