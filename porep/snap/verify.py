"""Strict vanilla check of a SnapDeals update: what Rust's ``EmptySectorUpdate::verify`` checks, and more.

Rust (docs snap.md §4.3) checks the counts, comm_r_old/new = H2(comm_c, roots of challenge proof 0), the
challenges, every path's index, root and hashes, the encoding leaf_r_new = leaf_r_old + leaf_d_new·rho, and
that each tree-D sibling in the apex rows occurs *somewhere* in the apex tree's row. It does not check that
the apex leaves hash up to comm_d_new, nor that the challenge's own node at the apex height is the apex leaf
the circuit selects; a proof missing these passes Rust's vanilla check and then cannot be proven (the
circuit is unsatisfiable), so both are checked here, with the exact path shapes and variants the circuit
asserts, value ranges (a non-canonical Poseidon value panics Rust; sha254 values have their top two bits
clear), and bytes after a proof (Rust ignores them). Nothing is normalised.

A failure names its partition, challenge and check (the keys of :data:`CHECKS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from porep.hashes.merkle import Hasher, hash_children, insert_children, roots_from_paths
from porep.hashes.poseidon import R, hash2
from porep.sdr.vanilla_verify import CheckError, Failure, Failures
from porep.snap.challenges import partition_challenges
from porep.snap.params import UpdateConstants, UpdateProofType, hs, update_proof_type
from porep.snap.proof import (
    SINGLE,
    VARIANTS,
    MerkleProof,
    PartitionProof,
    SnapFormatError,
    decode_partition_proof,
)
from porep.snap.randomness import phi as make_phi
from porep.snap.randomness import rho

NODE = 32

CHECKS: dict[str, str] = {
    "header.proof_type": "ProofType is a RegisteredUpdateProof id (0..4)",
    "header.partitions": "one partition proof per partition of the size",
    "header.h": "h is one of the size's allowed values",
    "header.comm_r_old": "comm_r_old is a canonical Fr element",
    "header.comm_r_new": "comm_r_new is a canonical Fr element",
    "header.comm_d_new": "comm_d_new is a sha254 value (top two bits clear)",
    "format": "the partition proof is bincode of a PartitionProof",
    "format.trailing": "no bytes follow the partition proof",
    "shape.apex_leafs": "the number of apex leaves is the size's",
    "shape.challenges": "the number of challenge proofs is the size's",
    "shape.tree_r_old": "tree-R old proof: the size's variant, path lengths and sibling counts",
    "shape.tree_d": "tree-D proof: Single, log2 N path elements of one sibling",
    "shape.tree_r_new": "tree-R new proof: the size's variant, path lengths and sibling counts",
    "values.comm_c": "comm_c is a canonical Fr element",
    "values.apex_leafs": "apex leaves are sha254 values",
    "values.tree_r_old": "tree-R old root, leaf and siblings are canonical Fr",
    "values.tree_d": "tree-D root and upper siblings are sha254 values; leaf and leaf sibling canonical Fr",
    "values.tree_r_new": "tree-R new root, leaf and siblings are canonical Fr",
    "commitments.comm_r_old": "H2(comm_c, root_r_old) = comm_r_old",
    "commitments.comm_r_new": "H2(comm_c, root_r_new) = comm_r_new",
    "tree_r_old.index": "the tree-R old path proves the challenged node",
    "tree_r_old.root": "the tree-R old root is challenge proof 0's",
    "tree_r_old.path": "the tree-R old path hashes to its root",
    "tree_d.index": "the tree-D path proves the challenged node",
    "tree_d.root": "the tree-D root is comm_d_new",
    "tree_d.path": "the tree-D path hashes to its root",
    "tree_r_new.index": "the tree-R new path proves the challenged node",
    "tree_r_new.root": "the tree-R new root is challenge proof 0's",
    "tree_r_new.path": "the tree-R new path hashes to its root",
    "encoding": "leaf_r_new = leaf_r_old + leaf_d_new · rho(high bits of the challenge) mod r",
    "apex.membership": "each tree-D sibling in the apex rows occurs in that apex-tree row (Rust's check)",
    "apex.leaf": "the challenge's tree-D node at the apex height is its apex leaf",
    "apex.partition_path": "every challenge's tree-D path above the apex tree equals challenge proof 0's",
    "apex.root": "the apex tree and the partition path hash up to comm_d_new",
}


@dataclass
class SnapReport(Failures):
    """Result of a check: ``ok`` only if no check failed."""

    proof_type: UpdateProofType | None
    failures: list[Failure] = field(default_factory=list)


def _canonical(value: bytes) -> bool:
    return int.from_bytes(value, "little") < R


def _sha_value(value: bytes) -> bool:
    return (value[31] & 0xC0) == 0


def _shape_ok(proof: MerkleProof, variant: int, segments: Sequence[tuple[int, int]]) -> str | None:
    """Why ``proof`` does not have the expected shape, or None."""
    if proof.variant != variant:
        got = VARIANTS[proof.variant] if 0 <= proof.variant < len(VARIANTS) else str(proof.variant)
        return f"variant {got}, the size uses {VARIANTS[variant]}"
    for name, seg, (arity, length) in zip(("base", "sub", "top"), proof.segments, segments, strict=False):
        if len(seg) != length:
            return f"{name} path of {len(seg)} elements, expected {length}"
        for i, el in enumerate(seg):
            if len(el.hashes) != arity - 1:
                return f"{name} path element {i} has {len(el.hashes)} siblings, expected {arity - 1}"
    return None


def _arrays(
    proofs: Sequence[MerkleProof],
) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Leaves [n, 32], roots [n, 32] and per segment (siblings [n, L, a-1, 32], indices [n, L]); shapes are
    already checked to agree."""
    leaves = np.frombuffer(b"".join(p.leaf for p in proofs), np.uint8).reshape(-1, NODE)
    roots = np.frombuffer(b"".join(p.root for p in proofs), np.uint8).reshape(-1, NODE)
    segs = []
    for s in range(len(proofs[0].segments)):
        length = len(proofs[0].segments[s])
        sib = len(proofs[0].segments[s][0].hashes) if length else 0
        hashes = np.frombuffer(
            b"".join(h for p in proofs for el in p.segments[s] for h in el.hashes), np.uint8
        ).reshape(len(proofs), length, sib, NODE)
        index = np.array([[el.index for el in p.segments[s]] for p in proofs], dtype=np.uint64).reshape(
            len(proofs), length
        )
        segs.append((hashes, index))
    return leaves, roots, segs


