"""Typed (pydantic) models of ``SealCommitPhase1Output`` and everything inside it.

Field names and nesting follow the Rust structs (docs porep.md §1.2–1.6), with two simplifications that
the JSON codec undoes: a merkle proof is one of :class:`SingleProof` / :class:`SubProof` /
:class:`TopProof` directly (the JSON wraps it as ``{"data":{"Single":{…}}}`` and each path as
``{"path":[…]}``), and ``Column._h`` (always ``null``) is not a field. ``vanilla_proofs`` is indexed
``[partition][challenge]``; its JSON key (``StackedDrg32GiBV1`` …) follows from ``registered_proof``.

Every 32-byte value (``Domain``) is plain ``bytes`` of length 32: a Poseidon domain is the little-endian
canonical Fr repr, a SHA-256 domain the raw digest. Models are frozen. Building a
:class:`SealCommitPhase1Output` validates it completely against its proof type (shapes, arities, path
lengths, ranges), with errors naming the JSON path. Parsing goes through the fast codec instead and builds
only the header: every consumer (vanilla verification, the circuit's witness) reads the bulk arrays, so
the ~50k-object ``vanilla_proofs`` tree of a 32GiB C1 is built on first access and kept.

Write C1 JSON with :meth:`SealCommitPhase1Output.to_json` only: pydantic's own ``model_dump_json`` knows
nothing of the ``data``/``path`` wrappers, ``_h`` or the key orders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    Strict,
    model_validator,
)

from porep.c1 import codec
from porep.c1.arrays import C1Arrays
from porep.c1.errors import C1FormatError
from porep.c1.layout import COLUMNS_PER_CHALLENGE, KeyOrder, layout_for
from porep.prooftypes import DRG_DEGREE, EXP_DEGREE, TOTAL_PARENTS, ProofType, RegisteredSealProof, proof_type

U32_MAX = (1 << 32) - 1
U64_MAX = (1 << 64) - 1


# =============================================================================================== domains


def _to_domain(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    elif isinstance(value, np.ndarray) and value.dtype == np.uint8:
        b = value.tobytes()
    else:
        raise ValueError(f"expected 32 bytes, got {type(value).__name__}")
    if len(b) != 32:
        raise ValueError(f"expected 32 bytes, got {len(b)}")
    return b


Domain = Annotated[bytes, PlainValidator(_to_domain)]
"""A 32-byte hash-domain value (Fr repr little-endian, or a SHA-256 digest)."""
U32 = Annotated[int, Strict(), Field(ge=0, le=U32_MAX)]
U64 = Annotated[int, Strict(), Field(ge=0, le=U64_MAX)]


def domain_to_int(value: bytes) -> int:
    """A domain as the integer it encodes (little-endian), e.g. an Fr element."""
    return int.from_bytes(value, "little")


def int_to_domain(value: int) -> bytes:
    """The 32-byte little-endian repr of ``0 <= value < 2^256``."""
    return int(value).to_bytes(32, "little")


def domains_array(values: Sequence[bytes]) -> np.ndarray:
    """``uint8[len(values), 32]`` of a sequence of domains (a copy)."""
    return np.frombuffer(b"".join(values), dtype=np.uint8).reshape(len(values), 32).copy()


def _to_proof_enum(value: Any) -> RegisteredSealProof:
    if isinstance(value, RegisteredSealProof):
        return value
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return proof_type(value).proof
    raise ValueError(f"expected a RegisteredSealProof name or id, got {type(value).__name__}")


RegisteredProof = Annotated[
    RegisteredSealProof, PlainValidator(_to_proof_enum), PlainSerializer(lambda p: p.name, return_type=str)
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# =============================================================================================== merkle


class PathElement(_Model):
    """One tree level: the ``arity - 1`` siblings (left to right, without the node on the path) and the
    position ``index`` at which the running hash goes back in."""

    hashes: tuple[Domain, ...]
    index: U64


def _fold(levels: Iterable[Sequence[PathElement]]) -> int:
    acc, span = 0, 1
    for path in levels:
        for element in path:
            acc += element.index * span
            span *= len(element.hashes) + 1
    return acc


class SingleProof(_Model):
    """A proof in one tree (tree D always; tree C/R_last for 2KiB, 8MiB, 512MiB)."""

    variant: ClassVar[str] = "Single"
    root: Domain
    leaf: Domain
    path: tuple[PathElement, ...]

    @property
    def leaf_index(self) -> int:
        """The challenged leaf (``MerkleProof::path_index``)."""
        return _fold([self.path])


class SubProof(_Model):
    """A proof through one base tree and the sub level joining them (32GiB: 8 base trees, arity 8)."""

    variant: ClassVar[str] = "Sub"
    base_proof: tuple[PathElement, ...]
    sub_proof: tuple[PathElement, ...]
    root: Domain
    leaf: Domain

    @property
    def leaf_index(self) -> int:
        return _fold([self.base_proof, self.sub_proof])


class TopProof(_Model):
    """A proof with base, sub and top levels (64GiB: 16 base trees, 8-8-2)."""

    variant: ClassVar[str] = "Top"
    base_proof: tuple[PathElement, ...]
    sub_proof: tuple[PathElement, ...]
    top_proof: tuple[PathElement, ...]
    root: Domain
    leaf: Domain

    @property
    def leaf_index(self) -> int:
        return _fold([self.base_proof, self.sub_proof, self.top_proof])


MerkleProof = SingleProof | SubProof | TopProof


# =============================================================================================== porep


class Column(_Model):
    """The labels of node ``index`` in every layer (``rows[l]`` = layer l+1); JSON adds ``"_h":null``."""

    index: U32
    rows: tuple[Domain, ...]

    def rows_array(self) -> np.ndarray:
        return domains_array(self.rows)


class ColumnProof(_Model):
    column: Column
    inclusion_proof: MerkleProof


class ReplicaColumnProof(_Model):
    """Columns of the challenged node (``c_x``), of its 6 DRG parents and of its 8 expander parents."""

    c_x: ColumnProof
    drg_parents: tuple[ColumnProof, ...]
    exp_parents: tuple[ColumnProof, ...]

    def all(self) -> tuple[ColumnProof, ...]:
        """The 15 column proofs in the order of ``C1Arrays['col.*']``: c_x, drg_parents, exp_parents."""
        return (self.c_x, *self.drg_parents, *self.exp_parents)


class LabelingProof(_Model):
    """The 37 parent labels hashed into the label of ``node`` in layer ``layer_index`` (1-based)."""

    parents: tuple[Domain, ...]
    layer_index: U32
    node: U64

    def parents_array(self) -> np.ndarray:
        return domains_array(self.parents)


class EncodingProof(_Model):
    """Same content as the last layer's labeling proof; proves the replica node = data + key."""

    parents: tuple[Domain, ...]
    layer_index: U32
    node: U64

    def parents_array(self) -> np.ndarray:
        return domains_array(self.parents)


