"""PoSt proof types: Go's ids, both shapes, and the parameter file names recomputed from the circuits' setup
identifiers, equal to Filecoin's parameters.json (the repository's table and the fixture's copy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from porep.official_params import registry
from porep.post.params import (
    POST_PROOF_TYPES,
    PoStKind,
    RegisteredPoStProof,
    for_kind_and_size,
    post_proof_type,
)


def test_ids_are_gos() -> None:
    assert [p.value for p in RegisteredPoStProof] == list(range(15))
    assert post_proof_type(3).name == "StackedDrgWinning32GiBV1"
    assert post_proof_type(8).name == "StackedDrgWindow32GiBV1"
    assert post_proof_type(13).name == "StackedDrgWindow32GiBV1_1"
    assert post_proof_type("StackedDrgWindow2KiBV1_1").id == 10
    for bad in (-1, 15, True, "StackedDrgWindow1KiBV1"):
        with pytest.raises(ValueError):
            post_proof_type(bad)  # type: ignore[arg-type]


def test_shapes_and_versions() -> None:
    for pt in POST_PROOF_TYPES:
        if pt.kind is PoStKind.WINNING:
            assert (pt.vanilla_sectors, pt.vanilla_challenges) == (1, 66)
            assert (pt.circuit_sectors, pt.circuit_challenges) == (66, 1)  # winning_post_setup_params
            assert pt.api_version == "1.0.0"
        else:
            assert pt.vanilla_challenges == pt.circuit_challenges == 10
            assert pt.circuit_sectors == pt.vanilla_sectors
            assert pt.api_version == ("1.2.0" if pt.id >= 10 else "1.0.0")
        assert pt.partitions == 1
    assert post_proof_type(8).circuit_sectors == 2349 and post_proof_type(9).circuit_sectors == 2300
    assert post_proof_type(3).path_arities == (8,) * 10
    assert post_proof_type(4).path_arities == (8,) * 10 + (2,)
    assert for_kind_and_size("window", 32 << 30).id == 13
    assert for_kind_and_size("winning", 2048).id == 0


def test_parameter_names_are_the_official_ones(fixtures_dir: Path) -> None:
    published = {
        name.rsplit(".", 1)[0]
        for name in json.loads((fixtures_dir / "rust-fil-proofs" / "parameters.json").read_text())
        if "proof-of-spacetime-fallback" in name
    }
    assert len(published) == 10  # five sizes, Winning and Window
    ours = {pt.param_stem for pt in POST_PROOF_TYPES}
    assert ours == published
    for pt in POST_PROOF_TYPES:
        for ext in (".params", ".vk"):
            f = registry().get(pt.param_stem + ext)
            assert f is not None and f.circuit == "proof-of-spacetime-fallback"
            assert f.sector_size == pt.size_label
    # the two Window ids of a size share their pair; Winning's is another
    assert post_proof_type(8).param_stem == post_proof_type(13).param_stem != post_proof_type(3).param_stem
    assert "-0377ded656c6f524f1618760bffe4e0a1c51d5a70c45" in post_proof_type(13).param_stem
    assert "-559e581f022bb4e4ec6e719e563bf0e026ad6de42e56" in post_proof_type(3).param_stem
