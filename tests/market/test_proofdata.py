"""ProofData: Go's field names, exactly one proof kind, and the C1 parsed by porep from its exact bytes.

C1s come from ``porep.c1.synth`` (structurally valid, random values): 2KiB here, 32GiB once (slow-marked).
"""

from __future__ import annotations

import base64
import json
import time

import pytest

from market.cid import RequestCid
from market.errors import ProtocolError
from market.proofdata import ProofData, SectorID, Snap
from porep.c1 import KeyOrder, SealCommitPhase1Output
from porep.c1.synth import synth_c1_json

C1_GO = synth_c1_json("StackedDrg2KiBV1_1", seed=1, order=KeyOrder.GO)
C1_RUST = synth_c1_json("StackedDrg2KiBV1_1", seed=2, order=KeyOrder.RUST)
SNAP = Snap(proof_type=3, old_r=bytes(range(32)), new_r=bytes([9]) * 32, new_d=bytes([1]) * 32,
            proofs=(b"\x00\x01partition-0", b"partition-1"))  # fmt: skip


def test_go_layout_round_trip_keeps_every_byte() -> None:
    raw = ProofData.encode(SectorID(1000, 1), porep=C1_GO)
    assert raw.startswith(b'{"SectorID":{"Miner":1000,"Number":1},"PoRep":{"comm_d":[')
    assert raw.endswith(b',"Snap":null}')
    pd = ProofData.parse(raw)
    assert pd.raw == raw and pd.kind == "PoRep" and pd.deci_cost == 10
    assert pd.sector_id == SectorID(1000, 1)
    assert isinstance(pd.porep, SealCommitPhase1Output)
    assert pd.porep.registered_proof.name == "StackedDrg2KiBV1_1" and pd.porep.key_order == KeyOrder.GO
    assert pd.porep_raw == C1_GO == pd.porep.to_json()
    assert ProofData.encode(pd.sector_id, porep=pd.porep) == raw  # model in, same request bytes out
    assert RequestCid.of(pd.raw).matches(raw)


def test_rust_ordered_c1_and_loose_outer_layout() -> None:
    """Whitespace and key order around the C1 are the uploader's business; the C1 itself must be canonical."""
    raw = (
        ('{ "Note\u00e9": "caf\u00e9 \u2713",\n  "Snap" : null,\t"PoRep":  ').encode()
        + C1_RUST
        + (b' , "SectorID" : {"Number": 6, "Miner": 5} }\n')
    )
    pd = ProofData.parse(raw)
    assert pd.porep is not None and pd.porep_raw == C1_RUST  # byte offsets survive the multi-byte characters
    assert pd.raw == raw and pd.sector_id == SectorID(5, 6) and pd.porep.key_order == KeyOrder.RUST


def test_snap_request() -> None:
    raw = ProofData.encode(SectorID(2**64 - 1, 0), snap=SNAP)
    obj = json.loads(raw)
    assert list(obj) == ["SectorID", "PoRep", "Snap"] and obj["PoRep"] is None
    assert list(obj["Snap"]) == ["ProofType", "old_r", "new_r", "new_d", "Proofs"]
    assert obj["Snap"]["Proofs"][1] == base64.b64encode(b"partition-1").decode()
    pd = ProofData.parse(raw)
    assert pd.snap == SNAP and pd.porep is None and pd.porep_raw is None
    assert pd.kind == "Snap" and pd.deci_cost == 16


def _doc(**members: object) -> bytes:
    return json.dumps(members).encode()


