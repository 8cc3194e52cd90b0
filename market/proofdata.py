"""ProofData: the content-addressed request a provider downloads, parsed without losing a byte.

Curio's ``common.ProofData`` has no JSON tags, so its keys are the Go field names:

    {"SectorID": {"Miner": uint64, "Number": uint64} | null,
     "PoRep":    Commit1OutRaw | null,     # the C1 output as Curio re-marshals it (porep.md §1.10)
     "Snap":     {"ProofType": int, "old_r": [32], "new_r": [32], "new_d": [32], "Proofs": [base64…]} | null}

The request CID is the sha2-256 of these exact bytes, so ``ProofData.raw`` keeps them, and the PoRep member
is parsed from its own exact byte span by porep's C1 codec (``porep.c1``: any formatting serde_json accepts,
values strictly), so ``porep.to_json() == porep_raw`` whenever ``porep.canonical`` (Curio's uploads are).
A Go-marshalled request (the only kind Curio's clients upload) is cut at fixed text around the C1 and never
goes through ``json.loads``: for a 32GiB C1 that is ~40 MB of JSON. Any other layout is walked member by
member after a nesting check (serde_json's limit of 127 levels), so a hostile document cannot exhaust the
recursive parser.

Stricter than Go, on purpose: SectorID is required and exactly one of PoRep / Snap must be set (Curio would
prove the PoRep if both were); duplicate top-level keys and keys that differ from a field name only in case
(Go would match those case-insensitively) are refused rather than guessed at.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from market.errors import ProtocolError
from porep.c1 import DEFAULT_MAX_BYTES as C1_DEFAULT_MAX_BYTES
from porep.c1 import C1FormatError, SealCommitPhase1Output, parse_c1
from porep.c1.jsontext import MAX_NESTING, nesting

__all__ = ["ProofData", "SectorID", "Snap"]

_UINT64_MAX = 2**64 - 1
_INT64 = (-(2**63), 2**63 - 1)
_WS = re.compile(r"[ \t\n\r]*")
_FIELDS = ("SectorID", "PoRep", "Snap")


def _no_constants(name: str) -> Any:
    raise ProtocolError(f"ProofData: {name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)
# Go's json.Marshal(ProofData) of a PoRep request: the C1 sits between these two, so its bytes can be cut out
# without scanning it (the C1 parser then checks that the cut is exactly one complete document).
_GO_PREFIX = re.compile(
    rb'\{"SectorID":\{"Miner":(0|[1-9][0-9]{0,19}),"Number":(0|[1-9][0-9]{0,19})\},"PoRep":'
)
_GO_SUFFIX = b',"Snap":null}'


# -- the C1 ----------------------------------------------------------------------------------------------


def _load_porep(raw: bytes) -> SealCommitPhase1Output:
    """The PoRep member, parsed from its exact bytes by porep's C1 codec."""
    try:
        return parse_c1(raw, max_bytes=max(len(raw), C1_DEFAULT_MAX_BYTES))  # the transport capped the size
    except C1FormatError as exc:
        raise ProtocolError(f"ProofData.PoRep is not a valid C1: {exc}") from exc


# -- SectorID and Snap -------------------------------------------------------------------------------------


def _uint64(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _UINT64_MAX:
        raise ProtocolError(f"{what} must be a uint64")
    return value


def _commitment(value: Any, what: str) -> bytes:
    """A Go ``[32]byte`` in JSON: an array of 32 integers 0..255."""
    if not isinstance(value, list) or len(value) != 32:
        raise ProtocolError(f"{what} must be an array of 32 bytes")
    if not all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in value):
        raise ProtocolError(f"{what} must hold integers 0..255")
    return bytes(value)


@dataclass(frozen=True, slots=True)
class SectorID:
    """go-state-types ``abi.SectorID``."""

    miner: int
    number: int

    @classmethod
    def from_obj(cls, obj: Any) -> SectorID:
        if not isinstance(obj, dict) or set(obj) != {"Miner", "Number"}:
            raise ProtocolError('ProofData.SectorID must be {"Miner": uint64, "Number": uint64}')
        return cls(_uint64(obj["Miner"], "SectorID.Miner"), _uint64(obj["Number"], "SectorID.Number"))

    def to_obj(self) -> dict[str, int]:
        return {"Miner": self.miner, "Number": self.number}


