"""Merkle trees as Filecoin builds them: binary sha254 (tree D) and arity-8 Poseidon (tree C, tree R_last).

A tree is its list of levels, leaves first, each a ``uint8[n, 32]`` array (``levels[-1]`` is the root);
this is also the on-disk layout (merkletree's ``DiskStore``: rows concatenated bottom-up). A path element
is (the ``arity − 1`` siblings left to right without the node on the path, the position ``index`` where
the running hash is inserted); element 0 is the leaf level (docs porep.md §1.4). Only single trees are
built here (every sector size we seal has shape 8-0-0); :func:`roots_from_paths` also walks the sub/top
levels of 32GiB/64GiB proofs, so C1s of any size can be verified.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from porep.hashes.poseidon_batch import domains_to_mont, hash_domains_batch, hash_mont, mont_to_domains
from porep.hashes.sha254 import NODE, hash_pairs

Hasher = Literal["sha254", "poseidon"]


@dataclass(frozen=True)
class MerkleTree:
    hasher: Hasher
    arity: int
    levels: tuple[np.ndarray, ...]

    @property
    def root(self) -> bytes:
        return self.levels[-1][0].tobytes()

    @property
    def leaves(self) -> np.ndarray:
        return self.levels[0]

    @property
    def depth(self) -> int:
        """Path elements per proof."""
        return len(self.levels) - 1

    def path_arrays(self, indices: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Proof paths of leaves ``indices``: siblings ``uint8[k, depth, arity-1, 32]`` and positions
        ``int64[k, depth]``."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = self.levels[0].shape[0]
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise IndexError(f"leaf index out of range [0, {n})")
        a = self.arity
        hashes = np.empty((idx.size, self.depth, a - 1, NODE), dtype=np.uint8)
        pos = np.empty((idx.size, self.depth), dtype=np.int64)
        cur = idx.copy()
        for lvl in range(self.depth):
            level = self.levels[lvl]
            p = cur % a
            base = cur - p
            pos[:, lvl] = p
            for s in range(a - 1):
                child = base + s + (s >= p)  # skip the node on the path
                hashes[:, lvl, s] = level[child]
            cur //= a
        return hashes, pos

    def save(self, path: Path) -> None:
        """All levels, leaves first, concatenated (32 bytes per node)."""
        with open(path, "wb") as f:
            for level in self.levels:
                f.write(np.ascontiguousarray(level).tobytes())

    @classmethod
    def load(cls, path: Path, hasher: Hasher, arity: int, leaves: int) -> MerkleTree:
        raw = np.fromfile(path, dtype=np.uint8)
        sizes = level_sizes(leaves, arity)
        if raw.size != sum(sizes) * NODE:
            raise ValueError(
                f"{path}: {raw.size} bytes, a {arity}-ary tree of {leaves} leaves has {sum(sizes) * NODE}"
            )
        nodes = raw.reshape(-1, NODE)
        levels, off = [], 0
        for s in sizes:
            levels.append(nodes[off : off + s])
            off += s
        return cls(hasher, arity, tuple(levels))


def level_sizes(leaves: int, arity: int) -> list[int]:
    """Nodes per level, leaves first; ``leaves`` must be a power of ``arity``."""
    sizes = [leaves]
    while sizes[-1] > 1:
        if sizes[-1] % arity:
            raise ValueError(f"{leaves} leaves is not a power of {arity}")
        sizes.append(sizes[-1] // arity)
    return sizes


def build_tree_d(padded: bytes | np.ndarray) -> MerkleTree:
    """Binary sha254 tree over fr32-padded data (a power-of-two number of 32-byte nodes)."""
    leaves = np.frombuffer(bytes(padded), dtype=np.uint8) if not isinstance(padded, np.ndarray) else padded
    leaves = np.ascontiguousarray(leaves, dtype=np.uint8).reshape(-1, NODE)
    level_sizes(leaves.shape[0], 2)
    levels = [leaves]
    while levels[-1].shape[0] > 1:
        levels.append(hash_pairs(levels[-1]))
    return MerkleTree("sha254", 2, tuple(levels))


def build_poseidon_tree(leaves: np.ndarray, arity: int = 8) -> MerkleTree:
    """Poseidon tree of ``arity`` over ``uint8[n, 32]`` canonical Fr leaves (n a power of ``arity``)."""
    leaves = np.ascontiguousarray(leaves, dtype=np.uint8).reshape(-1, NODE)
    level_sizes(leaves.shape[0], arity)
    levels = [leaves]
    cur = domains_to_mont(leaves)
    while cur.shape[0] > 1:
        cur = hash_mont(cur.reshape(-1, arity, 8))
        levels.append(mont_to_domains(cur))
    return MerkleTree("poseidon", arity, tuple(levels))


def build_poseidon_tree_mont(
    leaves_mont: np.ndarray, arity: int = 8, progress: Callable[[int, int], None] | None = None
) -> MerkleTree:
    """As :func:`build_poseidon_tree` for leaves already in Montgomery form (``uint32[n, 8]``);
    ``progress(hashes done, hashes total)``."""
    sizes = level_sizes(leaves_mont.shape[0], arity)
    total, done = sum(sizes[1:]), 0
    levels = [mont_to_domains(leaves_mont)]
    cur = leaves_mont
    step = 1 << 12
    while cur.shape[0] > 1:
        parents = cur.reshape(-1, arity, 8)
        nxt = np.empty((parents.shape[0], 8), dtype=np.uint32)
        for lo in range(0, parents.shape[0], step):
            hash_mont(parents[lo : lo + step], out=nxt[lo : lo + step])
            done += min(step, parents.shape[0] - lo)
            if progress is not None:
                progress(done, total)
        cur = nxt
        levels.append(mont_to_domains(cur))
    return MerkleTree("poseidon", arity, tuple(levels))


# ---------------------------------------------------------------------------------------------- verification


def insert_children(running: np.ndarray, siblings: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The ``arity`` children of each row: ``siblings[k]`` with ``running[k]`` inserted at ``index[k]``
    (``InclusionPath::root``: ``nodes.insert(index, h)``). Shapes [k, 32], [k, arity-1, 32], [k]."""
    k, sib = siblings.shape[0], siblings.shape[1]
    arity = sib + 1
    p = np.arange(arity)[None, :]
    idx = index.reshape(-1, 1)
    gather = np.clip(p - (p > idx), 0, max(sib - 1, 0))
    children = np.take_along_axis(siblings, gather[:, :, None].repeat(NODE, axis=2), axis=1)
    on_path = (p == idx)[:, :, None]
    return np.where(on_path, running[:, None, :], children).reshape(k, arity, NODE)


