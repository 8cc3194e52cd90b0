"""Tree R of any update shape: one arity-8 base tree (8-0-0), or base trees over contiguous node ranges
joined by a sub level (8-8-0, 8-4-0, 8-2-0) and a top level (8-8-2), as merkletree's compound trees build
them (docs porep.md §4.5). Production sizes we seal are single trees; the compound shapes serve Rust's
test-only update sizes (1KiB … 32KiB), so the Sub and Top proof variants of 32GiB/64GiB requests are
exercised with real trees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from porep.hashes.merkle import MerkleTree, build_poseidon_tree
from porep.hashes.poseidon import hash_domains
from porep.prooftypes import TreeShape
from porep.snap.proof import SINGLE, SUB, TOP, MerkleProof, PathElement


@dataclass(frozen=True)
class TreeR:
    shape: TreeShape
    bases: tuple[MerkleTree, ...]
    sub_roots: tuple[bytes, ...]  # one per sub tree when there is a top level, else empty
    root: bytes

    @property
    def leaves(self) -> np.ndarray:
        if len(self.bases) == 1:
            return self.bases[0].leaves
        return np.concatenate([b.leaves for b in self.bases])

    @property
    def variant(self) -> int:
        return TOP if self.shape.top else SUB if self.shape.sub else SINGLE

    def proofs(self, indices: list[int]) -> list[MerkleProof]:
        per = self.bases[0].leaves.shape[0]
        s = max(self.shape.sub, 1)
        base_roots = [b.root for b in self.bases]
        out = []
        for c in indices:
            b, off = divmod(c, per)
            tree = self.bases[b]
            hashes, pos = tree.path_arrays([off])
            base = tuple(
                PathElement(tuple(h.tobytes() for h in hashes[0, lvl]), int(pos[0, lvl]))
                for lvl in range(tree.depth)
            )
            leaf = tree.leaves[off].tobytes()
            if self.variant == SINGLE:
                out.append(MerkleProof(SINGLE, self.root, leaf, base))
                continue
            g, i = divmod(b, s)
            group = base_roots[g * s : (g + 1) * s]
            sub = (PathElement(tuple(group[:i] + group[i + 1 :]), i),)
            top: tuple[PathElement, ...] = ()
            if self.variant == TOP:
                top = (PathElement(self.sub_roots[:g] + self.sub_roots[g + 1 :], g),)
            out.append(MerkleProof(self.variant, self.root, leaf, base, sub, top))
        return out


def build_tree_r(leaves: np.ndarray, shape: TreeShape) -> TreeR:
    """Tree R over ``uint8[N, 32]`` canonical leaves in the given shape."""
    leaves = np.ascontiguousarray(leaves, dtype=np.uint8).reshape(-1, 32)
    count = shape.base_tree_count
    if leaves.shape[0] % count:
        raise ValueError(f"{leaves.shape[0]} leaves do not split into {count} base trees")
    per = leaves.shape[0] // count
    bases = tuple(build_poseidon_tree(leaves[i * per : (i + 1) * per], shape.base) for i in range(count))
    if count == 1:
        return TreeR(shape, bases, (), bases[0].root)
    s = max(shape.sub, 1)
    groups = [hash_domains([b.root for b in bases[g * s : (g + 1) * s]]) for g in range(count // s)]
    if not shape.top:
        return TreeR(shape, bases, (), groups[0])
    return TreeR(shape, bases, tuple(groups), hash_domains(groups))


def single(tree: MerkleTree) -> TreeR:
    """A sealed sector's tree R_last (8-0-0) as a :class:`TreeR`."""
    return TreeR(TreeShape(tree.arity, 0, 0), (tree,), (), tree.root)
