"""C1 JSON ↔ :class:`C1Arrays`: any formatting serde_json accepts, values strictly, fast for a 32GiB C1.

Policy: a C1 is accepted in any JSON formatting that Rust's serde_json reads into
``SealCommitPhase1Output`` (whitespace, key order, unknown keys, escapes; see :func:`_slow_parse` for the
exact rules), and every *value* is checked strictly (types, lengths fixed by the proof type, ranges).
:class:`Decoded` says whether the input bytes are *canonical*: exactly what real producers emit — compact
serde_json in Rust's key order, or Go ``encoding/json`` re-marshalling in Curio's — so that re-serialising
gives the same bytes. ``decode(..., canonical=True)`` demands that, naming the first differing byte.

Fast path (every canonical document): a canonical C1 is fully determined by (proof type, key order, its
integers in document order), so we read the proof type from the first bytes, tokenise the decimal digit
runs with numpy, and check that the input with every digit run collapsed to ``0`` equals the layout's
template byte for byte. The integers then go to their fields by strided views (see layout.py). Rendering is
the same in reverse. Both work in chunks, so memory stays a small multiple of the document.

Whitespace only (pretty-printed, a trailing newline): the whitespace outside strings is stripped in numpy
(:mod:`porep.c1.jsontext`) and the result takes the fast path; this works at any size.

Slow path (anything else, input ≤ SLOW_PATH_MAX_BYTES): ``json.loads`` with NaN, huge-integer and depth
guards, then a walk of the result against the same spec, which reports the first problem with its path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from porep.c1 import jsontext
from porep.c1.arrays import C1Arrays
from porep.c1.errors import C1FormatError
from porep.c1.layout import (
    TOP_KEYS,
    Arr,
    At,
    KeyOrder,
    Layout,
    Lit,
    Name,
    Node,
    Obj,
    Piece,
    Slot,
    layout_for,
)
from porep.prooftypes import ProofType, proof_type

MiB = 1 << 20
DEFAULT_MAX_BYTES = 128 * MiB  # a 64GiB interactive C1 is ~40 MB; NI 32/64GiB ones (~0.5 GB) need a raise
SLOW_PATH_MAX_BYTES = 64 * MiB  # json.loads needs ~10x the input in Python objects
CHUNK = 4 * MiB
MAX_VALUE = (1 << 32) - 1  # every integer of a valid C1 is < 2^32 (bytes, indices < arity, nodes < 2^31)
_MAX_VALUE_DIGITS = 10
_ZERO = ord("0")


class _Mismatch(Exception):
    """Internal: the input does not have the layout's structure (offset = first byte that differs)."""

    def __init__(self, offset: int, slot: int | None, reason: str, *, too_long: bool = False):
        super().__init__(reason)
        self.offset, self.slot, self.reason, self.too_long = offset, slot, reason, too_long
        self.layout: Layout | None = None


# =============================================================================================== header


def detect(data: bytes) -> tuple[ProofType, KeyOrder] | None:
    """Proof type and key order from the first bytes, or None if they are not a canonical C1 start."""
    head = bytes(data[:512])
    rust, go = b'{"registered_proof":"', b'{"comm_d":['
    if head.startswith(rust):
        order, i = KeyOrder.RUST, len(rust)
    elif head.startswith(go):
        key = b'],"registered_proof":"'
        j = head.find(key)
        if j < 0:
            return None
        order, i = KeyOrder.GO, j + len(key)
    else:
        return None
    k = head.find(b'"', i)
    if k < 0:
        return None
    try:
        return proof_type(head[i:k].decode("ascii")), order
    except (UnicodeDecodeError, ValueError):
        return None


# =============================================================================================== scanning