def hash_children(hasher: Hasher, children: np.ndarray) -> np.ndarray:
    """Hash each row of ``uint8[k, arity, 32]``.

    Poseidon rows are deduplicated first: paths of one sector meet near the root (and a node's DRG parents
    sit next to it), so the upper levels of many proofs hash the same children.
    """
    if hasher == "poseidon" and children.shape[0] > 1:
        flat = np.ascontiguousarray(children).reshape(children.shape[0], -1)
        keys = flat.view(np.dtype((np.void, flat.shape[1]))).ravel()
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if first.size < children.shape[0]:
            return hash_domains_batch(np.ascontiguousarray(children[first]))[inverse.reshape(-1)]
    if hasher == "sha254":
        if children.shape[1] != 2:
            raise ValueError("sha254 tree nodes are binary")
        return hash_pairs(np.ascontiguousarray(children).reshape(-1, NODE))
    return hash_domains_batch(children)


def roots_from_paths(
    hasher: Hasher, leaves: np.ndarray, segments: Sequence[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """Recompute the root of every proof: ``leaves`` ``uint8[k, 32]``; ``segments`` = (siblings
    ``uint8[k, levels, arity-1, 32]``, positions ``int[k, levels]``) for base, then sub, then top.

    Positions must already be checked to lie in [0, arity) (:func:`bad_positions`).
    """
    cur = np.ascontiguousarray(leaves, dtype=np.uint8).reshape(-1, NODE)
    for hashes, index in segments:
        for lvl in range(hashes.shape[1]):
            children = insert_children(cur, hashes[:, lvl], np.asarray(index)[:, lvl])
            cur = hash_children(hasher, children)
    return cur


def bad_positions(segments: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Boolean mask [k]: some path position is outside [0, arity)."""
    bad = None
    for hashes, index in segments:
        arity = hashes.shape[2] + 1
        b = ((np.asarray(index) < 0) | (np.asarray(index) >= arity)).any(axis=1)
        bad = b if bad is None else (bad | b)
    assert bad is not None
    return bad