class Proof(_Model):
    """The vanilla proof of one challenge (``stacked::Proof``)."""

    comm_d_proofs: SingleProof
    comm_r_last_proof: MerkleProof
    replica_column_proofs: ReplicaColumnProof
    labeling_proofs: tuple[LabelingProof, ...]
    encoding_proof: EncodingProof


class SealCommitPhase1Output(_Model):
    """The C1 output: everything C2 needs to prove one sector.

    Parse with :meth:`from_json` (any formatting serde_json accepts, values strictly; remembers the key
    order and whether the bytes were canonical) and write with :meth:`to_json` (canonical, in the
    remembered order unless one is given). :attr:`arrays` is the bulk numpy form; ``vanilla_proofs`` of a
    parsed C1 is built from it when first read.
    """

    registered_proof: RegisteredProof
    vanilla_proofs: tuple[tuple[Proof, ...], ...]
    comm_r: Domain
    comm_d: Domain
    replica_id: Domain
    seed: Domain
    ticket: Domain

    _arrays: C1Arrays | None = PrivateAttr(default=None)
    _key_order: KeyOrder = PrivateAttr(default=KeyOrder.RUST)
    _canonical: bool = PrivateAttr(default=True)

    @model_validator(mode="after")
    def _validate_against_proof_type(self) -> SealCommitPhase1Output:
        arrays = models_to_arrays(self)  # raises C1FormatError (a ValueError) naming the path
        layout = layout_for(arrays.proof_type, KeyOrder.RUST)
        self._arrays = codec.gather(layout, codec.scatter(layout, arrays))  # range checks
        return self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SealCommitPhase1Output):
            return NotImplemented
        return self.arrays.same_as(other.arrays)

    __hash__ = None  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:
        """``vanilla_proofs`` of a parsed C1 is built from its arrays on first access (then kept)."""
        if name == "vanilla_proofs":
            tree = vanilla_tree(self.arrays)
            self.__dict__["vanilla_proofs"] = tree  # frozen: bypass __setattr__, the value is derived
            self.__pydantic_fields_set__.add("vanilla_proofs")
            return tree
        return super().__getattr__(name)  # type: ignore[misc]

    # ------------------------------------------------------------------ accessors

    @property
    def proof_type(self) -> ProofType:
        return proof_type(self.registered_proof)

    @property
    def key_order(self) -> KeyOrder:
        """The key order this C1 was parsed in (RUST for models built in Python)."""
        return self._key_order

    @property
    def canonical(self) -> bool:
        """Whether this C1 was parsed from exactly its canonical bytes (``to_json()`` gives them back);
        True for models built in Python."""
        return self._canonical

    @property
    def arrays(self) -> C1Arrays:
        """All values as numpy arrays by field (see :mod:`porep.c1.arrays`); read-only."""
        if self._arrays is None:  # pragma: no cover - always set by the validator or the parser
            self._arrays = models_to_arrays(self)
        return self._arrays

    def proofs(self) -> Iterable[tuple[int, int, Proof]]:
        """(partition, challenge index, proof) for every vanilla proof, in document order."""
        for k, partition in enumerate(self.vanilla_proofs):
            for i, proof in enumerate(partition):
                yield k, i, proof

    # ------------------------------------------------------------------ JSON

    @classmethod
    def from_json(
        cls,
        data: bytes | bytearray | memoryview | str,
        *,
        max_bytes: int = codec.DEFAULT_MAX_BYTES,
        canonical: bool = False,
    ) -> SealCommitPhase1Output:
        """Parse a C1 (raises :class:`C1FormatError`); ``canonical=True`` also demands the canonical bytes.

        :attr:`canonical` says whether ``to_json()`` gives the input bytes back."""
        doc = codec.decode_document(data, max_bytes=max_bytes)
        if canonical and not doc.canonical:
            codec.report_noncanonical(doc, codec.as_bytes(data))
        c1 = cls.from_arrays(doc.arrays, key_order=doc.order, validated=True)
        c1._canonical = doc.canonical
        return c1

    def to_json(self, order: KeyOrder | str | None = None) -> bytes:
        """The canonical document: compact, in ``order`` (default: the order it was parsed in)."""
        return codec.encode_unchecked(self.arrays, KeyOrder(order) if order is not None else self._key_order)

    @classmethod
    def from_arrays(
        cls, arrays: C1Arrays, *, key_order: KeyOrder | str = KeyOrder.RUST, validated: bool = False
    ) -> SealCommitPhase1Output:
        """The model of bulk arrays (``vanilla_proofs`` built on first access); ``validated=True`` only for
        arrays straight from :func:`codec.decode`."""
        if not validated:
            layout = layout_for(arrays.proof_type, KeyOrder.RUST)
            arrays = codec.gather(layout, codec.scatter(layout, arrays))
        c1 = SealCommitPhase1Output.model_construct(
            registered_proof=arrays.proof_type.proof,
            comm_r=arrays.domain("comm_r"),
            comm_d=arrays.domain("comm_d"),
            replica_id=arrays.domain("replica_id"),
            seed=arrays.domain("seed"),
            ticket=arrays.domain("ticket"),
        )
        c1._arrays = arrays
        c1._key_order = KeyOrder(key_order)
        return c1