def _scan(buf: np.ndarray, layout: Layout) -> np.ndarray:
    """Integers of a document in layout order (uint32), or _Mismatch / C1FormatError."""
    template = np.frombuffer(layout.template, dtype=np.uint8)
    seq = np.empty(layout.slots, dtype=np.uint32)
    n = buf.size
    pos = tpos = nslots = 0
    while pos < n:
        end = min(pos + CHUNK, n)
        steps = 0
        while end < n and _isdigit(buf[end]) and _isdigit(buf[end - 1]):
            end += 1
            steps += 1
            if steps > 32:
                raise _Mismatch(end, None, "integer with more than 32 digits")
        chunk = buf[pos:end]
        isd = (chunk - np.uint8(_ZERO)) < np.uint8(10)
        edges = np.diff(isd.view(np.int8), prepend=np.int8(0), append=np.int8(0))
        starts = np.flatnonzero(edges == 1)
        lengths = np.flatnonzero(edges == -1) - starts
        del edges
        k = starts.size
        if nslots + k > layout.slots:
            extra = layout.slots - nslots
            raise _Mismatch(pos + int(starts[extra]), layout.slots, "more integers than this proof type has")
        # Structure: the chunk with each digit run collapsed to one '0' must equal the template here.
        keep = ~isd
        keep[starts] = True
        skel = np.where(isd, np.uint8(_ZERO), chunk)[keep]
        del keep, isd
        tseg = template[tpos : tpos + skel.size]
        if tseg.size != skel.size or not np.array_equal(skel, tseg):
            m = min(tseg.size, skel.size)
            diff = np.flatnonzero(skel[:m] != tseg[:m])
            j = int(diff[0]) if diff.size else m
            # skeleton index j → input offset: add the digits dropped from the runs before it
            run_skel_pos = starts - (np.cumsum(lengths) - lengths)
            before = int(np.searchsorted(run_skel_pos, j))
            dropped = int(lengths[:before].sum()) - before
            raise _Mismatch(pos + j + dropped, nslots + before, "structure differs from the canonical layout")
        del skel
        # Numbers: canonical decimal (no leading zeros), within u32.
        if k:
            first = chunk[starts]
            bad = np.flatnonzero(((lengths > 1) & (first == _ZERO)) | (lengths > _MAX_VALUE_DIGITS))
            if bad.size:
                i = int(bad[0])
                s = pos + int(starts[i])
                text = bytes(buf[s : s + min(int(lengths[i]), 24)]).decode()
                why = "leading zeros are not JSON" if lengths[i] <= _MAX_VALUE_DIGITS else "out of range"
                raise C1FormatError(
                    f"integer {text!r}: {why}", path=layout.path_of_slot(nslots + i), offset=s
                )
            v = (first - np.uint8(_ZERO)).astype(np.uint64)
            maxlen = int(lengths.max())
            for d in range(1, min(maxlen, 3)):
                digit = chunk[np.minimum(starts + d, chunk.size - 1)] - np.uint8(_ZERO)
                v = np.where(lengths > d, v * np.uint64(10) + digit, v)
            if maxlen > 3:
                big = np.flatnonzero(lengths > 3)
                for d in range(3, maxlen):
                    sel = big[lengths[big] > d]
                    v[sel] = v[sel] * np.uint64(10) + (chunk[starts[sel] + d] - np.uint8(_ZERO))
            over = np.flatnonzero(v > MAX_VALUE)
            if over.size:
                i = int(over[0])
                raise C1FormatError(
                    f"integer {int(v[i])} out of range",
                    path=layout.path_of_slot(nslots + i),
                    offset=pos + int(starts[i]),
                )
            seq[nslots : nslots + k] = v
        nslots += k
        tpos += tseg.size
        pos = end
    if nslots != layout.slots or tpos != template.size:
        raise _Mismatch(n, nslots, "document ends early")
    return seq


def _isdigit(b: np.uint8) -> bool:
    return 48 <= int(b) <= 57


# =============================================================================================== rendering


_SMALL = 1000
_LUT_LEN = np.array([len(str(v)) for v in range(_SMALL)], dtype=np.uint8)
_LUT_DIGIT = [
    np.array([str(v).ljust(3, "0").encode()[d] for v in range(_SMALL)], dtype=np.uint8) for d in range(3)
]


