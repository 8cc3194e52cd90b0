"""Merkle trees over a sector in which all but a few leaves hold one default value.

A tree whose untouched leaves are all equal has equal untouched subtrees: at every level an untouched node
is the same hash of ``arity`` copies of the level below's default, so the whole tree costs one hash per
level plus the ancestors of the touched leaves. This is what lets :mod:`porep.sdr.sparse` build the trees
of a 32GiB or 64GiB sector in milliseconds.

The tree is described by its arity per level, leaf level first, so the Sub/Top shapes of 32GiB/64GiB
(base trees joined by a sub level, then a top level; porep.md §1.4, §4.5) are one tree: leaf ``v`` has
base digits, then its base tree's index within the sub level, then the sub tree's index in the top level,
which is the mixed-radix reading of ``v`` — the base trees split the node range contiguously.

The default may also be *blockwise*: B values (B a power of two dividing the leaf count), leaf ``i``
defaulting to value ``i·B // size``, i.e. B contiguous runs of equal leaves. A level then has one default per
block while a node lies inside one block, and at most B distinct nodes above that: one hash per block per
level. This is what a SnapDeals update needs (:mod:`porep.snap.synth`): its new replica is key + data·rho,
and rho changes every N/2^h nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from porep.hashes.merkle import Hasher, hash_children

NODE = 32


def _node_array(value: bytes) -> np.ndarray:
    raw = bytes(value)
    if len(raw) != NODE:
        raise ValueError(f"a tree node is {NODE} bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype=np.uint8)


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class SparseMerkleTree:
    """``touched[l]``: the nodes of level ``l`` (0 = leaves) that differ from their default or lie above a
    touched leaf; every other node ``j`` of level ``l`` (``n`` nodes) is ``defaults[l][j·B_l // n]``, with
    ``B_l = len(defaults[l])`` (1 for a single default). The root is ``touched[-1][0]``."""

    hasher: Hasher
    arities: tuple[int, ...]
    defaults: tuple[np.ndarray, ...]  # uint8[B_l, 32] per level
    touched: tuple[dict[int, bytes], ...]

    @classmethod
    def build(
        cls,
        hasher: Hasher,
        arities: Sequence[int],
        default_leaf: bytes | Sequence[bytes],
        leaves: Mapping[int, bytes],
    ) -> SparseMerkleTree:
        """The tree whose leaf ``i`` is ``leaves[i]`` where given and the default elsewhere: ``default_leaf``
        itself, or ``default_leaf[i·B // size]`` for a sequence of B values (B a power of two)."""
        arities = tuple(int(a) for a in arities)
        if not arities or any(a < 2 for a in arities):
            raise ValueError(f"arities must be >= 2, got {arities}")
        size = int(np.prod(arities, dtype=object))
        blocks = [default_leaf] if isinstance(default_leaf, bytes) else list(default_leaf)
        first = np.stack([_node_array(b) for b in blocks]) if len(blocks) else np.empty((0, NODE), np.uint8)
        if not _is_pow2(first.shape[0]) or size % first.shape[0]:
            raise ValueError(f"{first.shape[0]} default blocks do not split {size} leaves (a power of two)")
        if first.shape[0] > 1 and not all(_is_pow2(a) for a in arities):
            raise ValueError(f"blockwise defaults need power-of-two arities, got {arities}")
        defaults = [first]
        width = size
        for a in arities:
            prev, width = defaults[-1], width // a
            count = min(prev.shape[0], width)
            reps = np.arange(count, dtype=np.int64) * (width // count)  # one parent per block of this level
            kids = (reps[:, None] * a + np.arange(a)).reshape(-1)
            rows = prev[kids * prev.shape[0] // (width * a)].reshape(count, a, NODE)
            defaults.append(hash_children(hasher, np.ascontiguousarray(rows)))
        for d in defaults:
            d.flags.writeable = False
        level: dict[int, bytes] = {}
        for i, value in leaves.items():
            if not 0 <= int(i) < size:
                raise IndexError(f"leaf {i} outside [0, {size})")
            level[int(i)] = bytes(_node_array(value))
        touched = [level]
        width = size
        for lvl, a in enumerate(arities):
            parents = np.array(sorted({i // a for i in touched[lvl]} or {0}), dtype=np.int64)
            kids = (parents[:, None] * a + np.arange(a)).reshape(-1)
            children = cls._lookup(touched[lvl], defaults[lvl], width, kids).reshape(-1, a, NODE)
            hashed = hash_children(hasher, children)
            touched.append({int(p): hashed[j].tobytes() for j, p in enumerate(parents)})
            width //= a
        return cls(hasher, arities, tuple(defaults), tuple(touched))

    @staticmethod
    def _lookup(
        level: Mapping[int, bytes], defaults: np.ndarray, width: int, indices: np.ndarray
    ) -> np.ndarray:
        """Nodes ``indices`` of a level of ``width`` nodes whose defaults are ``defaults`` (B blocks)."""
        out = defaults[np.asarray(indices, dtype=np.int64) * defaults.shape[0] // width]
        for j, i in enumerate(indices.tolist()):
            value = level.get(i)
            if value is not None:
                out[j] = np.frombuffer(value, dtype=np.uint8)
        return out

    @property
    def size(self) -> int:
        """Number of leaves."""
        return int(np.prod(self.arities, dtype=object))

    @property
    def root(self) -> bytes:
        return self.touched[-1][0]

    def nodes(self, level: int, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """``uint8[k, 32]``: the nodes at ``indices`` of ``level`` (0 = leaves)."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        width = int(np.prod(self.arities[level:], dtype=object))
        if idx.size and (idx.min() < 0 or idx.max() >= width):
            raise IndexError(f"node index outside [0, {width}) at level {level}")
        return self._lookup(self.touched[level], self.defaults[level], width, idx)

    def paths(self, indices: Sequence[int] | np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per level, leaf level first: (siblings ``uint8[k, arity-1, 32]`` left to right without the node
        on the path, position ``int64[k]`` where the running hash is inserted) for leaves ``indices``."""
        cur = np.asarray(indices, dtype=np.int64).reshape(-1).copy()
        if cur.size and (cur.min() < 0 or cur.max() >= self.size):
            raise IndexError(f"leaf index outside [0, {self.size})")
        out = []
        for lvl, a in enumerate(self.arities):
            pos = cur % a
            first = cur - pos
            slots = np.arange(a - 1)[None, :]
            sib = first[:, None] + slots + (slots >= pos[:, None])  # skip the node on the path
            hashes = self.nodes(lvl, sib.reshape(-1)).reshape(cur.size, a - 1, NODE)
            out.append((hashes, pos))
            cur = cur // a
        return out
