"""An 8MiB committed-capacity sector end to end: seal (2^18 nodes, parent cache, 2 layers, both Poseidon
trees), C1, strict verification. Its comm_d must be the published 8MiB zero commitment (porep.md §3)."""

from __future__ import annotations

import numpy as np
import pytest

from porep.c1 import C1Arrays
from porep.commcid import comm_d_to_cid
from porep.ids import prover_id
from porep.sdr.seal import seal
from porep.sdr.vanilla import make_c1
from porep.sdr.vanilla_verify import verify_c1


@pytest.mark.slow
def test_8mib_cc_sector() -> None:
    sealed = seal("StackedDrg8MiBV1_1", prover_id(1000), 3, bytes([4]) * 32, piece=b"")
    assert sealed.info.comm_d.hex() == "65f29e5d98d246c38b388cfc06db1f6b021303c5a289000bdce832a9c3ec421c"
    assert (
        comm_d_to_cid(sealed.info.comm_d)
        == "baga6ea4seaqgl4u6lwmnerwdrm4iz7ag3mpwwaqtapc2fciabpooqmvjypweeha"
    )
    # CC data is zero, so the replica is the last layer's labels
    assert sealed.replica == sealed.labels[-1].tobytes()
    c1 = make_c1(sealed, bytes([5]) * 32)
    assert len(c1.vanilla_proofs[0][0].comm_d_proofs.path) == 18
    assert len(c1.vanilla_proofs[0][0].comm_r_last_proof.path) == 6
    assert verify_c1(c1, prover_id=prover_id(1000), sector=3).ok
    fields = dict(c1.arrays.fields)
    rows = fields["col.rows"].copy()
    rows[0, 1, 9, 0, 0] ^= 1
    fields["col.rows"] = rows
    bad = verify_c1(C1Arrays(c1.proof_type, fields), prover_id=prover_id(1000), sector=3)
    assert bad.checks_failed() == {"columns.leaf", "labeling.parents", "encoding.parents"}
    assert np.array_equal(sealed.tree_r_last.leaves, sealed.labels[-1])