def render(layout: Layout, seq: np.ndarray) -> bytes:
    """The canonical document of ``seq`` (integers in layout order).

    Per template chunk: each ``0`` marker is repeated as many times as its integer has digits, then the
    digits are written over the copies (from 0..999 lookup tables; larger integers one by one)."""
    template = np.frombuffer(layout.template, dtype=np.uint8)
    parts = []
    a = 0
    for t0 in range(0, template.size, CHUNK):
        seg = template[t0 : t0 + CHUNK]
        markers = np.flatnonzero(seg == _ZERO)
        k = markers.size
        vals = seq[a : a + k]
        small = vals < _SMALL
        vc = np.where(small, vals, 0).astype(np.intp)
        counts = _LUT_LEN[vc]
        big = np.flatnonzero(~small)
        if big.size:
            counts[big] = [len(str(int(v))) for v in vals[big]]
        reps = np.ones(seg.size, dtype=np.intp)
        reps[markers] = counts
        out = np.repeat(seg, reps)
        first = markers + (np.cumsum(counts, dtype=np.intp) - counts - np.arange(k, dtype=np.intp))
        out[first] = _LUT_DIGIT[0][vc]
        for d in (1, 2):
            # Only the chunk's last integer can reach past the end; clamping makes its write a no-op.
            at = np.minimum(first + d, out.size - 1)
            out[at] = np.where(counts > d, _LUT_DIGIT[d][vc], out[at])
        for i in big:
            text = str(int(vals[i])).encode()
            out[first[i] : first[i] + len(text)] = np.frombuffer(text, dtype=np.uint8)
        parts.append(out.tobytes())
        a += k
    assert a == layout.slots
    return b"".join(parts)


# =============================================================================================== fields


def _view(seq: np.ndarray, piece: Piece) -> np.ndarray:
    shape = tuple(d.count for d in piece.dims)
    strides = tuple(d.stride * seq.itemsize for d in piece.dims)
    return as_strided(seq[piece.offset :], shape=shape, strides=strides, writeable=False)


def _target(piece: Piece) -> tuple[slice, ...]:
    return tuple(slice(d.start, d.start + d.count) for d in piece.dims)


def _fail_at(layout: Layout, name: str, arr: np.ndarray, bad: np.ndarray, message: str) -> None:
    """Raise for the first element where ``bad``; ``message`` may use {got} and {layer} (1-based)."""
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    text = message.format(got=int(arr[idx]), layer=idx[-1] + 1)
    raise C1FormatError(text, path=layout.path_of_element(name, idx))


def gather(layout: Layout, seq: np.ndarray) -> C1Arrays:
    """Field arrays from layout-ordered integers, with every range check a valid C1 satisfies."""
    pt = layout.proof_type
    fields: dict[str, np.ndarray] = {}
    for name, fl in layout.fields.items():
        byte_field = name in layout.byte_fields
        arr = np.empty(fl.shape, dtype=np.uint8 if byte_field else np.int64)
        for p in fl.pieces:
            view = _view(seq, p)
            if byte_field and view.size and int(view.max()) > 255:
                wide = np.zeros(fl.shape, dtype=np.int64)
                wide[_target(p)] = view
                _fail_at(layout, name, wide, wide > 255, "expected a byte (0..255), got {got}")
            arr[_target(p)] = view
        fields[name] = arr
    for name, want in layout.consts.items():
        got = fields.pop(name)
        if not np.array_equal(got, want):
            if name == "vanilla_proofs.key.digits":
                raise C1FormatError(
                    f"expected the single key {pt.vanilla_proofs_key!r} for {pt.name}", path="vanilla_proofs"
                )
            raise C1FormatError(f"expected {pt.name!r}", path="registered_proof")
    for name, bound in layout.bounds.items():
        arr = fields[name]
        if arr.size and int(arr.max()) >= bound:
            what = "a node" if name in ("col.index", "lab.node", "enc.node") else "a path index"
            _fail_at(layout, name, arr, arr >= bound, f"expected {what} < {bound}, got {{got}}")
    lab = fields["lab.layer_index"]
    want = np.arange(1, pt.layers + 1, dtype=np.int64)
    if not np.array_equal(lab, np.broadcast_to(want, lab.shape)):
        _fail_at(layout, "lab.layer_index", lab, lab != want, "expected layer_index {layer}, got {got}")
    enc = fields["enc.layer_index"]
    if np.any(enc != pt.layers):
        _fail_at(
            layout, "enc.layer_index", enc, enc != pt.layers, f"expected layer_index {pt.layers}, got {{got}}"
        )
    for arr in fields.values():
        arr.flags.writeable = False
    return C1Arrays(pt, fields)


