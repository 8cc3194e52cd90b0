"""Property tests over generated C1s: every proof type and key order, plus small Sub (8-8-0, 8-2-0) and
Top (8-8-2) geometries so that those merkle shapes are exercised without 40 MB documents."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import numpy as np
import pytest
from c1_oracle import json_roundtrip, reference_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from porep.c1 import C1FormatError, KeyOrder, SealCommitPhase1Output, decode, encode
from porep.c1.synth import synth_arrays
from porep.prooftypes import ProofType, TreeShape, proof_type

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL_TYPES = [t for t in range(20) if proof_type(t).sector_size <= 512 * 1024 * 1024]
orders = st.sampled_from([KeyOrder.RUST, KeyOrder.GO])


@SETTINGS
@given(proof=st.sampled_from(SMALL_TYPES), order=orders, seed=st.integers(0, 2**32 - 1))
def test_registered_types_roundtrip(proof: int, order: KeyOrder, seed: int) -> None:
    arrays = synth_arrays(proof, seed)
    raw = encode(arrays, order)
    assert json_roundtrip(raw) == raw  # the stdlib writes the same bytes back
    assert list(json.loads(raw))[0] == ("registered_proof" if order is KeyOrder.RUST else "comm_d")
    back, got_order = decode(raw)
    assert got_order is order and back.same_as(arrays)
    if len(raw) < 1_000_000:  # models + the dict-based oracle cost ~1 s per 3 MB NI document
        c1 = SealCommitPhase1Output.from_json(raw)
        assert c1.to_json() == raw and reference_json(c1, go=order is KeyOrder.GO) == raw


def small_geometry(shape: TreeShape, layers: int, partitions: int, challenges: int) -> ProofType:
    """A 32GiB/64GiB-named proof type with a small sector (like rust-fil-proofs' 4KiB/16KiB/32KiB tests)."""
    base = proof_type("StackedDrg64GiBV1_1" if shape.top else "StackedDrg32GiBV1_1")
    nodes = 8**2 * shape.base_tree_count  # base trees of depth 2
    return dataclasses.replace(
        base,
        sector_size=nodes * 32,
        layers=layers,
        partitions=partitions,
        challenges_per_partition=challenges,
        tree=shape,
    )


geometries = st.builds(
    small_geometry,
    shape=st.sampled_from([TreeShape(8, 8, 0), TreeShape(8, 2, 0), TreeShape(8, 8, 2)]),
    layers=st.integers(1, 3),
    partitions=st.integers(1, 2),
    challenges=st.integers(1, 3),
)


@SETTINGS
@given(pt=geometries, order=orders, seed=st.integers(0, 2**32 - 1))
def test_sub_and_top_geometries_roundtrip(pt: ProofType, order: KeyOrder, seed: int) -> None:
    arrays = synth_arrays(pt, seed)
    raw = encode(arrays, order)
    assert json_roundtrip(raw) == raw
    doc = json.loads(raw)
    proof = doc["vanilla_proofs"][pt.vanilla_proofs_key][0][0]
    variant = "Top" if pt.tree.top else "Sub"
    inner = proof["comm_r_last_proof"]["data"][variant]
    assert len(inner["base_proof"]["path"]) == 2 and len(inner["sub_proof"]["path"]) == 1
    assert len(inner["sub_proof"]["path"][0]["hashes"]) == pt.tree.sub - 1
    if pt.tree.top:
        assert len(inner["top_proof"]["path"][0]["hashes"]) == pt.tree.top - 1
    back, got_order = decode(raw, proof=pt)
    assert got_order is order and back.same_as(arrays)
    # leaf indices of the synthetic paths reproduce the column nodes
    assert np.array_equal(back.merkle("col").leaf_index(), back["col.index"])


# ----------------------------------------------------------------------------------------------- paths


def _integer_leaves(doc: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(JSON path, container, key) of every integer, with the path spelled the way C1FormatError spells it."""
    out: list[tuple[str, Any, Any]] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc)
    for k, v in items:
        p = (f"{path}.{k}" if path else k) if isinstance(doc, dict) else f"{path}[{k}]"
        if isinstance(v, int) and not isinstance(v, bool):
            out.append((p, doc, k))
        elif isinstance(v, (dict, list)):
            out.extend(_integer_leaves(v, p))
    return out


@settings(max_examples=40, deadline=None)
@given(
    proof=st.sampled_from([0, 5, 10]),
    order=orders,
    pick=st.integers(0, 2**31),
    bad=st.sampled_from([-1, 2**32, 1.5, None, "7", [0]]),
)
def test_any_bad_integer_is_reported_at_its_path(proof: int, order: KeyOrder, pick: int, bad: Any) -> None:
    """Each integer of the document replaced by a wrong value: the error names exactly that value's path."""
    raw = encode(synth_arrays(proof, pick), order)
    doc = json.loads(raw)
    leaves = _integer_leaves(doc)
    path, container, key = leaves[pick % len(leaves)]
    container[key] = bad
    data = json.dumps(doc, separators=(",", ":")).encode()
    with pytest.raises(C1FormatError) as err:
        decode(data)
    assert err.value.path == path, str(err.value)


@settings(max_examples=30, deadline=None)
@given(proof=st.sampled_from([0, 5, 10]), order=orders, pick=st.integers(0, 2**31))
def test_any_out_of_range_value_is_reported_at_its_path(proof: int, order: KeyOrder, pick: int) -> None:
    """Values that keep the structure (fast path): a byte of 256+ or an index/node at its bound."""
    pt = proof_type(proof)
    raw = encode(synth_arrays(proof, pick), order)
    doc = json.loads(raw)
    path, container, key = _integer_leaves(doc)[pick % len(_integer_leaves(doc))]
    if re.search(
        r"(hashes\[\d+\]|rows\[\d+\]|parents\[\d+\]|root|leaf|comm_[rd]|replica_id|seed|ticket)\[\d+\]$", path
    ):
        container[key] = 256 + pick % 1000
        want = "expected a byte"
    elif path.endswith("layer_index"):
        container[key] = pt.layers + 1
        want = "expected layer_index"
    elif path.endswith((".node", "column.index")):
        container[key] = pt.nodes
        want = "expected a node"
    else:
        arity = 2 if ".comm_d_proofs." in path else 8
        container[key] = arity
        want = "expected a path index"
    data = json.dumps(doc, separators=(",", ":")).encode()
    with pytest.raises(C1FormatError, match=want) as err:
        decode(data)
    assert err.value.path == path
