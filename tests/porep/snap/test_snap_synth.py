"""Sparse (blockwise) Snap requests of any size (porep.snap.synth): blockwise sparse trees equal dense ones;
at Rust's small test sizes, in all three tree-R shapes (Single, Sub, Top), the sparse update equals
byte for byte what the dense updater (porep.snap.update over real trees) makes of the same key and data;
the 2KiB and 8MiB requests pass the strict check, single-field mutations are rejected, and the 2KiB
request's witness satisfies the update R1CS the parameters are made from. 32GiB is timed in the long
suite (PSAGENT_SNAP_LONG=1)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _snap_cases import long_only

from porep.hashes.merkle import build_tree_d, hash_children
from porep.hashes.poseidon import R, hash2
from porep.hashes.sparse_merkle import SparseMerkleTree
from porep.snap.params import constants_for_nodes, update_proof_type
from porep.snap.proof import MerkleProof, PartitionProof, PathElement, decode_partition_proof
from porep.snap.randomness import phi as make_phi
from porep.snap.synth import (
    SparseUpdateError,
    SynthRequest,
    resolve_proof_type,
    sparse_update,
    synth_request,
)
from porep.snap.tree_r import build_tree_r
from porep.snap.update import update
from porep.snap.verify import UpdateProofError, check_request


@pytest.fixture(scope="module")
def req_2kib() -> SynthRequest:
    return synth_request("2KiB", 5)


@pytest.fixture(scope="module")
def req_8mib() -> SynthRequest:
    return synth_request("StackedDrg8MiBV1", 9)


# ------------------------------------------------------------------------------ blockwise sparse trees


def _dense_root(hasher: str, arities: tuple[int, ...], leaves: np.ndarray) -> list[np.ndarray]:
    levels = [leaves]
    for a in arities:
        levels.append(hash_children(hasher, levels[-1].reshape(-1, a, 32)))  # type: ignore[arg-type]
    return levels


@pytest.mark.parametrize(
    ("hasher", "arities", "blocks"),
    [
        ("poseidon", (8, 8, 8, 2), 4),  # a block spans several base subtrees; dense levels above
        ("poseidon", (8, 8, 8, 2), 1024),  # every leaf its own block
        ("poseidon", (8, 8, 8), 2),
        ("sha254", (2,) * 9, 8),
    ],
)
def test_blockwise_sparse_tree_equals_the_dense_tree(
    hasher: str, arities: tuple[int, ...], blocks: int
) -> None:
    rng = np.random.default_rng(blocks)
    size = int(np.prod(arities))
    values = rng.integers(0, 256, (blocks, 32), dtype=np.uint8)
    values[:, 31] &= 0x3F
    leaves = np.repeat(values, size // blocks, axis=0)
    touched = {3: values[-1].tobytes(), size - 2: values[0].tobytes()}  # blockwise and touched together
    for i, v in touched.items():
        leaves[i] = np.frombuffer(v, np.uint8)
    tree = SparseMerkleTree.build(hasher, arities, [v.tobytes() for v in values], touched)  # type: ignore[arg-type]
    dense = _dense_root(hasher, arities, leaves)
    if hasher == "sha254":
        assert tree.root == build_tree_d(leaves).root
    assert tree.root == dense[-1][0].tobytes()
    for lvl, level in enumerate(dense):
        assert np.array_equal(tree.nodes(lvl, np.arange(level.shape[0])), level), lvl
    idx = rng.integers(0, size, 7)
    for (hashes, pos), a in zip(tree.paths(idx), arities, strict=True):
        assert hashes.shape == (7, a - 1, 32) and np.array_equal(pos, idx % a)
        idx = idx // a


def test_blockwise_defaults_refuse_bad_block_counts() -> None:
    with pytest.raises(ValueError, match="power of two"):
        SparseMerkleTree.build("sha254", (2, 2, 2), [bytes(32)] * 3, {})
    with pytest.raises(ValueError, match="power-of-two arities"):
        SparseMerkleTree.build("poseidon", (3, 4), [bytes(32)] * 4, {})


# ------------------------------------------------------------------- equal to the dense updater's bytes


@pytest.mark.parametrize(
    ("nodes", "blocks"),
    [(64, 64), (64, 2), (512, 8), (1024, 1024), (1024, 4)],  # 8-0-0 (2KiB), 8-8-0 Sub, 8-8-2 Top
)
def test_sparse_update_equals_the_dense_update(nodes: int, blocks: int) -> None:
    """The same keys, data and comm_c through porep.snap.update (dense trees, vectorised encoding): the same
    commitments, phi and partition proof bytes, partition by partition."""
    c = constants_for_nodes(nodes)
    s = sparse_update(c, 11, blocks=blocks)
    assert s.proof_type is None and s.constants is c
    keys = np.repeat(np.frombuffer(b"".join(s.keys), np.uint8).reshape(-1, 32), nodes // blocks, axis=0)
    data = np.repeat(np.frombuffer(b"".join(s.data), np.uint8).reshape(-1, 32), nodes // blocks, axis=0)
    dense = update(c, build_tree_r(keys, c.tree_r), s.comm_c, data)
    assert (s.comm_r_old, s.comm_d_new, s.comm_r_new) == (
        dense.comm_r_old,
        dense.comm_d_new,
        dense.comm_r_new,
    )
    assert s.phi == dense.phi == make_phi(s.comm_d_new, s.comm_r_old)
    for k in range(c.partitions):
        assert s.challenges[k].tolist() == dense.challenges(k)
        assert s.partition_proof(k).to_bytes() == dense.partition_proof(k).to_bytes(), k
    with pytest.raises(ValueError, match="no update proof id"):
        s.request()


def test_the_2kib_request_is_a_random_sector(req_2kib: SynthRequest) -> None:
    """At 2KiB every node is its own block: 64 distinct keys and data nodes, data fr32, keys canonical."""
    s = sparse_update("2KiB", 5)
    assert s.blocks == 64 and len(set(s.keys)) == len(set(s.data)) == 64
    assert all(d[31] & 0xC0 == 0 for d in s.data) and all(int.from_bytes(k, "little") < R for k in s.keys)
    assert s.comm_r_old == hash2(s.comm_c, s.tree_r_old.root) != s.comm_r_new
    assert s.request() == req_2kib


# ----------------------------------------------------------------------------------- the strict check


def test_2kib_and_8mib_pass_the_strict_check(req_2kib: SynthRequest, req_8mib: SynthRequest) -> None:
    for req, name, size in ((req_2kib, "StackedDrg2KiBV1", 15_064), (req_8mib, "StackedDrg8MiBV1", 43_864)):
        report = check_request(req)
        assert report.ok and report.proof_type is not None and report.proof_type.name == name
        pt = update_proof_type(req.proof_type)
        assert len(req.proofs) == pt.partitions and {len(p) for p in req.proofs} == {size}  # snap.md §4.2
    # deterministic per seed, different across seeds
    assert synth_request("8MiB", 9) == req_8mib
    assert synth_request("8MiB", 10).new_r != req_8mib.new_r


def _flip(b: bytes, byte: int = 0) -> bytes:
    out = bytearray(b)
    out[byte] ^= 1
    return bytes(out)


def _sibling(mp: MerkleProof, level: int) -> MerkleProof:
    el = mp.base[level]
    return dataclasses.replace(
        mp,
        base=mp.base[:level]
        + (PathElement((_flip(el.hashes[0]), *el.hashes[1:]), el.index),)
        + mp.base[level + 1 :],
    )


def _cp(p: PartitionProof, j: int, **fields: MerkleProof) -> PartitionProof:
    cps = list(p.challenge_proofs)
    cps[j] = dataclasses.replace(cps[j], **fields)
    return dataclasses.replace(p, challenge_proofs=tuple(cps))


Mutation = Callable[[PartitionProof], PartitionProof]
PROOF_MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "comm_c": (lambda p: dataclasses.replace(p, comm_c=_flip(p.comm_c)), "commitments.comm_r_old"),
    "apex leaf": (
        lambda p: dataclasses.replace(p, apex_leafs=(_flip(p.apex_leafs[0]), *p.apex_leafs[1:])),
        "apex.root",
    ),
    "leaf_r_old": (
        lambda p: _cp(
            p,
            3,
            proof_r_old=dataclasses.replace(
                p.challenge_proofs[3].proof_r_old, leaf=_flip(p.challenge_proofs[3].proof_r_old.leaf)
            ),
        ),
        "tree_r_old.path",
    ),
    "leaf_d_new": (
        lambda p: _cp(
            p,
            4,
            proof_d_new=dataclasses.replace(
                p.challenge_proofs[4].proof_d_new, leaf=_flip(p.challenge_proofs[4].proof_d_new.leaf)
            ),
        ),
        "tree_d.path",
    ),
    "leaf_r_new": (
        lambda p: _cp(
            p,
            5,
            proof_r_new=dataclasses.replace(
                p.challenge_proofs[5].proof_r_new, leaf=_flip(p.challenge_proofs[5].proof_r_new.leaf)
            ),
        ),
        "tree_r_new.path",
    ),
    "tree_r_new sibling": (
        lambda p: _cp(p, 1, proof_r_new=_sibling(p.challenge_proofs[1].proof_r_new, 2)),
        "tree_r_new.path",
    ),
    "tree_d sibling": (
        lambda p: _cp(p, 2, proof_d_new=_sibling(p.challenge_proofs[2].proof_d_new, 0)),
        "tree_d.path",
    ),
    "tree_d index": (
        lambda p: _cp(
            p,
            6,
            proof_d_new=dataclasses.replace(
                p.challenge_proofs[6].proof_d_new,
                base=(
                    dataclasses.replace(
                        p.challenge_proofs[6].proof_d_new.base[0],
                        index=1 - p.challenge_proofs[6].proof_d_new.base[0].index,
                    ),
                    *p.challenge_proofs[6].proof_d_new.base[1:],
                ),
            ),
        ),
        "tree_d.index",
    ),
    "tree_r_old root": (
        lambda p: _cp(
            p,
            7,
            proof_r_old=dataclasses.replace(
                p.challenge_proofs[7].proof_r_old, root=_flip(p.challenge_proofs[7].proof_r_old.root)
            ),
        ),
        "tree_r_old.root",
    ),
    "challenge order": (
        lambda p: dataclasses.replace(
            p, challenge_proofs=(p.challenge_proofs[1], p.challenge_proofs[0], *p.challenge_proofs[2:])
        ),
        "tree_d.index",
    ),
}


@pytest.mark.parametrize("name", sorted(PROOF_MUTATIONS))
def test_a_mutated_partition_proof_is_rejected(req_8mib: SynthRequest, name: str) -> None:
    """One field of partition 1 changed (8MiB: 4 partitions, 2 partition bits), re-encoded: the named check
    fails, and only partition 1 fails."""
    mutate, check = PROOF_MUTATIONS[name]
    proof, trailing = decode_partition_proof(req_8mib.proofs[1])
    assert trailing == 0 and proof.to_bytes() == req_8mib.proofs[1]
    bad = mutate(proof).to_bytes()
    assert bad != req_8mib.proofs[1]
    req = dataclasses.replace(req_8mib, proofs=(req_8mib.proofs[0], bad, *req_8mib.proofs[2:]))
    with pytest.raises(UpdateProofError) as info:
        check_request(req)
    report = info.value.report
    assert check in report.checks_failed(), report.failures[:5]
    assert {f.partition for f in report.failures} == {1}


@pytest.mark.parametrize(
    ("field", "value", "check"),
    [
        ("old_r", lambda r: _flip(r.old_r), "commitments.comm_r_old"),
        ("new_r", lambda r: _flip(r.new_r), "commitments.comm_r_new"),
        ("new_d", lambda r: _flip(r.new_d), "tree_d.root"),
        ("proof_type", lambda r: 2, "header.partitions"),
        ("proofs", lambda r: r.proofs[:-1], "header.partitions"),
        ("proofs", lambda r: (r.proofs[1], r.proofs[0], *r.proofs[2:]), "apex.root"),
        ("proofs", lambda r: (r.proofs[0] + b"\0", *r.proofs[1:]), "format.trailing"),
    ],
    ids=[
        "old_r",
        "new_r",
        "new_d",
        "proof_type",
        "one partition short",
        "partitions swapped",
        "trailing byte",
    ],
)
def test_a_mutated_request_is_rejected(
    req_8mib: SynthRequest, field: str, value: Callable[[SynthRequest], Any], check: str
) -> None:
    with pytest.raises(UpdateProofError) as info:
        check_request(dataclasses.replace(req_8mib, **{field: value(req_8mib)}))
    assert check in info.value.report.checks_failed()


def test_bad_arguments() -> None:
    assert resolve_proof_type("32gib") is resolve_proof_type(3) is resolve_proof_type(32 << 30)
    assert resolve_proof_type("StackedDrg64GiBV1").sector_size == 64 << 30
    for bad in ("3GiB", 5, 4096, "StackedDrg32GiBV1_1"):
        with pytest.raises(SparseUpdateError):
            resolve_proof_type(bad)
    for seed in (-1, 1 << 64, 1.5):
        with pytest.raises(SparseUpdateError, match="seed"):
            sparse_update("2KiB", seed)  # type: ignore[arg-type]
    for blocks in (1, 3, 128):  # 2KiB: 2^h = 2 ... N = 64
        with pytest.raises(SparseUpdateError, match="blocks"):
            sparse_update("2KiB", blocks=blocks)


# ----------------------------------------------------------------------------------------- the circuit


@pytest.mark.slow
def test_2kib_witness_satisfies_the_update_r1cs(req_2kib: SynthRequest) -> None:
    """The prover's path: the blank update circuit's R1CS (what parameters are made from) and the request's
    assignment by direct synthesis (~30 s on 2 cores); inputs are the verifier's, computed without it."""
    from porep.snap.partition import update_assignment, update_public_inputs, update_r1cs

    r1cs = update_r1cs(0)
    assert (r1cs.num_constraints, r1cs.num_inputs) == (1_705_039, 5)
    w = update_assignment(req_2kib, 0)
    assert r1cs.first_unsatisfied(w) is None
    inputs = [int.from_bytes(w[i].astype("<u4").tobytes(), "little") for i in range(1, 5)]
    assert inputs == update_public_inputs(req_2kib)[0]
    # the same assignment with one tree-R new sibling changed fails a constraint
    p, _ = decode_partition_proof(req_2kib.proofs[0])
    bad = dataclasses.replace(
        req_2kib, proofs=(_cp(p, 0, proof_r_new=_sibling(p.challenge_proofs[0].proof_r_new, 0)).to_bytes(),)
    )
    assert r1cs.first_unsatisfied(update_assignment(bad, 0)) is not None