def scatter(layout: Layout, arrays: C1Arrays) -> np.ndarray:
    """Layout-ordered integers from field arrays (shapes and dtypes checked)."""
    seq = np.zeros(layout.slots, dtype=np.uint32)
    for name, fl in layout.fields.items():
        if name in layout.consts:
            arr = layout.consts[name]
        else:
            if name not in arrays.fields:
                raise C1FormatError(f"C1Arrays has no field {name!r}")
            arr = np.asarray(arrays.fields[name])
            if arr.shape != fl.shape:
                raise C1FormatError(f"field {name!r} has shape {arr.shape}, expected {fl.shape}")
            if arr.dtype.kind not in "ui":
                raise C1FormatError(f"field {name!r} has dtype {arr.dtype}, expected integers")
            if arr.size and (int(arr.min()) < 0 or int(arr.max()) > MAX_VALUE):
                raise C1FormatError(f"field {name!r} has values outside 0..2^32-1")
        for p in fl.pieces:
            view = as_strided(
                seq[p.offset :],
                shape=tuple(d.count for d in p.dims),
                strides=tuple(d.stride * seq.itemsize for d in p.dims),
                writeable=True,
            )
            view[...] = arr[_target(p)]
    extra = set(arrays.fields) - set(layout.fields)
    if extra:
        raise C1FormatError(
            f"C1Arrays has fields {sorted(extra)} that a {layout.proof_type.name} C1 does not"
        )
    return seq


# =============================================================================================== slow path


class _Pairs(list):
    """A JSON object as its (key, value) pairs in input order, so duplicates and order stay visible."""


class _Huge:
    def __init__(self, text: str):
        self.text = text


def _parse_int(text: str) -> int | _Huge:
    return int(text) if len(text) <= 24 else _Huge(text)


class _Constant:
    """NaN / Infinity / -Infinity: Python's json reads them, JSON (and serde_json) does not."""

    def __init__(self, text: str):
        self.text = text


def _describe(value: Any) -> str:
    if isinstance(value, _Pairs):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, _Huge):
        return f"an integer of {len(value.text)} digits"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, _Constant):
        return f"{value.text} (not JSON)"
    return repr(value)[:40]


