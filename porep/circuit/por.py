"""storage-proofs' Merkle proof-of-retrievability gadget (circuit.md §7.3), with a private root as PoRep uses
it: per level, the index bits (LSB first, one boolean each), the arity−1 siblings, ``insert``, the node hash;
then the index bits packed into one public input and ``computed · 1 = root``.

The level loop is the same for every tree; what differs is the node hash: binary SHA-256 (tree D,
``sha256.hash_multi_leaf``) or neptune's Poseidon of the level's arity (trees C and R,
``porep.circuit.poseidon.poseidon_hash``). ``insert`` (insert_2/4/8) is ``porep.circuit.insertion.insert``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from porep.circuit import boolean as bl
from porep.circuit import num
from porep.circuit.boolean import Boolean
from porep.circuit.cs import ConstraintSystem
from porep.circuit.multipack import pack_into_inputs

Hasher = Callable[[ConstraintSystem, list[int]], int]


@dataclass
class PathLevel:
    """One level of an authentication path as the circuit sees it: ``arity`` children, the arity−1 sibling
    values (JSON ``hashes`` order) and the position ``index`` of the running node; values are None when
    synthesising without a witness."""

    arity: int
    siblings: list[int] | None = None
    index: int | None = None


def blank_path(arities: Sequence[int]) -> list[PathLevel]:
    return [PathLevel(a) for a in arities]


def sha256_node(cs: ConstraintSystem, children: list[int]) -> int:
    from porep.circuit.sha256 import hash_multi_leaf

    return hash_multi_leaf(cs, children)


def poseidon_node(cs: ConstraintSystem, children: list[int]) -> int:
    from porep.circuit.poseidon import poseidon_hash

    return poseidon_hash(cs, children)


def insert(cs: ConstraintSystem, cur: int, bits: list[Boolean], siblings: list[int]) -> list[int]:
    from porep.circuit.insertion import insert as _insert

    return _insert(cs, cur, bits, siblings)


def auth_path(
    cs: ConstraintSystem, leaf: int, path: Sequence[PathLevel], hasher: Hasher
) -> tuple[int, list[Boolean]]:
    """Ascend the path from ``leaf``: (computed root, all index bits LSB first)."""
    cur = leaf
    all_bits: list[Boolean] = []
    for h, level in enumerate(path):
        with cs.namespace(f"level_{h}"):
            nbits = level.arity.bit_length() - 1
            assert level.arity == 1 << nbits, "arity must be a power of two"
            w = cs.witness
            if w and (level.index is None or level.siblings is None):
                raise ValueError(f"path level {h} has no values in witness mode")
            bits = [
                Boolean(bl.alloc_bit(cs, (level.index >> i) & 1 if w and level.index is not None else None))
                for i in range(nbits)
            ]
            all_bits.extend(bits)
            sibs = [
                num.alloc(cs, level.siblings[k] if w and level.siblings is not None else None)
                for k in range(level.arity - 1)
            ]
            children = insert(cs, cur, bits, sibs)
            cur = hasher(cs, children)
    return cur, all_bits


def por(cs: ConstraintSystem, leaf: int, root: int, path: Sequence[PathLevel], hasher: Hasher) -> int:
    """PoRCircuit with a private root (``Root::Var`` leaf and root): returns the index input variable."""
    computed, bits = auth_path(cs, leaf, path, hasher)
    with cs.namespace("path"):
        (index_input,) = pack_into_inputs(cs, bits)
    with cs.namespace("enforce_root"):
        num.equal(cs, computed, root)
    return index_input
