"""Strict vanilla verification of a C1: everything Rust's ``verify_all_partitions`` checks, and what it skips.

Rust (SPP ``vanilla/proof_scheme.rs`` + ``params.rs``, docs porep.md §6) checks comm_r = H2(comm_c,
comm_r_last) per partition, the challenge derivation, path *indices* and roots, column hashes and column
paths, labels recomputed from the labeling proofs' own parents, and key + data = replica. It does not
rehash the tree-D and tree-R_last paths, does not check that the labeling proofs' parents are the
parents' column rows or that their ``node`` is the challenge — the SNARK does (§7), so such a C1 passes
Rust's check and then fails C2 after the GPU time is spent. This module checks all of it, plus value
ranges (every Poseidon value a canonical Fr, every sha254 value with its top two bits clear), the graph
parents of every column, and — given the prover and sector — that replica_id is bound to them.

Every check runs on all challenges at once (numpy, batched Poseidon), so a 32GiB C1 (180 challenges) or an
NI one (2268) costs seconds. A failure names its partition, challenge, node and check:
``partition 0, challenge 1 (node 58): labeling.parents: layer 2, parent 9 (expander parent 3) is not the
label in that parent's column``. Check names are the keys of :data:`CHECKS`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Generic, TypeVar

import numpy as np

from porep import ids
from porep.c1 import C1Arrays, SealCommitPhase1Output, is_canonical_fr
from porep.hashes.merkle import Hasher, bad_positions, hash_domains_batch, roots_from_paths
from porep.hashes.poseidon import R, hash2
from porep.prooftypes import DRG_DEGREE, ProofType
from porep.sdr import challenges
from porep.sdr.graph import graph
from porep.sdr.labels import parent_slots

NODE = 32

CHECKS: dict[str, str] = {
    "header.comm_d": "comm_d is a sha254 value (top two bits clear)",
    "header.comm_r": "comm_r is a canonical Fr element",
    "header.replica_id": "replica_id is canonical and = SHA256(prover ‖ sector ‖ ticket ‖ comm_d ‖ porep_id)",
    "header.expected": "ticket / seed / comm_d / comm_r equal the values the caller expects",
    "commitments": "comm_r = Poseidon2(comm_c, comm_r_last) for the partition's roots",
    "challenges": "the proofs are for the challenges derived from (replica_id, seed[, comm_r])",
    "tree_d.index": "the tree-D path proves the challenged node",
    "tree_d.values": "tree-D leaf and siblings are sha254 values",
    "tree_d.path": "the tree-D path hashes to its root",
    "tree_d.root": "the tree-D root is comm_d",
    "tree_r.index": "the tree-R_last path proves the challenged node",
    "tree_r.values": "tree-R_last leaf and siblings are canonical Fr",
    "tree_r.path": "the tree-R_last path hashes to its root",
    "tree_r.root": "every tree-R_last root is the partition's comm_r_last",
    "columns.index": "c_x is the challenge and the parent columns are the graph's parents of it",
    "columns.values": "column rows, leaves and siblings are canonical Fr",
    "columns.path_index": "each column's tree-C path proves that column's node",
    "columns.leaf": "each column's leaf is the Poseidon hash of its rows",
    "columns.path": "each column's tree-C path hashes to its root",
    "columns.root": "every tree-C root is the partition's comm_c",
    "labeling.layer_index": "labeling proof l is for layer l",
    "labeling.node": "labeling proofs are for the challenged node",
    "labeling.values": "parent labels are sha254 values",
    "labeling.parents": "the 37 parent labels are the labels in the parents' columns",
    "labeling.label": "the label recomputed from the labeling proof is the c_x row of that layer",
    "encoding.layer_index": "the encoding proof is for the last layer",
    "encoding.node": "the encoding proof is for the challenged node",
    "encoding.parents": "the encoding proof's parents are the last layer's parent labels",
    "encoding.key": "the key recomputed from the encoding proof is the last c_x row",
    "encoding.replica": "key + data (tree-D leaf) = replica (tree-R_last leaf) mod r",
}


@dataclass(frozen=True)
class Failure:
    """One failed check; ``partition``/``challenge`` are None for checks of the whole C1 or partition."""

    check: str
    detail: str
    partition: int | None = None
    challenge: int | None = None
    node: int | None = None

    def __str__(self) -> str:
        where = []
        if self.partition is not None:
            where.append(f"partition {self.partition}")
        if self.challenge is not None:
            where.append(
                f"challenge {self.challenge}" + (f" (node {self.node})" if self.node is not None else "")
            )
        prefix = ", ".join(where)
        return f"{prefix + ': ' if prefix else ''}{self.check}: {self.detail}"


class Failures:
    """What every strict check's report (C1, Snap, PoSt) answers: ``ok`` only if no check failed."""

    failures: list[Failure]

    @property
    def ok(self) -> bool:
        return not self.failures

    def checks_failed(self) -> set[str]:
        return {f.check for f in self.failures}