def _slow_parse(data: bytes, buf: np.ndarray, forced: ProofType | None) -> tuple[Layout, np.ndarray]:
    """json.loads + a walk with serde's rules; raises C1FormatError at the first problem, with its path.

    serde_json + serde's derive accept, and so do we: any whitespace, object keys in any order, unknown keys
    (ignored), string escapes. They refuse, and so do we: duplicate fields, missing fields, NaN/Infinity,
    invalid UTF-8, a byte-order mark, trailing data, nesting of 128 levels. Value rules stay ours and
    strict (types, lengths, ranges). Not accepted although serde would: a struct written as a JSON array of
    its fields, a unit variant written as ``{"Name":null}`` — no C1 producer writes those."""
    bad = np.flatnonzero((buf < 32) & (buf != 9) & (buf != 10) & (buf != 13))
    if bad.size:
        i = int(bad[0])
        raise C1FormatError(f"byte 0x{int(buf[i]):02x}: control characters are not JSON", offset=i)
    if jsontext.nesting(buf) > jsontext.MAX_NESTING:
        raise C1FormatError(
            f"JSON nested deeper than {jsontext.MAX_NESTING} levels (serde_json's limit; a C1 nests 17)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise C1FormatError(f"not UTF-8: {exc.reason}", offset=exc.start) from None
    try:
        constants: list[_Constant] = []

        def constant(name: str) -> _Constant:
            constants.append(_Constant(name))
            return constants[-1]

        doc = json.loads(text, object_pairs_hook=_Pairs, parse_int=_parse_int, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise C1FormatError(f"invalid JSON: {exc.msg}", offset=len(text[: exc.pos].encode())) from None
    except RecursionError:  # pragma: no cover - the nesting check comes first
        raise C1FormatError("JSON nested too deeply") from None
    if not isinstance(doc, _Pairs):
        raise C1FormatError(f"expected a JSON object, got {_describe(doc)}")
    top = _members(doc, TOP_KEYS[KeyOrder.RUST], "", require=False)  # the walk reports missing keys
    if "registered_proof" not in top:
        raise C1FormatError("missing key 'registered_proof'")
    name = top["registered_proof"]
    if not isinstance(name, str):
        raise C1FormatError(f"expected a proof type name, got {_describe(name)}", path="registered_proof")
    try:
        pt = proof_type(name)
    except ValueError:
        raise C1FormatError(f"unknown RegisteredSealProof {name[:60]!r}", path="registered_proof") from None
    if forced is not None:
        if forced.proof != pt.proof:
            raise C1FormatError(f"expected {forced.name!r}", path="registered_proof")
        pt = forced
    known = tuple(k for k, _ in doc if k in TOP_KEYS[KeyOrder.GO])
    order = KeyOrder.GO if known == TOP_KEYS[KeyOrder.GO] else KeyOrder.RUST
    layout = layout_for(pt, order)
    seq = np.zeros(layout.slots, dtype=np.uint32)
    _Walker(seq).walk(layout.spec, doc, "", 0)
    if constants:  # only in ignored members, or the walk would have named it
        raise C1FormatError(f"{constants[0].text} is not JSON (serde_json refuses it, even in unknown keys)")
    return layout, seq


def _members(value: _Pairs, want: tuple[str, ...], path: str, *, require: bool = True) -> dict[str, Any]:
    """The wanted members of a struct, as serde's derive reads them: any order, unknown keys ignored,
    a wanted key twice refused, a missing one refused."""
    got: dict[str, Any] = {}
    wanted = set(want)
    for k, v in value:
        if k in wanted:
            if k in got:
                raise C1FormatError(f"duplicate key {k!r}", path=path or None)
            got[k] = v
    for k in want:
        if k not in got and require:
            raise C1FormatError(f"missing key {k!r}", path=path or None)
    return got


_NOUNS = {
    "byte": "bytes",
    "p": "partitions",
    "c": "challenges",
    "col": "column proofs",
    "layer": "entries (one per layer)",
    "level": "path elements",
    "sib": "sibling hashes",
    "parent": "parents",
}


class _Walker:
    def __init__(self, seq: np.ndarray):
        self.seq = seq
        self._slots: dict[int, int] = {}

    def slots(self, node: Node) -> int:
        key = id(node)
        if key not in self._slots:
            if isinstance(node, Slot):
                n = 1
            elif isinstance(node, Lit):
                n = 0
            elif isinstance(node, Name):
                n = len(re.findall(r"\d+", node.text))
            elif isinstance(node, At):
                n = self.slots(node.node)
            elif isinstance(node, Arr):
                n = node.count * self.slots(node.item)
            else:
                n = sum((self.slots(k) if isinstance(k, Name) else 0) + self.slots(v) for k, v in node.items)
            self._slots[key] = n
        return self._slots[key]

    def walk(self, node: Node, value: Any, path: str, pos: int) -> None:
        if isinstance(node, Slot):
            self.integer(value, path, pos)
        elif isinstance(node, Lit):
            if value is not None:
                raise C1FormatError(f"expected null, got {_describe(value)}", path=path)
        elif isinstance(node, Name):
            if value != node.text:
                raise C1FormatError(f"expected {node.text!r}, got {_describe(value)}", path=path)
            self.name_digits(node, pos)
        elif isinstance(node, At):
            self.walk(node.node, value, path, pos)
        elif isinstance(node, Arr):
            self.array(node, value, path, pos)
        else:
            self.obj(node, value, path, pos)

    def name_digits(self, node: Name, pos: int) -> None:
        runs = [int(r) for r in re.findall(r"\d+", node.text)]
        self.seq[pos : pos + len(runs)] = runs

    def integer(self, value: Any, path: str, pos: int) -> None:
        if type(value) is not int:
            raise C1FormatError(f"expected an integer, got {_describe(value)}", path=path)
        if not 0 <= value <= MAX_VALUE:
            raise C1FormatError(f"integer {value} out of range", path=path)
        self.seq[pos] = value

    def array(self, node: Arr, value: Any, path: str, pos: int) -> None:
        is_domain = isinstance(node.item, Slot) and node.axis == "byte"
        if not isinstance(value, list) or isinstance(value, _Pairs):
            what = "an array of 32 bytes" if is_domain else f"an array of {node.count}"
            raise C1FormatError(f"expected {what}, got {_describe(value)}", path=path)
        if len(value) != node.count:
            noun = _NOUNS.get(node.axis, "elements")
            raise C1FormatError(f"expected {node.count} {noun}, got {len(value)}", path=path)
        if is_domain:
            if all(type(v) is int for v in value) and min(value) >= 0 and max(value) <= 255:
                self.seq[pos : pos + 32] = value
                return
            for i, v in enumerate(value):
                if type(v) is not int or not 0 <= v <= 255:
                    raise C1FormatError(f"expected a byte (0..255), got {_describe(v)}", path=f"{path}[{i}]")
        step = self.slots(node.item)
        for i, v in enumerate(value):
            self.walk(node.item, v, f"{path}[{i}]", pos + i * step)

    def obj(self, node: Obj, value: Any, path: str, pos: int) -> None:
        if not isinstance(value, _Pairs):
            raise C1FormatError(f"expected an object, got {_describe(value)}", path=path or None)
        want = tuple(k.text if isinstance(k, Name) else k for k, _ in node.items)
        if node.enum:
            keys = [k for k, _ in value]
            if len(keys) != 1 or keys[0] != want[0]:
                got = ", ".join(repr(k[:40]) for k in keys) or "no key"
                raise C1FormatError(f"expected the single key {want[0]!r}, got {got}", path=path)
        members = _members(value, want, path)
        for (key, child), name in zip(node.items, want, strict=True):
            if isinstance(key, Name):
                self.name_digits(key, pos)
                pos += self.slots(key)
            self.walk(child, members[name], f"{path}.{name}" if path else name, pos)
            pos += self.slots(child)


# =============================================================================================== API


def as_bytes(data: bytes | bytearray | memoryview | str) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"a C1 is bytes or str, not {type(data).__name__}")


@dataclass(frozen=True)
class Decoded:
    """A parsed C1: its arrays, the key order it is in (or closest to), and whether its bytes are exactly
    the canonical encoding in that order (compact serde_json for Rust's order, Go's re-marshalling for
    Curio's), i.e. whether ``encode(arrays, order)`` gives them back."""

    arrays: C1Arrays
    order: KeyOrder
    canonical: bool


def _fast(raw: bytes, buf: np.ndarray, proof: ProofType | None) -> Decoded | _Mismatch | None:
    """The template path: a Decoded, a structural mismatch, or None when the start is not a C1's.

    Raises C1FormatError for a canonical structure holding bad values (they cannot be fixed by reading
    the document another way)."""
    found = detect(raw)
    if proof is not None and found is not None:
        found = (proof, found[1]) if found[0].proof == proof.proof else None
    if found is None:
        return None
    layout = layout_for(*found)
    if len(raw) > layout.max_len:
        reason = f"longer than any valid {found[0].name} C1 ({layout.max_len} bytes)"
        mismatch = _Mismatch(len(raw), None, reason, too_long=True)
    else:
        try:
            return Decoded(gather(layout, _scan(buf, layout)), layout.order, True)
        except _Mismatch as exc:
            mismatch = exc
    mismatch.layout = layout
    return mismatch


def decode_document(
    data: bytes | bytearray | memoryview | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    proof: ProofType | None = None,
) -> Decoded:
    """Parse a C1 in any JSON formatting serde_json accepts (see :func:`_slow_parse`); values strictly.

    Canonical bytes take the template path (~1.5 s at 32GiB); whitespace alone is stripped in numpy and
    then takes it too; anything else (other key orders, unknown keys, escapes) goes through ``json.loads``
    up to SLOW_PATH_MAX_BYTES. ``proof`` forces a geometry (tests use small Sub/Top shapes)."""
    raw = as_bytes(data)
    if len(raw) > max_bytes:
        raise C1FormatError(f"C1 of {len(raw)} bytes exceeds the limit of {max_bytes}")
    buf = np.frombuffer(raw, dtype=np.uint8)
    trimmed = raw.strip(b" \t\r\n")
    if len(trimmed) < len(raw):  # a trailing newline, say: try the trimmed bytes before anything else
        found = _fast(trimmed, np.frombuffer(trimmed, dtype=np.uint8), proof)
        if isinstance(found, Decoded):
            return Decoded(found.arrays, found.order, False)
    first = _fast(raw, buf, proof)
    if isinstance(first, Decoded):
        return first
    src, src_buf, result = raw, buf, first
    stripped = jsontext.strip_whitespace(buf) if buf.size else None
    if stripped is not None and stripped.size < buf.size:
        compact = stripped.tobytes()
        second = _fast(compact, stripped, proof)
        if isinstance(second, Decoded):
            return Decoded(second.arrays, second.order, False)
        if second is not None:
            result = second
        if len(raw) > SLOW_PATH_MAX_BYTES:
            src, src_buf = compact, stripped
    if isinstance(result, _Mismatch) and result.too_long:
        raise C1FormatError(f"C1 of {result.offset} bytes without whitespace is {result.reason}")
    if len(src) > SLOW_PATH_MAX_BYTES:
        if result is None:
            raise C1FormatError(
                'not a C1: expected \'{"registered_proof":"<known type>"\' (Rust) '
                "or '{\"comm_d\":[' (Go) at the start (beyond "
                f"{SLOW_PATH_MAX_BYTES >> 20} MiB only whitespace may differ from the canonical encoding)",
                offset=0,
            )
        layout = result.layout
        slot = result.slot
        path = layout.path_of_slot(slot) if layout and slot is not None and slot < layout.slots else None
        offset = result.offset if src is raw else None
        raise C1FormatError(
            f"{result.reason} (near this value; beyond {SLOW_PATH_MAX_BYTES >> 20} MiB only whitespace may "
            "differ from the canonical encoding)",
            path=path,
            offset=offset,
        )
    layout, seq = _slow_parse(src, src_buf, proof)
    arrays = gather(layout, seq)
    return Decoded(arrays, layout.order, render(layout, seq) == raw)


def decode(
    data: bytes | bytearray | memoryview | str,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    proof: ProofType | None = None,
    canonical: bool = False,
) -> tuple[C1Arrays, KeyOrder]:
    """Parse a C1 into field arrays and its key order; ``canonical=True`` also demands the exact bytes of
    the canonical encoding (the error then says where the input first differs)."""
    doc = decode_document(data, max_bytes=max_bytes, proof=proof)
    if canonical and not doc.canonical:
        report_noncanonical(doc, as_bytes(data))
    return doc.arrays, doc.order


def report_noncanonical(doc: Decoded, raw: bytes) -> None:
    """Raise a C1FormatError naming the first byte where ``raw`` differs from the canonical encoding."""
    layout = layout_for(doc.arrays.proof_type, doc.order)
    canonical = render(layout, scatter(layout, doc.arrays))
    m = min(len(raw), len(canonical))
    a = np.frombuffer(raw[:m], dtype=np.uint8)
    b = np.frombuffer(canonical[:m], dtype=np.uint8)
    diff = np.flatnonzero(a != b)
    off = int(diff[0]) if diff.size else m
    prefix = np.frombuffer(canonical[:off], dtype=np.uint8)
    isd = (prefix - np.uint8(_ZERO)) < np.uint8(10)
    runs = int(np.count_nonzero(isd[1:] & ~isd[:-1]) + (1 if isd.size and isd[0] else 0)) if isd.size else 0
    path = layout.path_of_slot(max(runs - 1, 0)) if runs else None
    raise C1FormatError(
        f"not in the canonical (byte-exact) {layout.order.value} encoding: after this value found "
        f"{raw[off : off + 16]!r} where the canonical document has {canonical[off : off + 16]!r}",
        path=path,
        offset=off,
    )


def encode(arrays: C1Arrays, order: KeyOrder = KeyOrder.RUST) -> bytes:
    """The canonical C1 document of ``arrays`` in ``order`` (validating shapes and ranges first)."""
    layout = layout_for(arrays.proof_type, KeyOrder(order))
    seq = scatter(layout, arrays)
    gather(layout, seq)  # the same range checks a parsed document passes
    return render(layout, seq)


def encode_unchecked(arrays: C1Arrays, order: KeyOrder) -> bytes:
    """:func:`encode` for arrays that came out of :func:`decode` or :func:`encode` (already validated)."""
    layout = layout_for(arrays.proof_type, KeyOrder(order))
    return render(layout, scatter(layout, arrays))
