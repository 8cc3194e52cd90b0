"""C1 formatting as serde_json reads it: accepted (and reported non-canonical) where Rust would accept it,
with the values still checked strictly; ``canonical=True`` demands the exact bytes; lotus-bench's envelope."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from porep.c1 import C1FormatError, KeyOrder, codec, decode_document, jsontext, parse_c1
from porep.c1.envelope import LotusC2Input, parse_lotus_c2_input
from porep.c1.synth import synth_c1_json

RAW = synth_c1_json("StackedDrg2KiBV1_1", seed=7)
GO_RAW = synth_c1_json("StackedDrg2KiBV1_1", seed=7, order=KeyOrder.GO)
DOC = json.loads(RAW)
KEY = "vanilla_proofs.StackedDrg2KiBV1"


def _moved_first(doc: dict, key: str) -> dict:
    return {key: doc[key], **{k: v for k, v in doc.items() if k != key}}


def _nested_unknown(doc: dict) -> bytes:
    doc = json.loads(json.dumps(doc))
    doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]["replica_column_proofs"]["c_x"]["column"]["x"] = [
        1,
        {"a": 2},
    ]
    return json.dumps(doc, separators=(",", ":")).encode()


ACCEPTED = [
    ("trailing newline", RAW + b"\n"),
    ("pretty printed", json.dumps(DOC, indent=2).encode()),
    ("spaces after separators", json.dumps(DOC).encode()),
    ("CRLF and tabs", RAW.replace(b",", b",\r\n\t")),
    ("escaped key", RAW.replace(b'"seed"', b'"se\\u0065d"')),
    ("escaped proof name", RAW.replace(b'"StackedDrg2KiBV1_1"', b'"\\u0053tackedDrg2KiBV1_1"')),
    ("top-level keys reordered", json.dumps(_moved_first(DOC, "ticket"), separators=(",", ":")).encode()),
    ("unknown top-level key", RAW[:-1] + b',"x":{"y":[1.5,"s",null,true]}}'),
    ("unknown nested key", _nested_unknown(DOC)),
    ("unknown key twice", RAW[:-1] + b',"x":1,"x":2}'),
    ("_arity (serde skip) is just unknown", RAW.replace(b'"index":0}', b'"index":0,"_arity":null}', 1)),
]


@pytest.mark.parametrize(("name", "data"), ACCEPTED, ids=[a[0] for a in ACCEPTED])
def test_serde_formatting_is_accepted_and_not_canonical(name: str, data: bytes) -> None:
    want = parse_c1(RAW)
    c1 = parse_c1(data)
    assert not c1.canonical
    assert c1 == want and c1.key_order is KeyOrder.RUST
    assert c1.to_json() == RAW  # the canonical bytes of the same values
    with pytest.raises(C1FormatError, match="not in the canonical"):
        parse_c1(data, canonical=True)


def test_canonical_inputs_say_so_and_pass_canonical_mode() -> None:
    for raw, order in ((RAW, KeyOrder.RUST), (GO_RAW, KeyOrder.GO)):
        c1 = parse_c1(raw, canonical=True)
        assert c1.canonical and c1.key_order is order and c1.to_json() == raw
    go_pretty = json.dumps(json.loads(GO_RAW), indent=1).encode()
    doc = decode_document(go_pretty)
    assert doc.order is KeyOrder.GO and not doc.canonical


def test_canonical_error_points_at_the_first_difference() -> None:
    data = RAW.replace(b',"comm_r":', b', "comm_r":')
    with pytest.raises(C1FormatError) as err:
        parse_c1(data, canonical=True)
    assert err.value.offset == RAW.index(b',"comm_r":') + 1
    assert err.value.path == f"{KEY}[0][1].encoding_proof.node"
    assert 'found b\' "comm_r"' in str(err.value)


def test_values_stay_strict_in_any_formatting() -> None:
    bad = json.loads(RAW)
    bad["seed"][3] = 256
    with pytest.raises(C1FormatError, match=r"^seed\[3\]: expected a byte"):
        parse_c1(json.dumps(bad, indent=2).encode())
    with pytest.raises(C1FormatError, match="duplicate key 'seed'"):
        parse_c1(RAW[:-1] + b',"seed":' + json.dumps(DOC["seed"]).encode() + b"}")
    with pytest.raises(C1FormatError, match=r"column: missing key '_h'"):
        parse_c1(RAW.replace(b',"_h":null', b"", 1))


def test_large_documents_strip_whitespace_without_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SLOW_PATH_MAX_BYTES only whitespace may differ (a pretty-printed 32GiB C1 is ~330 MB)."""
    monkeypatch.setattr(codec, "SLOW_PATH_MAX_BYTES", 1000)

    def no_json(*args: object, **kwargs: object) -> None:
        raise AssertionError("json.loads must not run above the slow-path size")

    monkeypatch.setattr(codec, "_slow_parse", no_json)
    c1 = parse_c1(json.dumps(DOC, indent=2).encode())
    assert not c1.canonical and c1.to_json() == RAW
    with pytest.raises(C1FormatError, match="only whitespace may differ"):
        parse_c1(json.dumps(_moved_first(DOC, "ticket"), indent=2).encode())


def test_strip_whitespace_respects_strings_and_tokens() -> None:
    def strip(text: bytes) -> bytes | None:
        out = jsontext.strip_whitespace(np.frombuffer(text, dtype=np.uint8))
        return None if out is None else out.tobytes()

    assert strip(b' { "a b" : [ 1 , 2 ] } \n') == b'{"a b":[1,2]}'
    assert strip(b'{"a\\" b": 1}') == b'{"a\\" b":1}'  # an escaped quote does not end the string
    assert strip(b'{"a\\\\": 1}') == b'{"a\\\\":1}'  # an escaped backslash does not escape the quote
    assert strip(b"[1 2]") is None and strip(b"[true false]") is None
    assert jsontext.nesting(b'[[{"[[[": "\\"[["}]]') == 3


def test_lotus_bench_envelope() -> None:
    """lotus-bench (cmd/lotus-bench: Commit2In) writes json.Marshal of {SectorNum int64, Phase1Out []byte,
    SectorSize uint64}: Go encodes []byte as standard base64."""
    env = json.dumps(
        {"SectorNum": 9, "Phase1Out": base64.b64encode(RAW).decode(), "SectorSize": 2048},
        separators=(",", ":"),
    ).encode()
    got = parse_lotus_c2_input(env)
    assert got == LotusC2Input(sector_num=9, phase1_out=RAW, sector_size=2048)
    for bad, message in (
        (env.replace(b'"SectorNum":9', b'"SectorNum":-1'), "SectorNum"),
        (env.replace(b'"SectorSize":2048', b'"SectorSize":"2048"'), "SectorSize"),
        (env.replace(b'"Phase1Out":"', b'"Phase1Out":"*'), "base64"),
        (env.replace(b'"Phase1Out":"', b'"Phase1Out":null,"x":"'), "Phase1Out"),
        (b'{"SectorNum":1,"SectorNum":1,"Phase1Out":"","SectorSize":2048}', "duplicate"),
        (b"[1]", "object"),
    ):
        with pytest.raises(C1FormatError, match=message):
            parse_lotus_c2_input(bad)
