"""An 8MiB update of a CC sector sealed by porep.sdr.seal (4 partitions, 128 apex leaves, h = 10): the strict
check passes, decoding returns the data, and mutations in every partition are named. About a minute on the
2-core CI machine (the seal), so it runs only with PSAGENT_SNAP_LONG=1."""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import pytest

from porep.fr32 import pad_to_sector, unpadded_size
from porep.ids import prover_id
from porep.sdr.seal import seal
from porep.snap import encoding
from porep.snap.update import update_sector
from porep.snap.verify import check_partitions

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.environ.get("PSAGENT_SNAP_LONG"), reason="long: set PSAGENT_SNAP_LONG=1"),
]


def test_8mib_update() -> None:
    size = 8 << 20
    sealed = seal("StackedDrg8MiBV1_1", prover_id(1000), 5, bytes([3]) * 32, piece=b"")
    piece = random.Random(8).randbytes(unpadded_size(size) // 3)
    u = update_sector(sealed, pad_to_sector(piece, size))
    assert u.proof_type is not None and u.proof_type.name == "StackedDrg8MiBV1" and u.h == 10
    key = np.frombuffer(sealed.replica, np.uint8)
    assert encoding.decode(key, np.frombuffer(u.replica, np.uint8), u.phi, u.h).tobytes() == u.data
    proofs = u.partition_proofs()
    raw = [p.to_bytes() for p in proofs]
    assert [len(r) for r in raw] == [43_864] * 4
    args = (1, u.comm_r_old, u.comm_r_new, u.comm_d_new)
    assert check_partitions(*args, raw).ok
    for k, p in enumerate(proofs):
        a = p.apex_leafs
        apex = (*a[:5], bytes([a[5][0] ^ 1]) + a[5][1:], *a[6:])
        bad = list(proofs)
        bad[k] = dataclasses.replace(p, apex_leafs=apex)
        report = check_partitions(*args, bad)
        assert "apex.root" in report.checks_failed()
        assert {f.partition for f in report.failures} == {k}
    assert "tree_d.index" in check_partitions(*args, raw[1:] + raw[:1]).checks_failed()