# ============================================================================================ arrays → models


class _Domains:
    """Hands out the 32-byte values of one byte field in C order."""

    def __init__(self, arr: np.ndarray):
        raw = arr.tobytes()
        self._all = [raw[i : i + 32] for i in range(0, len(raw), 32)]
        self._pos = 0

    def take(self, n: int) -> tuple[bytes, ...]:
        p = self._pos
        self._pos = p + n
        return tuple(self._all[p : p + n])

    def one(self) -> bytes:
        p = self._pos
        self._pos = p + 1
        return self._all[p]


def _merkle_builder(arrays: C1Arrays, prefix: str, variant: str) -> Callable[[], MerkleProof]:
    f = arrays.fields
    root, leaf = _Domains(f[f"{prefix}.root"]), _Domains(f[f"{prefix}.leaf"])
    parts = [p for p in ("base", "sub", "top") if f"{prefix}.{p}.index" in f]
    hashes = {p: _Domains(f[f"{prefix}.{p}.hashes"]) for p in parts}
    index = {p: iter(f[f"{prefix}.{p}.index"].reshape(-1).tolist()) for p in parts}
    shape = {p: f[f"{prefix}.{p}.hashes"].shape[-3:-1] for p in parts}  # (levels, siblings)
    construct = PathElement.model_construct

    def path(p: str) -> tuple[PathElement, ...]:
        levels, sibs = shape[p]
        h, ix = hashes[p], index[p]
        return tuple(construct(hashes=h.take(sibs), index=next(ix)) for _ in range(levels))

    if variant == "Single":
        return lambda: SingleProof.model_construct(path=path("base"), root=root.one(), leaf=leaf.one())
    if variant == "Sub":
        return lambda: SubProof.model_construct(
            base_proof=path("base"), sub_proof=path("sub"), root=root.one(), leaf=leaf.one()
        )
    return lambda: TopProof.model_construct(
        base_proof=path("base"),
        sub_proof=path("sub"),
        top_proof=path("top"),
        root=root.one(),
        leaf=leaf.one(),
    )


