"""Wire models of the provider API, with the JSON names of Curio's ``lib/proofsvc/common/types.go``.

Decoding mirrors Go's ``encoding/json`` where it matters to interoperate and is stricter where Go would
silently accept nonsense:
* a Go nil slice is sent as ``null``: ``requests``/``active_asks`` of null mean empty;
* ``abi.TokenAmount`` (big.Int) travels as a decimal string: amounts become Python ints of attoFIL and a JSON
  number, a sign, spaces or underscores are refused;
* ``[]byte`` travels as standard padded base64 (null = empty);
* ``time.Time`` travels as RFC 3339 with up to nanoseconds (kept to microseconds here);
* integers must be JSON integers in the Go type's range, never booleans or floats;
* unknown keys are ignored (the market may add fields); fields older markets did not send (``min_price_nfil``,
  ``created_at``, ``min_price_fil``, ``pow``) default to Go's zero values; active asks sent as bare ids (an
  older market) are read as asks with only an id.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from market.errors import ProtocolError

__all__ = [
    "ATTO_PER_FIL",
    "GO_ZERO_TIME",
    "ProofReward",
    "WorkAsk",
    "WorkRequest",
    "WorkResponse",
    "format_attofil",
    "parse_attofil",
    "parse_json_object",
]

ATTO_PER_FIL = 10**18
GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
_INT64 = (-(2**63), 2**63 - 1)
_UINT64 = (0, 2**64 - 1)
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,77}")  # up to 78 digits: anything bigger is not an amount of FIL


def parse_attofil(value: object, what: str = "amount") -> int:
    """A big.Int JSON value (decimal string) as an int of attoFIL; negative amounts are refused."""
    if not isinstance(value, str):
        raise ProtocolError(f"{what} must be a decimal string of attoFIL, got {type(value).__name__}")
    if not _DECIMAL.fullmatch(value):
        raise ProtocolError(f"{what} {value[:40]!r} is not a non-negative decimal integer")
    return int(value)


def format_attofil(amount: int) -> str:
    """An attoFIL int as big.Int writes it: plain decimal digits."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise ValueError(f"an attoFIL amount is a non-negative int, got {amount!r}")
    return str(amount)


def parse_json_object(raw: bytes | str, what: str) -> dict[str, Any]:
    """Strict JSON → dict: bad UTF-8, bad JSON, NaN/Infinity, duplicate keys or a non-object are refused."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what}: body is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            f"{what}: malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except ValueError as exc:  # from the hooks
        raise ProtocolError(f"{what}: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# -- field readers: one place for the Go type rules ----------------------------------------------------------

_MISSING = object()


def _get(obj: Mapping[str, Any], key: str, what: str, default: Any = _MISSING) -> Any:
    if key in obj:
        return obj[key]
    if default is _MISSING:
        raise ProtocolError(f"{what}: missing field {key!r}")
    return default


def _int(value: Any, bounds: tuple[int, int], what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{what} must be an integer, got {type(value).__name__}")
    if not bounds[0] <= value <= bounds[1]:
        raise ProtocolError(f"{what} {value} is out of range")
    return value


def _opt(value: Any, kind: type, what: str) -> Any:
    if value is None or isinstance(value, kind):
        return value
    raise ProtocolError(f"{what} must be {kind.__name__} or null, got {type(value).__name__}")


def _b64(value: Any, what: str) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, str):
        raise ProtocolError(f"{what} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ProtocolError(f"{what} is not valid base64") from None


def _time(value: Any, what: str) -> datetime:
    if not isinstance(value, str):
        raise ProtocolError(f"{what} must be an RFC 3339 time string")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ProtocolError(f"{what} {value[:40]!r} is not an RFC 3339 time") from None
    if t.tzinfo is None:
        raise ProtocolError(f"{what} {value!r} has no time zone")
    return t


def _format_time(t: datetime) -> str:
    """Go's RFC3339Nano: fractional seconds without trailing zeros, 'Z' for UTC."""
    s = t.isoformat()
    if t.microsecond:
        head, _, rest = s.partition(".")
        frac, tz = rest[:6].rstrip("0"), rest[6:]
        s = f"{head}.{frac}{tz}"
    return s.replace("+00:00", "Z")


