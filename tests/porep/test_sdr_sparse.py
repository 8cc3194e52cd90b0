"""Sparse sectors (porep.sdr.sparse): valid C1s of any size without sealing.

At 2KiB the sparse C1 is byte-identical to the C1 that the sealing path (porep.sdr.vanilla) makes from the
same sector materialised in full and put through the dense tree builders, it passes the strict check, and
every mutation of the strict check's list (tests/porep/test_vanilla.py) is still rejected. The sparse Merkle
tree reproduces Filecoin's published zero commitments up to 32GiB. Sub (8-8-0) and Top (8-8-2) shapes, 8MiB,
32GiB and 64GiB sparse C1s pass the strict check. The 8MiB circuit witness is checked in the long suite
(tests/porep/circuit/test_sparse_c1.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _c1_mutations import flip
from test_vanilla import MUTATIONS, _with

from porep.c1 import C1Arrays, parse_c1
from porep.hashes.merkle import build_poseidon_tree, build_poseidon_tree_mont, build_tree_d
from porep.hashes.poseidon import hash2
from porep.hashes.sha254 import zero_comm
from porep.hashes.sparse_merkle import SparseMerkleTree
from porep.ids import prover_id
from porep.prooftypes import DRG_DEGREE, ProofType, TreeShape, proof_type
from porep.sdr import challenges
from porep.sdr.labels import create_label, parent_slots
from porep.sdr.seal import SealedSector, SectorInfo, column_hashes_mont, encode
from porep.sdr.sparse import (
    SparseSector,
    SparseSectorError,
    sparse_c1_arrays,
    sparse_c1_json,
    sparse_sector,
    tree_arities,
)
from porep.sdr.vanilla import make_c1_arrays
from porep.sdr.vanilla_verify import CHECKS, check_c1, verify_c1

MINER, SECTOR, TICKET, SEED = 1000, 7, bytes([2]) * 32, bytes([3]) * 32
PROVER = prover_id(MINER)


def _verify(arrays: C1Arrays, s: SparseSector) -> set[str]:
    report = verify_c1(arrays, prover_id=s.prover_id, sector=s.sector, porep_id=s.porep_id)
    return report.checks_failed()


def _dense(s: SparseSector) -> SealedSector:
    """The sparse sector written out node by node and built with the sealing path's dense trees."""
    pt = s.proof_type
    n, L = pt.nodes, pt.layers
    labels = np.empty((L, n, 32), dtype=np.uint8)
    labels[:] = np.frombuffer(s.label, dtype=np.uint8)
    for v, rows in s.labels.items():
        labels[:, v] = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(L, 32)
    data = np.empty((n, 32), dtype=np.uint8)
    data[:] = np.frombuffer(s.data, dtype=np.uint8)
    tree_d = build_tree_d(data)
    tree_c = build_poseidon_tree_mont(column_hashes_mont(labels), pt.tree.base)
    tree_r = build_poseidon_tree(encode(labels[-1], data), pt.tree.base)
    info = SectorInfo(
        registered_proof=pt.name,
        prover_id=s.prover_id,
        sector=s.sector,
        ticket=s.ticket,
        porep_id=s.porep_id,
        replica_id=s.replica_id,
        comm_d=tree_d.root,
        comm_c=tree_c.root,
        comm_r_last=tree_r.root,
        comm_r=hash2(tree_c.root, tree_r.root),
    )
    return SealedSector(info, labels, tree_d, tree_c, tree_r)


@pytest.fixture(scope="module")
def sparse_2kib() -> SparseSector:
    return sparse_sector("StackedDrg2KiBV1_1", PROVER, SECTOR, TICKET, SEED)


def test_2kib_equals_the_sealing_path_on_the_materialised_sector(sparse_2kib: SparseSector) -> None:
    s = sparse_2kib
    dense = _dense(s)
    info = dense.info
    assert (s.comm_d, s.comm_c, s.comm_r_last) == (info.comm_d, info.comm_c, info.comm_r_last)
    assert s.comm_r == info.comm_r
    assert sparse_c1_arrays(s).same_as(make_c1_arrays(dense, SEED))
    # the challenged labels are the real labels of their parents in the materialised sector
    parents = dense.graph.parent_cache()
    for v, rows in s.labels.items():
        for layer in range(1, 3):
            src = [layer if slot < DRG_DEGREE else layer - 1 for slot in parent_slots(layer).tolist()]
            p37 = dense.labels[np.array(src) - 1, parents[v][parent_slots(layer)]]
            assert rows[layer - 1] == create_label(s.replica_id, layer, v, p37)
    want = challenges.interactive(64, s.replica_id, SEED, 0, 2)
    assert s.challenges.tolist() == [want]


