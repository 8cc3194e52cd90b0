"""porep.official_params: the published table as data, checked against Filecoin's parameters.json (the
fixture), our own file names against it, and the digest against hashlib."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from porep import official_params as op
from porep.official_params import DAMAGED, DEVELOPMENT, OFFICIAL, OfficialFile, Registry, classify
from porep.prooftypes import PROOF_TYPES
from porep.snap.params import UPDATE_PROOF_TYPES


def test_the_table_is_filecoins_parameters_json(fixtures_dir: Path) -> None:
    published = json.loads((fixtures_dir / "rust-fil-proofs" / "parameters.json").read_text())
    table = op.registry().by_name
    assert set(table) == set(published)
    for name, entry in published.items():
        ours = table[name]
        assert (ours.cid, ours.digest) == (entry["cid"], entry["digest"]), name
        label = {2048: "2KiB", 8 << 20: "8MiB", 512 << 20: "512MiB", 32 << 30: "32GiB", 64 << 30: "64GiB"}
        assert ours.sector_size == label[entry["sector_size"]], name


def test_our_file_names_are_the_published_ones() -> None:
    """Every PoRep and SnapDeals proof type's files are in the table: what the prover loads can be told
    official or not by name and digest."""
    names = op.registry().by_name
    for pt in [*PROOF_TYPES, *UPDATE_PROOF_TYPES]:
        for ext in (".params", ".vk"):
            assert pt.param_stem + ext in names, pt.name
            assert names[pt.param_stem + ext].sector_size == pt.size_label


def test_the_digest_is_paramfetchs(tmp_path: Path) -> None:
    """BLAKE2b-512 truncated to 16 bytes (not BLAKE2b with a 16-byte output, a different function)."""
    f = tmp_path / "x.vk"
    data = bytes(range(256)) * 40_000  # several read chunks
    f.write_bytes(data)
    assert op.paramfetch_digest(f) == hashlib.blake2b(data).hexdigest()[:32]
    assert op.paramfetch_digest(f) != hashlib.blake2b(data, digest_size=16).hexdigest()


@pytest.fixture
def fake_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A published file (a few bytes) with its digest injected into the table."""
    f = tmp_path / "v28-fake.params"
    f.write_bytes(b"published bytes")
    entry = OfficialFile(f.name, "QmFake", op.paramfetch_digest(f), "stacked-proof-of-replication", "2KiB")
    monkeypatch.setattr(op, "_registry", Registry([entry]))
    return f


def test_official_damaged_and_development(fake_table: Path, tmp_path: Path) -> None:
    assert classify(fake_table).kind == OFFICIAL
    fake_table.write_bytes(b"published byteZ")
    v = classify(fake_table)
    assert v.kind == DAMAGED and op.registry().by_name[fake_table.name].digest in v.reason
    fake_table.with_name("v28-fake.meta.json").write_text("{}")  # ours, under the published name
    assert classify(fake_table).kind == DEVELOPMENT
    other = tmp_path / "toy.params"
    other.write_bytes(b"x")
    assert classify(other).kind == DEVELOPMENT and classify(other).digest is None  # never hashed


def test_the_table_parser_refuses_a_bad_row() -> None:
    with pytest.raises(ValueError, match="line 2"):
        Registry.parse("# comment\nname\tcid\tshort\tc\t2KiB\n")
