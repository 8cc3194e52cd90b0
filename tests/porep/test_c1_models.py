"""C1 models: built in Python, serialised in both key orders byte-identically to an independent writer,
parsed back equal; validation against the proof type with path-named errors; arrays agree with models."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pydantic
import pytest
from c1_oracle import GO_TOP, RUST_TOP, json_roundtrip, random_2kib_c1, reference_json

from porep.c1 import (
    C1FormatError,
    Column,
    ColumnProof,
    KeyOrder,
    PathElement,
    SealCommitPhase1Output,
    SubProof,
    detect,
    domain_to_int,
    int_to_domain,
    parse_c1,
)
from porep.c1.synth import synth_c1, synth_c1_json
from porep.prooftypes import proof_type


@pytest.fixture(scope="module")
def c1() -> SealCommitPhase1Output:
    return random_2kib_c1(seed=7)


@pytest.mark.parametrize("order", [KeyOrder.RUST, KeyOrder.GO])
def test_model_roundtrip_both_orders(c1: SealCommitPhase1Output, order: KeyOrder) -> None:
    go = order is KeyOrder.GO
    raw = c1.to_json(order)
    assert raw == reference_json(c1, go=go)
    assert raw.startswith(b'{"' + (GO_TOP if go else RUST_TOP)[0].encode() + b'"')
    back = parse_c1(raw)
    assert back == c1
    assert back.key_order is order
    assert back.to_json() == raw  # the input's order is kept
    assert detect(raw) == (proof_type("StackedDrg2KiBV1_1"), order)
    other = KeyOrder.RUST if go else KeyOrder.GO
    assert back.to_json(other) == reference_json(c1, go=not go)


def test_built_model_defaults_to_rust_order(c1: SealCommitPhase1Output) -> None:
    assert c1.key_order is KeyOrder.RUST
    assert c1.to_json() == c1.to_json(KeyOrder.RUST) == c1.to_json("rust")


def test_json_text_shape(c1: SealCommitPhase1Output) -> None:
    raw = c1.to_json()
    assert raw.startswith(
        b'{"registered_proof":"StackedDrg2KiBV1_1","vanilla_proofs":{"StackedDrg2KiBV1":[[{'
    )
    assert b'{"comm_d_proofs":{"data":{"Single":{"root":[' in raw
    assert b'"_h":null},"inclusion_proof":{"data":{"Single":' in raw
    assert b" " not in raw and b"\n" not in raw
    assert json_roundtrip(raw) == raw


def test_accessors(c1: SealCommitPhase1Output) -> None:
    a = c1.arrays
    assert c1.proof_type.name == "StackedDrg2KiBV1_1"
    assert a["col.rows"].shape == (1, 2, 15, 2, 32) and a["col.rows"].dtype == np.uint8
    for k, i, proof in c1.proofs():
        cols = proof.replica_column_proofs.all()
        assert len(cols) == 15
        for j, cp in enumerate(cols):
            assert a["col.index"][k, i, j] == cp.column.index
            assert np.array_equal(a["col.rows"][k, i, j], cp.column.rows_array())
            assert a["col.leaf"][k, i, j].tobytes() == cp.inclusion_proof.leaf
        assert np.array_equal(a["lab.parents"][k, i, 1], proof.labeling_proofs[1].parents_array())
        assert a["d.base.index"][k, i].tolist() == [e.index for e in proof.comm_d_proofs.path]
        assert a.merkle("d").leaf_index()[k, i] == proof.comm_d_proofs.leaf_index
        assert a.merkle("col").leaf_index()[k, i, 0] == cols[0].inclusion_proof.leaf_index
    assert a.domain("comm_r") == c1.comm_r
    assert domain_to_int(int_to_domain(12345)) == 12345 and int_to_domain(1)[0] == 1
    with pytest.raises(ValueError):
        a["col.rows"][0, 0, 0, 0, 0] = 1  # read-only
    with pytest.raises(pydantic.ValidationError):
        c1.comm_r = bytes(32)  # type: ignore[misc]


def _replace_column(
    c1: SealCommitPhase1Output, k: int, i: int, j: int, cp: ColumnProof
) -> SealCommitPhase1Output:
    proof = c1.vanilla_proofs[k][i]
    rcp = proof.replica_column_proofs
    drg = list(rcp.drg_parents)
    drg[j] = cp
    proof = proof.model_copy(
        update={"replica_column_proofs": rcp.model_copy(update={"drg_parents": tuple(drg)})}
    )
    part = list(c1.vanilla_proofs[k])
    part[i] = proof
    vp = list(c1.vanilla_proofs)
    vp[k] = tuple(part)
    fields = {name: getattr(c1, name) for name in SealCommitPhase1Output.model_fields}
    return SealCommitPhase1Output(**{**fields, "vanilla_proofs": tuple(vp)})


def test_validation_names_the_path(c1: SealCommitPhase1Output) -> None:
    cp = c1.vanilla_proofs[0][1].replica_column_proofs.drg_parents[3]
    base = re.escape("vanilla_proofs.StackedDrg2KiBV1[0][1].replica_column_proofs.drg_parents[3]")
    short = cp.model_copy(update={"column": Column(index=cp.column.index, rows=cp.column.rows[:1])})
    with pytest.raises(pydantic.ValidationError, match=rf"{base}\.column\.rows: expected 2 elements, got 1"):
        _replace_column(c1, 0, 1, 3, short)
    proof = cp.inclusion_proof
    sub = SubProof(base_proof=proof.path, sub_proof=proof.path[:1], root=proof.root, leaf=proof.leaf)
    with pytest.raises(
        pydantic.ValidationError, match=rf"{base}\.inclusion_proof: expected a Single merkle proof"
    ):
        _replace_column(c1, 0, 1, 3, cp.model_copy(update={"inclusion_proof": sub}))
    bad_element = PathElement(hashes=proof.path[0].hashes[:6], index=0)
    wrong_arity = proof.model_copy(update={"path": (bad_element, proof.path[1])})
    with pytest.raises(
        pydantic.ValidationError, match=rf"{base}\.inclusion_proof\.data\.Single\.path\.path\[0\]\.hashes"
    ):
        _replace_column(c1, 0, 1, 3, cp.model_copy(update={"inclusion_proof": wrong_arity}))
    bad_index = proof.model_copy(
        update={"path": (PathElement(hashes=proof.path[0].hashes, index=8), proof.path[1])}
    )
    with pytest.raises(pydantic.ValidationError, match=r"path\[0\]\.index: expected a path index < 8, got 8"):
        _replace_column(c1, 0, 1, 3, cp.model_copy(update={"inclusion_proof": bad_index}))
    far = cp.model_copy(update={"column": Column(index=64, rows=cp.column.rows)})
    with pytest.raises(
        pydantic.ValidationError, match=rf"{base}\.column\.index: expected a node < 64, got 64"
    ):
        _replace_column(c1, 0, 1, 3, far)


def test_field_validation() -> None:
    with pytest.raises(pydantic.ValidationError, match="expected 32 bytes, got 31"):
        PathElement(hashes=(bytes(31),), index=0)
    with pytest.raises(pydantic.ValidationError):
        PathElement(hashes=("0" * 32,), index=0)  # a str is not bytes
    with pytest.raises(pydantic.ValidationError):
        PathElement(hashes=(bytes(32),), index=True)  # strict ints
    with pytest.raises(pydantic.ValidationError):
        PathElement(hashes=(bytes(32),), index=-1)
    with pytest.raises(pydantic.ValidationError):
        Column(index=2**32, rows=())
    with pytest.raises(pydantic.ValidationError):
        PathElement(hashes=(bytes(32),), index=0, extra=1)  # type: ignore[call-arg]


def test_wrong_partition_count(c1: SealCommitPhase1Output) -> None:
    fields = {name: getattr(c1, name) for name in SealCommitPhase1Output.model_fields}
    with pytest.raises(
        pydantic.ValidationError, match=r"vanilla_proofs.StackedDrg2KiBV1: expected 1 partitions"
    ):
        SealCommitPhase1Output(**{**fields, "vanilla_proofs": c1.vanilla_proofs * 2})
    with pytest.raises(
        pydantic.ValidationError, match=r"StackedDrg2KiBV1\[0\]: expected 2 challenges, got 1"
    ):
        SealCommitPhase1Output(**{**fields, "vanilla_proofs": (c1.vanilla_proofs[0][:1],)})
    with pytest.raises(pydantic.ValidationError, match="unknown RegisteredSealProof"):
        SealCommitPhase1Output(**{**fields, "registered_proof": "StackedDrg4KiBV1"})
    # id and enum are accepted as well as the name; an 8MiB type does not fit 2KiB proofs
    assert SealCommitPhase1Output(**{**fields, "registered_proof": 5}) == c1
    with pytest.raises(pydantic.ValidationError, match="path elements"):
        SealCommitPhase1Output(**{**fields, "registered_proof": 6})


@pytest.mark.parametrize("proof", ["StackedDrg2KiBV1", "StackedDrg8MiBV1_1_Feat_SyntheticPoRep", 15])
def test_synthetic_models_roundtrip(proof: str | int) -> None:
    c1 = synth_c1(proof, seed=3, key_order=KeyOrder.GO)
    raw = c1.to_json()
    assert raw == reference_json(c1, go=True) == synth_c1_json(proof, seed=3, order="go")
    assert parse_c1(raw) == c1
    pt = c1.proof_type
    assert len(c1.vanilla_proofs) == pt.partitions
    assert {len(p) for p in c1.vanilla_proofs} == {pt.challenges_per_partition}
    # synthetic indices are consistent: challenge = c_x column = labeling node = leaf of every path
    for _, _, p in c1.proofs():
        x = p.encoding_proof.node
        assert p.comm_d_proofs.leaf_index == p.comm_r_last_proof.leaf_index == x
        assert p.replica_column_proofs.c_x.column.index == x
        assert all(cp.inclusion_proof.leaf_index == cp.column.index for cp in p.replica_column_proofs.all())


@pytest.mark.slow
@pytest.mark.parametrize(("proof", "order"), [("StackedDrg32GiBV1_1", "go"), ("StackedDrg64GiBV1_1", "rust")])
def test_full_size_sub_and_top(proof: str, order: str) -> None:
    """The real 32GiB (Sub, 8-8-0) and 64GiB (Top, 8-8-2) shapes through models, checked by the oracle."""
    raw = synth_c1_json(proof, seed=11, order=order)
    assert 38e6 < len(raw) < 40e6
    c1 = parse_c1(raw)
    assert c1.key_order == order and c1.to_json() == raw
    p = c1.vanilla_proofs[9][17]
    assert type(p.comm_r_last_proof).__name__ == ("SubProof" if "32GiB" in proof else "TopProof")
    assert len(p.comm_d_proofs.path) == c1.proof_type.tree_d_depth
    assert len(p.labeling_proofs) == 11
    assert reference_json(c1, go=order == "go") == raw


def test_from_arrays_validates() -> None:
    c1 = synth_c1(5, seed=1)
    fields = dict(c1.arrays.fields)
    bad = fields["lab.layer_index"].copy()
    bad[0, 1, 1] = 7
    arrays = dataclasses.replace(c1.arrays, fields={**fields, "lab.layer_index": bad})
    with pytest.raises(
        C1FormatError, match=r"\[0\]\[1\]\.labeling_proofs\[1\]\.layer_index: expected layer_index 2, got 7"
    ):
        SealCommitPhase1Output.from_arrays(arrays)
    wrong = dataclasses.replace(c1.arrays, fields={**fields, "col.rows": fields["col.rows"][:, :, :, :1]})
    with pytest.raises(C1FormatError, match="col.rows"):
        SealCommitPhase1Output.from_arrays(wrong)


def test_bulk_domain_helpers() -> None:
    from porep.c1 import as_ints, as_limbs, is_canonical_fr
    from porep.commcid import FR_MODULUS

    values = [
        0,
        1,
        FR_MODULUS - 1,
        FR_MODULUS,
        FR_MODULUS + 1,
        2**256 - 1,
        2**254 - 1,
        2**64,
        (2**64 - 1) << 192,
    ]
    arr = np.frombuffer(b"".join(int_to_domain(v) for v in values), dtype=np.uint8).reshape(len(values), 32)
    assert as_ints(arr) == values
    assert [int(sum(int(x) << (64 * i) for i, x in enumerate(row))) for row in as_limbs(arr)] == values
    assert is_canonical_fr(arr).tolist() == [v < FR_MODULUS for v in values]
    rows = synth_c1(5, seed=4).arrays["col.rows"].copy()  # values < 2^254 < r: all canonical
    rows[0, 1, 3, 1] = 0xFF
    mask = is_canonical_fr(rows)
    assert mask.shape == rows.shape[:-1]
    assert np.argwhere(~mask).tolist() == [[0, 1, 3, 1]]


def test_parse_builds_the_tree_only_when_asked(c1: SealCommitPhase1Output) -> None:
    """Every consumer reads the arrays: parsing leaves ``vanilla_proofs`` unbuilt until first read."""
    raw = c1.to_json()
    parsed = parse_c1(raw)
    assert "vanilla_proofs" not in parsed.__dict__  # only the header was built
    assert parsed.registered_proof == c1.registered_proof and parsed.comm_r == c1.comm_r
    assert parsed == c1 and parsed.to_json() == raw and parsed.arrays["col.rows"].shape[0] == 1
    tree = parsed.vanilla_proofs  # built now, from the arrays, and kept
    assert tree == c1.vanilla_proofs and parsed.vanilla_proofs is tree
    assert [p.encoding_proof.node for _, _, p in parsed.proofs()] == [
        p.encoding_proof.node for _, _, p in c1.proofs()
    ]
    with pytest.raises(AttributeError):
        parsed.no_such_field  # noqa: B018
