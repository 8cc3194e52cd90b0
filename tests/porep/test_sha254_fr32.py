"""sha254, fr32 padding, tree D / comm_d and zero-piece commitments against published values.

Sources: porep.md §3; golden_vectors.json ``zero_piece_commitments`` (go-commp-utils),
``sha254_tree_vectors_curio`` (curio treed_build_test.go) and ``commP_with_fr32_go_fil_commcid``
(go-fil-commcid).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from porep import fr32
from porep.commcid import comm_d_to_cid
from porep.hashes.merkle import build_tree_d
from porep.hashes.sha254 import comm_d, node, sha254, zero_comm


@pytest.fixture(scope="module")
def golden(fixtures_dir: Path) -> dict:
    return json.loads((fixtures_dir / "golden_vectors.json").read_text())


def test_sha254_trims_two_bits() -> None:
    for data in (b"", b"abc", bytes(64), bytes(range(200))):
        d = hashlib.sha256(data).digest()
        out = sha254(data)
        assert out[:31] == d[:31] and out[31] == d[31] & 0x3F


@pytest.mark.parametrize(
    ("size", "comm"),
    [  # porep.md §3
        (2048, "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"),
        (8 << 20, "65f29e5d98d246c38b388cfc06db1f6b021303c5a289000bdce832a9c3ec421c"),
        (512 << 20, "39560e7b13a93b07a243fd2720ffa7cb3e1d2e505ab3629e79f46313512cda06"),
        (32 << 30, "077e5fde35c50a9303a55009e3498a4ebedff39c42b710b730d8ec7ac7afa63e"),
        (64 << 30, "e64005a6bfe3777953b8ad6ef93f0fca1049b2041654f2a411f7702799cece02"),
    ],
)
def test_zero_comm_d(size: int, comm: str) -> None:
    assert zero_comm(size).hex() == comm


def test_zero_comm_cids() -> None:
    assert (
        comm_d_to_cid(zero_comm(2048)) == "baga6ea4seaqpy7usqklokfx2vxuynmupslkeutzexe2uqurdg5vhtebhxqmpqmy"
    )
    assert (
        comm_d_to_cid(zero_comm(32 << 30))
        == "baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq"
    )


def test_zero_comm_table(golden: dict) -> None:
    entries = golden["zero_piece_commitments"]["entries"]
    assert len(entries) > 30
    for e in entries:
        assert zero_comm(e["padded_size_bytes"]).hex() == e["comm_hex"], e["padded_size_bytes"]


def test_zero_comm_equals_tree_of_zeros() -> None:
    assert comm_d(bytes(2048)) == zero_comm(2048)
    assert comm_d(bytes(1 << 16)) == zero_comm(1 << 16)
    with pytest.raises(ValueError):
        zero_comm(96)


def test_curio_tree_d_vectors(golden: dict) -> None:
    v = golden["sha254_tree_vectors_curio"]["vectors"]
    assert sha254(b"\x01" + bytes(63)).hex() == v[0]["sha254_hex"]
    for entry, size in ((v[1], 2048), (v[2], 8 << 20)):
        img = bytearray(size)
        img[0] = 1
        root = comm_d(bytes(img))
        assert root.hex() == entry["comm_d_hex"]
        assert comm_d_to_cid(root) == entry["comm_d_cid"]


def test_commp_with_fr32(golden: dict) -> None:
    v = golden["commP_with_fr32_go_fil_commcid"]["vectors"]
    raw = b"".join(bytes([i]) * 127 for i in range(4))
    padded = fr32.pad(raw)
    assert len(padded) == 512
    assert comm_d(padded).hex() == v[0]["commP_hex"]
    assert comm_d_to_cid(comm_d(padded)) == v[0]["commP_cid_v1"]
    padded2 = fr32.pad(raw + bytes(508))
    assert comm_d_to_cid(comm_d(padded2)) == v[1]["commP_cid_v1"]


def test_fr32_bit_layout() -> None:
    # 127 bytes of 0xff: every node holds 254 one-bits, then the two zero pad bits.
    padded = fr32.pad(b"\xff" * 127)
    nodes = [padded[i : i + 32] for i in range(0, 128, 32)]
    assert all(n == b"\xff" * 31 + b"\x3f" for n in nodes)
    # bit 254 of the raw stream is the first bit of node 1
    raw = bytearray(127)
    raw[254 // 8] |= 1 << (254 % 8)
    out = fr32.pad(bytes(raw))
    assert out[32] == 1 and sum(out) == 1


def test_fr32_roundtrip_random() -> None:
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256, size=127 * 40, dtype=np.uint8).tobytes()
    padded = fr32.pad(raw)
    assert len(padded) == 128 * 40
    assert all(padded[i] & 0xC0 == 0 for i in range(31, len(padded), 32))
    assert fr32.unpad(padded) == raw
    with pytest.raises(ValueError):
        fr32.pad(b"x" * 100)
    with pytest.raises(ValueError, match="pad bits"):
        fr32.unpad(b"\xff" * 128)


def test_pad_to_sector_sizes() -> None:
    assert fr32.unpadded_size(2048) == 2032
    assert fr32.unpadded_size(8 << 20) == 8_323_072
    assert fr32.pad_to_sector(b"", 2048) == bytes(2048)
    with pytest.raises(ValueError, match="does not fit"):
        fr32.pad_to_sector(bytes(2033), 2048)


def test_tree_d_node_and_paths() -> None:
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, size=(16, 32), dtype=np.uint8)
    data[:, 31] &= 0x3F
    tree = build_tree_d(data)
    assert tree.levels[1][3].tobytes() == node(data[6].tobytes(), data[7].tobytes())
    lvl = [data[i].tobytes() for i in range(16)]
    while len(lvl) > 1:
        lvl = [node(lvl[i], lvl[i + 1]) for i in range(0, len(lvl), 2)]
    assert tree.root == lvl[0]
