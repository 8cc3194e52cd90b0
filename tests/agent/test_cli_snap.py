"""psagent snap make / snap check: a 2KiB CC sector sealed through the CLI is updated with a piece; the
outputs are checked against independent computations and the market's ProofData parser, and the exit codes
of snap check on good, tampered and unusable input."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from market.proofdata import ProofData, SectorID, Snap
from porep.fr32 import pad_to_sector
from porep.hashes.sha254 import comm_d
from porep.snap.proof import decode_partition_proof

runner = CliRunner()
H = lambda b: bytes([b]).hex() * 32  # noqa: E731
PIECE = bytes(range(256)) * 7  # 1792 bytes


def _seal(out: Path, piece: Path | None) -> None:
    """Seal a 2KiB test sector with ``piece``, or a CC sector (``seal --cc``) when None."""
    res = runner.invoke(
        app,
        [
            "seal",
            "--registered-proof",
            "StackedDrg2KiBV1_1",
            "--miner",
            "f01000",
            "--sector",
            "3",
            "--ticket",
            H(2),
            *(["--piece", str(piece)] if piece is not None else ["--cc"]),
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("snap")
    (base / "piece").write_bytes(PIECE)
    _seal(base / "cc", None)  # seal --cc: what snap make updates
    res = runner.invoke(
        app, ["snap", "make", str(base / "cc"), "--piece", str(base / "piece"), "--out", str(base / "u")]
    )
    assert res.exit_code == 0, res.output
    assert "comm_r_new" in res.output
    return {"base": base, "cc": base / "cc", "update": base / "u"}


def test_make_outputs(dirs: dict[str, Path]) -> None:
    u, cc = dirs["update"], dirs["cc"]
    seal_summary = json.loads((cc / "summary.json").read_text())
    summary = json.loads((u / "summary.json").read_text())
    padded = pad_to_sector(PIECE, 2048)
    assert (u / "unsealed").read_bytes() == padded
    assert summary["comm_d_new"] == comm_d(padded).hex()
    assert summary["comm_r_old"] == seal_summary["comm_r"] and summary["comm_c"] == seal_summary["comm_c"]
    assert len((u / "sealed").read_bytes()) == 2048 != (cc / "sealed").read_bytes()
    raw = (u / "proofdata.json").read_bytes()
    pd = ProofData.parse(raw)
    assert pd.kind == "Snap" and pd.sector_id == SectorID(1000, 3) and pd.deci_cost == 16
    s = pd.snap
    assert s is not None and s.proof_type == 0
    assert (s.old_r.hex(), s.new_r.hex(), s.new_d.hex()) == (
        summary["comm_r_old"],
        summary["comm_r_new"],
        summary["comm_d_new"],
    )
    # Go's json.Marshal layout, byte for byte, and Curio's snap-vproof.json (standard padded base64)
    assert raw == ProofData.encode(pd.sector_id, snap=Snap(0, s.old_r, s.new_r, s.new_d, s.proofs))
    assert raw.startswith(
        b'{"SectorID":{"Miner":1000,"Number":3},"PoRep":null,"Snap":{"ProofType":0,"old_r":['
    )
    vproof = json.loads((u / "snap-vproof.json").read_text())
    assert [base64.b64decode(p, validate=True) for p in vproof] == list(s.proofs)
    assert len(s.proofs) == 1 and len(s.proofs[0]) == 15_064
    proof, trailing = decode_partition_proof(s.proofs[0])
    assert trailing == 0 and proof.comm_c.hex() == summary["comm_c"]


def test_check_passes_and_fails(dirs: dict[str, Path]) -> None:
    pd_file = dirs["update"] / "proofdata.json"
    res = runner.invoke(app, ["snap", "check", str(pd_file)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("ok: StackedDrg2KiBV1, 1 partition(s) x 10 challenges")
    res = runner.invoke(app, ["snap", "check", "-", "--json"], input=pd_file.read_bytes())
    assert res.exit_code == 0 and json.loads(res.stdout)["ok"] is True
    pd = ProofData.parse(pd_file.read_bytes())
    s = pd.snap
    assert s is not None
    proof = bytearray(s.proofs[0])
    proof[0] ^= 1  # comm_c
    bad = dirs["base"] / "bad.json"
    bad.write_bytes(ProofData.encode(pd.sector_id, snap=Snap(0, s.old_r, s.new_r, s.new_d, (bytes(proof),))))
    res = runner.invoke(app, ["snap", "check", str(bad), "--json"])
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["ok"] is False and out["failed_checks"] == ["commitments.comm_r_new", "commitments.comm_r_old"]
    assert "FAIL partition 0: commitments.comm_r_old" in res.stderr
    bad.write_bytes(ProofData.encode(pd.sector_id, snap=Snap(7, s.old_r, s.new_r, s.new_d, s.proofs)))
    res = runner.invoke(app, ["snap", "check", str(bad)])
    assert res.exit_code == 1 and "header.proof_type" in res.output


def test_check_bad_input(dirs: dict[str, Path]) -> None:
    base = dirs["base"]
    (base / "garbage").write_bytes(b"{not json")
    for args in (["snap", "check", str(base / "missing.json")], ["snap", "check", str(base / "garbage")]):
        res = runner.invoke(app, args)
        assert res.exit_code == EXIT_USAGE, res.output
        assert len(res.output.strip().splitlines()) == 1 and res.output.startswith("psagent: ")


def test_make_bad_input(dirs: dict[str, Path]) -> None:
    base, cc = dirs["base"], dirs["cc"]
    (base / "big").write_bytes(bytes(2033))
    _seal(base / "data_sector", base / "piece")
    cases = [
        (["snap", "make", str(cc), "--out", str(base / "o1")], "exactly one of"),
        (
            [
                "snap",
                "make",
                str(cc),
                "--piece",
                str(base / "piece"),
                "--random-piece",
                "--out",
                str(base / "o2"),
            ],
            "exactly one of",
        ),
        (["snap", "make", str(cc), "--piece", str(base / "big"), "--out", str(base / "o3")], "does not fit"),
        (["snap", "make", str(base / "nowhere"), "--random-piece", "--out", str(base / "o4")], "cannot read"),
        (["snap", "make", str(cc), "--random-piece", "--out", str(dirs["update"])], "not empty"),
        (
            ["snap", "make", str(base / "data_sector"), "--random-piece", "--out", str(base / "o5")],
            "not a CC sector",
        ),
        (["snap", "make", str(cc), "--random-piece", "--miner", "x1", "--out", str(base / "o6")], "actor id"),
    ]
    for args, msg in cases:
        res = runner.invoke(app, args)
        assert res.exit_code == EXIT_USAGE, (args, res.output)
        assert len(res.output.strip().splitlines()) == 1 and msg in res.output, res.output


def test_make_random_piece(dirs: dict[str, Path]) -> None:
    out = dirs["base"] / "r"
    res = runner.invoke(
        app,
        ["snap", "make", str(dirs["cc"]), "--random-piece", "--miner", "1234", "--out", str(out), "--json"],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["miner"] == 1234 and summary["partition_proof_bytes"] == [15_064]
    assert runner.invoke(app, ["snap", "check", str(out / "proofdata.json")]).exit_code == 0


def test_params_generate_update_usage_errors(tmp_path: Path) -> None:
    """``params generate --update`` goes with --sector-size and one of the five update sizes; refused in one
    line with exit 2 before any synthesis (the setup itself runs in make test-snap-long)."""
    cases = [
        (["--update", "--sector-size", "3KiB"], "must be one of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB"),
        (["--update", "--synthetic-constraints", "8"], "--update goes with --sector-size"),
    ]
    for args, msg in cases:
        res = runner.invoke(app, ["params", "generate", *args, "--out", str(tmp_path)])
        assert res.exit_code == EXIT_USAGE, (args, res.output)
        assert len(res.output.strip().splitlines()) == 1 and msg in res.output, res.output


# ---------------------------------------------------------------------------------------------- snap synth


@pytest.mark.slow
def test_synth_writes_a_valid_request(tmp_path: Path) -> None:
    """``snap synth`` at 8MiB (4 partitions): the file is the market's ProofData, byte for byte Go's layout,
    its request is porep.snap.synth's for the seed; the agent's check and ``snap check`` both accept it."""
    from porep.snap.synth import synth_request
    from porep.snap.verify import check_request

    out = tmp_path / "s.json"
    args = ["snap", "synth", "--sector-size", "8M", "--rng-seed", "3", "--miner", "f01234", "--sector", "9"]
    res = runner.invoke(app, [*args, "--out", str(out), "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    raw = out.read_bytes()
    pd = ProofData.parse(raw)
    s = pd.snap
    assert s is not None and pd.sector_id == SectorID(1234, 9) and s.proof_type == 1
    want = synth_request("StackedDrg8MiBV1", 3)
    assert (s.old_r, s.new_r, s.new_d, s.proofs) == (want.old_r, want.new_r, want.new_d, want.proofs)
    assert raw == ProofData.encode(pd.sector_id, snap=Snap(1, s.old_r, s.new_r, s.new_d, s.proofs))
    assert summary["bytes"] == len(raw) and summary["checked"] is True
    assert summary["partition_proof_bytes"] == 4 * 43_864 and summary["comm_r_new"] == s.new_r.hex()
    assert set(summary["stages"]) == {"update", "proofs", "check", "write"}
    assert check_request(s).ok
    res = runner.invoke(app, ["snap", "check", str(out)])
    assert res.exit_code == 0
    assert res.output.startswith("ok: StackedDrg8MiBV1, 4 partition(s) x 10 challenges")


def test_synth_one_line_summary(tmp_path: Path) -> None:
    out = tmp_path / "s2.json"
    res = runner.invoke(app, ["snap", "synth", "--sector-size", "2KiB", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.stdout == ""  # "wrote …" is progress: stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(f"wrote {out}: StackedDrg2KiBV1 Snap request, 1 partition(s) x 10 challenges, ")
    assert "strict check passed" in last and "check " in last
    pd = ProofData.parse(out.read_bytes())
    assert pd.sector_id == SectorID(1000, 1) and pd.snap is not None and len(pd.snap.proofs[0]) == 15_064


def test_synth_bad_input(tmp_path: Path) -> None:
    (tmp_path / "exists.json").write_bytes(b"x")
    out = str(tmp_path / "o.json")
    cases = [
        (["--sector-size", "3GiB", "--out", out], "must be one of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB"),
        (["--sector-size", "2KiB", "--rng-seed", "-1", "--out", out], "--rng-seed must be"),
        (["--sector-size", "2KiB", "--sector", "-2", "--out", out], "--sector must be"),
        (["--sector-size", "2KiB", "--miner", "x1", "--out", out], "actor id"),
        (["--sector-size", "2KiB", "--out", str(tmp_path / "exists.json")], "exists"),
        (["--sector-size", "2KiB", "--out", str(tmp_path / "no" / "o.json")], "does not exist"),
        (["--sector-size", "2KiB", "--out", str(tmp_path)], "is a directory"),
    ]
    for args, msg in cases:
        res = runner.invoke(app, ["snap", "synth", *args])
        assert res.exit_code == EXIT_USAGE, (args, res.output)
        assert len(res.output.strip().splitlines()) == 1 and msg in res.output, res.output
    assert not (tmp_path / "o.json").exists() and (tmp_path / "exists.json").read_bytes() == b"x"
