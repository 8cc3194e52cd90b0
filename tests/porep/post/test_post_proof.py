"""The bincode FallbackPoStSectorProof: Curio's golden 32GiB vanilla proof decoded and re-encoded byte for
byte; malformed bytes named by field and offset."""

from __future__ import annotations

import pytest
from _postdata import Golden

from porep.hashes.poseidon import hash2
from porep.post.proof import PoStFormatError, decode_sector_proof


def test_golden_round_trip(golden: Golden) -> None:
    p, trailing = decode_sector_proof(golden.vproof)
    assert trailing == 0 and len(golden.vproof) == 24_960
    assert p.sector_id == golden.sector == 1
    assert p.comm_r == golden.comm_r  # the SealedCID's digest in postpub.json
    (sp,) = p.sectors
    assert len(sp.inclusion_proofs) == 10
    for mp in sp.inclusion_proofs:
        assert mp.variant == 1 and len(mp.base) == 9 and len(mp.sub) == 1 and mp.root == sp.comm_r_last
        assert all(len(el.hashes) == 7 for el in (*mp.base, *mp.sub))
    assert hash2(sp.comm_c, sp.comm_r_last) == p.comm_r
    assert p.to_bytes() == golden.vproof


def test_malformed(golden: Golden) -> None:
    want = r"truncated at byte 24928: vanilla_proof.sectors\[0\].comm_r_last"
    with pytest.raises(PoStFormatError, match=want):
        decode_sector_proof(golden.vproof[:-8])
    bad = bytearray(golden.vproof)
    bad[56:60] = (7).to_bytes(4, "little")  # inclusion proof 0's ProofData variant (u32)
    with pytest.raises(PoStFormatError, match="unknown ProofData variant 7"):
        decode_sector_proof(bytes(bad))
    huge = bytearray(golden.vproof)
    huge[40:48] = (1 << 40).to_bytes(8, "little")
    with pytest.raises(PoStFormatError, match="claims 1099511627776 elements"):
        decode_sector_proof(bytes(huge))
    _, trailing = decode_sector_proof(golden.vproof + b"xyz")
    assert trailing == 3