C1_OBJ = json.loads(C1_GO)
SID = {"Miner": 1, "Number": 2}
SID_B = b'{"Miner":1,"Number":2}'
GO_HEAD = b'{"SectorID":{"Miner":1,"Number":2},"PoRep":'


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"SectorID":', "malformed JSON"),
        (b"[]", "expected a JSON object"),
        (b"\xff", "not UTF-8"),
        (GO_HEAD + C1_GO + b',"Snap":null}x', "trailing data"),
        (_doc(PoRep=C1_OBJ), "SectorID is required"),
        (_doc(SectorID=None, PoRep=C1_OBJ), "SectorID is required"),
        (_doc(SectorID=SID, PoRep=None, Snap=None), "exactly one"),
        (_doc(SectorID=SID), "exactly one"),
        (_doc(SectorID=SID, PoRep=C1_OBJ, Snap=SNAP.to_obj()), "exactly one"),
        (_doc(SectorID={"Miner": 1}, PoRep=C1_OBJ), "SectorID"),
        (_doc(SectorID={"Miner": -1, "Number": 2}, PoRep=C1_OBJ), "uint64"),
        (_doc(SectorID={"Miner": True, "Number": 2}, PoRep=C1_OBJ), "uint64"),
        (_doc(SectorID=SID, PoRep=[1, 2]), "C1 output"),
        (_doc(SectorID=SID, porep=C1_OBJ), "only in case"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{},"PoRep":{}}', "duplicate key"),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":{"x":NaN}}', "NaN"),
        # the C1 itself goes through porep's codec: a wrong shape is refused
        (GO_HEAD + b'{"comm_d":[1]},"Snap":null}', "not a valid C1"),
        # Go's layout, where the C1 is cut between fixed prefix and suffix: the cut must be one document
        (GO_HEAD + C1_GO + b',"PoRep":' + C1_GO + b',"Snap":null}', "not a valid C1"),
        (GO_HEAD + C1_GO[:-1] + b',"Snap":null}', "not a valid C1"),
        (GO_HEAD + b'null,"Snap":null}', "exactly one"),
        (b'{"SectorID":{"Miner":18446744073709551616,"Number":2},"PoRep":{},"Snap":null}', "uint64"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "old_r": [0] * 31}), "old_r"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "new_d": [256] + [0] * 31}), "new_d"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "Proofs": ["***"]}), r"Proofs\[0\]"),
        (_doc(SectorID=SID, Snap={**SNAP.to_obj(), "ProofType": "3"}), "ProofType"),
        (_doc(SectorID=SID, Snap={"ProofType": 3}), "lacks"),
        # nesting beyond serde_json's 127 levels, in any member: one clear error, not a RecursionError
        (
            b'{"PoRep":' + b"[" * 100_000 + b"]" * 100_000 + b',"SectorID":{"Miner":1,"Number":2}}',
            "nested deeper",
        ),
        (
            b'{"SectorID":{"Miner":1,"Number":2},"Snap":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
            "nested deeper",
        ),
        (
            b'{"SectorID":{"Miner":1,"Number":2},"X":' + b"[" * 128 + b"]" * 128 + b"}",
            "nested deeper than 127",
        ),
        (b'{"SectorID":{"Miner":1,"Number":2},"PoRep":' + b"[" * 100_000, "nested deeper"),
    ],
)
def test_bad_documents_are_refused_clearly(raw: bytes, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        ProofData.parse(raw)


def test_c1_in_other_formatting_is_parsed_and_flagged() -> None:
    """json.dumps spacing inside the C1 (serde_json reads it): parsed, the exact span kept, not canonical."""
    raw = _doc(SectorID=SID, PoRep=C1_OBJ, Snap=None)
    pd = ProofData.parse(raw)
    assert pd.porep is not None and not pd.porep.canonical and pd.porep.key_order == KeyOrder.GO
    assert pd.porep_raw == json.dumps(C1_OBJ).encode() and pd.porep.to_json() == C1_GO
    canonical = ProofData.parse(ProofData.encode(SectorID(1, 2), porep=C1_GO))
    assert canonical.porep is not None and canonical.porep.canonical


def test_encode_needs_exactly_one_kind() -> None:
    with pytest.raises(ValueError):
        ProofData.encode(SectorID(1, 1))
    with pytest.raises(ValueError):
        ProofData.encode(SectorID(1, 1), porep=C1_GO, snap=SNAP)


@pytest.mark.slow
def test_32gib_request_is_cut_without_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The production shape: a ~40 MB Go-layout request parses through porep's codec alone."""
    c1 = synth_c1_json("StackedDrg32GiBV1_1", seed=3, order=KeyOrder.GO)
    raw = ProofData.encode(SectorID(1000, 1), porep=c1)

    def no_walk(text: str) -> None:
        raise AssertionError("the Go layout must not take the json walk")

    monkeypatch.setattr("market.proofdata._top_level_members", no_walk)
    start = time.perf_counter()
    pd = ProofData.parse(raw)
    elapsed = time.perf_counter() - start
    assert pd.porep is not None and pd.porep_raw == c1 and pd.porep.proof_type.partitions == 10
    assert elapsed < 30, elapsed  # generous for the shared 2-core CI machine; the point is no json.loads
