"""Updates of Rust's test-only sizes, built from a random key: compound tree-R shapes (Sub 8-4-0, 8-2-0,
8-8-0 and Top 8-8-2, the variants of 32GiB/64GiB requests) and two partitions with a partition path above
the apex tree. The strict check passes, and sub/top/partition-path mutations are named."""

from __future__ import annotations

import dataclasses

import pytest
from _snap_cases import random_update

from porep.hashes.poseidon import hash_domains
from porep.snap.proof import SUB, TOP, PathElement
from porep.snap.update import SectorUpdate
from porep.snap.verify import check_partitions


def _check(u: SectorUpdate, proofs: list) -> set[str]:
    return check_partitions(u.constants, u.comm_r_old, u.comm_r_new, u.comm_d_new, proofs).checks_failed()


@pytest.mark.parametrize("nodes", [32, 128, 256, 512, 1024])
def test_compound_shapes_pass(nodes: int) -> None:
    u = random_update(nodes, nodes)
    c = u.constants
    proofs = u.partition_proofs()
    assert len(proofs) == c.partitions
    mp = proofs[0].challenge_proofs[0].proof_r_new
    assert mp.variant == c.tree_r_variant == (TOP if c.tree_r.top else SUB)
    # the compound root is Poseidon over the base roots (and the sub roots), as merkletree builds it
    bases = [b.root for b in u.tree_r_new.bases]
    s = c.tree_r.sub
    subs = [hash_domains(bases[i : i + s]) for i in range(0, len(bases), s)]
    assert u.tree_r_new.root == (hash_domains(subs) if c.tree_r.top else subs[0])
    assert _check(u, [p.to_bytes() for p in proofs]) == set()


def test_sub_top_and_partition_path_mutations() -> None:
    u = random_update(1024, 7)  # 8-8-2, two partitions
    proofs = u.partition_proofs()
    p1 = proofs[1]
    cp = p1.challenge_proofs[3]
    mp = cp.proof_r_old
    sub = mp.sub[0]
    top = mp.top[0]
    cases = {
        "sub sibling": dataclasses.replace(
            mp,
            sub=(
                PathElement((bytes([sub.hashes[0][0] ^ 1]) + sub.hashes[0][1:], *sub.hashes[1:]), sub.index),
            ),
        ),
        "sub index": dataclasses.replace(mp, sub=(PathElement(sub.hashes, (sub.index + 1) % 8),)),
        "top index": dataclasses.replace(mp, top=(PathElement(top.hashes, 1 - top.index),)),
        "top sibling": dataclasses.replace(mp, top=(PathElement((bytes(32),), top.index),)),
        "no top": dataclasses.replace(mp, variant=SUB, top=()),
    }
    want = {
        "sub sibling": "tree_r_old.path",
        "sub index": "tree_r_old.index",
        "top index": "tree_r_old.index",
        "top sibling": "tree_r_old.path",
        "no top": "shape.tree_r_old",
    }
    for what, bad in cases.items():
        cps = list(p1.challenge_proofs)
        cps[3] = dataclasses.replace(cp, proof_r_old=bad)
        failed = _check(u, [proofs[0], dataclasses.replace(p1, challenge_proofs=tuple(cps))])
        assert want[what] in failed, (what, failed)
    # tree D above the apex tree: the partition path (one level for two partitions)
    c = u.constants
    d = cp.proof_d_new
    top_el = d.base[-1]
    path = (
        *d.base[:-1],
        PathElement((bytes([top_el.hashes[0][0] ^ 1]) + top_el.hashes[0][1:],), top_el.index),
    )
    cps = list(p1.challenge_proofs)
    cps[3] = dataclasses.replace(cp, proof_d_new=dataclasses.replace(d, base=path))
    failed = _check(u, [proofs[0], dataclasses.replace(p1, challenge_proofs=tuple(cps))])
    assert {"apex.partition_path", "tree_d.path"} <= failed
    assert c.partition_bits == 1 and len(d.base) == c.apex_height + c.apex_bits + 1
    # proofs swapped between partitions: every challenge is wrong
    assert "tree_d.index" in _check(u, [proofs[1], proofs[0]])
