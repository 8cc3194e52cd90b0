"""lotus-bench's C1 envelope (``c1out.json``), so a C1 saved by ``lotus-bench`` can be checked as it is.

``lotus-bench simple commit1`` and ``lotus-bench sealing --save-commit2-input`` write Go's ``json.Marshal``
of ``Commit2In{SectorNum int64; Phase1Out []byte; SectorSize uint64}`` (lotus ``cmd/lotus-bench``), with
no JSON tags, so the keys are the Go field names, and ``Phase1Out`` — the C1 JSON bytes as filecoin-ffi
returned them — is standard base64 (Go's encoding of ``[]byte``). The miner is not recorded (lotus-bench
takes it from ``--miner-addr``, default t01000).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from porep.c1.errors import C1FormatError

KEYS = ("SectorNum", "Phase1Out", "SectorSize")


@dataclass(frozen=True)
class LotusC2Input:
    sector_num: int
    phase1_out: bytes  # the C1 JSON
    sector_size: int


def looks_like_lotus_c2_input(raw: bytes) -> bool:
    """Cheap sniff: a JSON object with a ``Phase1Out`` key near its start (the C1 itself never has one)."""
    return raw.lstrip()[:1] == b"{" and b'"Phase1Out"' in raw[:512]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise C1FormatError(f"duplicate key {k!r} in the lotus-bench envelope")
        out[k] = v
    return out


def _int(obj: dict[str, Any], key: str, top: int) -> int:
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
        raise C1FormatError(f"expected an integer in [0, {top}], got {str(v)[:40]!r}", path=key)
    return v


def parse_lotus_c2_input(raw: bytes) -> LotusC2Input:
    """The envelope's fields; the C1 inside is not parsed here (that is :func:`porep.c1.parse_c1`'s job)."""
    try:
        obj = json.loads(raw, object_pairs_hook=_pairs)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise C1FormatError(f"lotus-bench envelope is not JSON: {exc}") from None
    except RecursionError:
        raise C1FormatError("lotus-bench envelope nested too deeply") from None
    if not isinstance(obj, dict):
        raise C1FormatError("lotus-bench envelope: expected a JSON object")
    if set(obj) != set(KEYS):
        raise C1FormatError(
            f"lotus-bench envelope: expected exactly the keys {', '.join(KEYS)}, got {sorted(obj)}"
        )
    text = obj["Phase1Out"]
    if not isinstance(text, str):
        raise C1FormatError("expected the C1 as a base64 string", path="Phase1Out")
    try:
        c1 = base64.b64decode(text, validate=True)
    except binascii.Error:
        raise C1FormatError("not valid base64", path="Phase1Out") from None
    return LotusC2Input(_int(obj, "SectorNum", 2**63 - 1), c1, _int(obj, "SectorSize", 2**64 - 1))
