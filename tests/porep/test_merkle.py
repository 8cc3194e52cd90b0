"""Merkle paths (both hashers): generation, root recomputation, positions, persistence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from porep.hashes import poseidon as P
from porep.hashes.merkle import (
    MerkleTree,
    bad_positions,
    build_poseidon_tree,
    build_tree_d,
    insert_children,
    roots_from_paths,
)


def _leaves(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).integers(0, 256, size=(n, 32), dtype=np.uint8)
    x[:, 31] &= 0x3F
    return x


def test_poseidon_tree_matches_reference() -> None:
    leaves = _leaves(64, 1)
    tree = build_poseidon_tree(leaves)
    level = [leaves[i].tobytes() for i in range(64)]
    while len(level) > 1:
        level = [P.hash_domains(level[i : i + 8]) for i in range(0, len(level), 8)]
    assert tree.root == level[0]
    assert tree.depth == 2


@pytest.mark.parametrize("hasher", ["sha254", "poseidon"])
def test_paths_recompute_the_root(hasher: str) -> None:
    leaves = _leaves(64, 2)
    tree = build_tree_d(leaves) if hasher == "sha254" else build_poseidon_tree(leaves)
    idx = np.array([0, 1, 7, 8, 37, 63])
    hashes, pos = tree.path_arrays(idx)
    arity = tree.arity
    # path index folds back to the leaf (MerkleProof::path_index)
    acc = np.zeros(idx.size, dtype=np.int64)
    for lvl in range(pos.shape[1] - 1, -1, -1):
        acc = acc * arity + pos[:, lvl]
    assert np.array_equal(acc, idx)
    roots = roots_from_paths(hasher, leaves[idx], [(hashes, pos)])  # type: ignore[arg-type]
    assert all(r.tobytes() == tree.root for r in roots)
    # a changed sibling or a wrong position changes the root
    bad = hashes.copy()
    bad[2, 1, 0, 0] ^= 1
    assert roots_from_paths(hasher, leaves[idx], [(bad, pos)])[2].tobytes() != tree.root  # type: ignore[arg-type]
    pos2 = pos.copy()
    pos2[4, 0] = (pos2[4, 0] + 1) % arity
    assert roots_from_paths(hasher, leaves[idx], [(hashes, pos2)])[4].tobytes() != tree.root  # type: ignore[arg-type]


def test_insert_children() -> None:
    sib = np.arange(3 * 7 * 32, dtype=np.uint8).reshape(3, 7, 32)
    run = np.full((3, 32), 255, dtype=np.uint8)
    out = insert_children(run, sib, np.array([0, 3, 7]))
    assert out.shape == (3, 8, 32)
    assert (out[0, 0] == 255).all() and np.array_equal(out[0, 1:], sib[0])
    assert (
        (out[1, 3] == 255).all()
        and np.array_equal(out[1, :3], sib[1, :3])
        and np.array_equal(out[1, 4:], sib[1, 3:])
    )
    assert (out[2, 7] == 255).all() and np.array_equal(out[2, :7], sib[2])


def test_bad_positions() -> None:
    h = np.zeros((3, 2, 7, 32), dtype=np.uint8)
    pos = np.array([[0, 7], [8, 0], [-1, 1]])
    assert bad_positions([(h, pos)]).tolist() == [False, True, True]


def test_save_load(tmp_path: Path) -> None:
    tree = build_poseidon_tree(_leaves(64, 3))
    tree.save(tmp_path / "t.dat")
    back = MerkleTree.load(tmp_path / "t.dat", "poseidon", 8, 64)
    assert back.root == tree.root
    assert all(np.array_equal(a, b) for a, b in zip(back.levels, tree.levels, strict=True))
    with pytest.raises(ValueError):
        MerkleTree.load(tmp_path / "t.dat", "poseidon", 8, 512)


def _read_post_vproof(raw: bytes) -> tuple[bytes, list[dict], bytes, bytes]:
    """Decode curio's bincode FallbackPoStSectorProof (fixtures README §4): u64 lengths and indices, u32 enum
    tag (1 = Sub), Sub = (base path, sub path, root, leaf), path element = (Vec<Domain>, u64 index)."""
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        pos += n
        return raw[pos - n : pos]

    def u64() -> int:
        return int.from_bytes(take(8), "little")

    def path() -> list[tuple[list[bytes], int]]:
        out = []
        for _ in range(u64()):
            hashes = [take(32) for _ in range(u64())]
            out.append((hashes, u64()))
        return out

    assert u64() == 1  # sector id
    comm_r = take(32)
    assert u64() == 1  # one SectorProof
    proofs = []
    for _ in range(u64()):
        assert int.from_bytes(take(4), "little") == 1  # ProofData::Sub
        base, sub = path(), path()
        proofs.append({"base": base, "sub": sub, "root": take(32), "leaf": take(32)})
    comm_c, comm_r_last = take(32), take(32)
    assert pos == len(raw)
    return comm_r, proofs, comm_c, comm_r_last


def test_real_32gib_sub_paths(fixtures_dir: Path) -> None:
    """Ten tree-R_last inclusion proofs of a real 32GiB sector (8-8-0: 9 base levels + 1 sub level) hash to
    comm_r_last, and comm_r = Poseidon2(comm_c, comm_r_last) is the sector's SealedCID digest."""
    raw = (fixtures_dir / "curio" / "testgolden" / "post.vproof").read_bytes()
    comm_r, proofs, comm_c, comm_r_last = _read_post_vproof(raw)
    assert len(proofs) == 10 and P.hash2(comm_c, comm_r_last) == comm_r

    def seg(key: str) -> tuple[np.ndarray, np.ndarray]:
        h = np.array(
            [[np.frombuffer(b"".join(hs), np.uint8).reshape(7, 32) for hs, _ in p[key]] for p in proofs]
        )
        return h, np.array([[i for _, i in p[key]] for p in proofs])

    base, sub = seg("base"), seg("sub")
    assert base[0].shape == (10, 9, 7, 32) and sub[0].shape == (10, 1, 7, 32)
    leaves = np.array([np.frombuffer(p["leaf"], np.uint8) for p in proofs])
    roots = roots_from_paths("poseidon", leaves, [base, sub])
    assert all(r.tobytes() == comm_r_last == p["root"] for r, p in zip(roots, proofs, strict=True))
    # the leaf index of a Sub proof: base digits, then sub digit · 8^9 (a node of the 2^30-node sector)
    nodes = [sum(i * 8**k for k, (_, i) in enumerate(p["base"])) + p["sub"][0][1] * 8**9 for p in proofs]
    assert all(0 <= n < 1 << 30 for n in nodes)
    bad = (base[0].copy(), base[1])
    bad[0][3, 8, 6, 0] ^= 1
    assert roots_from_paths("poseidon", leaves, [bad, sub])[3].tobytes() != comm_r_last
