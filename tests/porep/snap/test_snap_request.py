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


def test_public_inputs_of_a_proofdata(request_2kib: Snap) -> None:
    """The prover's entries take the market's ProofData as well as its Snap member; the inputs are
    k_and_h_select = 1 (h_select 1, no partition bits at 2KiB) and the request's three commitments."""
    from market.proofdata import ProofData, SectorID
    from porep.hashes.poseidon import fr_from_le
    from porep.snap.partition import update_public_inputs

    pd = ProofData.parse(ProofData.encode(SectorID(1000, 2), snap=request_2kib))
    s = request_2kib
    want = [[1, fr_from_le(s.old_r), fr_from_le(s.new_d), fr_from_le(s.new_r)]]
    assert update_public_inputs(pd) == update_public_inputs(request_2kib) == want
    porep = dataclasses.replace(pd, snap=None, porep=object())
    with pytest.raises(ValueError, match="not a Snap request"):
        update_public_inputs(porep)
