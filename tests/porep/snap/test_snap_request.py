"""The agent's entry for Snap work: ``porep.snap.verify.check_request`` passes a ``psagent snap make`` request
and raises UpdateProofError naming the failed checks of a tampered one."""

from __future__ import annotations

import dataclasses

import pytest

from market.proofdata import Snap
from porep.snap.verify import UpdateProofError, check_request


def test_check_request(request_2kib: Snap) -> None:
    assert check_request(request_2kib).ok
    raw = bytearray(request_2kib.proofs[0])
    raw[40] ^= 1  # inside apex_leafs[0]
    bad = dataclasses.replace(request_2kib, proofs=(bytes(raw),))
    with pytest.raises(UpdateProofError, match="apex") as info:
        check_request(bad)
    assert "apex.root" in info.value.report.checks_failed()
    with pytest.raises(UpdateProofError, match="header.partitions"):
        check_request(dataclasses.replace(request_2kib, proofs=()))
