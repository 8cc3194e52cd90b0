"""SDR labeling against rust-fil-proofs' hard-coded last labels (11 layers, 2KiB and 4KiB graphs, V1_0 and
V1_1/V1_2; golden_vectors.json ``sdr_last_layer_last_label``), and the single-label function against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from porep.sdr.graph import StackedGraph
from porep.sdr.labels import create_label, label_layers, parent_slots


def _vectors(fixtures_dir: Path) -> list[dict]:
    return json.loads((fixtures_dir / "golden_vectors.json").read_text())["sdr_last_layer_last_label"][
        "vectors"
    ]


def test_last_labels(fixtures_dir: Path) -> None:
    vectors = _vectors(fixtures_dir)
    assert len(vectors) == 6
    for v in vectors:
        g = StackedGraph(v["nodes"], bytes.fromhex(v["porep_id_hex"]), v["api_version"] == "V1_0_0")
        labels = label_layers(bytes.fromhex(v["replica_id_hex"]), g.parent_cache(), v["num_layers"])
        assert labels.shape == (11, v["nodes"], 32)
        assert labels[-1, -1].tobytes().hex() == v["expected_last_label_le_hex"], v


def test_single_label_matches_layers() -> None:
    g = StackedGraph(64, bytes([123]) * 32, False)
    cache = g.parent_cache()
    rid = bytes([9]) * 32
    labels = label_layers(rid, cache, 3)
    for layer in (1, 2, 3):
        for node in (0, 1, 2, 33, 63):
            parents = cache[node]
            rows = []
            for slot in parent_slots(layer):
                p = int(parents[slot])
                src = layer if slot < 6 else layer - 1  # DRG: same layer; expander: previous layer
                rows.append(labels[src - 1, p].tobytes())
            want = labels[layer - 1, node].tobytes()
            assert create_label(rid, layer, node, b"".join(rows) if node else None) == want


def test_parent_slots() -> None:
    assert parent_slots(1).tolist() == [0, 1, 2, 3, 4, 5] * 6 + [0]
    assert parent_slots(2).tolist() == list(range(14)) * 2 + list(range(9))
    with pytest.raises(ValueError):
        create_label(bytes(32), 1, 5, bytes(32))