Rep = TypeVar("Rep", bound=Failures)


class CheckError(ValueError, Generic[Rep]):
    """A strict check failed: the report, and a message listing its first failures."""

    def __init__(self, report: Rep):
        self.report = report
        lines = [str(f) for f in report.failures[:20]]
        more = len(report.failures) - len(lines)
        super().__init__("; ".join(lines) + (f"; … and {more} more" if more > 0 else ""))


@dataclass
class Report(Failures):
    """Result of :func:`verify_c1`: ``ok`` only if no check failed."""

    proof_type: ProofType
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class VanillaProofError(CheckError[Report]):
    """A C1 failed strict vanilla verification."""


def _top_bits_clear(values: np.ndarray) -> np.ndarray:
    return (values[..., 31] & 0xC0) == 0


def _rows_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Equality of 32-byte values along the last axis."""
    return (a == b).all(axis=-1)


def _sanitized(values: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Non-canonical values replaced by 0 so batch hashing can run (the challenge fails anyway)."""
    if ok.all():
        return values
    out = values.copy()
    out[~ok] = 0
    return out


def label_digests(replica_id: bytes, layer: np.ndarray, node: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """sha254(replica_id ‖ u32_be(layer) ‖ u64_be(node) ‖ 0^20 ‖ parents) per row
    (``LabelingProof::create_label``: the parents are always hashed)."""
    flat_layer, flat_node = layer.reshape(-1), node.reshape(-1)
    flat_parents = np.ascontiguousarray(parents).reshape(flat_layer.size, -1)
    out = np.empty((flat_layer.size, NODE), dtype=np.uint8)
    pad = bytes(20)
    for j in range(flat_layer.size):
        lay, nd = int(flat_layer[j]), int(flat_node[j])
        if not (0 <= lay < 1 << 32 and 0 <= nd < 1 << 64):
            out[j] = 0xFF  # cannot be a label (top bits set): the comparison fails
            continue
        h = hashlib.sha256(replica_id + lay.to_bytes(4, "big") + nd.to_bytes(8, "big") + pad)
        h.update(flat_parents[j])
        d = bytearray(h.digest())
        d[31] &= 0x3F
        out[j] = np.frombuffer(d, dtype=np.uint8)
    return out.reshape(*layer.shape, NODE)


def _segments(arr: C1Arrays, prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
    f = arr.fields
    segs = []
    for part in ("base", "sub", "top"):
        if f"{prefix}.{part}.hashes" in f:
            segs.append((f[f"{prefix}.{part}.hashes"], f[f"{prefix}.{part}.index"]))
    return segs


def _flatten_segments(
    segs: list[tuple[np.ndarray, np.ndarray]], lead: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for h, i in segs:
        levels, sib = h.shape[-3], h.shape[-2]
        idx = np.asarray(i).reshape(-1, levels)
        out.append((np.ascontiguousarray(h).reshape(lead, levels, sib, NODE), idx))
    return out


def _path_roots(hasher: Hasher, leaves: np.ndarray, segs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Roots of every path (shape of ``leaves``); out-of-range positions clipped (flagged elsewhere)."""
    lead = int(np.prod(leaves.shape[:-1]))
    flat = _flatten_segments(segs, lead)
    flat = [(h, np.clip(i, 0, h.shape[2])) for h, i in flat]
    return roots_from_paths(hasher, leaves.reshape(lead, NODE), flat).reshape(leaves.shape)


# =============================================================================================== subject


COLUMN_NAMES = tuple(
    ["c_x"] + [f"drg_parents[{j}]" for j in range(DRG_DEGREE)] + [f"exp_parents[{j}]" for j in range(8)]
)


def actor_of_prover_id(prover: bytes) -> int | None:
    """The miner actor id whose ID-address payload ``prover`` is (``ids.prover_id`` inverted), or None."""
    value = 0
    for i, b in enumerate(bytes(prover)[:10]):
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value if value < 1 << 64 and ids.prover_id(value) == bytes(prover) else None
    return None


@dataclass(frozen=True, eq=False)
class Subject:
    """One C1 under verification and what every check group derives from it once (lazily): the
    challenges, the leaf each path proves, the graph's columns, the expected parent labels. The StackedDRG
    circuit's witness code reads the same quantities."""

    arrays: C1Arrays
    porep_id: bytes

    @property
    def proof_type(self) -> ProofType:
        return self.arrays.proof_type

    @property
    def fields(self) -> Mapping[str, np.ndarray]:
        return self.arrays.fields

    def domain(self, name: str) -> bytes:
        return self.arrays.domain(name)

    @cached_property
    def challenges(self) -> np.ndarray:
        """int64 [P, C]: the challenges derived from (replica_id, seed[, comm_r])."""
        pt, a = self.proof_type, self.arrays
        derived = challenges.derive_all(pt, a.domain("replica_id"), a.domain("seed"), a.domain("comm_r"))
        return np.array(derived, dtype=np.int64)

    def segments(self, prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """(siblings, positions) of the base, then sub, then top path of tree ``d`` / ``r`` / ``col``."""
        return _segments(self.arrays, prefix)

    @cached_property
    def bad_positions(self) -> dict[str, np.ndarray]:
        """Per tree: some path position outside [0, arity) ([P, C], columns [P, C, 15])."""
        P, C = self.proof_type.partitions, self.proof_type.challenges_per_partition
        return {
            "d": bad_positions(_flatten_segments(self.segments("d"), P * C)).reshape(P, C),
            "r": bad_positions(_flatten_segments(self.segments("r"), P * C)).reshape(P, C),
            "col": bad_positions(_flatten_segments(self.segments("col"), P * C * 15)).reshape(P, C, 15),
        }

    @cached_property
    def leaf_index(self) -> dict[str, np.ndarray]:
        """Per tree: the leaf each path proves (``MerkleProof::path_index``)."""
        return {p: self.arrays.merkle(p).leaf_index() for p in ("d", "r", "col")}

    @cached_property
    def wrong_set(self) -> np.ndarray:
        """[P, C]: every node field agrees with the others but not with the derivation — the seed /
        replica_id / comm_r is what is wrong (reported once, as ``challenges``)."""
        f, bad, idx = self.fields, self.bad_positions, self.leaf_index
        d_idx = idx["d"]
        agree = (
            ~bad["d"]
            & ~bad["r"]
            & ~bad["col"][..., 0]
            & (idx["r"] == d_idx)
            & (f["col.index"][..., 0] == d_idx)
            & (idx["col"][..., 0] == d_idx)
            & (f["lab.node"] == d_idx[..., None]).all(axis=-1)
            & (f["enc.node"] == d_idx)
        )
        return agree & (d_idx != self.challenges)

    @cached_property
    def expected_columns(self) -> np.ndarray:
        """int64 [P, C, 15]: the challenge and its graph parents (of the node the proof is for, where only
        the challenge set is wrong: the columns may still be the right ones for that node)."""
        pt = self.proof_type
        P, C = pt.partitions, pt.challenges_per_partition
        g = graph(pt.nodes, self.porep_id, pt.uses_legacy_graph)
        basis = np.where(self.wrong_set, self.leaf_index["d"], self.challenges)
        parents = g.parents_of(basis.reshape(-1)).astype(np.int64).reshape(P, C, 14)
        return np.concatenate([basis[..., None], parents], axis=-1)

    @cached_property
    def expected_parent_labels(self) -> np.ndarray:
        """uint8 [P, C, L, 37, 32]: per layer, the 37 labels a labeling proof must hash, read from the
        parents' column rows (DRG parents in the same layer, expander parents in the one below)."""
        return expected_parent_labels(self.fields["col.rows"])

    @cached_property
    def rows_ok(self) -> np.ndarray:
        """[P, C, 15, L]: column rows that are canonical Fr."""
        return is_canonical_fr(self.fields["col.rows"])

    @cached_property
    def r_leaf_ok(self) -> np.ndarray:
        return is_canonical_fr(self.fields["r.leaf"])

    @cached_property
    def r_values_ok(self) -> np.ndarray:
        """[P, C]: tree-R_last leaf, siblings and root are canonical Fr."""
        P, C = self.proof_type.partitions, self.proof_type.challenges_per_partition
        ok = np.ones((P, C), dtype=bool)
        for h, _ in self.segments("r"):
            ok &= is_canonical_fr(h).all(axis=(-1, -2))
        return self.r_leaf_ok & ok & is_canonical_fr(self.fields["r.root"])

    @cached_property
    def col_leaf_ok(self) -> np.ndarray:
        return is_canonical_fr(self.fields["col.leaf"])

    @cached_property
    def col_values_ok(self) -> np.ndarray:
        """[P, C, 15]: a column's rows, leaf, siblings and root are canonical Fr."""
        P, C = self.proof_type.partitions, self.proof_type.challenges_per_partition
        ok = np.ones((P, C, 15), dtype=bool)
        for h, _ in self.segments("col"):
            ok &= is_canonical_fr(h).all(axis=(-1, -2))
        return self.rows_ok.all(axis=-1) & self.col_leaf_ok & ok & is_canonical_fr(self.fields["col.root"])

    def per_challenge(
        self, check: str, mask: np.ndarray | np.bool_, detail: Callable[[int, int], str]
    ) -> list[Failure]:
        """A failure of ``check`` for every (k, i) where ``mask`` [P, C] is True."""
        out = []
        for k, i in zip(*np.nonzero(np.asarray(mask)), strict=True):
            k, i = int(k), int(i)
            out.append(Failure(check, detail(k, i), k, i, int(self.challenges[k, i])))
        return out


def expected_parent_labels(rows: np.ndarray) -> np.ndarray:
    """``col.rows`` [..., 15, L, 32] → the 37 parent labels per layer [..., L, 37, 32] (layer l: DRG
    parents' rows of layer l, expander parents' of layer l − 1, in ``parent_slots`` order)."""
    L = rows.shape[-2]
    out = np.empty((*rows.shape[:-3], L, 37, NODE), dtype=np.uint8)
    for layer in range(1, L + 1):
        for s, slot in enumerate(parent_slots(layer)):
            src_layer = layer if slot < DRG_DEGREE else layer - 1
            out[..., layer - 1, s, :] = rows[..., 1 + slot, src_layer - 1, :]
    return out


# =============================================================================================== checks


def check_header(
    s: Subject,
    *,
    prover_id: bytes | None = None,
    sector: int | None = None,
    expect: Mapping[str, bytes | None] | None = None,
) -> tuple[list[Failure], list[str]]:
    """header.*: value ranges of comm_d / comm_r / replica_id, replica_id bound to (prover, sector), and
    the values the caller expects. Returns (failures, notes)."""
    fails: list[Failure] = []
    notes: list[str] = []
    comm_r, comm_d = s.domain("comm_r"), s.domain("comm_d")
    replica_id, ticket = s.domain("replica_id"), s.domain("ticket")
    if comm_d[31] & 0xC0:
        fails.append(Failure("header.comm_d", "comm_d has bit 254 or 255 set"))
    if int.from_bytes(comm_r, "little") >= R:
        fails.append(Failure("header.comm_r", "comm_r is not a canonical Fr element"))
    if replica_id[31] & 0xC0:
        fails.append(Failure("header.replica_id", "replica_id has bit 254 or 255 set"))
    if prover_id is not None and sector is not None:
        want = ids.replica_id(prover_id, sector, ticket, comm_d, s.porep_id)
        if want != replica_id:
            actor = actor_of_prover_id(bytes(prover_id))
            who = f"miner {actor}" if actor is not None else f"prover_id {bytes(prover_id).hex()}"
            fails.append(
                Failure(
                    "header.replica_id",
                    f"this C1 is not for {who}, sector {sector}: its replica_id {replica_id.hex()} is not "
                    f"the one that sector has with the C1's ticket, comm_d and porep_id {s.porep_id.hex()} "
                    f"({want.hex()})",
                )
            )
    else:
        notes.append("replica_id not checked against a prover and sector (none given)")
    for name, want_v in (expect or {}).items():
        got = s.domain(name)
        if want_v is not None and bytes(want_v) != got:
            fails.append(Failure("header.expected", f"{name} is {got.hex()}, expected {bytes(want_v).hex()}"))
    return fails, notes


def check_indices(s: Subject) -> list[Failure]:
    """challenges, tree_d.index, tree_r.index, columns.index, columns.path_index, labeling.node,
    encoding.node: every proof is for the derived challenge and its graph parents."""
    f, chal, bad, idx = s.fields, s.challenges, s.bad_positions, s.leaf_index
    d_idx, r_idx, col_path_idx = idx["d"], idx["r"], idx["col"]
    col_index, lab_node, enc_node = f["col.index"], f["lab.node"], f["enc.node"]
    pt = s.proof_type
    wrong_set = s.wrong_set
    other = ~wrong_set
    inputs = ", comm_r" if pt.is_non_interactive or pt.is_synthetic else ""
    out = s.per_challenge(
        "challenges",
        wrong_set,
        lambda k, i: (
            f"the proof is for node {int(d_idx[k, i])}, but (replica_id, seed{inputs}) give challenge "
            f"{int(chal[k, i])}"
        ),
    )

    def pos_detail(bad_k: np.ndarray, leaf: np.ndarray, what: str) -> Callable[[int, int], str]:
        return lambda k, i: (
            "a path position is outside [0, arity)"
            if bad_k[k, i]
            else f"{what} proves node {int(leaf[k, i])}, the challenge is {int(chal[k, i])}"
        )

    out += s.per_challenge(
        "tree_d.index", other & (bad["d"] | (d_idx != chal)), pos_detail(bad["d"], d_idx, "the path")
    )
    out += s.per_challenge(
        "tree_r.index", other & (bad["r"] | (r_idx != chal)), pos_detail(bad["r"], r_idx, "the path")
    )
    expected_cols = s.expected_columns
    col_wrong = col_index != expected_cols
    col_wrong[..., 0] &= other
    out += s.per_challenge(
        "columns.index",
        col_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"{COLUMN_NAMES[j]} is node {int(col_index[k, i, j])}, "
            f"the graph says {int(expected_cols[k, i, j])}"
            for j in np.nonzero(col_wrong[k, i])[0]
        ),
    )
    col_badpos = bad["col"]
    col_pi_wrong = col_badpos | (col_path_idx != col_index)
    out += s.per_challenge(
        "columns.path_index",
        col_pi_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"{COLUMN_NAMES[j]}: "
            + (
                "a path position is outside [0, arity)"
                if col_badpos[k, i, j]
                else f"path proves node {int(col_path_idx[k, i, j])}, column is {int(col_index[k, i, j])}"
            )
            for j in np.nonzero(col_pi_wrong[k, i])[0]
        ),
    )
    lab_wrong = (lab_node != chal[..., None]) & other[..., None]
    out += s.per_challenge(
        "labeling.node",
        lab_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"layer {l + 1} proof is for node {int(lab_node[k, i, l])}"
            for l in np.nonzero(lab_wrong[k, i])[0]
        ),
    )
    out += s.per_challenge(
        "encoding.node",
        other & (enc_node != chal),
        lambda k, i: f"the proof is for node {int(enc_node[k, i])}",
    )
    return out


def check_values(s: Subject) -> list[Failure]:
    """tree_d.values, tree_r.values, columns.values, labeling.values: every sha254 value has its top two
    bits clear, every Poseidon value is a canonical Fr."""
    f = s.fields
    d_vals_ok = _top_bits_clear(f["d.leaf"]) & _top_bits_clear(f["d.base.hashes"]).all(axis=(-1, -2))
    out = s.per_challenge(
        "tree_d.values", ~d_vals_ok, lambda k, i: "a leaf or sibling has bit 254 or 255 set"
    )
    out += s.per_challenge(
        "tree_r.values", ~s.r_values_ok, lambda k, i: "a leaf, sibling or root is not a canonical Fr"
    )
    col_vals_ok = s.col_values_ok
    out += s.per_challenge(
        "columns.values",
        ~col_vals_ok.all(axis=-1),
        lambda k, i: (
            "non-canonical Fr in " + ", ".join(COLUMN_NAMES[j] for j in np.nonzero(~col_vals_ok[k, i])[0])
        ),
    )
    lab_vals_ok = _top_bits_clear(f["lab.parents"]).all(axis=(-1, -2)) & _top_bits_clear(
        f["enc.parents"]
    ).all(axis=-1)  # [P, C]
    out += s.per_challenge(
        "labeling.values", ~lab_vals_ok, lambda k, i: "a parent label has bit 254 or 255 set"
    )
    return out


def check_tree_d(s: Subject) -> list[Failure]:
    """tree_d.path, tree_d.root: each comm_d path hashes (sha254) to its root, and that root is comm_d."""
    f = s.fields
    d_roots = _path_roots("sha254", f["d.leaf"], s.segments("d"))
    out = s.per_challenge(
        "tree_d.path", ~_rows_equal(d_roots, f["d.root"]), lambda k, i: "the path does not hash to its root"
    )
    out += s.per_challenge(
        "tree_d.root",
        ~_rows_equal(f["d.root"], np.frombuffer(s.domain("comm_d"), np.uint8)),
        lambda k, i: "root is not comm_d",
    )
    return out


def check_tree_r(s: Subject) -> list[Failure]:
    """tree_r.path: each comm_r_last path hashes (Poseidon) to its root (values checked canonical first)."""
    f = s.fields
    r_leaf_s = _sanitized(f["r.leaf"], s.r_leaf_ok)
    r_segs_s = [(_sanitized(h, is_canonical_fr(h)), i) for h, i in s.segments("r")]
    r_roots = _path_roots("poseidon", r_leaf_s, r_segs_s)
    return s.per_challenge(
        "tree_r.path",
        s.r_values_ok & ~_rows_equal(r_roots, f["r.root"]),
        lambda k, i: "the path does not hash to its root",
    )


def column_hashes(rows: np.ndarray) -> np.ndarray:
    """Poseidon hash of every column ``[..., L, 32]`` → ``[..., 32]`` (the tree-C leaves)."""
    L = rows.shape[-2]
    flat = hash_domains_batch(np.ascontiguousarray(rows).reshape(-1, L, NODE))
    return flat.reshape(*rows.shape[:-2], NODE)


def check_columns(s: Subject) -> list[Failure]:
    """columns.leaf, columns.path: each column's leaf is the hash of its rows, and its tree-C path hashes
    to its root."""
    f = s.fields
    col_vals_ok = s.col_values_ok
    col_hashes = column_hashes(_sanitized(f["col.rows"], s.rows_ok))
    leaf_wrong = col_vals_ok & ~_rows_equal(col_hashes, f["col.leaf"])
    out = s.per_challenge(
        "columns.leaf",
        leaf_wrong.any(axis=-1),
        lambda k, i: (
            "leaf is not the hash of the rows in "
            + ", ".join(COLUMN_NAMES[j] for j in np.nonzero(leaf_wrong[k, i])[0])
        ),
    )
    col_segs_s = [(_sanitized(h, is_canonical_fr(h)), i) for h, i in s.segments("col")]
    col_roots = _path_roots("poseidon", _sanitized(f["col.leaf"], s.col_leaf_ok), col_segs_s)
    path_wrong = col_vals_ok & ~_rows_equal(col_roots, f["col.root"])
    out += s.per_challenge(
        "columns.path",
        path_wrong.any(axis=-1),
        lambda k, i: (
            "path does not hash to its root in "
            + ", ".join(COLUMN_NAMES[j] for j in np.nonzero(path_wrong[k, i])[0])
        ),
    )
    return out


def check_commitments(s: Subject) -> list[Failure]:
    """commitments, columns.root, tree_r.root: per partition comm_r = Poseidon2(comm_c, comm_r_last), with
    comm_c / comm_r_last the first proof's roots, and every other root equal to them."""
    f = s.fields
    comm_r = s.domain("comm_r")
    comm_r_ok = int.from_bytes(comm_r, "little") < R
    comm_c_k = f["col.root"][:, 0, 0]  # proofs[0].c_x root per partition
    comm_r_last_k = f["r.root"][:, 0]
    out = []
    for k in range(s.proof_type.partitions):
        cc, crl = comm_c_k[k].tobytes(), comm_r_last_k[k].tobytes()
        if not (is_canonical_fr(comm_c_k[k]) and is_canonical_fr(comm_r_last_k[k]) and comm_r_ok):
            out.append(Failure("commitments", "comm_c or comm_r_last is not a canonical Fr element", k))
        elif hash2(cc, crl) != comm_r:
            out.append(
                Failure(
                    "commitments", f"Poseidon2(comm_c {cc.hex()}, comm_r_last {crl.hex()}) is not comm_r", k
                )
            )
    root_wrong = ~_rows_equal(f["col.root"], comm_c_k[:, None, None, :])
    out += s.per_challenge(
        "columns.root",
        root_wrong.any(axis=-1),
        lambda k, i: (
            "root is not the partition's comm_c in "
            + ", ".join(COLUMN_NAMES[j] for j in np.nonzero(root_wrong[k, i])[0])
        ),
    )
    out += s.per_challenge(
        "tree_r.root",
        ~_rows_equal(f["r.root"], comm_r_last_k[:, None, :]),
        lambda k, i: "root is not the partition's comm_r_last",
    )
    return out


def _parent_name(layer: int, s: int) -> str:
    slot = int(parent_slots(layer)[s])
    kind = f"drg parent {slot}" if slot < DRG_DEGREE else f"expander parent {slot - DRG_DEGREE}"
    return f"layer {layer}, parent {s} ({kind})"


def check_labels(s: Subject) -> list[Failure]:
    """labeling.parents, labeling.layer_index, labeling.label: each layer's labeling proof hashes the
    parents' column labels, for its layer, into the c_x row of that layer."""
    f = s.fields
    L = s.proof_type.layers
    lab_parents = f["lab.parents"]
    lp_wrong = ~_rows_equal(lab_parents, s.expected_parent_labels)  # [P, C, L, 37]
    out = s.per_challenge(
        "labeling.parents",
        lp_wrong.any(axis=(-1, -2)),
        lambda k, i: "; ".join(
            f"{_parent_name(int(l) + 1, int(p))} is not the label in that parent's column"
            for l, p in zip(*np.nonzero(lp_wrong[k, i]), strict=True)
        )[:400],
    )
    lab_layer = f["lab.layer_index"]
    li_wrong = lab_layer != np.arange(1, L + 1)
    out += s.per_challenge(
        "labeling.layer_index",
        li_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"proof {l} has layer_index {int(lab_layer[k, i, l])}" for l in np.nonzero(li_wrong[k, i])[0]
        ),
    )
    labels = label_digests(s.domain("replica_id"), lab_layer, f["lab.node"], lab_parents)  # [P, C, L, 32]
    label_wrong = ~_rows_equal(labels, f["col.rows"][:, :, 0])
    out += s.per_challenge(
        "labeling.label",
        label_wrong.any(axis=-1),
        lambda k, i: (
            "recomputed label differs from the c_x row in layer(s) "
            + ", ".join(str(int(l) + 1) for l in np.nonzero(label_wrong[k, i])[0])
        ),
    )
    return out


def check_encoding(s: Subject) -> list[Failure]:
    """encoding.*: the encoding proof is the last layer's labeling, its key is the last c_x row, and
    key + data (tree-D leaf) = replica (tree-R_last leaf) mod r."""
    f = s.fields
    pt = s.proof_type
    L = pt.layers
    enc_layer = f["enc.layer_index"]
    out = s.per_challenge(
        "encoding.layer_index",
        enc_layer != L,
        lambda k, i: f"layer_index {int(enc_layer[k, i])}, the last layer is {L}",
    )
    enc_parents = f["enc.parents"]
    ep_wrong = ~_rows_equal(enc_parents, s.expected_parent_labels[:, :, L - 1])
    out += s.per_challenge(
        "encoding.parents",
        ep_wrong.any(axis=-1),
        lambda k, i: f"{int(ep_wrong[k, i].sum())} of the 37 parents are not the last layer's parent labels",
    )
    keys = label_digests(s.domain("replica_id"), enc_layer, f["enc.node"], enc_parents)  # [P, C, 32]
    out += s.per_challenge(
        "encoding.key",
        ~_rows_equal(keys, f["col.rows"][:, :, 0, L - 1]),
        lambda k, i: "recomputed key differs from the last c_x row",
    )
    for k in range(pt.partitions):
        for i in range(pt.challenges_per_partition):
            key = int.from_bytes(keys[k, i].tobytes(), "little")
            data = int.from_bytes(f["d.leaf"][k, i].tobytes(), "little")
            replica = int.from_bytes(f["r.leaf"][k, i].tobytes(), "little")
            if (key + data) % R != replica:
                out.append(
                    Failure(
                        "encoding.replica",
                        "key + tree-D leaf != tree-R_last leaf (mod r)",
                        k,
                        i,
                        int(s.challenges[k, i]),
                    )
                )
    return out


CHECK_GROUPS: tuple[Callable[[Subject], list[Failure]], ...] = (
    check_indices,
    check_values,
    check_tree_d,
    check_tree_r,
    check_columns,
    check_commitments,
    check_labels,
    check_encoding,
)
"""The per-challenge check groups, in the order :func:`verify_c1` runs them (after :func:`check_header`)."""


def verify_c1(
    c1: SealCommitPhase1Output | C1Arrays,
    *,
    prover_id: bytes | None = None,
    sector: int | None = None,
    porep_id: bytes | None = None,
    expect_ticket: bytes | None = None,
    expect_seed: bytes | None = None,
    expect_comm_d: bytes | None = None,
    expect_comm_r: bytes | None = None,
) -> Report:
    """Run every check (see :data:`CHECKS`) and report all failures.

    ``prover_id`` + ``sector`` bind replica_id to a sector (without them that check is skipped and noted);
    ``porep_id`` overrides the proof type's (for test sectors sealed with arbitrary ids).
    """
    arr = c1.arrays if isinstance(c1, SealCommitPhase1Output) else c1
    pt = arr.proof_type
    s = Subject(arr, pt.porep_id if porep_id is None else bytes(porep_id))
    expect = {"ticket": expect_ticket, "seed": expect_seed, "comm_d": expect_comm_d, "comm_r": expect_comm_r}
    report = Report(pt)
    fails, notes = check_header(s, prover_id=prover_id, sector=sector, expect=expect)
    report.notes.extend(notes)
    for group in CHECK_GROUPS:
        fails += group(s)
    order = {name: n for n, name in enumerate(CHECKS)}
    fails.sort(
        key=lambda x: (
            -1 if x.partition is None else x.partition,
            -1 if x.challenge is None else x.challenge,
            order.get(x.check, 99),
        )
    )
    report.failures = fails
    return report


def check_c1(c1: SealCommitPhase1Output | C1Arrays, **kwargs: object) -> Report:
    """:func:`verify_c1`, raising :class:`VanillaProofError` unless every check passes."""
    report = verify_c1(c1, **kwargs)  # type: ignore[arg-type]
    if not report.ok:
        raise VanillaProofError(report)
    return report
