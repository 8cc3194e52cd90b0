"""The derived 2KiB example of docs snap.md §8.3 (the inputs of Rust's
``test_empty_sector_update_circuit_2kib``, rebuilt with its RNG): every listed value, the public inputs and
the SHA-256 of the bincode PartitionProof. The doc's values come from another implementation, not Rust."""

from __future__ import annotations

import hashlib

import numpy as np
from xorshift import XorShift

from porep.hashes.merkle import build_poseidon_tree
from porep.snap.params import update_proof_type
from porep.snap.proof import decode_partition_proof
from porep.snap.public_inputs import public_inputs
from porep.snap.update import update
from porep.snap.verify import check_partitions


def _fr_nodes(rng: XorShift, n: int) -> np.ndarray:
    return np.frombuffer(b"".join(rng.fr_bytes() for _ in range(n)), np.uint8).reshape(n, 32)


def test_derived_2kib_example() -> None:
    rng = XorShift()
    labels_r_old = _fr_nodes(rng, 64)
    comm_c = rng.fr_bytes()
    labels_d_new = _fr_nodes(rng, 64)
    pt = update_proof_type(0)
    u = update(pt, build_poseidon_tree(labels_r_old, 8), comm_c, labels_d_new, h=1)
    assert u.tree_r_old.root.hex() == "f001800caab660810c59b3ee43ec0110e74581770edd72e9d72de4885e211124"
    assert comm_c.hex() == "6710cd062eaaaf892c4c34a503a889285dcba9467ce7a3b22888f1b525e75d50"
    assert u.comm_r_old.hex() == "6ad2200352361e152605456e1b5892a646fb83459ad4eb70e304e30b2b32dc03"
    assert u.comm_d_new.hex() == "3235065e9bea4850638696064276d5ab7a4729051463153bdeef7fb69254f62b"
    assert (
        u.phi.to_bytes(32, "little").hex()
        == "5ca194430c15bbc25f2aac4fd8ab4a26afd420441ff536ec17bd14b4637ad504"
    )
    assert u.tree_r_new.root.hex() == "9e3cd7637dfcb8d98e983fc9e5772dffdca2da72eabb492c08b5157dbd49252f"
    assert u.comm_r_new.hex() == "6b3b79f12fb3e40c1c31d42632edb7b0806452c6f45375afd0f2612d4ff97332"
    assert u.challenges(0) == [58, 33, 29, 50, 59, 13, 23, 32, 46, 41]
    assert u.tree_r_old.leaves[58].tobytes().hex() == (
        "06d661053c434cb47fc0f6034aac16b7488dccbc4e6c4f6a40ac0fdf173f795d"
    )
    assert u.tree_d_new.leaves[58].tobytes().hex() == (
        "f5f371e6547bbabfb89a5f5a63e106ae0d4181c772e28dabe127a10dcfd23514"
    )
    assert u.tree_r_new.leaves[58].tobytes().hex() == (
        "c3ef320dc17134ef1fc214463b6a24eea83c23d9f84d01656dbeba6a84ce0a49"
    )
    inputs = public_inputs(pt.constants, 0, u.comm_r_old, u.comm_d_new, u.comm_r_new)
    assert inputs == [
        1,
        1745991147847915380700379386088912049497689394538765984563676043035069698666,
        19884680569080748363012228300147704696147031530083636341526810475782843282738,
        22820550511068317971398111838796018487107839993797275914881918555093120662379,
    ]
    raw = u.partition_proof(0).to_bytes()
    assert len(raw) == 15_064
    assert (
        hashlib.sha256(raw).hexdigest() == "5b41501e9c18a26e5142d9ddc4ca72175f63986d0d91d0e4c507df776ab07dbb"
    )
    proof, trailing = decode_partition_proof(raw)
    assert trailing == 0 and proof.to_bytes() == raw
    # Random Fr tree-D leaves (bit 254 may be set) are still canonical: the strict check accepts them.
    report = check_partitions(0, u.comm_r_old, u.comm_r_new, u.comm_d_new, [raw], h=1)
    assert report.ok, [str(f) for f in report.failures]
