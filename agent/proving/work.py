"""Work: the one place where proving input is recognised, strictly checked and given its public inputs.

Every path that proves or verifies (``psagent prove``, ``psagent verify``, ``bench e2e`` and the agent's
request stages) starts from :meth:`Work.from_bytes`, so a C1 is checked the same way whoever hands it in:
a bare PoRep C1, the market's ProofData (PoRep or SnapDeals), or lotus-bench's ``c1out.json`` envelope. The
strict vanilla check (``porep.sdr.vanilla_verify`` / ``porep.snap.verify``) runs here, before any proving; the
public inputs are computed here once, from the request's public values and never from the circuit
(docs/porep.md §7, docs/snap.md §5). Bad input raises :class:`WorkError`, one line saying why: the CLI prints
it and exits 2, the agent records the request as failed. Nothing here prints or exits.

:func:`recognise` is the format detection on its own (no check), for ``psagent c1 check``, which runs the
vanilla checks itself to report every failure instead of the first.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from agent.proving.kind import WorkKind
from gpu.groth16 import PROOF_BYTES
from market.errors import ProtocolError
from market.proofdata import ProofData
from porep.c1 import DEFAULT_MAX_BYTES, C1FormatError, parse_c1
from porep.c1.envelope import looks_like_lotus_c2_input, parse_lotus_c2_input
from porep.ids import prover_id
from porep.post import verify as post_verify
from porep.post.params import PoStKind
from porep.post.partition import post_public_inputs
from porep.sdr import public_inputs, vanilla_verify
from porep.snap.partition import UpdateWork, update_public_inputs
from porep.snap.verify import check_request

if TYPE_CHECKING:
    from market.proofdata import Snap
    from porep.c1 import SealCommitPhase1Output
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = ["InputFormat", "JobId", "Recognised", "Work", "WorkError", "WorkKind", "recognise"]



class WorkError(ValueError):
    """Input that is not work this agent can prove; ``str(err)`` is one line."""


class InputFormat(StrEnum):
    C1 = "C1"
    PROOFDATA = "ProofData"
    LOTUS_BENCH = "lotus-bench c1out.json"
    CUZK = "cuzk SubmitProofRequest"  # a cuzk call (agent.cuzk): a Snap request's fields


class JobId(str):
    """The name a proof job goes by in logs, stage events and the store, made here only, one spelling per
    origin: the agent's request attempt, a one-off command, a cuzk call."""

    __slots__ = ()

    @classmethod
    def for_request(cls, work: Work, row_id: int, attempt: int) -> JobId:
        """``ps-<kind>-<miner>-<sector>-<row>-<attempt>``: unique per attempt, so the partitions of two
        attempts are never mixed."""
        return cls(f"ps-{work.kind.value}-{work.miner}-{work.sector}-{row_id}-{attempt}")

    @classmethod
    def fresh(cls, prefix: str = "job") -> JobId:
        """``<prefix>-<random UUID>``: a one-off job (``psagent prove``, ``bench e2e``)."""
        return cls(f"{prefix}-{uuid.uuid4().hex}")

    @classmethod
    def for_cuzk(cls, request_id: str, seq: int) -> JobId:
        """``<request id>#<n>``: a cuzk call, by the caller's request id (``job`` when it gave none) and
        the server's own sequence number (a request id may come again)."""
        return cls(f"{request_id or 'job'}#{seq}")


@dataclass(frozen=True, eq=False)
class Recognised:
    """Input as recognised, before any check: a C1 (with the exact bytes it was parsed from) or a Snap
    request, and the sector as far as the input records it (a ProofData: miner and number; a lotus-bench
    envelope: the number only; a bare C1: nothing)."""

    format: InputFormat
    c1: SealCommitPhase1Output | None
    c1_raw: bytes
    snap: Snap | None
    miner: int | None
    sector: int | None
    proofdata: ProofData | None = None


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).splitlines()
    return (text[0] if text else type(exc).__name__)[:limit]


def _looks_like_proofdata(raw: bytes) -> bool:
    return raw.lstrip().startswith(b'{"SectorID"') or b'"SectorID"' in raw[:200]


