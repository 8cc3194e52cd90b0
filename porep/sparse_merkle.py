"""Merkle trees over a sector in which all but a few leaves hold one default value.

A tree whose untouched leaves are all equal has equal untouched subtrees: at every level an untouched node
is the same hash of ``arity`` copies of the level below's default, so the whole tree costs one hash per
level plus the ancestors of the touched leaves. This is what lets :mod:`porep.c1_sparse` build the trees
of a 32GiB or 64GiB sector in milliseconds.

The tree is described by its arity per level, leaf level first, so the Sub/Top shapes of 32GiB/64GiB
(base trees joined by a sub level, then a top level; porep.md §1.4, §4.5) are one tree: leaf ``v`` has
base digits, then its base tree's index within the sub level, then the sub tree's index in the top level,
which is the mixed-radix reading of ``v`` — the base trees split the node range contiguously.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from porep.merkle import Hasher, hash_children

NODE = 32


def _node_array(value: bytes) -> np.ndarray:
    raw = bytes(value)
    if len(raw) != NODE:
        raise ValueError(f"a tree node is {NODE} bytes, got {len(raw)}")
    return np.frombuffer(raw, dtype=np.uint8)


@dataclass(frozen=True)
class SparseMerkleTree:
    """``touched[l]``: the nodes of level ``l`` (0 = leaves) that differ from ``defaults[l]`` or lie above
    a touched leaf; every other node of level ``l`` is ``defaults[l]``. The root is ``touched[-1][0]``."""

    hasher: Hasher
    arities: tuple[int, ...]
    defaults: tuple[bytes, ...]
    touched: tuple[dict[int, bytes], ...]

    @classmethod
    def build(
        cls, hasher: Hasher, arities: Sequence[int], default_leaf: bytes, leaves: Mapping[int, bytes]
    ) -> SparseMerkleTree:
        """The tree whose leaf ``i`` is ``leaves[i]`` where given and ``default_leaf`` elsewhere."""
        arities = tuple(int(a) for a in arities)
        if not arities or any(a < 2 for a in arities):
            raise ValueError(f"arities must be >= 2, got {arities}")
        size = int(np.prod(arities, dtype=object))
        defaults = [bytes(_node_array(default_leaf))]
        for a in arities:
            row = np.broadcast_to(_node_array(defaults[-1]), (1, a, NODE))
            defaults.append(hash_children(hasher, np.ascontiguousarray(row))[0].tobytes())
        level: dict[int, bytes] = {}
        for i, value in leaves.items():
            if not 0 <= int(i) < size:
                raise IndexError(f"leaf {i} outside [0, {size})")
            level[int(i)] = bytes(_node_array(value))
        touched = [level]
        for lvl, a in enumerate(arities):
            parents = np.array(sorted({i // a for i in touched[lvl]} or {0}), dtype=np.int64)
            kids = (parents[:, None] * a + np.arange(a)).reshape(-1)
            children = cls._lookup(touched[lvl], defaults[lvl], kids).reshape(-1, a, NODE)
            hashed = hash_children(hasher, children)
            touched.append({int(p): hashed[j].tobytes() for j, p in enumerate(parents)})
        return cls(hasher, arities, tuple(defaults), tuple(touched))

    @staticmethod
    def _lookup(level: Mapping[int, bytes], default: bytes, indices: np.ndarray) -> np.ndarray:
        out = np.empty((indices.size, NODE), dtype=np.uint8)
        out[:] = np.frombuffer(default, dtype=np.uint8)
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
        return self._lookup(self.touched[level], self.defaults[level], idx)

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
