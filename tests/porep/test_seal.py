"""Sealing against real Filecoin sectors (fixtures README §2, §3).

* rust-fil-proofs ``winning_post``: a 2KiB V1_1 sector (porep_id 0x80×32) sealed by real
  seal_pre_commit_phase1/2: our seal of its unsealed piece must give the sealed file byte for byte, p_aux
  (comm_c ‖ comm_r_last) and comm_r.
* venus genesis sectors: two 2KiB V1 (porep_id 0) sectors from lotus-seed, without their data or ticket.
  Decoding them (data = sealed − key) with ticket = blake2b-256("lotus is fire") gives data whose comm_d
  is the published CommD, and the labels give comm_c of p_aux; the venus preimage does not. Re-sealing the
  decoded data reproduces the sealed files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from porep.commcid import cid_to_comm_d, cid_to_comm_r, comm_d_to_cid, comm_r_to_cid
from porep.fr32 import unpad
from porep.hashes.merkle import build_poseidon_tree_mont, build_tree_d
from porep.hashes.poseidon import hash2
from porep.ids import porep_id, prover_id, replica_id
from porep.sdr.seal import SealedSector, column_hashes_mont, seal, unseal

WP_PROVER, WP_TICKET, WP_POREP, WP_SECTOR = bytes([1]) * 32, bytes([2]) * 32, bytes([0x80]) * 32, 255


@pytest.fixture(scope="module")
def winning_post(fixtures_dir: Path) -> Path:
    return fixtures_dir / "rust-fil-proofs" / "winning_post"


def test_winning_post_metadata(winning_post: Path) -> None:
    meta = dict(
        line.split(": ", 1) for line in (winning_post / "metadata").read_text().splitlines() if ": " in line
    )
    meta = {k: v.strip('"') for k, v in meta.items()}
    assert bytes.fromhex(meta["prover_id"]) == WP_PROVER
    assert bytes.fromhex(meta["ticket"]) == WP_TICKET
    assert bytes.fromhex(meta["porep_id"]) == WP_POREP
    assert int.from_bytes(bytes.fromhex(meta["sector_id"]), "little") == WP_SECTOR
    assert meta["api_version"] == "1.1.0"


def test_winning_post_sector_byte_for_byte(winning_post: Path, tmp_path: Path) -> None:
    piece = (winning_post / ".tmpcCAjpp").read_bytes()
    assert len(piece) == 2032
    sealed = seal("StackedDrg2KiBV1_1", WP_PROVER, WP_SECTOR, WP_TICKET, piece=piece, porep_id=WP_POREP)
    meta = (winning_post / "metadata").read_text()
    assert sealed.replica == (winning_post / ".tmp9BsHuZ").read_bytes()
    assert sealed.p_aux == (winning_post / ".tmp0dbYDb" / "p_aux").read_bytes()
    assert (
        sealed.info.comm_r_last == (winning_post / ".tmp0dbYDb" / "sc-02-data-tree-r-last.dat").read_bytes()
    )
    assert f'comm_r: "{sealed.info.comm_r.hex()}"' in meta
    # README §2's independently computed hints
    assert sealed.info.comm_d.hex() == "61b3e5c281f69fcb5e99de510de0e48f9cc618b0e94cd582acabc16f80b5aa34"
    assert sealed.info.replica_id.hex() == "008e902f53bca84472c72308a014e34594cd32fd7caa0b67429449096a9c8f0c"
    assert unpad(sealed.tree_d.leaves.tobytes()) == piece

    sealed.save(tmp_path / "s")
    summary = json.loads((tmp_path / "s" / "summary.json").read_text())
    for key in (
        "registered_proof",
        "prover_id",
        "sector",
        "ticket",
        "porep_id",
        "comm_d",
        "comm_r",
        "comm_c",
        "comm_r_last",
        "comm_d_cid",
        "comm_r_cid",
    ):
        assert key in summary
    assert summary["comm_r"] == sealed.info.comm_r.hex() and summary["comm_r_cid"] == comm_r_to_cid(
        sealed.info.comm_r
    )
    assert summary["comm_d_cid"] == comm_d_to_cid(sealed.info.comm_d)
    assert (tmp_path / "s" / "sealed").read_bytes() == sealed.replica
    assert (tmp_path / "s" / "p_aux").read_bytes() == sealed.p_aux
    back = SealedSector.load(tmp_path / "s")
    assert back.info == sealed.info and np.array_equal(back.labels, sealed.labels)
    (tmp_path / "s" / "p_aux").write_bytes(bytes(64))
    with pytest.raises(ValueError, match="p_aux"):
        SealedSector.load(tmp_path / "s")


def _venus(fixtures_dir: Path) -> tuple[Path, list[dict]]:
    root = fixtures_dir / "venus-genesis-sectors"
    doc = json.loads((root / "pre-seal-t0106.json").read_text())["t0106"]
    return root, doc["Sectors"]


@pytest.mark.parametrize(("preimage", "right"), [(b"lotus is fire", True), (b"venus is fire", False)])
def test_venus_genesis_decode(fixtures_dir: Path, preimage: bytes, right: bool) -> None:
    root, sectors = _venus(fixtures_dir)
    ticket = hashlib.blake2b(preimage, digest_size=32).digest()
    assert len(sectors) == 2
    for s in sectors:
        assert s["ProofType"] == 0  # StackedDrg2KiBV1: legacy graph, porep_id 0
        n = s["SectorID"]
        comm_d = cid_to_comm_d(s["CommD"]["/"])
        comm_r = cid_to_comm_r(s["CommR"]["/"])
        p_aux = (root / "cache" / f"s-t0106-{n}" / "p_aux").read_bytes()
        assert hash2(p_aux[:32], p_aux[32:]) == comm_r
        rid = replica_id(prover_id(106), n, ticket, comm_d, porep_id(0))
        sealed_file = (root / "sealed" / f"s-t0106-{n}").read_bytes()
        data, labels = unseal(0, sealed_file, rid)
        assert (build_tree_d(data).root == comm_d) is right
        assert (build_poseidon_tree_mont(column_hashes_mont(labels)).root == p_aux[:32]) is right


def test_venus_reseal_byte_for_byte(fixtures_dir: Path) -> None:
    root, sectors = _venus(fixtures_dir)
    ticket = hashlib.blake2b(b"lotus is fire", digest_size=32).digest()
    assert ticket.hex() == "79ac3dd7defaad6d40e033a1c89124df3cbefdf072868b1924e562f0d4204189"
    for s in sectors:
        n = s["SectorID"]
        comm_d = cid_to_comm_d(s["CommD"]["/"])
        sealed_file = (root / "sealed" / f"s-t0106-{n}").read_bytes()
        data, _ = unseal(0, sealed_file, replica_id(prover_id(106), n, ticket, comm_d, porep_id(0)))
        again = seal("StackedDrg2KiBV1", prover_id(106), n, ticket, data)
        assert again.replica == sealed_file
        assert again.p_aux == (root / "cache" / f"s-t0106-{n}" / "p_aux").read_bytes()
        assert comm_r_to_cid(again.info.comm_r) == s["CommR"]["/"]


def test_seal_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        seal("StackedDrg2KiBV1_1", WP_PROVER, 1, WP_TICKET)
    with pytest.raises(ValueError, match="fr32"):
        seal("StackedDrg2KiBV1_1", WP_PROVER, 1, WP_TICKET, b"\xff" * 2048)
    with pytest.raises(ValueError, match="single-tree"):
        seal("StackedDrg32GiBV1_1", WP_PROVER, 1, WP_TICKET, piece=b"")
    with pytest.raises(ValueError, match="does not fit"):
        seal("StackedDrg2KiBV1_1", WP_PROVER, 1, WP_TICKET, piece=bytes(2033))