def recognise(raw: bytes, *, request_only: bool = False, c1_only: bool = False) -> Recognised:
    """Which input ``raw`` is, parsed (values strictly, any JSON formatting), nothing checked beyond that.
    ``request_only``: only the market's ProofData is accepted (what the agent fetches); ``c1_only``: only a
    bare C1 (what a cuzk call carries inside its wrapper). Raises :class:`WorkError`."""
    raw = bytes(raw)
    if c1_only:
        try:
            c1 = parse_c1(raw, max_bytes=max(len(raw), DEFAULT_MAX_BYTES))
        except C1FormatError as exc:
            raise WorkError(f"not a valid C1: {_first_line(exc)}") from exc
        return Recognised(InputFormat.C1, c1, raw, None, None, None)
    if request_only or _looks_like_proofdata(raw):
        try:
            pd = ProofData.parse(raw)
        except ProtocolError as exc:
            raise WorkError(f"not a valid ProofData: {_first_line(exc)}") from exc
        return _from_proofdata(pd)
    if looks_like_lotus_c2_input(raw):
        try:
            envelope = parse_lotus_c2_input(raw)
            c1 = parse_c1(envelope.phase1_out, max_bytes=max(len(envelope.phase1_out), DEFAULT_MAX_BYTES))
        except C1FormatError as exc:
            raise WorkError(f"not a valid lotus-bench c1out.json: {_first_line(exc)}") from exc
        if envelope.sector_size != c1.proof_type.sector_size:
            raise WorkError(
                f"lotus-bench envelope: SectorSize {envelope.sector_size} is not that of a "
                f"{c1.proof_type.name} C1"
            )
        # lotus-bench records the sector number, not the miner (it takes that from --miner-addr)
        return Recognised(InputFormat.LOTUS_BENCH, c1, envelope.phase1_out, None, None, envelope.sector_num)
    try:
        c1 = parse_c1(raw, max_bytes=max(len(raw), DEFAULT_MAX_BYTES))  # already in memory
    except C1FormatError as c1_error:
        try:  # a ProofData laid out so that the sniff above missed it
            pd = ProofData.parse(raw)
        except (ValueError, ProtocolError):
            why = _first_line(c1_error, 200)
            raise WorkError(
                f"neither a C1 JSON nor a ProofData (nor a lotus-bench c1out.json): {why}"
            ) from c1_error
        return _from_proofdata(pd)
    return Recognised(InputFormat.C1, c1, raw, None, None, None)


def _from_proofdata(pd: ProofData) -> Recognised:
    miner, sector = pd.sector_id.miner, pd.sector_id.number
    if pd.snap is not None:
        return Recognised(InputFormat.PROOFDATA, None, b"", pd.snap, miner, sector, pd)
    assert pd.porep is not None  # ProofData.parse requires exactly one of PoRep / Snap
    return Recognised(InputFormat.PROOFDATA, pd.porep, pd.porep_raw or b"", None, miner, sector, pd)


def _binding(got: Recognised, miner: int | None, sector: int | None) -> tuple[int | None, int | None]:
    """The sector a PoRep C1's replica_id is bound to: the caller's (both), else the input's own record; a
    lotus-bench envelope needs only the miner. None, None: not bound (a bare C1 is checked against its own
    header). Snap requests take their public inputs from their commitments: nothing to bind."""
    if got.snap is not None:
        if miner is not None or sector is not None:
            raise WorkError("--miner/--sector are for a bare PoRep C1, not a Snap request")
        return got.miner, got.sector
    if miner is None and sector is None:
        return (got.miner, got.sector) if got.miner is not None else (None, None)
    if got.format is InputFormat.LOTUS_BENCH and sector is None:
        sector = got.sector
    if (miner is None) != (sector is None):
        raise WorkError("give both --miner and --sector for a bare C1 (they bind its replica_id), or neither")
    return miner, sector


