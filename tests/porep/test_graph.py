"""The SDR graph: whole parent caches against rust-fil-proofs' published digests, single parents against
porep.md §9.1, and the Numba kernels (ChaCha8, BLAKE2b-Feistel) against plain-Python oracles."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from porep.hashes.chacha import chacha8_rng_words, chacha20_keystream
from porep.ids import porep_id
from porep.sdr.graph import (
    StackedGraph,
    cache_digest,
    drg_parents_reference,
    exp_parents_reference,
    feistel_permute_reference,
    feistel_precompute,
)


@pytest.fixture(scope="module")
def published(fixtures_dir: Path) -> dict[str, dict]:
    return json.loads((fixtures_dir / "rust-fil-proofs" / "parent_cache.json").read_text())


@pytest.mark.parametrize(
    ("proof_id", "nodes", "legacy"),
    [
        (0, 64, True),  # StackedDrg2KiBV1
        (5, 64, False),  # StackedDrg2KiBV1_1
        pytest.param(1, 1 << 18, True, marks=pytest.mark.slow),  # StackedDrg8MiBV1
        pytest.param(6, 1 << 18, False, marks=pytest.mark.slow),  # StackedDrg8MiBV1_1
    ],
)
def test_parent_cache_digest(published: dict, proof_id: int, nodes: int, legacy: bool) -> None:
    g = StackedGraph(nodes, porep_id(proof_id), legacy)
    entry = published[f"v28-sdr-parent-{g.cache_id}"]  # the cache id is published too
    assert entry["sector_size"] == nodes * 32
    cache = g.parent_cache()
    assert cache.shape == (nodes, 14)
    assert cache_digest(cache) == entry["digest"]


def test_parent_cache_file_roundtrip(tmp_path: Path) -> None:
    g = StackedGraph(64, porep_id(5), False)
    first = g.parent_cache(tmp_path)
    files = list(tmp_path.glob("v28-sdr-parent-*.cache"))
    assert [f.name for f in files] == [f"v28-sdr-parent-{g.cache_id}.cache"]
    assert hashlib.sha256(files[0].read_bytes()).hexdigest() == cache_digest(first)
    again = StackedGraph(64, porep_id(5), False).parent_cache(tmp_path)
    assert np.array_equal(first, again)


def test_seeds_porep_md() -> None:
    g = StackedGraph(64, porep_id(5), False)
    assert g.drg_seed.hex() == "3be68542ec229705b99be29c2106b0e4222ccd1d0311398ea4d22d7d"
    assert g.feistel_keys == (0x90B15B1C4509E47A, 0xDC5378C03DF3F21B, 0xFA76FC24DEB9D7AC, 0xCDEC5E11F7B30A54)


# porep.md §9.1 (DRG list, expander list)
PARENTS_91 = [
    (5, 64, False, 1, [0, 0, 0, 0, 0, 0], [6, 12, 35, 43, 23, 34, 58, 2]),
    (5, 64, False, 2, [1, 1, 1, 0, 1, 0], [30, 28, 55, 63, 63, 36, 37, 36]),
    (5, 64, False, 3, [2, 1, 1, 2, 2, 2], [10, 46, 59, 7, 43, 29, 9, 16]),
    (5, 64, False, 10, [9, 6, 6, 9, 9, 5], [30, 20, 60, 53, 31, 9, 47, 41]),
    (5, 64, False, 63, [62, 15, 42, 62, 61, 62], [0, 15, 30, 30, 28, 42, 49, 38]),
    (0, 64, True, 10, [6, 9, 2, 5, 8, 9], [44, 41, 23, 36, 14, 19, 4, 28]),
    (
        6,
        1 << 18,
        False,
        2,
        [1, 1, 1, 1, 0, 1],
        [237470, 106130, 75198, 218869, 139062, 211720, 107356, 259777],
    ),
    (
        6,
        1 << 18,
        False,
        100,
        [99, 97, 99, 98, 99, 98],
        [178407, 93454, 208663, 45291, 232532, 136170, 23155, 154665],
    ),
    (
        6,
        1 << 18,
        False,
        262143,
        [262142, 261448, 258913, 259680, 262142, 262052],
        [100239, 54991, 48539, 248508, 238575, 67348, 217823, 35156],
    ),
]


@pytest.mark.parametrize(("pid", "nodes", "legacy", "node", "drg", "exp"), PARENTS_91)
def test_individual_parents(pid: int, nodes: int, legacy: bool, node: int, drg: list, exp: list) -> None:
    g = StackedGraph(nodes, porep_id(pid), legacy)
    assert g.drg_parents(node) == drg
    assert g.exp_parents(node) == exp
    assert drg_parents_reference(node, g.drg_seed, legacy) == drg
    assert exp_parents_reference(node, nodes, g.feistel_keys, legacy) == exp


def test_kernels_match_references_random_nodes() -> None:
    for pid, nodes, legacy in ((6, 1 << 18, False), (1, 1 << 18, True), (2, 1 << 24, True)):
        g = StackedGraph(nodes, porep_id(pid), legacy)
        sample = np.random.default_rng(pid).integers(0, nodes, size=12)
        got = g.parents_of(sample)
        for row, v in zip(got.tolist(), sample.tolist(), strict=True):
            assert row[:6] == drg_parents_reference(v, g.drg_seed, legacy)
            assert row[6:] == exp_parents_reference(v, nodes, g.feistel_keys, legacy)


def test_feistel_is_a_permutation() -> None:
    keys = (1, 2, 3, 4)
    for n in (5, 17, 512):
        assert sorted(feistel_permute_reference(n, i, keys) for i in range(n)) == list(range(n))
    assert feistel_precompute(512) == (0b1111100000, 0b11111, 5)  # porep.md §4.3: 2KiB half_bits 5
    assert feistel_precompute(1 << 21)[2] == 11


def test_chacha20_rfc8439() -> None:
    key = bytes(range(32))
    # RFC 8439 §2.3.2 (block function, counter 1)
    ks = chacha20_keystream(key, bytes.fromhex("000000090000004a00000000"), 64, 64)
    assert ks[:16].hex() == "10f1e7e4d13b5915500fdd1fa32071c4"
    assert ks[48:].hex() == "b5129cd1de164eb9cbd083e8a2503c4e"
    # RFC 8439 §2.4.2 (encryption, counter 1)
    pt = (
        b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, "
        b"sunscreen would be it."
    )
    stream = chacha20_keystream(key, bytes.fromhex("000000000000004a00000000"), 64, len(pt))
    ct = bytes(a ^ b for a, b in zip(pt, stream, strict=True))
    assert ct[:16].hex() == "6e2e359a2568f98041ba0728dd0d6981"
    assert ct[-16:].hex() == "0bbf74a35be6b40b8eedf2785e42874d"


def test_chacha8_rng_counter_layout() -> None:
    # 64-bit block counter: word 12 low, word 13 high (rand_chacha); blocks differ and are reproducible
    w = chacha8_rng_words(bytes(32), 64)
    assert w.shape == (64,) and len({tuple(w[i : i + 16]) for i in range(0, 64, 16)}) == 4
    assert np.array_equal(w[:20], chacha8_rng_words(bytes(32), 20))