def vanilla_tree(arrays: C1Arrays) -> tuple[tuple[Proof, ...], ...]:
    """``vanilla_proofs`` ([partition][challenge]) of validated arrays, as model objects."""
    pt = arrays.proof_type
    f = arrays.fields
    L = pt.layers
    d_merkle = _merkle_builder(arrays, "d", "Single")
    r_merkle = _merkle_builder(arrays, "r", pt.tree.variant)
    col_merkle = _merkle_builder(arrays, "col", pt.tree.variant)
    rows = _Domains(f["col.rows"])
    col_index = iter(f["col.index"].reshape(-1).tolist())
    lab_parents, enc_parents = _Domains(f["lab.parents"]), _Domains(f["enc.parents"])
    lab_layer, lab_node = (
        iter(f["lab.layer_index"].reshape(-1).tolist()),
        iter(f["lab.node"].reshape(-1).tolist()),
    )
    enc_layer, enc_node = (
        iter(f["enc.layer_index"].reshape(-1).tolist()),
        iter(f["enc.node"].reshape(-1).tolist()),
    )

    def column_proof() -> ColumnProof:
        column = Column.model_construct(index=next(col_index), rows=rows.take(L))
        return ColumnProof.model_construct(column=column, inclusion_proof=col_merkle())

    def proof() -> Proof:
        d = d_merkle()
        r = r_merkle()
        cols = [column_proof() for _ in range(COLUMNS_PER_CHALLENGE)]
        replica = ReplicaColumnProof.model_construct(
            c_x=cols[0],
            drg_parents=tuple(cols[1 : 1 + DRG_DEGREE]),
            exp_parents=tuple(cols[1 + DRG_DEGREE :]),
        )
        labeling = tuple(
            LabelingProof.model_construct(
                parents=lab_parents.take(TOTAL_PARENTS), layer_index=next(lab_layer), node=next(lab_node)
            )
            for _ in range(L)
        )
        encoding = EncodingProof.model_construct(
            parents=enc_parents.take(TOTAL_PARENTS), layer_index=next(enc_layer), node=next(enc_node)
        )
        return Proof.model_construct(
            comm_d_proofs=d,
            comm_r_last_proof=r,
            replica_column_proofs=replica,
            labeling_proofs=labeling,
            encoding_proof=encoding,
        )

    return tuple(tuple(proof() for _ in range(pt.challenges_per_partition)) for _ in range(pt.partitions))


# ============================================================================================ models → arrays