@dataclass(frozen=True, eq=False)
class Work:
    """One strictly checked proving job: its kind, proof type, what the circuit reads (the C1, the Snap
    request as ``porep.snap.partition.UpdateWork``, or the checked PoSt request) and every partition's public
    inputs, computed once.

    ``raw`` is the input as received (for a market request, the bytes its CID names)."""

    kind: WorkKind
    proof_type: ProofType | UpdateProofType | PoStProofType
    c1: SealCommitPhase1Output | None
    update: UpdateWork | None
    public_inputs: tuple[tuple[int, ...], ...]
    raw: bytes
    format: InputFormat
    miner: int | None
    sector: int | None
    post: post_verify.CheckedPoSt | None = None

    @property
    def partitions(self) -> int:
        return int(self.proof_type.partitions)

    @property
    def proof_bytes(self) -> int:
        """Length of a whole proof: 192 bytes (``gpu.groth16.PROOF_BYTES``) per partition."""
        return PROOF_BYTES * self.partitions

    @property
    def bound(self) -> bool:
        """Whether the public inputs are bound to a sector (replica_id re-derived from miner and sector);
        a bare C1 without them is proven against the replica_id its header carries."""
        return self.kind is not WorkKind.POREP or self.sector is not None

    @classmethod
    def from_bytes(
        cls,
        raw: bytes,
        *,
        miner: int | None = None,
        sector: int | None = None,
        request_only: bool = False,
        c1_only: bool = False,
    ) -> Work:
        """Recognise ``raw`` (:func:`recognise`), run the strict vanilla check, compute the public inputs.
        Raises :class:`WorkError` (the vanilla report's first failures in its one line)."""
        got = recognise(raw, request_only=request_only, c1_only=c1_only)
        miner, sector = _binding(got, miner, sector)
        if got.snap is not None:
            return _snap_work(got, bytes(raw))
        return _porep_work(got, bytes(raw), miner, sector)

    @classmethod
    def from_snap(cls, snap: Snap, *, miner: int, sector: int) -> Work:
        """A Snap request that arrived as fields rather than bytes (a cuzk call: proof type,
        commitments and bincode partition proofs), with the same strict check and public inputs as a
        ProofData's. ``raw`` stays empty: the fields are the input."""
        return _snap_work(Recognised(InputFormat.CUZK, None, b"", snap, miner, sector), b"")

    @classmethod
    def from_post(
        cls,
        registered_proof: int,
        randomness: bytes,
        vanilla_proofs: Sequence[bytes],
        *,
        partition_index: int = 0,
        winning: bool,
        miner: int | None = None,
    ) -> Work:
        """A PoSt request as a cuzk call carries it (``RegisteredPoStProof``, the 32-byte randomness,
        one bincode ``FallbackPoStSectorProof`` per sector, the WindowPoSt partition index): the strict check
        (``porep.post.verify``, docs post.md §4) and the public inputs from the public values only (§5.2).
        ``winning``: the kind the request claims. One partition; ``raw`` stays empty."""
        kind = PoStKind.WINNING if winning else PoStKind.WINDOW
        try:
            checked = post_verify.check_post(
                registered_proof, randomness, list(vanilla_proofs), partition_index=partition_index, kind=kind
            ).checked()
        except post_verify.PoStProofError as exc:
            raise WorkError(f"the PoSt request failed the strict check: {_first_line(exc)}") from exc
        inputs = post_public_inputs(checked)
        wk = WorkKind.WINNING_POST if winning else WorkKind.WINDOW_POST
        sector = checked.proofs[0].sector_id if len(checked.proofs) == 1 else None
        return cls(
            wk, checked.proof_type, None, None, (tuple(inputs),), b"", InputFormat.CUZK, miner, sector,
            post=checked,
        )


def _porep_work(got: Recognised, raw: bytes, miner: int | None, sector: int | None) -> Work:
    c1 = got.c1
    assert c1 is not None
    prover = prover_id(miner) if miner is not None else None
    try:
        vanilla_verify.check_c1(c1, prover_id=prover, sector=sector)
    except vanilla_verify.VanillaProofError as exc:
        raise WorkError(f"the C1 failed the strict check: {_first_line(exc)}") from exc
    if prover is not None and sector is not None:
        arr = c1.arrays
        inputs = public_inputs.record_inputs(
            c1.proof_type, prover_id=prover, sector_id=sector, ticket=arr.domain("ticket"),
            seed=arr.domain("seed"), comm_d=arr.domain("comm_d"), comm_r=arr.domain("comm_r"),
        )
    else:
        inputs = public_inputs.from_c1(c1)
    return Work(
        WorkKind.POREP, c1.proof_type, c1, None, tuple(tuple(v) for v in inputs), raw, got.format, miner,
        sector,
    )


def _snap_work(got: Recognised, raw: bytes) -> Work:
    snap = got.snap
    assert snap is not None
    try:
        check_request(snap)
        item = UpdateWork(snap)
    except ValueError as exc:  # UpdateProofError, or a proof type the update circuit does not know
        raise WorkError(f"the Snap request failed the strict check: {_first_line(exc)}") from exc
    inputs = update_public_inputs(snap)
    return Work(
        WorkKind.SNAP, item.proof_type, None, item, tuple(tuple(v) for v in inputs), raw, got.format,
        got.miner, got.sector,
    )