@dataclass(frozen=True, slots=True)
class Snap:
    """Curio ``proof.Snap``: a SnapDeals (sector update) request; ``proofs`` are opaque bincode."""

    proof_type: int  # abi.RegisteredUpdateProof
    old_r: bytes
    new_r: bytes
    new_d: bytes
    proofs: tuple[bytes, ...]

    @classmethod
    def from_obj(cls, obj: Any) -> Snap:
        if not isinstance(obj, dict):
            raise ProtocolError("ProofData.Snap must be a JSON object")
        missing = {"ProofType", "old_r", "new_r", "new_d", "Proofs"} - obj.keys()
        if missing:
            raise ProtocolError(f"ProofData.Snap lacks {sorted(missing)}")
        pt = obj["ProofType"]
        if isinstance(pt, bool) or not isinstance(pt, int) or not _INT64[0] <= pt <= _INT64[1]:
            raise ProtocolError("Snap.ProofType must be an int64")
        proofs = obj["Proofs"]
        if proofs is not None and not isinstance(proofs, list):
            raise ProtocolError("Snap.Proofs must be a list of base64 strings")
        decoded = []
        for i, p in enumerate(proofs or ()):
            if p is None:
                decoded.append(b"")
                continue
            if not isinstance(p, str):
                raise ProtocolError(f"Snap.Proofs[{i}] must be a base64 string")
            try:
                decoded.append(base64.b64decode(p, validate=True))
            except binascii.Error:
                raise ProtocolError(f"Snap.Proofs[{i}] is not valid base64") from None
        return cls(
            proof_type=pt,
            old_r=_commitment(obj["old_r"], "Snap.old_r"),
            new_r=_commitment(obj["new_r"], "Snap.new_r"),
            new_d=_commitment(obj["new_d"], "Snap.new_d"),
            proofs=tuple(decoded),
        )

    def to_obj(self) -> dict[str, Any]:
        """Go field order: ProofType, old_r, new_r, new_d, Proofs."""
        return {
            "ProofType": self.proof_type,
            "old_r": list(self.old_r),
            "new_r": list(self.new_r),
            "new_d": list(self.new_d),
            "Proofs": [base64.b64encode(p).decode() for p in self.proofs],
        }


# -- ProofData ---------------------------------------------------------------------------------------------


def _top_level_members(text: str) -> dict[str, tuple[int, int, Any]]:
    """Each top-level key → (start, end, value), with [start, end) the value's span in ``text``.

    One pass of the C JSON scanner per member, so the (large) C1 is parsed once and its exact text is known.
    """
    i = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if i >= len(text) or text[i] != "{":
        raise ProtocolError("ProofData: expected a JSON object")
    i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
    members: dict[str, tuple[int, int, Any]] = {}
    if i < len(text) and text[i] == "}":
        i += 1
    else:
        while True:
            if i >= len(text) or text[i] != '"':
                raise ProtocolError(f"ProofData: malformed JSON: expected a key at offset {i}")
            key, i = _DECODER.raw_decode(text, i)
            i = _WS.match(text, i).end()  # type: ignore[union-attr]
            if i >= len(text) or text[i] != ":":
                raise ProtocolError(f"ProofData: malformed JSON: expected ':' at offset {i}")
            start = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            try:
                value, end = _DECODER.raw_decode(text, start)
            except json.JSONDecodeError as exc:
                raise ProtocolError(
                    f"ProofData: malformed JSON in {key!r}: {exc.msg} at offset {exc.pos}"
                ) from None
            if key in members:
                raise ProtocolError(f"ProofData: duplicate key {key!r}")
            members[key] = (start, end, value)
            i = _WS.match(text, end).end()  # type: ignore[union-attr]
            if i < len(text) and text[i] == ",":
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                continue
            if i < len(text) and text[i] == "}":
                i += 1
                break
            raise ProtocolError(f"ProofData: malformed JSON: expected ',' or '}}' at offset {i}")
    if _WS.match(text, i).end() != len(text):  # type: ignore[union-attr]
        raise ProtocolError(f"ProofData: trailing data after the JSON object at offset {i}")
    return members