def test_2kib_passes_the_strict_check_and_roundtrips(sparse_2kib: SparseSector) -> None:
    raw = sparse_c1_json(sparse_2kib)
    c1 = parse_c1(raw, canonical=True)
    report = check_c1(c1, prover_id=PROVER, sector=SECTOR)
    assert report.ok and not report.notes
    assert (c1.ticket, c1.seed, c1.comm_r) == (TICKET, SEED, sparse_2kib.comm_r)


# Position mutations inside a subtree without challenged nodes move the running hash among equal siblings,
# so the root does not change: the index check alone rejects them (the sealed sector's test also sees the
# path fail). Every other mutation fails exactly the checks it fails on a sealed sector.
UNIFORM_POSITION = {
    "tree D position": {"tree_d.index"},  # tree D of constant data is uniform
    "column path position": {"columns.path_index"},  # level 1 of an expander parent's constant subtree
}


@pytest.mark.parametrize("label", list(MUTATIONS))
def test_every_strict_check_mutation_is_rejected(label: str, sparse_2kib: SparseSector) -> None:
    name, mutate, want = MUTATIONS[label]
    arrays = sparse_c1_arrays(sparse_2kib)
    bad = _with(arrays, name, mutate)
    assert not bad.same_as(arrays)
    failed = _verify(bad, sparse_2kib)
    assert failed == UNIFORM_POSITION.get(label, want), f"{label}: {sorted(failed)}"


def test_every_field_mutation_is_rejected(sparse_2kib: SparseSector) -> None:
    """One flipped byte (or +1) in every element of the C1's small fields, a sample of the large ones."""
    arrays = sparse_c1_arrays(sparse_2kib)
    rng = np.random.default_rng(15)
    for name, arr in arrays.fields.items():
        if name in ("seed", "ticket", "comm_r", "comm_d", "replica_id"):
            continue  # the named header mutations above
        byte = arr.dtype == np.uint8
        lead = arr.shape[:-1] if byte else arr.shape
        for _ in range(4):
            idx = tuple(int(rng.integers(0, k)) for k in lead)
            if byte:
                bad = _with(arrays, name, flip(idx, int(rng.integers(0, 31))))
            else:
                bad = _with(arrays, name, lambda a, i=idx: a.__setitem__(i, a[i] + 1))
            failed = _verify(bad, sparse_2kib)
            assert failed and failed <= set(CHECKS), f"{name}{list(idx)}"


# ------------------------------------------------------------------------------------------- the trees


