"""A cuzk request (``cuzk.v1.SubmitProofRequest``) as plain values, and the Work it asks for.

Curio sends four kinds (docs/cuzk.md §4, docs/post.md §8):

* ``POREP_SEAL_COMMIT``: ``vanilla_proof`` is Go's ``json.Marshal`` of ``{SectorNum, Phase1Out, SectorSize}``
  with ``Phase1Out`` the C1 JSON in standard base64 (the same envelope lotus-bench writes,
  ``porep.c1.envelope``); ``sector_number`` / ``miner_id`` bind the C1's replica id; ``registered_proof`` is
  the sector's ``RegisteredSealProof``.
* ``SNAP_DEALS_UPDATE``: ``vanilla_proofs`` holds one bincode partition proof per partition, ``comm_r_old`` /
  ``comm_r_new`` / ``comm_d_new`` are raw 32-byte commitments, ``registered_proof`` is the
  ``RegisteredUpdateProof`` and ``sector_size`` may be 0 (ProofShare's call leaves it unset).
* ``WINNING_POST`` (CRITICAL) and ``WINDOW_POST_PARTITION`` (HIGH): ``vanilla_proofs`` holds one bincode
  ``FallbackPoStSectorProof`` per sector (WinningPoSt: one), ``randomness`` the 32-byte challenge seed,
  ``registered_proof`` the ``RegisteredPoStProof``, ``partition_index`` the WindowPoSt partition (one per
  request; WinningPoSt: 0), ``miner_id`` the miner.

Every value is checked against every other one and against the input itself before any work; the input then
goes through :class:`agent.proving.work.Work`, the one strict check and public-input computation the agent
uses. A request this server cannot prove is a :class:`RequestError` whose text is one line: it becomes the
answer's ``error_message``. A request's priority is its own, or (0) its kind's: WinningPoSt CRITICAL,
WindowPoSt HIGH, PoRep and Snap NORMAL (:func:`priority_of`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from agent.proving.kind import WorkKind

if TYPE_CHECKING:
    from agent.proving.work import Work
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = [
    "CIRCUIT_SIZES",
    "POST_KINDS",
    "Priority",
    "ProofKind",
    "ProofRequest",
    "RequestError",
    "circuit_id",
    "circuit_proof_type",
    "priority_of",
    "work_of",
]

COMMITMENT_BYTES = 32


class RequestError(ValueError):
    """A request this server cannot prove; ``str(err)`` is one line (the answer's ``error_message``)."""


class ProofKind(IntEnum):
    """``cuzk.v1.ProofKind`` (the wire values)."""

    PROOF_KIND_UNSPECIFIED = 0
    POREP_SEAL_COMMIT = 1
    SNAP_DEALS_UPDATE = 2
    WINDOW_POST_PARTITION = 3
    WINNING_POST = 4

    @property
    def label(self) -> str:
        """The name cuzk's status report gives the kind (``QueueStatus.proof_kind``)."""
        return _LABELS[self]


_LABELS = {
    ProofKind.PROOF_KIND_UNSPECIFIED: "unspecified",
    ProofKind.POREP_SEAL_COMMIT: "porep-c2",
    ProofKind.SNAP_DEALS_UPDATE: "snap-update",
    ProofKind.WINDOW_POST_PARTITION: "window-post",
    ProofKind.WINNING_POST: "winning-post",
}
SERVED = (
    ProofKind.POREP_SEAL_COMMIT, ProofKind.SNAP_DEALS_UPDATE, ProofKind.WINDOW_POST_PARTITION,
    ProofKind.WINNING_POST,
)
POST_KINDS = (ProofKind.WINDOW_POST_PARTITION, ProofKind.WINNING_POST)


class Priority(IntEnum):
    """``cuzk.v1.Priority`` (the wire values; larger is more urgent)."""

    PRIORITY_UNSPECIFIED = 0
    LOW = 1
    NORMAL = 2
    HIGH = 3
    CRITICAL = 4


_DEFAULT_PRIORITY = {
    ProofKind.WINNING_POST: Priority.CRITICAL,
    ProofKind.WINDOW_POST_PARTITION: Priority.HIGH,
    ProofKind.POREP_SEAL_COMMIT: Priority.NORMAL,
    ProofKind.SNAP_DEALS_UPDATE: Priority.NORMAL,
}


def priority_of(req: ProofRequest) -> int:
    """The request's priority: its own when set (an unknown value is clamped into LOW..CRITICAL), else its
    kind's as cuzk defaults them (WinningPoSt CRITICAL, WindowPoSt HIGH, the rest NORMAL)."""
    if req.priority:
        return max(Priority.LOW, min(Priority.CRITICAL, int(req.priority)))
    kind = req.kind
    return int(_DEFAULT_PRIORITY.get(kind, Priority.NORMAL)) if kind is not None else int(Priority.NORMAL)


@dataclass(frozen=True)
class ProofRequest:
    """The fields of a ``SubmitProofRequest`` (wire numbers in ``agent/cuzk/proving.proto``)."""

    request_id: str = ""
    proof_kind: int = 0
    sector_size: int = 0
    registered_proof: int = 0
    priority: int = 0
    vanilla_proof: bytes = b""
    vanilla_proofs: tuple[bytes, ...] = field(default=())
    sector_number: int = 0
    miner_id: int = 0
    randomness: bytes = b""
    partition_index: int = 0
    comm_r_old: bytes = b""
    comm_r_new: bytes = b""
    comm_d_new: bytes = b""

    @property
    def kind(self) -> ProofKind | None:
        try:
            return ProofKind(self.proof_kind)
        except ValueError:
            return None

    def digest(self) -> str:
        """SHA-256 of everything that decides the proof (not the request id, not the priority): two calls
        with the same request id are the same job only when this is equal too."""
        h = hashlib.sha256()
        for value in (
            self.proof_kind, self.sector_size, self.registered_proof, self.sector_number, self.miner_id,
            self.partition_index,
        ):
            h.update(int(value).to_bytes(8, "little"))
        for blob in (
            self.vanilla_proof, self.randomness, self.comm_r_old, self.comm_r_new, self.comm_d_new,
            *self.vanilla_proofs,
        ):
            h.update(len(blob).to_bytes(8, "little"))
            h.update(blob)
        h.update(len(self.vanilla_proofs).to_bytes(8, "little"))
        return h.hexdigest()


# -- circuit ids (PreloadSRS / EvictSRS / GetStatus) ------------------------------------------------------

CIRCUIT_SIZES = {"2k": 2 << 10, "8m": 8 << 20, "512m": 512 << 20, "32g": 32 << 30, "64g": 64 << 30}
_SIZE_LABEL = {v: k for k, v in CIRCUIT_SIZES.items()}


def circuit_id(pt: ProofType | UpdateProofType | PoStProofType) -> str:
    """cuzk's name of a circuit (``porep-32g``, ``snap-32g``, ``wpost-32g``, ``winning-32g``; the test sizes
    ``porep-2k``, ``snap-8m``, ``wpost-2k``, …)."""
    return f"{_CIRCUIT_KIND[WorkKind.of(pt)]}-{_SIZE_LABEL.get(pt.sector_size, str(pt.sector_size))}"


_CIRCUIT_KIND = {
    WorkKind.POREP: "porep",
    WorkKind.SNAP: "snap",
    WorkKind.WINDOW_POST: "wpost",
    WorkKind.WINNING_POST: "winning",
}
_CIRCUIT_KINDS = tuple(_CIRCUIT_KIND.values())


def circuit_proof_type(cid: str) -> ProofType | UpdateProofType | PoStProofType:
    """The proof type whose parameters a circuit id names (PoRep: the V1_1 type of that size, whose
    parameters every interactive PoRep of the size uses; WindowPoSt: the V1_1 type, whose parameters its V1
    shares). RequestError for unknown ids."""
    from porep.post.params import for_kind_and_size
    from porep.prooftypes import RegisteredSealProof, proof_type
    from porep.snap.params import for_sector_size

    kind, _, size = cid.partition("-")
    if kind not in _CIRCUIT_KINDS or size not in CIRCUIT_SIZES:
        known = ", ".join(f"{k}-{s}" for k in _CIRCUIT_KINDS for s in CIRCUIT_SIZES)
        raise RequestError(f"unknown circuit id {cid[:60]!r} (known: {known})")
    nbytes = CIRCUIT_SIZES[size]
    if kind == "snap":
        return for_sector_size(nbytes)
    if kind in ("wpost", "winning"):
        return for_kind_and_size("window" if kind == "wpost" else "winning", nbytes)
    name = next(
        p.name
        for p in RegisteredSealProof
        if p.name.endswith("V1_1") and proof_type(p.name).sector_size == nbytes
    )
    return proof_type(name)


# -- the Work a request asks for ----------------------------------------------------------------------------


def work_of(req: ProofRequest) -> Work:
    """The strictly checked Work of ``req``; RequestError (one line) for anything this server will not prove.
    CPU-bound for a real request (the C1 parse and vanilla check): call it off the event loop."""
    kind = req.kind
    if kind is None:
        raise RequestError(f"proof_kind {req.proof_kind} is not a ProofKind")
    if kind is ProofKind.PROOF_KIND_UNSPECIFIED:
        raise RequestError(
            "proof_kind is unset: POREP_SEAL_COMMIT, SNAP_DEALS_UPDATE, WINDOW_POST_PARTITION or WINNING_POST"
        )
    if kind in POST_KINDS:
        return _post(req, kind)
    if kind is ProofKind.POREP_SEAL_COMMIT:
        return _porep(req)
    return _snap(req)


def _size_name(nbytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes} bytes"


def _porep(req: ProofRequest) -> Work:
    from agent.proving.work import Work, WorkError
    from porep.c1.envelope import parse_lotus_c2_input
    from porep.c1.errors import C1FormatError
    from porep.prooftypes import RegisteredSealProof, proof_type

    if req.vanilla_proofs:
        raise RequestError(
            f"a PoRep request carries its C1 wrapper in vanilla_proof, not {len(req.vanilla_proofs)} "
            "vanilla_proofs"
        )
    if not req.vanilla_proof:
        raise RequestError("vanilla_proof is empty: a PoRep request carries the C1 wrapper JSON")
    try:
        declared = proof_type(RegisteredSealProof(req.registered_proof).name)
    except ValueError:
        raise RequestError(f"registered_proof {req.registered_proof} is not a RegisteredSealProof") from None
    if req.sector_size and req.sector_size != declared.sector_size:
        raise RequestError(
            f"sector_size {req.sector_size} is not that of registered_proof {declared.name} "
            f"({declared.sector_size})"
        )
    try:
        wrapper = parse_lotus_c2_input(req.vanilla_proof)
    except C1FormatError as exc:
        raise RequestError(f"the C1 wrapper (vanilla_proof): {_one_line(exc)}") from None
    if wrapper.sector_num != req.sector_number:
        raise RequestError(
            f"the C1 wrapper's SectorNum {wrapper.sector_num} is not sector_number {req.sector_number}"
        )
    if wrapper.sector_size != declared.sector_size:
        raise RequestError(
            f"the C1 wrapper's SectorSize {wrapper.sector_size} is not that of {declared.name} "
            f"({declared.sector_size})"
        )
    try:
        work = Work.from_bytes(wrapper.phase1_out, miner=req.miner_id, sector=req.sector_number, c1_only=True)
    except WorkError as exc:
        raise RequestError(f"Phase1Out: {_one_line(exc)}") from None
    if work.proof_type.id != declared.id:
        raise RequestError(
            f"the C1 is a {work.proof_type.name} proof, registered_proof says {declared.name}"
        )
    return work


def _snap(req: ProofRequest) -> Work:
    from agent.proving.work import Work, WorkError
    from market.proofdata import Snap
    from porep.snap.params import RegisteredUpdateProof, update_proof_type

    if req.vanilla_proof:
        raise RequestError(
            "a SnapDeals request carries one bincode partition proof per partition in vanilla_proofs, "
            "not a vanilla_proof"
        )
    try:
        upt = update_proof_type(int(RegisteredUpdateProof(req.registered_proof)))
    except ValueError:
        raise RequestError(
            f"registered_proof {req.registered_proof} is not a RegisteredUpdateProof (0..4)"
        ) from None
    if req.sector_size and req.sector_size != upt.sector_size:
        raise RequestError(
            f"sector_size {req.sector_size} is not that of registered_proof {upt.name} "
            f"({_size_name(upt.sector_size)}, {upt.sector_size})"
        )
    for name in ("comm_r_old", "comm_r_new", "comm_d_new"):
        value = getattr(req, name)
        if len(value) != COMMITMENT_BYTES:
            raise RequestError(f"{name} must be {COMMITMENT_BYTES} raw bytes, got {len(value)}")
    if len(req.vanilla_proofs) != upt.partitions:
        raise RequestError(
            f"{len(req.vanilla_proofs)} partition proofs in vanilla_proofs, a {upt.name} update has "
            f"{upt.partitions}"
        )
    snap = Snap(
        proof_type=req.registered_proof,
        old_r=req.comm_r_old,
        new_r=req.comm_r_new,
        new_d=req.comm_d_new,
        proofs=tuple(req.vanilla_proofs),
    )
    try:
        return Work.from_snap(snap, miner=req.miner_id, sector=req.sector_number)
    except WorkError as exc:
        raise RequestError(_one_line(exc)) from None


def _post(req: ProofRequest, kind: ProofKind) -> Work:
    from agent.proving.work import Work, WorkError
    from porep.post.params import PoStKind, post_proof_type

    winning = kind is ProofKind.WINNING_POST
    if req.vanilla_proof:
        raise RequestError(
            "a PoSt request carries one bincode vanilla proof per sector in vanilla_proofs, not a "
            "vanilla_proof"
        )
    try:
        pt = post_proof_type(int(req.registered_proof))
    except ValueError:
        raise RequestError(
            f"registered_proof {req.registered_proof} is not a RegisteredPoStProof (0..14)"
        ) from None
    if (pt.kind is PoStKind.WINNING) != winning:
        raise RequestError(
            f"registered_proof {pt.name} is a {pt.kind.value} PoSt, the request is {kind.name}"
        )
    if req.sector_size and req.sector_size != pt.sector_size:
        raise RequestError(
            f"sector_size {req.sector_size} is not that of registered_proof {pt.name} "
            f"({_size_name(pt.sector_size)}, {pt.sector_size})"
        )
    if len(req.randomness) != COMMITMENT_BYTES:
        raise RequestError(f"randomness must be {COMMITMENT_BYTES} raw bytes, got {len(req.randomness)}")
    if winning and req.partition_index:
        raise RequestError(f"partition_index {req.partition_index}: WinningPoSt has one partition")
    try:
        return Work.from_post(
            pt.id, req.randomness, req.vanilla_proofs, partition_index=req.partition_index, winning=winning,
            miner=req.miner_id,
        )
    except WorkError as exc:
        raise RequestError(_one_line(exc)) from None


def _one_line(exc: BaseException, limit: int = 400) -> str:
    text = str(exc).splitlines()
    return (text[0] if text else type(exc).__name__)[:limit]