class _Sink:
    """Collects one byte field's domains (in C order) with its path for length errors."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def add(self, values: Sequence[bytes], count: int, path: str) -> None:
        if len(values) != count:
            raise C1FormatError(f"expected {count} elements, got {len(values)}", path=path)
        self.parts.extend(values)

    def array(self, shape: tuple[int, ...]) -> np.ndarray:
        return np.frombuffer(b"".join(self.parts), dtype=np.uint8).reshape(shape).copy()


def models_to_arrays(c1: SealCommitPhase1Output) -> C1Arrays:
    """Bulk arrays of a model tree, checking every length against the proof type (path-named errors)."""
    pt = c1.proof_type
    layout = layout_for(pt, KeyOrder.RUST)
    key = f"vanilla_proofs.{pt.vanilla_proofs_key}"
    if len(c1.vanilla_proofs) != pt.partitions:
        raise C1FormatError(f"expected {pt.partitions} partitions, got {len(c1.vanilla_proofs)}", path=key)
    byte_sinks = {name: _Sink() for name in layout.byte_fields}
    ints: dict[str, list[int]] = {name: [] for name in layout.fields if name not in layout.byte_fields}
    variant = pt.tree.variant
    depths = {"base": pt.base_depth, "sub": pt.sub_depth, "top": pt.top_depth}
    arity = {"base": pt.tree.base, "sub": pt.tree.sub, "top": pt.tree.top}

    def path_levels(
        prefix: str, part: str, elements: Sequence[PathElement], levels: int, ar: int, path: str
    ) -> None:
        if len(elements) != levels:
            raise C1FormatError(f"expected {levels} path elements, got {len(elements)}", path=path)
        for i, e in enumerate(elements):
            byte_sinks[f"{prefix}.{part}.hashes"].add(e.hashes, ar - 1, f"{path}[{i}].hashes")
            ints[f"{prefix}.{part}.index"].append(e.index)

    def merkle(prefix: str, proof: MerkleProof, want: str, path: str) -> None:
        if proof.variant != want:
            raise C1FormatError(
                f"expected a {want} merkle proof for tree shape {pt.tree}, got {proof.variant}", path=path
            )
        inner = f"{path}.data.{want}"
        byte_sinks[f"{prefix}.root"].add((proof.root,), 1, f"{inner}.root")
        byte_sinks[f"{prefix}.leaf"].add((proof.leaf,), 1, f"{inner}.leaf")
        if isinstance(proof, SingleProof):
            levels, ar = (pt.tree_d_depth, 2) if prefix == "d" else (pt.base_depth, pt.tree.base)
            path_levels(prefix, "base", proof.path, levels, ar, f"{inner}.path.path")
            return
        path_levels(
            prefix, "base", proof.base_proof, depths["base"], arity["base"], f"{inner}.base_proof.path"
        )
        path_levels(prefix, "sub", proof.sub_proof, depths["sub"], arity["sub"], f"{inner}.sub_proof.path")
        if isinstance(proof, TopProof):
            path_levels(
                prefix, "top", proof.top_proof, depths["top"], arity["top"], f"{inner}.top_proof.path"
            )

    def column(cp: ColumnProof, path: str) -> None:
        ints["col.index"].append(cp.column.index)
        byte_sinks["col.rows"].add(cp.column.rows, pt.layers, f"{path}.column.rows")
        merkle("col", cp.inclusion_proof, variant, f"{path}.inclusion_proof")

    for k, partition in enumerate(c1.vanilla_proofs):
        if len(partition) != pt.challenges_per_partition:
            raise C1FormatError(
                f"expected {pt.challenges_per_partition} challenges, got {len(partition)}", path=f"{key}[{k}]"
            )
        for i, proof in enumerate(partition):
            path = f"{key}[{k}][{i}]"
            merkle("d", proof.comm_d_proofs, "Single", f"{path}.comm_d_proofs")
            merkle("r", proof.comm_r_last_proof, variant, f"{path}.comm_r_last_proof")
            rcp = proof.replica_column_proofs
            for name, group, n in (
                ("drg_parents", rcp.drg_parents, DRG_DEGREE),
                ("exp_parents", rcp.exp_parents, EXP_DEGREE),
            ):
                if len(group) != n:
                    raise C1FormatError(
                        f"expected {n} column proofs, got {len(group)}",
                        path=f"{path}.replica_column_proofs.{name}",
                    )
            column(rcp.c_x, f"{path}.replica_column_proofs.c_x")
            for j, cp in enumerate(rcp.drg_parents):
                column(cp, f"{path}.replica_column_proofs.drg_parents[{j}]")
            for j, cp in enumerate(rcp.exp_parents):
                column(cp, f"{path}.replica_column_proofs.exp_parents[{j}]")
            if len(proof.labeling_proofs) != pt.layers:
                raise C1FormatError(
                    f"expected {pt.layers} labeling proofs (one per layer), got {len(proof.labeling_proofs)}",
                    path=f"{path}.labeling_proofs",
                )
            for layer, lp in enumerate(proof.labeling_proofs):
                byte_sinks["lab.parents"].add(
                    lp.parents, TOTAL_PARENTS, f"{path}.labeling_proofs[{layer}].parents"
                )
                ints["lab.layer_index"].append(lp.layer_index)
                ints["lab.node"].append(lp.node)
            ep = proof.encoding_proof
            byte_sinks["enc.parents"].add(ep.parents, TOTAL_PARENTS, f"{path}.encoding_proof.parents")
            ints["enc.layer_index"].append(ep.layer_index)
            ints["enc.node"].append(ep.node)
    for name in ("comm_r", "comm_d", "replica_id", "seed", "ticket"):
        byte_sinks[name].add((getattr(c1, name),), 1, name)

    fields: dict[str, np.ndarray] = {}
    for name, fl in layout.fields.items():
        if name in layout.consts:
            continue
        if name in byte_sinks:
            fields[name] = byte_sinks[name].array(fl.shape)
        else:
            values = ints[name]
            for i, v in enumerate(values):
                if v > codec.MAX_VALUE:
                    idx = tuple(int(x) for x in np.unravel_index(i, fl.shape))
                    raise C1FormatError(f"integer {v} out of range", path=layout.path_of_element(name, idx))
            fields[name] = np.array(values, dtype=np.int64).reshape(fl.shape)
    for arr in fields.values():
        arr.flags.writeable = False
    return C1Arrays(pt, fields)
