"""prover_id, porep_id, replica_id against published values (porep.md §1.9, §9.3; fixtures README §2, §4)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from porep.ids import porep_id, prover_id, replica_id, uvarint
from porep.prooftypes import proof_type


@pytest.mark.parametrize(
    ("actor", "payload"),
    [
        (0, "00"),
        (1000, "e807"),
        (1234, "d209"),
        (65535, "ffff03"),
        (106, "6a"),
    ],  # porep.md §1.9, README §3/§4
)
def test_prover_id(actor: int, payload: str) -> None:
    want = bytes.fromhex(payload)
    assert prover_id(actor) == want + bytes(32 - len(want))


def test_prover_id_limits() -> None:
    assert prover_id(2**64 - 1) == bytes.fromhex("ffffffffffffffffff01") + bytes(22)
    for bad in (-1, 2**64, True):
        with pytest.raises(ValueError):
            prover_id(bad)


def test_uvarint_is_leb128() -> None:
    for n in (0, 1, 127, 128, 300, 2**35, 2**63):
        raw = uvarint(n)
        value = sum((b & 0x7F) << (7 * i) for i, b in enumerate(raw))
        assert value == n and all(b & 0x80 for b in raw[:-1]) and not raw[-1] & 0x80


def test_porep_id() -> None:
    assert porep_id(5) == bytes([5]) + bytes(31)
    assert porep_id(19, nonce=2) == bytes([19]) + bytes(7) + bytes([2]) + bytes(23)


def _first_2kib_v1_1_record(fixtures_dir: Path) -> dict:
    for line in (
        (fixtures_dir / "rust-fil-proofs" / "seal_regression_records-v16.json").read_text().splitlines()
    ):
        rec = json.loads(line)
        cfg = rec["porep_config"]
        if cfg["sector_size"] == 2048 and cfg["api_version"] == "V1_1_0":
            return rec
    raise AssertionError("no 2KiB V1_1 record")


def test_replica_id_regression_record(fixtures_dir: Path) -> None:
    """porep.md §9.3: the first 2KiB V1_1 record of seal_regression_records-v16.json."""
    rec = _first_2kib_v1_1_record(fixtures_dir)
    assert bytes(rec["comm_d"]).hex() == "7e45f0925dc72593d6b296100e6ca63e3341c92a50c0e7a9461883a3c959ea28"
    assert bytes(rec["porep_config"]["porep_id"]) == proof_type("StackedDrg2KiBV1_1").porep_id
    rid = replica_id(
        bytes(rec["prover_id"]),
        rec["sector_id"],
        bytes(rec["ticket"]),
        bytes(rec["comm_d"]),
        bytes(rec["porep_config"]["porep_id"]),
    )
    assert rid.hex() == "da838d3efe2e28665cd17ebfa274f67af8c3b51dfb01e8c6bf8892e712d62006"
    assert rec["sector_id"] == 9259733836259213201


def _fr32_pad(raw: bytes) -> bytes:
    """Test oracle: 254 data bits then 2 zero bits per 32-byte node, little-endian bit order."""
    bits = int.from_bytes(raw, "little")
    out = bytearray()
    for i in range(len(raw) * 8 // 254):
        out += ((bits >> (254 * i)) & ((1 << 254) - 1)).to_bytes(32, "little")
    return bytes(out)


def _sha254_root(nodes: bytes) -> bytes:
    level = [nodes[i : i + 32] for i in range(0, len(nodes), 32)]
    while len(level) > 1:
        nxt = []
        for a, b in zip(level[::2], level[1::2], strict=True):
            h = bytearray(hashlib.sha256(a + b).digest())
            h[31] &= 0x3F
            nxt.append(bytes(h))
        level = nxt
    return level[0]


def test_replica_id_winning_post_fixture(fixtures_dir: Path) -> None:
    """README §2: comm_d of the fr32-padded piece, then replica_id, both as the README states them."""
    d = fixtures_dir / "rust-fil-proofs" / "winning_post"
    meta = dict(line.split(": ", 1) for line in (d / "metadata").read_text().splitlines() if ": " in line)
    wanted = ("sector_id", "prover_id", "ticket", "porep_id")
    hexval = {k: bytes.fromhex(meta[k].strip('"')) for k in wanted}
    piece = (d / ".tmpcCAjpp").read_bytes()
    assert len(piece) == 2032
    comm_d = _sha254_root(_fr32_pad(piece))
    assert comm_d.hex() == "61b3e5c281f69fcb5e99de510de0e48f9cc618b0e94cd582acabc16f80b5aa34"
    sector = int.from_bytes(hexval["sector_id"], "little")
    assert sector == 255
    rid = replica_id(hexval["prover_id"], sector, hexval["ticket"], comm_d, hexval["porep_id"])
    assert rid.hex() == "008e902f53bca84472c72308a014e34594cd32fd7caa0b67429449096a9c8f0c"


def test_replica_id_clears_top_bits_and_checks_inputs() -> None:
    for s in range(64):
        rid = replica_id(bytes(32), s, bytes(32), bytes(32), porep_id(5))
        assert rid[31] & 0xC0 == 0
    with pytest.raises(ValueError):
        replica_id(bytes(31), 0, bytes(32), bytes(32), bytes(32))
    with pytest.raises(ValueError):
        replica_id(bytes(32), -1, bytes(32), bytes(32), bytes(32))