# ------------------------------------------------------------------------------------------ 32GiB, long


@long_only
@pytest.mark.parametrize("size", ["32GiB", "64GiB"])
def test_production_size_passes_the_strict_check(size: str) -> None:
    """The production shapes (Sub at 32GiB, Top at 64GiB): 16 partitions × 86 challenges; sizes from snap.md
    §4.2 (561,768 and 575,528 bytes per partition). Measured 32GiB on the 2-core machine: BENCHMARKS.md."""
    synth_request("2KiB")  # compiles the Poseidon kernels: not part of the timing
    t0 = time.perf_counter()
    req = synth_request(size, 1)
    t1 = time.perf_counter()
    report = check_request(req)
    t2 = time.perf_counter()
    per = {"32GiB": 561_768, "64GiB": 575_528}[size]
    assert report.ok and len(req.proofs) == 16 and {len(p) for p in req.proofs} == {per}
    # every partition maps onto the circuit's inputs and passes its synthesis-time assertions (Rust's
    # assert!s: path lengths and arities, k and h_select, one partition path per partition)
    from porep.snap.circuit import _native_checks, partition_witness

    for k in range(16):
        consts, w = partition_witness(req, k)
        _native_checks(consts, w)
        assert w.k_and_h_select == 128 + k and len(w.challenges) == 86
    print(f"\n{size} synth {t1 - t0:.2f} s, strict check {t2 - t1:.2f} s, {16 * per:,} bytes of proofs")
