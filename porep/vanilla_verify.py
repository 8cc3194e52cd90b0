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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from porep import challenges, ids
from porep.c1 import C1Arrays, SealCommitPhase1Output, is_canonical_fr
from porep.graph import graph
from porep.labels import parent_slots
from porep.merkle import Hasher, bad_positions, hash_domains_batch, roots_from_paths
from porep.poseidon import R, hash2
from porep.prooftypes import DRG_DEGREE, ProofType

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


@dataclass
class Report:
    """Result of :func:`verify_c1`: ``ok`` only if no check failed."""

    proof_type: ProofType
    failures: list[Failure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def checks_failed(self) -> set[str]:
        return {f.check for f in self.failures}


class VanillaProofError(ValueError):
    """A C1 failed strict vanilla verification."""

    def __init__(self, report: Report):
        self.report = report
        lines = [str(f) for f in report.failures[:20]]
        more = len(report.failures) - len(lines)
        super().__init__("; ".join(lines) + (f"; … and {more} more" if more > 0 else ""))


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


def _label_digests(replica_id: bytes, layer: np.ndarray, node: np.ndarray, parents: np.ndarray) -> np.ndarray:
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
    f = arr.fields
    P, C, L = pt.partitions, pt.challenges_per_partition, pt.layers
    report = Report(pt)
    fails = report.failures
    porep = pt.porep_id if porep_id is None else bytes(porep_id)
    comm_r, comm_d = arr.domain("comm_r"), arr.domain("comm_d")
    replica_id, seed, ticket = arr.domain("replica_id"), arr.domain("seed"), arr.domain("ticket")

    # ------------------------------------------------------------------------------------------ header
    if comm_d[31] & 0xC0:
        fails.append(Failure("header.comm_d", "comm_d has bit 254 or 255 set"))
    comm_r_ok = int.from_bytes(comm_r, "little") < R
    if not comm_r_ok:
        fails.append(Failure("header.comm_r", "comm_r is not a canonical Fr element"))
    if replica_id[31] & 0xC0:
        fails.append(Failure("header.replica_id", "replica_id has bit 254 or 255 set"))
    if prover_id is not None and sector is not None:
        want = ids.replica_id(prover_id, sector, ticket, comm_d, porep)
        if want != replica_id:
            fails.append(
                Failure(
                    "header.replica_id",
                    f"replica_id {replica_id.hex()} is not that of prover {bytes(prover_id).hex()}, "
                    f"sector {sector}, the C1's ticket and comm_d and porep_id {porep.hex()} ({want.hex()})",
                )
            )
    else:
        report.notes.append("replica_id not checked against a prover and sector (none given)")
    for name, got, want_v in (
        ("ticket", ticket, expect_ticket),
        ("seed", seed, expect_seed),
        ("comm_d", comm_d, expect_comm_d),
        ("comm_r", comm_r, expect_comm_r),
    ):
        if want_v is not None and bytes(want_v) != got:
            fails.append(Failure("header.expected", f"{name} is {got.hex()}, expected {bytes(want_v).hex()}"))

    # --------------------------------------------------------------------------------------- challenges
    chal = np.array(challenges.derive_all(pt, replica_id, seed, comm_r), dtype=np.int64)  # [P, C]

    def per_challenge(check: str, mask: np.ndarray | np.bool_, detail: Callable[[int, int], str]) -> None:
        """Record a failure for every (k, i) where ``mask`` [P, C] is True."""
        for k, i in zip(*np.nonzero(np.asarray(mask)), strict=True):
            k, i = int(k), int(i)
            fails.append(Failure(check, detail(k, i), k, i, int(chal[k, i])))

    d, r, col = arr.merkle("d"), arr.merkle("r"), arr.merkle("col")
    d_segs, r_segs, col_segs = _segments(arr, "d"), _segments(arr, "r"), _segments(arr, "col")
    d_badpos = bad_positions(_flatten_segments(d_segs, P * C)).reshape(P, C)
    r_badpos = bad_positions(_flatten_segments(r_segs, P * C)).reshape(P, C)
    col_badpos = bad_positions(_flatten_segments(col_segs, P * C * 15)).reshape(P, C, 15)
    d_idx, r_idx, col_path_idx = d.leaf_index(), r.leaf_index(), col.leaf_index()
    col_index = f["col.index"]
    lab_node, enc_node = f["lab.node"], f["enc.node"]
    cx = col_index[..., 0]

    # When every node field agrees with the others but not with the derivation, the seed / replica_id /
    # comm_r is what is wrong: say so once instead of five times.
    agree = (
        ~d_badpos
        & ~r_badpos
        & ~col_badpos[..., 0]
        & (r_idx == d_idx)
        & (cx == d_idx)
        & (col_path_idx[..., 0] == d_idx)
        & (lab_node == d_idx[..., None]).all(axis=-1)
        & (enc_node == d_idx)
    )
    wrong_set = agree & (d_idx != chal)
    inputs = ", comm_r" if pt.is_non_interactive or pt.is_synthetic else ""
    per_challenge(
        "challenges",
        wrong_set,
        lambda k, i: (
            f"the proof is for node {int(d_idx[k, i])}, but (replica_id, seed{inputs}) give challenge "
            f"{int(chal[k, i])}"
        ),
    )
    other = ~wrong_set

    def pos_detail(bad: np.ndarray, idx: np.ndarray, what: str) -> Callable[[int, int], str]:
        return lambda k, i: (
            "a path position is outside [0, arity)"
            if bad[k, i]
            else f"{what} proves node {int(idx[k, i])}, the challenge is {int(chal[k, i])}"
        )

    per_challenge(
        "tree_d.index", other & (d_badpos | (d_idx != chal)), pos_detail(d_badpos, d_idx, "the path")
    )
    per_challenge(
        "tree_r.index", other & (r_badpos | (r_idx != chal)), pos_detail(r_badpos, r_idx, "the path")
    )

    # Graph parents of the challenge (of the node the proof is for, when only the challenge set is wrong:
    # that is already reported, and the columns may still be the right ones for that node).
    g = graph(pt.nodes, porep, pt.uses_legacy_graph)
    basis = np.where(wrong_set, d_idx, chal)
    expected_cols = np.concatenate(
        [basis[..., None], g.parents_of(basis.reshape(-1)).astype(np.int64).reshape(P, C, 14)], axis=-1
    )
    col_names = (
        ["c_x"] + [f"drg_parents[{j}]" for j in range(DRG_DEGREE)] + [f"exp_parents[{j}]" for j in range(8)]
    )
    col_wrong = col_index != expected_cols
    col_wrong[..., 0] &= other
    per_challenge(
        "columns.index",
        col_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"{col_names[j]} is node {int(col_index[k, i, j])}, the graph says {int(expected_cols[k, i, j])}"
            for j in np.nonzero(col_wrong[k, i])[0]
        ),
    )
    col_pi_wrong = col_badpos | (col_path_idx != col_index)
    per_challenge(
        "columns.path_index",
        col_pi_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"{col_names[j]}: "
            + (
                "a path position is outside [0, arity)"
                if col_badpos[k, i, j]
                else f"path proves node {int(col_path_idx[k, i, j])}, column is {int(col_index[k, i, j])}"
            )
            for j in np.nonzero(col_pi_wrong[k, i])[0]
        ),
    )
    lab_wrong = (lab_node != chal[..., None]) & other[..., None]
    per_challenge(
        "labeling.node",
        lab_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"layer {l + 1} proof is for node {int(lab_node[k, i, l])}"
            for l in np.nonzero(lab_wrong[k, i])[0]
        ),
    )
    per_challenge(
        "encoding.node",
        other & (enc_node != chal),
        lambda k, i: f"the proof is for node {int(enc_node[k, i])}",
    )

    # ------------------------------------------------------------------------------------------- values
    d_vals_ok = _top_bits_clear(f["d.leaf"]) & _top_bits_clear(f["d.base.hashes"]).all(axis=(-1, -2))
    per_challenge("tree_d.values", ~d_vals_ok, lambda k, i: "a leaf or sibling has bit 254 or 255 set")
    r_leaf_ok = is_canonical_fr(f["r.leaf"])
    r_hash_ok = np.ones((P, C), dtype=bool)
    for h, _ in r_segs:
        r_hash_ok &= is_canonical_fr(h).all(axis=(-1, -2))
    r_root_ok = is_canonical_fr(f["r.root"])
    r_vals_ok = r_leaf_ok & r_hash_ok & r_root_ok
    per_challenge("tree_r.values", ~r_vals_ok, lambda k, i: "a leaf, sibling or root is not a canonical Fr")
    rows_ok = is_canonical_fr(f["col.rows"])  # [P, C, 15, L]
    col_leaf_ok = is_canonical_fr(f["col.leaf"])
    col_hash_ok = np.ones((P, C, 15), dtype=bool)
    for h, _ in col_segs:
        col_hash_ok &= is_canonical_fr(h).all(axis=(-1, -2))
    col_root_ok = is_canonical_fr(f["col.root"])
    col_vals_ok = rows_ok.all(axis=-1) & col_leaf_ok & col_hash_ok & col_root_ok
    per_challenge(
        "columns.values",
        ~col_vals_ok.all(axis=-1),
        lambda k, i: (
            "non-canonical Fr in " + ", ".join(col_names[j] for j in np.nonzero(~col_vals_ok[k, i])[0])
        ),
    )
    lab_vals_ok = _top_bits_clear(f["lab.parents"]).all(axis=(-1, -2)) & _top_bits_clear(
        f["enc.parents"]
    ).all(axis=-1)  # [P, C]
    per_challenge("labeling.values", ~lab_vals_ok, lambda k, i: "a parent label has bit 254 or 255 set")

    # --------------------------------------------------------------------------------------- tree D
    d_roots = _path_roots("sha254", f["d.leaf"], d_segs)
    per_challenge(
        "tree_d.path", ~_rows_equal(d_roots, f["d.root"]), lambda k, i: "the path does not hash to its root"
    )
    per_challenge(
        "tree_d.root",
        ~_rows_equal(f["d.root"], np.frombuffer(comm_d, np.uint8)),
        lambda k, i: "root is not comm_d",
    )

    # --------------------------------------------------------------------------------------- tree R_last
    r_leaf_s = _sanitized(f["r.leaf"], r_leaf_ok)
    r_segs_s = [(_sanitized(h, is_canonical_fr(h)), i) for h, i in r_segs]
    r_roots = _path_roots("poseidon", r_leaf_s, r_segs_s)
    per_challenge(
        "tree_r.path",
        r_vals_ok & ~_rows_equal(r_roots, f["r.root"]),
        lambda k, i: "the path does not hash to its root",
    )

    # --------------------------------------------------------------------------------------- columns
    rows_s = _sanitized(f["col.rows"], rows_ok)
    col_hashes = hash_domains_batch(rows_s.reshape(-1, L, NODE)).reshape(P, C, 15, NODE)
    leaf_wrong = col_vals_ok & ~_rows_equal(col_hashes, f["col.leaf"])
    per_challenge(
        "columns.leaf",
        leaf_wrong.any(axis=-1),
        lambda k, i: (
            "leaf is not the hash of the rows in "
            + ", ".join(col_names[j] for j in np.nonzero(leaf_wrong[k, i])[0])
        ),
    )
    col_segs_s = [(_sanitized(h, is_canonical_fr(h)), i) for h, i in col_segs]
    col_roots = _path_roots("poseidon", _sanitized(f["col.leaf"], col_leaf_ok), col_segs_s)
    path_wrong = col_vals_ok & ~_rows_equal(col_roots, f["col.root"])
    per_challenge(
        "columns.path",
        path_wrong.any(axis=-1),
        lambda k, i: (
            "path does not hash to its root in "
            + ", ".join(col_names[j] for j in np.nonzero(path_wrong[k, i])[0])
        ),
    )

    # --------------------------------------------------------------------------------------- commitments
    comm_c_k = f["col.root"][:, 0, 0]  # proofs[0].c_x root per partition
    comm_r_last_k = f["r.root"][:, 0]
    for k in range(P):
        cc, crl = comm_c_k[k].tobytes(), comm_r_last_k[k].tobytes()
        if not (is_canonical_fr(comm_c_k[k]) and is_canonical_fr(comm_r_last_k[k]) and comm_r_ok):
            fails.append(Failure("commitments", "comm_c or comm_r_last is not a canonical Fr element", k))
        elif hash2(cc, crl) != comm_r:
            fails.append(
                Failure(
                    "commitments", f"Poseidon2(comm_c {cc.hex()}, comm_r_last {crl.hex()}) is not comm_r", k
                )
            )
    root_wrong = ~_rows_equal(f["col.root"], comm_c_k[:, None, None, :])
    per_challenge(
        "columns.root",
        root_wrong.any(axis=-1),
        lambda k, i: (
            "root is not the partition's comm_c in "
            + ", ".join(col_names[j] for j in np.nonzero(root_wrong[k, i])[0])
        ),
    )
    per_challenge(
        "tree_r.root",
        ~_rows_equal(f["r.root"], comm_r_last_k[:, None, :]),
        lambda k, i: "root is not the partition's comm_r_last",
    )

    # --------------------------------------------------------------------------------------- labels
    rows = f["col.rows"]  # [P, C, 15, L, 32]
    expected_parents = np.empty((P, C, L, 37, NODE), dtype=np.uint8)
    for layer in range(1, L + 1):
        for s, slot in enumerate(parent_slots(layer)):
            src_col, src_layer = (1 + slot, layer) if slot < DRG_DEGREE else (1 + slot, layer - 1)
            expected_parents[:, :, layer - 1, s] = rows[:, :, src_col, src_layer - 1]
    lab_parents = f["lab.parents"]
    lp_wrong = ~_rows_equal(lab_parents, expected_parents)  # [P, C, L, 37]

    def parent_name(layer: int, s: int) -> str:
        slot = int(parent_slots(layer)[s])
        kind = f"drg parent {slot}" if slot < DRG_DEGREE else f"expander parent {slot - DRG_DEGREE}"
        return f"layer {layer}, parent {s} ({kind})"

    per_challenge(
        "labeling.parents",
        lp_wrong.any(axis=(-1, -2)),
        lambda k, i: "; ".join(
            f"{parent_name(int(l) + 1, int(s))} is not the label in that parent's column"
            for l, s in zip(*np.nonzero(lp_wrong[k, i]), strict=True)
        )[:400],
    )
    lab_layer = f["lab.layer_index"]
    li_wrong = lab_layer != np.arange(1, L + 1)
    per_challenge(
        "labeling.layer_index",
        li_wrong.any(axis=-1),
        lambda k, i: "; ".join(
            f"proof {l} has layer_index {int(lab_layer[k, i, l])}" for l in np.nonzero(li_wrong[k, i])[0]
        ),
    )
    labels = _label_digests(replica_id, lab_layer, lab_node, lab_parents)  # [P, C, L, 32]
    cx_rows = rows[:, :, 0]  # [P, C, L, 32]
    label_wrong = ~_rows_equal(labels, cx_rows)
    per_challenge(
        "labeling.label",
        label_wrong.any(axis=-1),
        lambda k, i: (
            "recomputed label differs from the c_x row in layer(s) "
            + ", ".join(str(int(l) + 1) for l in np.nonzero(label_wrong[k, i])[0])
        ),
    )

    # --------------------------------------------------------------------------------------- encoding
    enc_layer = f["enc.layer_index"]
    per_challenge(
        "encoding.layer_index",
        enc_layer != L,
        lambda k, i: f"layer_index {int(enc_layer[k, i])}, the last layer is {L}",
    )
    enc_parents = f["enc.parents"]
    ep_wrong = ~_rows_equal(enc_parents, expected_parents[:, :, L - 1])
    per_challenge(
        "encoding.parents",
        ep_wrong.any(axis=-1),
        lambda k, i: f"{int(ep_wrong[k, i].sum())} of the 37 parents are not the last layer's parent labels",
    )
    keys = _label_digests(replica_id, enc_layer, enc_node, enc_parents)  # [P, C, 32]
    per_challenge(
        "encoding.key",
        ~_rows_equal(keys, cx_rows[:, :, L - 1]),
        lambda k, i: "recomputed key differs from the last c_x row",
    )
    for k in range(P):
        for i in range(C):
            key = int.from_bytes(keys[k, i].tobytes(), "little")
            data = int.from_bytes(f["d.leaf"][k, i].tobytes(), "little")
            replica = int.from_bytes(f["r.leaf"][k, i].tobytes(), "little")
            if (key + data) % R != replica:
                fails.append(
                    Failure(
                        "encoding.replica",
                        "key + tree-D leaf != tree-R_last leaf (mod r)",
                        k,
                        i,
                        int(chal[k, i]),
                    )
                )

    order = {name: n for n, name in enumerate(CHECKS)}
    fails.sort(
        key=lambda x: (
            -1 if x.partition is None else x.partition,
            -1 if x.challenge is None else x.challenge,
            order.get(x.check, 99),
        )
    )
    return report


def check_c1(c1: SealCommitPhase1Output | C1Arrays, **kwargs: object) -> Report:
    """:func:`verify_c1`, raising :class:`VanillaProofError` unless every check passes."""
    report = verify_c1(c1, **kwargs)  # type: ignore[arg-type]
    if not report.ok:
        raise VanillaProofError(report)
    return report