# -- the models --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkAsk:
    """An offer to prove at or above a price; ``created_at``/prices are informational."""

    id: int
    min_price_nfil: int = 0
    created_at: datetime = GO_ZERO_TIME
    min_price_fil: str = ""  # "ui-only" in Curio

    @classmethod
    def from_obj(cls, obj: Any, what: str = "WorkAsk") -> WorkAsk:
        if isinstance(obj, int) and not isinstance(obj, bool):  # older markets listed active asks as ids
            return cls(id=_int(obj, _INT64, f"{what}.id"))
        if not isinstance(obj, dict):
            raise ProtocolError(f"{what} must be a JSON object")
        created = _get(obj, "created_at", what, None)
        price_fil = _get(obj, "min_price_fil", what, "")
        if not isinstance(price_fil, str):
            raise ProtocolError(f"{what}.min_price_fil must be a string")
        return cls(
            id=_int(_get(obj, "id", what), _INT64, f"{what}.id"),
            min_price_nfil=_int(_get(obj, "min_price_nfil", what, 0), _INT64, f"{what}.min_price_nfil"),
            created_at=GO_ZERO_TIME if created is None else _time(created, f"{what}.created_at"),
            min_price_fil=price_fil,
        )

    @classmethod
    def from_json(cls, raw: bytes | str) -> WorkAsk:
        return cls.from_obj(parse_json_object(raw, "WorkAsk"))

    def to_obj(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "min_price_nfil": self.min_price_nfil,
            "created_at": _format_time(self.created_at),
            "min_price_fil": self.min_price_fil,
        }


@dataclass(frozen=True, slots=True)
class WorkRequest:
    """A request matched to one of our asks; ``request_cid`` names the ProofData to fetch."""

    id: int
    request_cid: str | None
    done: bool | None
    work_ask_id: int

    @classmethod
    def from_obj(cls, obj: Any, what: str = "WorkRequest") -> WorkRequest:
        if not isinstance(obj, dict):
            raise ProtocolError(f"{what} must be a JSON object")
        return cls(
            id=_int(_get(obj, "id", what), _INT64, f"{what}.id"),
            request_cid=_opt(_get(obj, "request_cid", what, None), str, f"{what}.request_cid"),
            done=_opt(_get(obj, "done", what, None), bool, f"{what}.done"),
            work_ask_id=_int(_get(obj, "work_ask_id", what), _INT64, f"{what}.work_ask_id"),
        )

    def to_obj(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "request_cid": self.request_cid,
            "done": self.done,
            "work_ask_id": self.work_ask_id,
        }


@dataclass(frozen=True, slots=True)
class WorkResponse:
    """The poll answer: requests assigned to us and our asks still waiting."""

    requests: tuple[WorkRequest, ...] = field(default_factory=tuple)
    active_asks: tuple[WorkAsk, ...] = field(default_factory=tuple)

    @classmethod
    def from_json(cls, raw: bytes | str) -> WorkResponse:
        obj = parse_json_object(raw, "WorkResponse")
        reqs = _get(obj, "requests", "WorkResponse", None)
        asks = _get(obj, "active_asks", "WorkResponse", None)
        if reqs is not None and not isinstance(reqs, list):
            raise ProtocolError("WorkResponse.requests must be a list or null")
        if asks is not None and not isinstance(asks, list):
            raise ProtocolError("WorkResponse.active_asks must be a list or null")
        return cls(
            requests=tuple(WorkRequest.from_obj(r, f"requests[{i}]") for i, r in enumerate(reqs or ())),
            active_asks=tuple(WorkAsk.from_obj(a, f"active_asks[{i}]") for i, a in enumerate(asks or ())),
        )

    def to_obj(self) -> dict[str, Any]:
        return {
            "requests": [r.to_obj() for r in self.requests],
            "active_asks": [a.to_obj() for a in self.active_asks],
        }


@dataclass(frozen=True, slots=True)
class ProofReward:
    """The answer to a submitted proof: a signed cumulative payment voucher (unless ``pow``)."""

    status: str
    pow: bool  # True: an unpaid challenge proof
    nonce: int
    amount: int  # attoFIL paid for this proof
    cumulative_amount: int  # attoFIL paid to us so far: the voucher's value
    signature: bytes  # the voucher signature, opaque to the provider

    @classmethod
    def from_json(cls, raw: bytes | str) -> ProofReward:
        what = "ProofReward"
        obj = parse_json_object(raw, what)
        status = _get(obj, "status", what)
        if not isinstance(status, str):
            raise ProtocolError(f"{what}.status must be a string")
        pow_ = _get(obj, "pow", what, False)
        if not isinstance(pow_, bool):
            raise ProtocolError(f"{what}.pow must be a boolean")
        return cls(
            status=status,
            pow=pow_,
            nonce=_int(_get(obj, "nonce", what), _UINT64, f"{what}.nonce"),
            amount=parse_attofil(_get(obj, "amount", what), f"{what}.amount"),
            cumulative_amount=parse_attofil(
                _get(obj, "cumulative_amount", what), f"{what}.cumulative_amount"
            ),
            signature=_b64(_get(obj, "signature", what), f"{what}.signature"),
        )

    def to_obj(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "pow": self.pow,
            "nonce": self.nonce,
            "amount": format_attofil(self.amount),
            "cumulative_amount": format_attofil(self.cumulative_amount),
            "signature": base64.b64encode(self.signature).decode() if self.signature else None,
        }