@dataclass(frozen=True, slots=True, eq=False)
class ProofData:
    """A parsed request; ``raw`` is the exact downloaded bytes that the request CID names."""

    raw: bytes
    sector_id: SectorID
    porep: SealCommitPhase1Output | None
    snap: Snap | None
    porep_span: tuple[int, int] | None = None  # where the C1 sits in ``raw``

    @property
    def porep_raw(self) -> bytes | None:
        """The C1 exactly as it was sent (``porep.to_json()`` gives the same bytes)."""
        return None if self.porep_span is None else self.raw[self.porep_span[0] : self.porep_span[1]]

    @classmethod
    def parse(cls, raw: bytes) -> ProofData:
        raw = bytes(raw)
        head = _GO_PREFIX.match(raw)
        if head and raw.endswith(_GO_SUFFIX) and len(raw) > head.end() + len(_GO_SUFFIX):
            miner, number = int(head[1]), int(head[2])
            span = (head.end(), len(raw) - len(_GO_SUFFIX))
            if max(miner, number) <= _UINT64_MAX and raw[span[0] : span[1]] != b"null":
                # The C1 parser accepts exactly one canonical document, so a wrong cut cannot pass.
                porep = _load_porep(raw[span[0] : span[1]])
                return cls(
                    raw=raw, sector_id=SectorID(miner, number), porep=porep, snap=None, porep_span=span
                )
        # Any other layout: walk the top-level object (this parses the members into Python objects).
        if nesting(raw) > MAX_NESTING:
            raise ProtocolError(
                f"ProofData: JSON nested deeper than {MAX_NESTING} levels (a valid one nests 18)"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"ProofData is not UTF-8 ({exc.reason} at byte {exc.start})") from None
        try:
            members = _top_level_members(text)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"ProofData: malformed JSON: {exc.msg} at offset {exc.pos}") from None
        for key in members:
            if key not in _FIELDS and key.lower() in {f.lower() for f in _FIELDS}:
                raise ProtocolError(f"ProofData: key {key!r} differs from a field name only in case")
        sid = members.get("SectorID", (0, 0, None))[2]
        if sid is None:
            raise ProtocolError("ProofData.SectorID is required")
        sector_id = SectorID.from_obj(sid)
        porep_m = members.get("PoRep", (0, 0, None))
        snap_m = members.get("Snap", (0, 0, None))
        if (porep_m[2] is None) == (snap_m[2] is None):
            raise ProtocolError("ProofData must carry exactly one of PoRep and Snap")
        c1: SealCommitPhase1Output | None = None
        c1_span: tuple[int, int] | None = None
        if porep_m[2] is not None:
            if not isinstance(porep_m[2], dict):
                raise ProtocolError("ProofData.PoRep must be a JSON object (a C1 output)")
            # character offsets → byte offsets (they differ only if the text before holds non-ASCII)
            start = len(text[: porep_m[0]].encode("utf-8"))
            c1_span = (start, start + len(text[porep_m[0] : porep_m[1]].encode("utf-8")))
            c1 = _load_porep(raw[c1_span[0] : c1_span[1]])
        snap = Snap.from_obj(snap_m[2]) if snap_m[2] is not None else None
        return cls(raw=raw, sector_id=sector_id, porep=c1, snap=snap, porep_span=c1_span)

    @staticmethod
    def encode(
        sector_id: SectorID, *, porep: SealCommitPhase1Output | bytes | None = None, snap: Snap | None = None
    ) -> bytes:
        """Bytes as Go's ``json.Marshal(ProofData)`` writes them; C1 bytes are embedded verbatim.

        A model is written with ``to_json()``, i.e. in the key order it was parsed in; Curio re-marshals C1s
        in Go order, so ``porep.to_json(KeyOrder.GO)`` bytes reproduce what its clients upload.
        """
        if (porep is None) == (snap is None):
            raise ValueError("give exactly one of porep and snap")
        sid = json.dumps(sector_id.to_obj(), separators=(",", ":")).encode()
        snap_b = b"null" if snap is None else json.dumps(snap.to_obj(), separators=(",", ":")).encode()
        if isinstance(porep, SealCommitPhase1Output):
            porep = porep.to_json()
        porep_b = b"null" if porep is None else porep
        return b'{"SectorID":' + sid + b',"PoRep":' + porep_b + b',"Snap":' + snap_b + b"}"

    @property
    def kind(self) -> Literal["PoRep", "Snap"]:
        return "PoRep" if self.porep is not None else "Snap"

    @property
    def deci_cost(self) -> int:
        """Price units of ~130M constraints (Curio ``DeciCost``): PoRep 10, Snap 16."""
        return 10 if self.porep is not None else 16