class _PartitionCheck:
    def __init__(
        self,
        consts: UpdateConstants,
        k: int,
        h: int,
        old_r: bytes,
        new_r: bytes,
        new_d: bytes,
        proof: PartitionProof,
        challenges: list[int] | None,
        phi_value: int | None,
    ):
        self.c, self.k, self.h = consts, k, h
        self.old_r, self.new_r, self.new_d = old_r, new_r, new_d
        self.proof = proof
        self.challenges = challenges
        self.phi = phi_value
        self.failures: list[Failure] = []

    def fail(self, check: str, detail: str, challenge: int | None = None, node: int | None = None) -> None:
        self.failures.append(Failure(check, detail, self.k, challenge, node))

    def run(self) -> list[Failure]:
        c, p = self.c, self.proof
        if not _canonical(p.comm_c):
            self.fail("values.comm_c", "comm_c is not a canonical Fr element")
        apex_ok = len(p.apex_leafs) == c.apex_leaves
        if not apex_ok:
            self.fail("shape.apex_leafs", f"{len(p.apex_leafs)} apex leaves, expected {c.apex_leaves}")
        for i, a in enumerate(p.apex_leafs):
            if not _sha_value(a):
                self.fail("values.apex_leafs", f"apex leaf {i} has its top two bits set")
        if len(p.challenge_proofs) != c.challenges:
            self.fail(
                "shape.challenges", f"{len(p.challenge_proofs)} challenge proofs, expected {c.challenges}"
            )
        if not p.challenge_proofs:
            return self.failures
        r_segs = c.tree_r_segments()
        d_segs = [(2, c.challenge_bits)]
        good: list[int] = []
        for j, cp in enumerate(p.challenge_proofs):
            ok = True
            for name, mp, variant, segs in (
                ("tree_r_old", cp.proof_r_old, c.tree_r_variant, r_segs),
                ("tree_d", cp.proof_d_new, SINGLE, d_segs),
                ("tree_r_new", cp.proof_r_new, c.tree_r_variant, r_segs),
            ):
                why = _shape_ok(mp, variant, segs)
                if why is not None:
                    self.fail(f"shape.{name}", why, j)
                    ok = False
            if ok:
                good.append(j)
        proofs = [p.challenge_proofs[j] for j in good]
        # comm_r checks use challenge proof 0's roots, as Rust does.
        cp0 = p.challenge_proofs[0]
        root_r_old, root_r_new = cp0.proof_r_old.root, cp0.proof_r_new.root
        for name, root, want in (
            ("comm_r_old", root_r_old, self.old_r),
            ("comm_r_new", root_r_new, self.new_r),
        ):
            if _canonical(p.comm_c) and _canonical(root) and _canonical(want):
                if hash2(p.comm_c, root) != want:
                    self.fail(f"commitments.{name}", f"H2(comm_c, challenge proof 0's root) is not {name}")
        if not proofs:
            return self.failures
        arities_r = tuple(a for a, _ in r_segs)
        trees: tuple[tuple[str, str, Hasher, bytes], ...] = (
            ("tree_r_old", "proof_r_old", "poseidon", root_r_old),
            ("tree_d", "proof_d_new", "sha254", self.new_d),
            ("tree_r_new", "proof_r_new", "poseidon", root_r_new),
        )
        for name, attr, hasher, root_want in trees:
            mps = [getattr(x, attr) for x in proofs]
            self._tree(name, mps, good, hasher, root_want, arities_r if hasher == "poseidon" else (2,))
        self._encoding(proofs, good)
        if apex_ok:
            self._apex(proofs, good)
        return self.failures

    def _tree(
        self,
        name: str,
        mps: list[MerkleProof],
        good: list[int],
        hasher: Hasher,
        root_want: bytes,
        arities: tuple[int, ...],
    ) -> None:
        leaves, roots, segs = _arrays(mps)
        n = len(mps)
        # value ranges
        if hasher == "poseidon":
            vals = [leaves, roots] + [s[0].reshape(n, -1, NODE) for s in segs]
            flat = np.concatenate([v.reshape(n, -1, NODE) for v in vals], axis=1)
            limbs = flat.view("<u4").reshape(n, -1, 8)
            canon = _canonical_mask(limbs)
            row_ok = canon.all(axis=1)
            for i in np.nonzero(~row_ok)[0]:
                self.fail(
                    f"values.{name}",
                    "a root, leaf or sibling is not a canonical Fr element",
                    good[i],
                    self._node(good[i]),
                )
        else:
            sib = segs[0][0][:, :, 0]  # [n, L, 32]
            leaf_ok = _canonical_mask(leaves.view("<u4").reshape(n, 8)) & _canonical_mask(
                np.ascontiguousarray(sib[:, 0]).view("<u4").reshape(n, 8)
            )
            upper_ok = ((sib[:, 1:, 31] & 0xC0) == 0).all(axis=1) & ((roots[:, 31] & 0xC0) == 0)
            row_ok = leaf_ok & upper_ok
            for i in np.nonzero(~row_ok)[0]:
                self.fail(
                    "values.tree_d",
                    "the leaf or leaf sibling is not canonical, or a node above has its top two bits set",
                    good[i],
                    self._node(good[i]),
                )
        # indices
        if self.challenges is not None:
            for j, mp in zip(good, mps, strict=True):
                bad_pos = any(
                    el.index >= a for seg, a in zip(mp.segments, arities, strict=False) for el in seg
                )
                want = self.challenges[j] if j < len(self.challenges) else None
                got = mp.path_index(arities)
                if bad_pos:
                    self.fail(f"{name}.index", "a path index is outside [0, arity)", j, want)
                elif want is None:
                    pass
                elif got != want:
                    self.fail(
                        f"{name}.index", f"the path proves node {got}, the challenge is {want}", j, want
                    )
        # roots
        for row, j in zip(roots, good, strict=True):
            if row.tobytes() != root_want:
                what = "comm_d_new" if name == "tree_d" else "challenge proof 0's root"
                self.fail(f"{name}.root", f"the root is not {what}", j, self._node(j))
        # hashes
        pos_ok = np.ones(n, dtype=bool)
        for (_, index), a in zip(segs, arities, strict=False):
            pos_ok &= (index < a).all(axis=1)
        run = row_ok & pos_ok
        if not run.any():
            return
        sel = np.nonzero(run)[0]
        if name == "tree_d":
            computed = self._tree_d_roots(
                leaves[sel], segs[0][0][sel], segs[0][1][sel], [good[i] for i in sel]
            )
        else:
            computed = roots_from_paths(
                hasher, leaves[sel], [(h[sel], ix[sel].astype(np.int64)) for h, ix in segs]
            )
        for i, row in zip(sel, computed, strict=True):
            if row.tobytes() != roots[i].tobytes():
                self.fail(f"{name}.path", "the path does not hash to its root", good[i], self._node(good[i]))

    def _tree_d_roots(
        self, leaves: np.ndarray, sibs: np.ndarray, index: np.ndarray, js: list[int]
    ) -> np.ndarray:
        """Roots of tree-D paths; keeps each challenge's node at the apex height for the apex check."""
        cur = leaves
        self.apex_nodes: dict[int, bytes] = {}
        for lvl in range(sibs.shape[1]):
            if lvl == self.c.apex_height:
                self.apex_nodes = {j: cur[i].tobytes() for i, j in enumerate(js)}
            children = insert_children(cur, sibs[:, lvl], index[:, lvl].astype(np.int64))
            cur = hash_children("sha254", children)
        return cur

    def _node(self, j: int) -> int | None:
        return self.challenges[j] if self.challenges is not None and j < len(self.challenges) else None

    def _encoding(self, proofs: list, good: list[int]) -> None:
        if self.phi is None or self.challenges is None:
            return
        shift = self.c.challenge_bits - self.h
        cache: dict[int, int] = {}
        for cp, j in zip(proofs, good, strict=True):
            if j >= len(self.challenges):
                continue
            c = self.challenges[j]
            vals = [
                int.from_bytes(x, "little")
                for x in (cp.proof_r_old.leaf, cp.proof_d_new.leaf, cp.proof_r_new.leaf)
            ]
            if any(v >= R for v in vals):
                continue  # reported as a value-range failure
            high = c >> shift
            if high not in cache:
                cache[high] = rho(self.phi, high)
            if (vals[0] + vals[1] * cache[high]) % R != vals[2]:
                self.fail("encoding", f"leaf_r_new != leaf_r_old + leaf_d_new · rho({high})", j, c)

    def _apex(self, proofs: list, good: list[int]) -> None:
        c, p = self.c, self.proof
        s, abl, a = c.apex_height, c.apex_bits, c.apex_leaves
        rows = [list(p.apex_leafs)]
        for _ in range(abl):
            prev = np.frombuffer(b"".join(rows[-1]), np.uint8).reshape(-1, NODE)
            rows.append([r.tobytes() for r in hash_children("sha254", prev.reshape(-1, 2, NODE))])
        row_sets = [set(r) for r in rows]
        p0_ok = p.challenge_proofs[0] is proofs[0]  # else proof 0 is malformed (reported)
        top0 = [(el.hashes, el.index) for el in p.challenge_proofs[0].proof_d_new.base[s + abl :]]
        apex_nodes = getattr(self, "apex_nodes", {})
        for cp, j in zip(proofs, good, strict=True):
            path = cp.proof_d_new.base
            node = self._node(j)
            for lvl in range(abl):
                if path[s + lvl].hashes[0] not in row_sets[lvl]:
                    self.fail(
                        "apex.membership",
                        f"the tree-D sibling at height {s + lvl} is not in apex row {lvl}",
                        j,
                        node,
                    )
            if node is not None and j in apex_nodes:
                want = p.apex_leafs[(node >> s) % a]
                if apex_nodes[j] != want:
                    self.fail(
                        "apex.leaf", f"the node at height {s} is not apex leaf {(node >> s) % a}", j, node
                    )
            if p0_ok and [(el.hashes, el.index) for el in path[s + abl :]] != top0:
                self.fail(
                    "apex.partition_path",
                    "the tree-D path above the apex tree differs from proof 0's",
                    j,
                    node,
                )
        # apex root, then challenge proof 0's partition path with the partition bits of k
        if not p0_ok:
            return  # nothing to fold the apex root with
        cur = rows[-1][0]
        for lvl, (hashes, _) in enumerate(top0):
            sib = hashes[0]
            bit = (self.k >> lvl) & 1
            children = np.frombuffer((sib + cur) if bit else (cur + sib), np.uint8).reshape(1, 2, NODE)
            cur = hash_children("sha254", children)[0].tobytes()
        if cur != self.new_d:
            self.fail("apex.root", "the apex leaves and the partition path do not hash to comm_d_new")


