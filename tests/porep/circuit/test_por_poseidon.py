"""Poseidon Merkle PoR levels (trees C and R): SPC tests/por_circuit.rs counts (64 leaves per base tree,
public root), the per-level cost 530 / 537 aux (oct) and 314 / 315 (binary), and witness paths whose root is
computed independently with porep.hashes.poseidon; the vectorised level witness against auth_path."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gpu.arith.fields import fr_decode, fr_encode
from porep.circuit import num
from porep.circuit.cs import ConstraintSystem
from porep.circuit.por import PathLevel, auth_path, blank_path, por, poseidon_node
from porep.circuit.por_poseidon import paths_witness
from porep.hashes import poseidon as P

# (base arity, base levels for 64 leaves, sub, top) -> published constraints with a public root
PUBLISHED = {
    (2, 0, 0): 1_887,
    (4, 0, 0): 1_164,
    (8, 0, 0): 1_063,
    (8, 2, 0): 1_377,
    (8, 4, 2): 1_764,
    (8, 8, 0): 1_593,
    (8, 8, 2): 1_907,
}


def _arities(base: int, sub: int, top: int) -> list[int]:
    depth = {2: 6, 4: 3, 8: 2}[base]
    return [base] * depth + ([sub] if sub else []) + ([top] if top else [])


@pytest.mark.parametrize("shape", sorted(PUBLISHED))
def test_published_por_counts(shape: tuple[int, int, int]) -> None:
    cs = ConstraintSystem(witness=False)
    leaf, root = cs.alloc(None), cs.alloc(None)
    por(cs, leaf, root, blank_path(_arities(*shape)), poseidon_node)
    num.inputize(cs, root)  # the published tests use a public root
    assert cs.num_constraints == PUBLISHED[shape]
    assert cs.num_inputs == 3  # ONE, the index, the root


@pytest.mark.parametrize(("arity", "cost", "aux"), [(8, 530, 537), (2, 314, 315), (4, 387, None)])
def test_level_cost(arity: int, cost: int, aux: int | None) -> None:
    one = ConstraintSystem(witness=False)
    por(one, one.alloc(None), one.alloc(None), blank_path([arity]), poseidon_node)
    two = ConstraintSystem(witness=False)
    por(two, two.alloc(None), two.alloc(None), blank_path([arity, arity]), poseidon_node)
    assert two.num_constraints - one.num_constraints == cost
    assert one.num_constraints == cost + 2  # pack_into_inputs + root equality
    if aux is not None:
        assert two.num_aux - one.num_aux == aux


def _random_path(rng: random.Random, arities: list[int]) -> tuple[int, list[PathLevel], int, int]:
    """A leaf, a path with random siblings and positions, its root (reference hash) and node index."""
    leaf = rng.randrange(P.R)
    cur, node, stride, path = leaf, 0, 1, []
    for a in arities:
        sibs = [rng.randrange(P.R) for _ in range(a - 1)]
        index = rng.randrange(a)
        children = list(sibs)
        children.insert(index, cur)
        cur = P.hash_ints(children)
        path.append(PathLevel(a, sibs, index))
        node += index * stride
        stride *= a
    return leaf, path, cur, node


@pytest.mark.parametrize("shape", [(8, 0, 0), (8, 8, 2), (8, 4, 2), (2, 0, 0)])
def test_witness_path(shape: tuple[int, int, int]) -> None:
    rng = random.Random(sum(shape))
    arities = _arities(*shape)
    leaf_v, path, root_v, node = _random_path(rng, arities)
    cs = ConstraintSystem()
    leaf, root = cs.alloc(leaf_v), cs.alloc(root_v)
    with cs.namespace("por"):
        index_input = por(cs, leaf, root, path, poseidon_node)
    assert cs.value(index_input) == node
    assert cs.unsatisfied() is None

    bad = ConstraintSystem()
    leaf, root = bad.alloc(leaf_v), bad.alloc((root_v + 1) % P.R)
    with bad.namespace("por"):
        por(bad, leaf, root, path, poseidon_node)
    row = bad.unsatisfied()
    assert row is not None and "enforce_root" in bad.label(row)


def test_wrong_sibling_changes_the_root() -> None:
    rng = random.Random(3)
    leaf_v, path, root_v, _ = _random_path(rng, [8, 8])
    path[1].siblings = [*(path[1].siblings or [])]
    path[1].siblings[0] = (path[1].siblings[0] + 1) % P.R
    cs = ConstraintSystem()
    por(cs, cs.alloc(leaf_v), cs.alloc(root_v), path, poseidon_node)
    assert cs.unsatisfied() == cs.num_constraints - 1  # only the root equality fails


@pytest.mark.slow  # compiles the template solver (shared with test_template_witness)
def test_vectorised_paths_witness() -> None:
    """por_poseidon.paths_witness gives every level's aux exactly as auth_path allocates them, and the
    reference root, for several 8-8-2 paths at once."""
    rng = random.Random(9)
    arities = [8, 8, 2]
    paths = [_random_path(rng, arities) for _ in range(4)]
    leaves = fr_encode([p[0] for p in paths])
    sibs = [fr_encode([s for p in paths for s in (p[1][h].siblings or [])]).reshape(4, a - 1, 8)
            for h, a in enumerate(arities)]
    idx = np.array([[lvl.index for lvl in p[1]] for p in paths])
    per_level, roots = paths_witness(leaves, sibs, idx)
    assert fr_decode(roots) == [p[2] for p in paths]
    for i, (leaf_v, path, _, _) in enumerate(paths):
        cs = ConstraintSystem()
        auth_path(cs, cs.alloc(leaf_v), path, poseidon_node)
        assert [v for lvl in per_level for v in fr_decode(lvl[i])] == cs.aux_values[1:]
