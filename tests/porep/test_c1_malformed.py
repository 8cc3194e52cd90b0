"""Malformed and adversarial C1 input: every case is rejected with a C1FormatError whose message names the
JSON path (or byte offset) — never another exception, never a hang. (Formatting that serde_json accepts is
accepted: tests/porep/test_c1_formatting.py.)"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from porep.c1 import C1FormatError, KeyOrder, decode, parse_c1
from porep.c1.codec import SLOW_PATH_MAX_BYTES
from porep.c1.synth import synth_c1_json

RAW = synth_c1_json("StackedDrg2KiBV1_1", seed=3)
GO_RAW = synth_c1_json("StackedDrg2KiBV1_1", seed=3, order=KeyOrder.GO)
DOC = json.loads(RAW)
KEY = "vanilla_proofs.StackedDrg2KiBV1"
P01 = f"{KEY}[0][1]"
DRG3 = f"{P01}.replica_column_proofs.drg_parents[3]"


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def edit(fn: Callable[[dict[str, Any]], None]) -> bytes:
    doc = copy.deepcopy(DOC)
    fn(doc)
    return dumps(doc)


def proof(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]


def drg3(doc: dict[str, Any]) -> dict[str, Any]:
    return proof(doc)["replica_column_proofs"]["drg_parents"][3]


def rows(doc: dict[str, Any]) -> list[Any]:
    return drg3(doc)["column"]["rows"]


CASES: list[tuple[str, bytes, str | None, str]] = [
    # (name, input, expected path (None = whole document), message fragment)
    (
        "row missing",
        edit(lambda d: rows(d).pop()),
        f"{DRG3}.column.rows",
        "expected 2 entries (one per layer), got 1",
    ),
    ("domain short", edit(lambda d: rows(d)[1].pop()), f"{DRG3}.column.rows[1]", "expected 32 bytes, got 31"),
    (
        "domain long",
        edit(lambda d: rows(d)[1].append(0)),
        f"{DRG3}.column.rows[1]",
        "expected 32 bytes, got 33",
    ),
    ("byte 256", edit(lambda d: rows(d)[1].__setitem__(5, 256)), f"{DRG3}.column.rows[1][5]", "got 256"),
    ("negative", edit(lambda d: rows(d)[1].__setitem__(5, -1)), f"{DRG3}.column.rows[1][5]", "got -1"),
    (
        "float",
        edit(lambda d: rows(d)[1].__setitem__(5, 1.5)),
        f"{DRG3}.column.rows[1][5]",
        "got the number 1.5",
    ),
    (
        "string byte",
        edit(lambda d: rows(d)[1].__setitem__(5, "5")),
        f"{DRG3}.column.rows[1][5]",
        "got the string",
    ),
    (
        "bool",
        edit(lambda d: proof(d)["encoding_proof"].__setitem__("node", True)),
        f"{P01}.encoding_proof.node",
        "got a boolean",
    ),
    (
        "NaN",
        re.sub(rb'"node":\d+', b'"node":NaN', RAW, count=1),
        f"{KEY}[0][0].labeling_proofs[0].node",
        "got NaN (not JSON)",
    ),
    (
        "Infinity",
        edit(lambda d: rows(d)[0].__setitem__(0, float("inf"))),
        f"{DRG3}.column.rows[0][0]",
        "got Infinity (not JSON)",
    ),
    (
        "exponent",
        RAW.replace(b'"layer_index":2', b'"layer_index":2e0', 1),
        f"{KEY}[0][0].labeling_proofs[1].layer_index",
        "got the number 2.0",
    ),
    (
        "huge int",
        edit(lambda d: drg3(d)["column"].__setitem__("index", 10**40)),
        f"{DRG3}.column.index",
        "out of range",
    ),
    (
        "5000-digit int",
        edit(lambda d: drg3(d)["column"].__setitem__("index", "X")).replace(b'"X"', b"9" * 5000),
        f"{DRG3}.column.index",
        "out of range",
    ),
    (
        "5000-digit int, slow path",
        edit(lambda d: drg3(d)["column"].__setitem__("index", "X"))
        .replace(b'"X"', b"9" * 5000)
        .replace(b'"seed"', b'"se\\u0065d"'),  # an escape: only json.loads reads it
        f"{DRG3}.column.index",
        "got an integer of 5000 digits",
    ),
    (
        "u64 overflow",
        edit(lambda d: proof(d)["encoding_proof"].__setitem__("node", 2**64)),
        f"{P01}.encoding_proof.node",
        "out of range",
    ),
    (
        "node range",
        edit(lambda d: proof(d)["encoding_proof"].__setitem__("node", 64)),
        f"{P01}.encoding_proof.node",
        "expected a node < 64, got 64",
    ),
    (
        "path index",
        edit(
            lambda d: proof(d)["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1].__setitem__(
                "index", 8
            )
        ),
        f"{P01}.comm_r_last_proof.data.Single.path.path[1].index",
        "expected a path index < 8",
    ),
    (
        "tree D index",
        edit(
            lambda d: proof(d)["comm_d_proofs"]["data"]["Single"]["path"]["path"][0].__setitem__("index", 2)
        ),
        f"{P01}.comm_d_proofs.data.Single.path.path[0].index",
        "expected a path index < 2",
    ),
    (
        "arity",
        edit(lambda d: proof(d)["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1]["hashes"].pop()),
        f"{P01}.comm_r_last_proof.data.Single.path.path[1].hashes",
        "expected 7 sibling hashes, got 6",
    ),
    (
        "path length",
        edit(lambda d: proof(d)["comm_d_proofs"]["data"]["Single"]["path"]["path"].pop()),
        f"{P01}.comm_d_proofs.data.Single.path.path",
        "expected 6 path elements, got 5",
    ),
    (
        "parents",
        edit(lambda d: proof(d)["labeling_proofs"][0]["parents"].pop()),
        f"{P01}.labeling_proofs[0].parents",
        "expected 37 parents, got 36",
    ),
    (
        "labeling count",
        edit(lambda d: proof(d)["labeling_proofs"].pop()),
        f"{P01}.labeling_proofs",
        "expected 2 entries (one per layer), got 1",
    ),
    (
        "drg count",
        edit(lambda d: proof(d)["replica_column_proofs"]["drg_parents"].pop()),
        f"{P01}.replica_column_proofs.drg_parents",
        "expected 6 column proofs, got 5",
    ),
    (
        "exp count",
        edit(lambda d: proof(d)["replica_column_proofs"]["exp_parents"].append({})),
        f"{P01}.replica_column_proofs.exp_parents",
        "expected 8 column proofs, got 9",
    ),
    (
        "layer index",
        edit(lambda d: proof(d)["labeling_proofs"][1].__setitem__("layer_index", 1)),
        f"{P01}.labeling_proofs[1].layer_index",
        "expected layer_index 2, got 1",
    ),
    (
        "encoding layer",
        edit(lambda d: proof(d)["encoding_proof"].__setitem__("layer_index", 1)),
        f"{P01}.encoding_proof.layer_index",
        "expected layer_index 2, got 1",
    ),
    (
        "_h not null",
        edit(lambda d: drg3(d)["column"].__setitem__("_h", 0)),
        f"{DRG3}.column._h",
        "expected null, got 0",
    ),
    ("_h missing", edit(lambda d: drg3(d)["column"].pop("_h")), f"{DRG3}.column", "missing key '_h'"),
    (
        "variant",
        edit(lambda d: proof(d)["comm_r_last_proof"].__setitem__("data", {"Sub": {}})),
        f"{P01}.comm_r_last_proof.data",
        "expected the single key 'Single', got 'Sub'",
    ),
    (
        "two variants",
        edit(lambda d: proof(d)["comm_r_last_proof"]["data"].__setitem__("Top", {})),
        f"{P01}.comm_r_last_proof.data",
        "expected the single key 'Single', got 'Single', 'Top'",
    ),
    (
        "null proof",
        edit(lambda d: proof(d)["labeling_proofs"].__setitem__(0, None)),
        f"{P01}.labeling_proofs[0]",
        "expected an object, got null",
    ),
    (
        "null array",
        edit(lambda d: proof(d)["labeling_proofs"][0].__setitem__("parents", None)),
        f"{P01}.labeling_proofs[0].parents",
        "expected an array of 37, got null",
    ),
    (
        "object for array",
        edit(lambda d: rows(d).__setitem__(0, {})),
        f"{DRG3}.column.rows[0]",
        "expected an array of 32 bytes, got an object",
    ),
    (
        "partitions",
        edit(lambda d: d["vanilla_proofs"]["StackedDrg2KiBV1"].append([])),
        KEY,
        "expected 1 partitions, got 2",
    ),
    (
        "challenges",
        edit(lambda d: d["vanilla_proofs"]["StackedDrg2KiBV1"][0].pop()),
        f"{KEY}[0]",
        "expected 2 challenges, got 1",
    ),
    (
        "no challenges (synthetic precompute output)",
        edit(lambda d: d["vanilla_proofs"]["StackedDrg2KiBV1"][0].clear()),
        f"{KEY}[0]",
        "expected 2 challenges, got 0",
    ),
    (
        "vanilla key",
        edit(
            lambda d: d.__setitem__(
                "vanilla_proofs", {"StackedDrg8MiBV1": d["vanilla_proofs"]["StackedDrg2KiBV1"]}
            )
        ),
        "vanilla_proofs",
        "expected the single key 'StackedDrg2KiBV1', got 'StackedDrg8MiBV1'",
    ),
    (
        "vanilla key digits",
        RAW.replace(b'"StackedDrg2KiBV1":', b'"StackedDrg8KiBV1":'),
        "vanilla_proofs",
        "expected the single key 'StackedDrg2KiBV1'",
    ),
    (
        "V1_1 key",
        RAW.replace(b'"StackedDrg2KiBV1":', b'"StackedDrg2KiBV1_1":'),
        "vanilla_proofs",
        "expected the single key 'StackedDrg2KiBV1'",
    ),
    (
        "unknown proof",
        RAW.replace(b"StackedDrg2KiBV1_1", b"StackedDrg2KiBV1_9"),
        "registered_proof",
        "unknown RegisteredSealProof 'StackedDrg2KiBV1_9'",
    ),
    (
        "proof id",
        edit(lambda d: d.__setitem__("registered_proof", 5)),
        "registered_proof",
        "expected a proof type name",
    ),
    ("missing proof", edit(lambda d: d.pop("registered_proof")), None, "missing key 'registered_proof'"),
    ("missing seed", edit(lambda d: d.pop("seed")), None, "missing key 'seed'"),
    ("duplicate key", RAW.replace(b'"seed":', b'"seed":[0],"seed":', 1), None, "duplicate key 'seed'"),
    (
        "nested duplicate",
        RAW.replace(b'"_h":null', b'"_h":null,"_h":null', 1),
        f"{KEY}[0][0].replica_column_proofs.c_x.column",
        "duplicate key '_h'",
    ),
    ("short seed", edit(lambda d: d["seed"].pop()), "seed", "expected 32 bytes, got 31"),
    (
        "leading zero",
        RAW.replace(b'"layer_index":1', b'"layer_index":01', 1),
        f"{KEY}[0][0].labeling_proofs[0].layer_index",
        "leading zeros",
    ),
    ("non-ASCII key", RAW.replace(b'"seed"', b'"s\xc3\xa9ed"'), None, "missing key 'seed'"),
    ("invalid UTF-8", RAW.replace(b'"seed"', b'"s\xe9ed"'), None, "not UTF-8"),
    ("byte-order mark", b"\xef\xbb\xbf" + RAW, None, "invalid JSON"),
    ("space inside a number", RAW.replace(b'"layer_index":1', b'"layer_index":1 1', 1), None, "invalid JSON"),
    ("NaN in an unknown key", RAW[:-1] + b',"x":[NaN]}', None, "NaN is not JSON"),
    (
        "struct as array",
        edit(lambda d: proof(d).__setitem__("encoding_proof", [[], 1, 1])),
        f"{P01}.encoding_proof",
        "expected an object, got an array",
    ),
    (
        "unit variant as map",
        edit(lambda d: d.__setitem__("registered_proof", {"StackedDrg2KiBV1_1": None})),
        "registered_proof",
        "expected a proof type name",
    ),
    ("top-level array", b"[" + RAW + b"]", None, "expected a JSON object, got an array"),
    ("trailing data", RAW + b" 1", None, "invalid JSON: Extra data"),
    ("NUL byte", RAW[:100] + b"\x00" + RAW[100:], None, "control characters"),
    ("truncated", RAW[: len(RAW) // 2], None, "invalid JSON"),
    ("empty", b"", None, "invalid JSON"),
    ("array document", b"[]", None, "expected a JSON object, got an array"),
    ("string document", b'"StackedDrg2KiBV1_1"', None, "expected a JSON object"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, None, "nested deeper than 127"),
    ("deep objects", b'{"a":' * 5000 + b"1" + b"}" * 5000, None, "nested deeper than 127"),
    ("128 levels", RAW[:-1] + b',"x":' + b"[" * 127 + b"]" * 127 + b"}", None, "nested deeper than 127"),
    ("brackets in strings", b'{"' + b"[" * 100 + b'":1}', None, "missing key 'registered_proof'"),
    (
        "long array",
        edit(lambda d: rows(d).__setitem__(1, [0] * 5000)),
        f"{DRG3}.column.rows[1]",
        "expected 32 bytes, got 5000",
    ),
    (
        "huge array",
        edit(lambda d: rows(d).__setitem__(1, list(range(200)) * 5000)),
        None,
        "longer than any valid StackedDrg2KiBV1_1 C1",
    ),
]


@pytest.mark.parametrize(("name", "data", "path", "message"), CASES, ids=[c[0] for c in CASES])
def test_rejected_with_path(name: str, data: bytes, path: str | None, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(C1FormatError) as err:
        parse_c1(data)
    assert time.perf_counter() - start < 10
    assert err.value.path == path, str(err.value)
    assert message in str(err.value)
    assert str(err.value).startswith(path or "<document>")


def test_go_order_errors_too() -> None:
    doc = json.loads(GO_RAW)
    assert list(doc)[0] == "comm_d"
    doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]["encoding_proof"]["parents"][36][31] = 300
    with pytest.raises(
        C1FormatError, match=r"encoding_proof\.parents\[36\]\[31\]: expected a byte \(0\.\.255\), got 300"
    ):
        parse_c1(dumps(doc))
    assert parse_c1(GO_RAW).to_json() == GO_RAW


def test_size_limits() -> None:
    with pytest.raises(C1FormatError, match="exceeds the limit of 1000"):
        parse_c1(RAW, max_bytes=1000)
    # longer than any valid document of the declared type (whitespace aside): rejected before any parsing
    padded = RAW[:-1] + b',"x":"' + b"a" * 300_000 + b'"}'
    with pytest.raises(C1FormatError, match="longer than any valid StackedDrg2KiBV1_1 C1"):
        parse_c1(padded)
    assert not parse_c1(RAW[:-1] + b" " * 300_000 + b"}").canonical  # whitespace does not count


def test_large_garbage_fails_fast() -> None:
    """Beyond the slow-path size the error comes from the fast scanner, with a byte offset."""
    digits = b"1" * (SLOW_PATH_MAX_BYTES + 10)
    start = time.perf_counter()
    with pytest.raises(C1FormatError, match="not a C1") as err:
        parse_c1(digits)
    assert err.value.offset == 0
    big = RAW[:50] + b" " + b"0," * ((SLOW_PATH_MAX_BYTES // 2) + 10)
    with pytest.raises(C1FormatError):
        parse_c1(big, max_bytes=4 * SLOW_PATH_MAX_BYTES)
    assert time.perf_counter() - start < 30


def test_str_input_and_type_errors() -> None:
    assert parse_c1(RAW.decode()).to_json() == RAW
    with pytest.raises(TypeError):
        parse_c1(123)  # type: ignore[arg-type]


@settings(
    max_examples=int(os.environ.get("C1_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    data=st.data(),
    op=st.sampled_from(["flip", "insert", "delete", "truncate", "splice"]),
    go=st.booleans(),
)
def test_fuzz_never_crashes(data: st.DataObject, op: str, go: bool) -> None:
    """Random byte edits: a C1FormatError, or a C1 that re-serialises to exactly the edited bytes, or (edits
    that serde_json reads the same, e.g. whitespace) a non-canonical C1 with the JSON meaning of the edit."""
    raw = bytearray(GO_RAW if go else RAW)
    pos = data.draw(st.integers(0, len(raw) - 1))
    byte = data.draw(st.sampled_from(list(b'0123456789[]{},:"-.eE nul\\') + [0, 0xFF]))
    if op == "flip":
        raw[pos] = byte
    elif op == "insert":
        raw.insert(pos, byte)
    elif op == "delete":
        del raw[pos]
    elif op == "truncate":
        del raw[pos:]
    else:
        end = data.draw(st.integers(pos, min(len(raw), pos + 200)))
        raw[pos:end] = raw[pos:end][::-1]
    edited = bytes(raw)
    try:
        c1 = parse_c1(edited)
    except C1FormatError:
        return
    if c1.canonical:
        assert c1.to_json() == edited
    else:
        assert json.loads(edited) == json.loads(c1.to_json())


def test_every_single_digit_change_is_kept_or_rejected() -> None:
    """Changing any one digit keeps a valid document (if in range) whose bytes round-trip exactly."""
    positions = [i for i in range(0, len(RAW), 997) if chr(RAW[i]).isdigit()]
    for i in positions:
        edited = RAW[:i] + (b"1" if RAW[i] != ord("1") else b"2") + RAW[i + 1 :]
        try:
            c1 = parse_c1(edited)
        except C1FormatError as exc:
            assert exc.path  # range errors always name their value
            continue
        assert c1.to_json() == edited


def test_decode_reports_key_order() -> None:
    assert decode(RAW)[1] is KeyOrder.RUST
    assert decode(GO_RAW)[1] is KeyOrder.GO
