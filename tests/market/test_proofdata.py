"""ProofData: Go's field names, exactly one proof kind, and the PoRep member kept byte for byte."""

from __future__ import annotations

import base64
import json

import pytest

from market.cid import RequestCid
from market.errors import ProtocolError
from market.proofdata import ProofData, SectorID, Snap


def c1_json(order: str = "go", sep: tuple[str, str] = (",", ":")) -> bytes:
    """A C1-shaped document (tiny vanilla proofs): Curio's Go field order or Rust's serde order."""
    commit = {
        "comm_d": list(range(32)),
        "comm_r": list(range(32, 64)),
        "registered_proof": "StackedDrg2KiBV1_1",
        "replica_id": [7] * 32,
        "seed": [3] * 32,
        "ticket": [4] * 32,
        "vanilla_proofs": {
            "StackedDrg2KiBV1": [[{"comm_d_proofs": {"data": {"Single": {"root": [1] * 32}}}}]]
        },
    }
    keys = list(commit)
    if order == "rust":
        keys = ["registered_proof", "vanilla_proofs", "comm_r", "comm_d", "replica_id", "seed", "ticket"]
    return json.dumps({k: commit[k] for k in keys}, separators=sep).encode()


SNAP = Snap(proof_type=3, old_r=bytes(range(32)), new_r=bytes([9]) * 32, new_d=bytes([1]) * 32,
            proofs=(b"\x00\x01partition-0", b"partition-1"))  # fmt: skip


def test_go_layout_round_trip_keeps_every_byte() -> None:
    c1 = c1_json("go")
    raw = ProofData.encode(SectorID(1000, 1), porep=c1)
    assert raw.startswith(b'{"SectorID":{"Miner":1000,"Number":1},"PoRep":{"comm_d":[0,1,')
    assert raw.endswith(b',"Snap":null}')
    pd = ProofData.parse(raw)
    assert pd.raw == raw and pd.kind == "PoRep" and pd.deci_cost == 10
    assert pd.sector_id == SectorID(1000, 1)
    assert pd.porep is not None and pd.porep.raw == c1
    assert pd.porep.registered_proof == "StackedDrg2KiBV1_1"
    assert list(pd.porep.obj) == ["comm_d", "comm_r", "registered_proof", "replica_id", "seed", "ticket",
                                  "vanilla_proofs"]  # fmt: skip
    assert RequestCid.of(pd.raw).matches(raw)


def test_porep_span_is_exact_with_rust_order_whitespace_and_unicode() -> None:
    c1 = c1_json("rust", sep=(", ", ": "))
    raw = ('{ "Note\u00e9": "caf\u00e9 \u2713",\n  "SectorID" : {"Miner": 5, "Number": 6},\t"PoRep":  '
           ).encode() + c1 + b' ,"Snap" : null }\n'  # fmt: skip
    pd = ProofData.parse(raw)
    assert pd.porep is not None and pd.porep.raw == c1  # byte offsets survive the multi-byte characters
    assert pd.raw == raw and pd.sector_id == SectorID(5, 6)
    assert next(iter(pd.porep.obj)) == "registered_proof"


def test_snap_request() -> None:
    raw = ProofData.encode(SectorID(2**64 - 1, 0), snap=SNAP)
    obj = json.loads(raw)
    assert list(obj) == ["SectorID", "PoRep", "Snap"] and obj["PoRep"] is None
    assert list(obj["Snap"]) == ["ProofType", "old_r", "new_r", "new_d", "Proofs"]
    assert obj["Snap"]["Proofs"][1] == base64.b64encode(b"partition-1").decode()
    pd = ProofData.parse(raw)
    assert pd.snap == SNAP and pd.porep is None and pd.kind == "Snap" and pd.deci_cost == 16


def _doc(**members: object) -> bytes:
    return json.dumps(members).encode()


C1 = json.loads(c1_json())
SID = {"Miner": 1, "Number": 2}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"SectorID":', "malformed JSON"),
        (b"[]", "expected a JSON object"),
        (b"\xff", "not UTF-8"),
        (_doc(SectorID=SID, PoRep=C1, Snap=None) + b"x", "trailing data"),
        (_doc(PoRep=C1), "SectorID is required"),
        (_doc(SectorID=None, PoRep=C1), "SectorID is required"),
        (_doc(SectorID=SID, PoRep=None, Snap=None), "exactly one"),
        (_doc(SectorID=SID), "exactly one"),
        (_doc(SectorID=SID, PoRep=C1, Snap=SNAP.to_obj()), "exactly one"),
        (_doc(SectorID={"Miner": 1}, PoRep=C1), "SectorID"),
        (_doc(SectorID={"Miner": -1, "Number": 2}, PoRep=C1), "uint64"),
        (_doc(SectorID={"Miner": True, "Number": 2}, PoRep=C1), "uint64"),
        (_doc(SectorID=SID, PoRep=[1, 2]), "C1 output"),
        (_doc(SectorID=SID, porep=C1), "only in case"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{},"PoRep":{}}', "duplicate key"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{"x":NaN}}', "NaN"),
        # Go's layout, where the C1 is cut out between fixed prefix and suffix: the cut must be one document
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{},"PoRep":{},"Snap":null}', "trailing data"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{"x":1}},"Snap":null}', "trailing data"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{"x":[1,2},"Snap":null}', "malformed JSON in 'PoRep'"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":null,"Snap":null}', "exactly one"),
        (b'{"SectorID":{"Miner":18446744073709551616,"Number":2},"PoRep":{},"Snap":null}', "uint64"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "old_r": [0] * 31}), "old_r"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "new_d": [256] + [0] * 31}), "new_d"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "Proofs": ["***"]}), r"Proofs\[0\]"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "ProofType": "3"}), "ProofType"),
        (_doc(SectorID=SID, Snap={"ProofType": 3}), "lacks"),
    ],
)
def test_bad_documents_are_refused_clearly(raw: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        ProofData.parse(raw)


def test_encode_needs_exactly_one_kind() -> None:
    with pytest.raises(ValueError):
        ProofData.encode(SectorID(1, 1))
    with pytest.raises(ValueError):
        ProofData.encode(SectorID(1, 1), porep=c1_json(), snap=SNAP)