def _canonical_mask(limbs: np.ndarray) -> np.ndarray:
    """Rows of uint32[..., 8] LE limbs below r."""
    from gpu.arith.fields import fr_is_canonical

    shape = limbs.shape[:-1]
    return fr_is_canonical(np.ascontiguousarray(limbs).reshape(-1, 8).astype(np.uint32)).reshape(shape)


def check_partitions(
    proof_type: int | UpdateConstants,
    comm_r_old: bytes,
    comm_r_new: bytes,
    comm_d_new: bytes,
    proofs: Sequence[PartitionProof | bytes],
    h: int | None = None,
) -> SnapReport:
    """Check every partition proof (decoded, or bincode bytes as the market sends them) of an update proof
    id, or of the constants of one of Rust's test-only sizes."""
    pt: UpdateProofType | None = None
    if isinstance(proof_type, UpdateConstants):
        c = proof_type
    else:
        try:
            pt = update_proof_type(proof_type)
        except ValueError as exc:
            return SnapReport(None, [Failure("header.proof_type", str(exc))])
        c = pt.constants
    name = pt.name if pt is not None else f"the {c.nodes}-node test size"
    report = SnapReport(pt)
    fails = report.failures
    h = c.h if h is None else h
    if h not in hs(c.nodes):
        fails.append(Failure("header.h", f"h = {h} is not one of {hs(c.nodes)}"))
    for name, value, ok in (
        ("comm_r_old", comm_r_old, len(comm_r_old) == NODE and _canonical(comm_r_old)),
        ("comm_r_new", comm_r_new, len(comm_r_new) == NODE and _canonical(comm_r_new)),
        ("comm_d_new", comm_d_new, len(comm_d_new) == NODE and _sha_value(comm_d_new)),
    ):
        if not ok:
            fails.append(Failure(f"header.{name}", f"{name} {bytes(value).hex()} is not a valid commitment"))
    if len(proofs) != c.partitions:
        fails.append(
            Failure("header.partitions", f"{len(proofs)} partition proofs, {name} has {c.partitions}")
        )
    new_r_ok = "header.comm_r_new" not in report.checks_failed()
    phi_value = (
        make_phi(comm_d_new, comm_r_old)
        if not ({"header.comm_r_old", "header.comm_d_new"} & report.checks_failed())
        else None
    )
    if "header.h" in report.checks_failed():
        phi_value = None
    for k, item in enumerate(proofs):
        if isinstance(item, (bytes, bytearray, memoryview)):
            try:
                proof, trailing = decode_partition_proof(bytes(item))
            except SnapFormatError as exc:
                fails.append(Failure("format", str(exc), k))
                continue
            if trailing:
                fails.append(Failure("format.trailing", f"{trailing} bytes after the partition proof", k))
        else:
            proof = item
        if k >= c.partitions:
            continue
        cs = partition_challenges(c, comm_r_new, k) if new_r_ok else None
        fails.extend(_PartitionCheck(c, k, h, comm_r_old, comm_r_new, comm_d_new, proof, cs, phi_value).run())
    return report


class UpdateProofError(CheckError[SnapReport]):
    """A Snap request failed the strict vanilla check (the message lists the first failures)."""


def check_request(snap: object) -> SnapReport:
    """:func:`check_partitions` of a market Snap request (``market.proofdata.Snap``: ProofType, old_r, new_r,
    new_d, Proofs), raising :class:`UpdateProofError` unless every check passes: what the agent runs before it
    accepts Snap work, like ``porep.sdr.vanilla_verify.check_c1`` for PoRep."""
    report = check_partitions(
        snap.proof_type,  # type: ignore[attr-defined]
        snap.old_r,  # type: ignore[attr-defined]
        snap.new_r,  # type: ignore[attr-defined]
        snap.new_d,  # type: ignore[attr-defined]
        list(snap.proofs),  # type: ignore[attr-defined]
    )
    if not report.ok:
        raise UpdateProofError(report)
    return report
