"""The proof-type table against porep.md §1.7/§1.8 (transcribed here), rust-fil-proofs' parameters.json
and the porep_config of every seal regression record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from porep.prooftypes import PROOF_TYPES, RegisteredSealProof, TreeShape, proof_type

SIZES = ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"]
GROUPS = [  # porep.md §1.8: (name suffix, api version, features)
    ("V1", "1.0.0", ()),
    ("V1_1", "1.1.0", ()),
    ("V1_1_Feat_SyntheticPoRep", "1.2.0", ("SyntheticPoRep",)),
    ("V1_2_Feat_NonInteractivePoRep", "1.2.0", ("NonInteractivePoRep",)),
]
# porep.md §1.7: size → (bytes, nodes, layers, shape, tree-D depth, base depth, interactive P×C, NI P×C)
DIMENSIONS = {
    "2KiB": (2048, 64, 2, TreeShape(8, 0, 0), 6, 2, (1, 2), (13, 2)),
    "8MiB": (8 << 20, 1 << 18, 2, TreeShape(8, 0, 0), 18, 6, (1, 2), (13, 2)),
    "512MiB": (512 << 20, 1 << 24, 2, TreeShape(8, 0, 0), 24, 8, (1, 2), (13, 2)),
    "32GiB": (32 << 30, 1 << 30, 11, TreeShape(8, 8, 0), 30, 9, (10, 18), (126, 18)),
    "64GiB": (64 << 30, 1 << 31, 11, TreeShape(8, 8, 2), 31, 9, (10, 18), (126, 18)),
}


def test_ids_names_versions_features() -> None:
    assert len(PROOF_TYPES) == 20
    for g, (suffix, version, features) in enumerate(GROUPS):
        for s, size in enumerate(SIZES):
            pid = 5 * g + s
            t = PROOF_TYPES[pid]
            assert t.id == pid and t.name == f"StackedDrg{size}{suffix}"
            assert RegisteredSealProof[t.name] == pid
            assert (t.api_version, t.features) == (version, features)
            assert proof_type(pid) is t and proof_type(t.name) is t and proof_type(t.proof) is t
            assert t.vanilla_proofs_key == f"StackedDrg{size}V1"


@pytest.mark.parametrize("size", SIZES)
def test_dimensions(size: str) -> None:
    sector, nodes, layers, shape, d_depth, base_depth, interactive, ni = DIMENSIONS[size]
    for t in (proof_type(f"StackedDrg{size}{suffix}") for suffix, _, _ in GROUPS):
        assert (t.sector_size, t.nodes, t.layers, t.tree) == (sector, nodes, layers, shape)
        assert (t.tree_d_depth, t.base_depth) == (d_depth, base_depth)
        assert (t.sub_depth, t.top_depth) == (int(shape.sub > 0), int(shape.top > 0))
        assert (t.partitions, t.challenges_per_partition) == (ni if t.is_non_interactive else interactive)
        # every base tree holds nodes / base_tree_count leaves
        assert shape.base**base_depth * shape.base_tree_count == nodes
        assert t.tree.variant == {"8-0-0": "Single", "8-8-0": "Sub", "8-8-2": "Top"}[str(shape)]


def test_porep_ids() -> None:
    assert proof_type("StackedDrg2KiBV1_1").porep_id == bytes([5]) + bytes(31)
    for t in PROOF_TYPES:
        assert t.porep_id == t.id.to_bytes(8, "little") + bytes(24)


def test_param_stems_match_parameters_json(fixtures_dir: Path) -> None:
    """The stem is computed from the public-parameter identifier; parameters.json lists the real files."""
    published = json.loads((fixtures_dir / "rust-fil-proofs" / "parameters.json").read_text())
    porep = {
        name.rsplit(".", 1)[0]: info["sector_size"]
        for name, info in published.items()
        if "stacked-proof-of-replication" in name
    }
    assert len(porep) == 5
    for t in PROOF_TYPES:
        assert t.param_stem in porep, t.name
        assert porep[t.param_stem] == t.sector_size
        assert t.param_stem + ".vk" in published and t.param_stem + ".params" in published
    # porep.md §7.4, verbatim
    assert proof_type(5).param_stem == (
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"
        "032d3138d22506ec0082ed72b2dcba18df18477904e35bafee82b3793b06832f"
    )


def test_partitions_match_regression_records(fixtures_dir: Path) -> None:
    """Each record's porep_config (sector size, features) fixes the partition count our table gives."""
    seen = set()
    for name in ("seal_regression_records-v16.json", "seal_regression_records-v18.json"):
        for line in (fixtures_dir / "rust-fil-proofs" / name).read_text().splitlines():
            if not line.strip():
                continue
            cfg = json.loads(line)["porep_config"]
            features = tuple(cfg["api_features"])
            ni = "NonInteractivePoRep" in features
            matches = [
                t for t in PROOF_TYPES if t.sector_size == cfg["sector_size"] and t.is_non_interactive == ni
            ]
            assert matches
            assert {t.partitions for t in matches} == {cfg["partitions"]}
            seen.add((cfg["sector_size"], ni))
    assert (32 << 30, True) in seen and (8 << 20, True) in seen and (64 << 30, False) in seen


def test_lookup_errors() -> None:
    for bad in (20, -1, True, "StackedDrg2KiBV2", 1.0):
        with pytest.raises(ValueError):
            proof_type(bad)  # type: ignore[arg-type]