@pytest.mark.parametrize(
    ("size", "want"),
    [
        (2048, "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"),
        (8 << 20, "65f29e5d98d246c38b388cfc06db1f6b021303c5a289000bdce832a9c3ec421c"),
        (32 << 30, "077e5fde35c50a9303a55009e3498a4ebedff39c42b710b730d8ec7ac7afa63e"),
        (64 << 30, "e64005a6bfe3777953b8ad6ef93f0fca1049b2041654f2a411f7702799cece02"),
    ],
)
def test_sparse_tree_d_of_zero_data_is_the_published_zero_commitment(size: int, want: str) -> None:
    """porep.md §3 (go-commp-utils zerocomm), and porep.hashes.sha254.zero_comm."""
    depth = (size // 32).bit_length() - 1
    tree = SparseMerkleTree.build("sha254", (2,) * depth, bytes(32), {})
    assert tree.root.hex() == want == zero_comm(size).hex()


def test_sparse_tree_equals_the_dense_tree_with_mixed_arities() -> None:
    """8 leaves × 8 × 2 (a Top shape): touched leaves anywhere, paths rebuild the root and match the dense
    levels (dense: the 16 base trees and the sub/top hashes computed directly)."""
    rng = np.random.default_rng(4)
    arities = (8, 8, 8, 2)
    size = 8 * 8 * 8 * 2
    leaves = rng.integers(0, 256, size=(size, 32), dtype=np.uint8)
    leaves[:, 31] &= 0x3F
    default = leaves[0].tobytes()
    touched = sorted({int(i) for i in rng.integers(0, size, 12)} | {size - 1})
    leaves[:] = leaves[0]
    for i in touched:
        leaves[i] = rng.integers(0, 256, 32, dtype=np.uint8)
        leaves[i, 31] &= 0x3F
    sparse = SparseMerkleTree.build("poseidon", arities, default, {i: leaves[i].tobytes() for i in touched})
    half = size // 2
    sub_roots = [build_poseidon_tree(leaves[h * half : (h + 1) * half], 8).root for h in range(2)]
    assert sparse.root == hash2(*sub_roots)
    paths = sparse.paths(np.array(touched + [5, 700]))
    from porep.hashes.merkle import roots_from_paths

    segs = [(h[:, None], p[:, None]) for h, p in paths]
    roots = roots_from_paths("poseidon", leaves[touched + [5, 700]], segs)
    assert all(r.tobytes() == sparse.root for r in roots)


# ------------------------------------------------------------------------------------------- other shapes


def _small(shape: TreeShape, layers: int) -> ProofType:
    """A 32GiB/64GiB-named type with a small sector (as tests/porep/test_c1_property.py does)."""
    base = proof_type("StackedDrg64GiBV1_1" if shape.top else "StackedDrg32GiBV1_1")
    nodes = 8**2 * shape.base_tree_count
    return dataclasses.replace(
        base, sector_size=nodes * 32, layers=layers, partitions=2, challenges_per_partition=3, tree=shape
    )


@pytest.mark.parametrize(("shape", "layers"), [(TreeShape(8, 8, 0), 11), (TreeShape(8, 8, 2), 2)])
def test_sub_and_top_shapes_pass_the_strict_check(shape: TreeShape, layers: int) -> None:
    pt = _small(shape, layers)
    s = sparse_sector(pt, PROVER, SECTOR, TICKET, SEED)
    assert tree_arities(pt) == (8, 8, 8) + ((2,) if shape.top else ())
    arrays = sparse_c1_arrays(s)
    assert _verify(arrays, s) == set()
    sub = "r.top.hashes" if shape.top else "r.sub.hashes"
    assert _verify(_with(arrays, sub, flip((1, 2, 0, 0))), s) == {"tree_r.path"}
    moved = _with(arrays, "col.sub.index", lambda a: a.__setitem__((0, 1, 0, 0), 7 - a[0, 1, 0, 0]))
    assert "columns.path_index" in _verify(moved, s)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["StackedDrg8MiBV1_1", "StackedDrg32GiBV1_1", "StackedDrg64GiBV1"])
def test_large_sizes_pass_the_strict_check(name: str) -> None:
    s = sparse_sector(name, PROVER, SECTOR, TICKET, SEED)
    pt = s.proof_type
    report = check_c1(sparse_c1_arrays(s), prover_id=PROVER, sector=SECTOR)
    assert report.ok
    assert s.challenges.shape == (pt.partitions, pt.challenges_per_partition)
    assert len(s.labels) == len(set(s.challenges.reshape(-1).tolist()))


def test_zero_data_is_a_cc_sector() -> None:
    s = sparse_sector("StackedDrg2KiBV1_1", PROVER, SECTOR, TICKET, SEED, data=bytes(32))
    assert s.comm_d == zero_comm(2048)
    assert verify_c1(sparse_c1_arrays(s), prover_id=PROVER, sector=SECTOR).ok


@pytest.mark.parametrize(
    "name", ["StackedDrg2KiBV1_1_Feat_SyntheticPoRep", "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep"]
)
def test_types_whose_challenges_depend_on_comm_r_are_refused(name: str) -> None:
    with pytest.raises(SparseSectorError, match="depend on comm_r"):
        sparse_sector(name, PROVER, SECTOR, TICKET, SEED)


def test_bad_values_are_refused() -> None:
    with pytest.raises(SparseSectorError, match="seed must be 32 bytes"):
        sparse_sector("StackedDrg2KiBV1_1", PROVER, SECTOR, TICKET, b"x")
    with pytest.raises(SparseSectorError, match="top two bits"):
        sparse_sector("StackedDrg2KiBV1_1", PROVER, SECTOR, TICKET, SEED, label=b"\xff" * 32)
