"""The exact shape of a C1 JSON document for one (proof type, key order), described once and used three ways.

A valid C1 is fully determined by its proof type, its key order and the sequence of integers it holds:
every array length is fixed by the type. So the document is described by a small spec tree (objects,
fixed-length arrays, integer slots, literals) from which we derive

* the *template*: the canonical text with every integer written as ``0`` (a one-character marker);
* for every field (``col.rows``, ``r.base.hashes``, …) its *pieces*: where its integers sit in the
  document-order integer sequence (an offset plus one (count, stride) per array level), so a field is a
  strided view of that sequence, and the JSON path of any element;
* the structure the strict slow-path walker checks a ``json.loads`` result against.

Key orders (docs porep.md §1.2–1.6, §1.10): Rust serde writes struct declaration order. Curio's Go mirror
types (filecoin-project/curio ``lib/proof/porep_vproof_types.go`` and ``lib/proof/merkle.go``, read at
e0294b0f) declare every nested struct in the same field order as Rust; only ``Commit1OutRaw`` differs:
``comm_d, comm_r, registered_proof, replica_id, seed, ticket, vanilla_proofs``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache

import numpy as np

from porep.prooftypes import DRG_DEGREE, EXP_DEGREE, TOTAL_PARENTS, ProofType, proof_type


class KeyOrder(StrEnum):
    """Top-level key order of a C1: as Rust's serde_json writes it, or as Curio's Go structs re-marshal it."""

    RUST = "rust"
    GO = "go"


TOP_KEYS: dict[KeyOrder, tuple[str, ...]] = {
    KeyOrder.RUST: ("registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"),
    KeyOrder.GO: ("comm_d", "comm_r", "registered_proof", "replica_id", "seed", "ticket", "vanilla_proofs"),
}

COLUMNS_PER_CHALLENGE = 1 + DRG_DEGREE + EXP_DEGREE  # c_x, then drg_parents, then exp_parents
MARKER = ord("0")
MAX_DIGITS = 20  # u64::MAX has 20 decimal digits


# ----------------------------------------------------------------------------------------------- spec


@dataclass(frozen=True)
class Lit:
    """Fixed JSON text (``null``)."""

    text: str


@dataclass(frozen=True)
class Slot:
    """One integer of ``field``; ``bound`` is the exclusive upper limit for the fast range check."""

    field: str


@dataclass(frozen=True)
class Obj:
    """An object with these keys (this order when canonical); a :class:`Name` key has its digits as integers.

    ``enum``: a serde externally tagged enum, ``{"Variant": value}`` with exactly one key, not a struct."""

    items: tuple[tuple[str | Name, Node], ...]
    enum: bool = False


@dataclass(frozen=True)
class Arr:
    """``count`` elements of the same shape; adds axis ``axis`` (target index = ``start`` + position)."""

    count: int
    item: Node
    axis: str
    start: int = 0


@dataclass(frozen=True)
class At:
    """Puts ``node`` at index ``index`` of ``axis`` of its fields (``c_x`` is column 0)."""

    axis: str
    index: int
    node: Node


@dataclass(frozen=True)
class Name:
    """A JSON string fixed by the proof type; its decimal digit runs are integers to the tokenizer."""

    text: str
    field: str


Node = Lit | Slot | Obj | Arr | At | Name


def dom(f: str) -> Arr:
    """A 32-byte domain value: a JSON array of 32 integers."""
    return Arr(32, Slot(f), "byte")


# ----------------------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Dim:
    axis: str
    count: int
    stride: int  # in slots; 0 for an At pseudo-dimension
    start: int


@dataclass(frozen=True)
class Piece:
    """Where part of a field lives: element (i_0..i_k) is at slot ``offset + Σ (i_j - start_j)·stride_j``."""

    field: str
    offset: int
    dims: tuple[Dim, ...]
    path: tuple[str | int, ...]  # key components ('.key') and references to dims (int) for '[i]'

    def format_path(self, index: tuple[int, ...]) -> str:
        out = []
        for part in self.path:
            out.append(part if isinstance(part, str) else f"[{index[part]}]")
        return "".join(out).lstrip(".")

    def locate(self, slot: int) -> tuple[int, ...] | None:
        """Document-order indices (per dim, relative to start) of ``slot`` if this piece holds it."""
        r = slot - self.offset
        if r < 0:
            return None
        idx = []
        for d in self.dims:
            if d.stride == 0:
                idx.append(0)
                continue
            i = r // d.stride
            if i >= d.count:
                return None
            r -= i * d.stride
            idx.append(i)
        return tuple(idx) if r == 0 else None


@dataclass
class _Built:
    text: str
    slots: int
    pieces: list[Piece]
    consts: dict[str, list[int]] = field(default_factory=dict)


def _build(node: Node) -> _Built:
    if isinstance(node, Lit):
        return _Built(node.text, 0, [])
    if isinstance(node, Slot):
        return _Built("0", 1, [Piece(node.field, 0, (), ())])
    if isinstance(node, Name):
        runs = [int(m) for m in re.findall(r"\d+", node.text)]
        pieces = [Piece(node.field, i, (Dim("digit", 1, 0, i),), ()) for i in range(len(runs))]
        return _Built('"' + re.sub(r"\d+", "0", node.text) + '"', len(runs), pieces, {node.field: runs})
    if isinstance(node, At):
        inner = _build(node.node)
        pieces = [
            Piece(p.field, p.offset, (Dim(node.axis, 1, 0, node.index),) + p.dims, _shift(p.path))
            for p in inner.pieces
        ]
        return _Built(inner.text, inner.slots, pieces, inner.consts)
    if isinstance(node, Arr):
        inner = _build(node.item)
        dim = Dim(node.axis, node.count, inner.slots, node.start)
        pieces = [Piece(p.field, p.offset, (dim,) + p.dims, (0,) + _shift(p.path)) for p in inner.pieces]
        text = "[" + ",".join([inner.text] * node.count) + "]"
        return _Built(text, inner.slots * node.count, pieces, inner.consts)
    if isinstance(node, Obj):
        texts, pieces, consts, offset = [], [], {}, 0
        for key, child in node.items:
            if isinstance(key, Name):
                k = _build(key)
                pieces += [Piece(p.field, p.offset + offset, p.dims, p.path) for p in k.pieces]
                consts.update(k.consts)
                offset += k.slots
                key_text, key = k.text, key.text
            else:
                key_text = f'"{key}"'
            b = _build(child)
            texts.append(f"{key_text}:{b.text}")
            pieces += [Piece(p.field, p.offset + offset, p.dims, (f".{key}",) + p.path) for p in b.pieces]
            consts.update(b.consts)
            offset += b.slots
        return _Built("{" + ",".join(texts) + "}", offset, pieces, consts)
    raise TypeError(f"not a spec node: {node!r}")


def _shift(path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    return tuple(p + 1 if isinstance(p, int) else p for p in path)


# ----------------------------------------------------------------------------------------------- C1 spec


def merkle_spec(prefix: str, arity: int, depth: int, sub: int, top: int) -> Obj:
    """``MerkleProof`` JSON, ``{"data":{"Single"|"Sub"|"Top":{...}}}``, in SPC merkle/proof.rs field order."""

    def path(part: str, ar: int, levels: int) -> Obj:
        element = Obj(
            (
                ("hashes", Arr(ar - 1, dom(f"{prefix}.{part}.hashes"), "sib")),
                ("index", Slot(f"{prefix}.{part}.index")),
            )
        )
        return Obj((("path", Arr(levels, element, "level")),))

    root, leaf = ("root", dom(f"{prefix}.root")), ("leaf", dom(f"{prefix}.leaf"))
    if sub == 0:
        variant, body = "Single", Obj((root, leaf, ("path", path("base", arity, depth))))
    elif top == 0:
        variant, body = (
            "Sub",
            Obj((("base_proof", path("base", arity, depth)), ("sub_proof", path("sub", sub, 1)), root, leaf)),
        )
    else:
        variant, body = (
            "Top",
            Obj(
                (
                    ("base_proof", path("base", arity, depth)),
                    ("sub_proof", path("sub", sub, 1)),
                    ("top_proof", path("top", top, 1)),
                    root,
                    leaf,
                )
            ),
        )
    return Obj((("data", Obj(((variant, body),), enum=True)),))


def proof_spec(pt: ProofType) -> Obj:
    """One vanilla ``Proof`` (SPP vanilla/params.rs) of proof type ``pt``."""
    t = pt.tree
    L = pt.layers
    column_proof = Obj(
        (
            (
                "column",
                Obj(
                    (
                        ("index", Slot("col.index")),
                        ("rows", Arr(L, dom("col.rows"), "layer")),
                        ("_h", Lit("null")),
                    )
                ),
            ),
            ("inclusion_proof", merkle_spec("col", t.base, pt.base_depth, t.sub, t.top)),
        )
    )

    def parents_proof(prefix: str) -> Obj:
        return Obj(
            (
                ("parents", Arr(TOTAL_PARENTS, dom(f"{prefix}.parents"), "parent")),
                ("layer_index", Slot(f"{prefix}.layer_index")),
                ("node", Slot(f"{prefix}.node")),
            )
        )

    return Obj(
        (
            ("comm_d_proofs", merkle_spec("d", 2, pt.tree_d_depth, 0, 0)),
            ("comm_r_last_proof", merkle_spec("r", t.base, pt.base_depth, t.sub, t.top)),
            (
                "replica_column_proofs",
                Obj(
                    (
                        ("c_x", At("col", 0, column_proof)),
                        ("drg_parents", Arr(DRG_DEGREE, column_proof, "col", start=1)),
                        ("exp_parents", Arr(EXP_DEGREE, column_proof, "col", start=1 + DRG_DEGREE)),
                    )
                ),
            ),
            ("labeling_proofs", Arr(L, parents_proof("lab"), "layer")),
            ("encoding_proof", parents_proof("enc")),
        )
    )


def c1_spec(pt: ProofType, order: KeyOrder) -> Obj:
    vanilla = Obj(
        (
            (
                Name(pt.vanilla_proofs_key, "vanilla_proofs.key.digits"),
                Arr(pt.partitions, Arr(pt.challenges_per_partition, proof_spec(pt), "c"), "p"),
            ),
        ),
        enum=True,
    )
    parts: dict[str, Node] = {
        "registered_proof": Name(pt.name, "registered_proof.digits"),
        "vanilla_proofs": vanilla,
        "comm_r": dom("comm_r"),
        "comm_d": dom("comm_d"),
        "replica_id": dom("replica_id"),
        "seed": dom("seed"),
        "ticket": dom("ticket"),
    }
    return Obj(tuple((k, parts[k]) for k in TOP_KEYS[order]))


# ----------------------------------------------------------------------------------------------- bounds


def field_bounds(pt: ProofType) -> dict[str, int]:
    """Exclusive upper bound of every integer field (exact layer values are checked separately)."""
    t = pt.tree
    bounds = {"d.base.index": 2, "col.index": pt.nodes, "lab.node": pt.nodes, "enc.node": pt.nodes}
    for prefix in ("r", "col"):
        bounds[f"{prefix}.base.index"] = t.base
        if t.sub:
            bounds[f"{prefix}.sub.index"] = t.sub
        if t.top:
            bounds[f"{prefix}.top.index"] = t.top
    return bounds


BYTE_FIELD_SUFFIXES = (".root", ".leaf", ".hashes", ".rows", ".parents")
HEADER_BYTE_FIELDS = ("comm_r", "comm_d", "replica_id", "seed", "ticket")


def is_byte_field(name: str) -> bool:
    return name in HEADER_BYTE_FIELDS or name.endswith(BYTE_FIELD_SUFFIXES)


# ----------------------------------------------------------------------------------------------- Layout


@dataclass(frozen=True)
class FieldLayout:
    name: str
    axes: tuple[str, ...]
    shape: tuple[int, ...]
    pieces: tuple[Piece, ...]


class Layout:
    """Template + field map of one (proof type, key order). Build with :func:`layout_for` (cached)."""

    def __init__(self, pt: ProofType, order: KeyOrder):
        self.proof_type = pt
        self.order = order
        self.spec = c1_spec(pt, order)
        built = _build(self.spec)
        self.template: bytes = built.text.encode("ascii")
        self.slots: int = built.slots
        self.consts: dict[str, np.ndarray] = {
            k: np.array(v, dtype=np.uint64) for k, v in built.consts.items()
        }
        by_field: dict[str, list[Piece]] = {}
        for p in built.pieces:
            by_field.setdefault(p.field, []).append(p)
        self.fields: dict[str, FieldLayout] = {}
        for name, pieces in by_field.items():
            axes = tuple(d.axis for d in pieces[0].dims)
            if any(tuple(d.axis for d in p.dims) != axes for p in pieces):
                raise AssertionError(f"field {name} has inconsistent axes")
            shape = tuple(max(p.dims[k].start + p.dims[k].count for p in pieces) for k in range(len(axes)))
            self.fields[name] = FieldLayout(name, axes, shape, tuple(pieces))
        self.bounds = field_bounds(pt)
        self.byte_fields = tuple(n for n in self.fields if is_byte_field(n))
        self.byte_slots = sum(int(np.prod(self.fields[n].shape)) for n in self.byte_fields)
        self.other_slots = self.slots - self.byte_slots
        # Longest canonical document: every byte written with 3 digits, every other integer with 20.
        self.max_len = len(self.template) + 2 * self.byte_slots + (MAX_DIGITS - 1) * self.other_slots
        if sum(self.template.count(d) for d in b"123456789") or self.template.count(b"0") != self.slots:
            raise AssertionError("template digits must be exactly the slot markers")

    def path_of_slot(self, slot: int) -> str:
        for fl in self.fields.values():
            for p in fl.pieces:
                idx = p.locate(slot)
                if idx is not None:
                    return p.format_path(idx)
        return "<document>"

    def path_of_element(self, name: str, index: tuple[int, ...]) -> str:
        """JSON path of element ``index`` (target coordinates) of field ``name``."""
        for p in self.fields[name].pieces:
            rel = []
            for d, i in zip(p.dims, index, strict=True):
                if not d.start <= i < d.start + d.count:
                    break
                rel.append(i - d.start)
            else:
                return p.format_path(tuple(rel))
        raise KeyError(f"{name}{list(index)} is outside the layout")

    def slot_of_element(self, name: str, index: tuple[int, ...]) -> int:
        for p in self.fields[name].pieces:
            slot = p.offset
            for d, i in zip(p.dims, index, strict=True):
                if not d.start <= i < d.start + d.count:
                    break
                slot += (i - d.start) * d.stride
            else:
                return slot
        raise KeyError(f"{name}{list(index)} is outside the layout")


@lru_cache(maxsize=4)
def _layout_cached(pt: ProofType, order: KeyOrder) -> Layout:
    return Layout(pt, order)


def layout_for(pt: ProofType | int | str, order: KeyOrder | str) -> Layout:
    """The (cached) layout of a proof type in one key order.

    ``pt`` may also be a ProofType with a geometry of its own (e.g. the small 8-8-0 / 8-8-2 shapes that
    tests use to exercise Sub and Top proofs without 40 MB documents)."""
    t = pt if isinstance(pt, ProofType) else proof_type(pt)
    return _layout_cached(t, KeyOrder(order))
