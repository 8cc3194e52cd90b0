"""psagent seal / c1 make / c1 check: the contract others script against.

Seals the real 2KiB winning_post sector through the CLI (byte-for-byte against the fixture), makes its C1
(plain and ProofData), and checks the exit codes of c1 check on good, tampered and unparsable input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from market.proofdata import ProofData
from porep.c1 import KeyOrder, parse_c1

runner = CliRunner()
H = lambda b: bytes([b]).hex() * 32  # noqa: E731


@pytest.fixture(scope="module")
def sector_dir(fixtures_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    wp = fixtures_dir / "rust-fil-proofs" / "winning_post"
    out = tmp_path_factory.mktemp("sector") / "s"
    res = runner.invoke(
        app,
        [
            "seal",
            "--registered-proof",
            "StackedDrg2KiBV1_1",
            "--prover-id",
            H(1),
            "--sector",
            "255",
            "--ticket",
            H(2),
            "--porep-id",
            H(0x80),
            "--piece",
            str(wp / ".tmpcCAjpp"),
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (out / "sealed").read_bytes() == (wp / ".tmp9BsHuZ").read_bytes()
    assert (out / "p_aux").read_bytes() == (wp / ".tmp0dbYDb" / "p_aux").read_bytes()
    return out


def test_seal_summary(sector_dir: Path, fixtures_dir: Path) -> None:
    s = json.loads((sector_dir / "summary.json").read_text())
    assert s["comm_r"] == "50fdbefac83c87a935f5d9edfcfe460723b2a3e6d4972f4b866f98cf26e7c43d"
    assert s["comm_c"] + s["comm_r_last"] == (sector_dir / "p_aux").read_bytes().hex()
    assert s["comm_d_cid"].startswith("baga6ea4seaq") and s["comm_r_cid"].startswith("bagboea4b5abc")
    assert (s["registered_proof"], s["sector"], s["porep_id"], s["ticket"]) == (
        "StackedDrg2KiBV1_1",
        255,
        H(0x80),
        H(2),
    )


def test_c1_make_and_check(sector_dir: Path, tmp_path: Path) -> None:
    c1_path = tmp_path / "c1.json"
    res = runner.invoke(app, ["c1", "make", str(sector_dir), "--seed", H(3), "--out", str(c1_path)])
    assert res.exit_code == 0, res.output
    raw = c1_path.read_bytes()
    c1 = parse_c1(raw)
    assert c1.key_order == KeyOrder.RUST and c1.to_json() == raw and c1.seed == bytes([3]) * 32
    ok = runner.invoke(
        app, ["c1", "check", str(c1_path), "--prover-id", H(1), "--sector", "255", "--porep-id", H(0x80)]
    )
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith("ok: StackedDrg2KiBV1_1")
    # the wrong sector number: replica_id is not bound to it
    wrong = runner.invoke(
        app, ["c1", "check", str(c1_path), "--prover-id", H(1), "--sector", "254", "--porep-id", H(0x80)]
    )
    assert wrong.exit_code == 1 and "header.replica_id" in wrong.stderr
    # one tampered sibling hash in tree R_last
    doc = json.loads(raw)
    proof = doc["vanilla_proofs"]["StackedDrg2KiBV1"][0][1]
    proof["comm_r_last_proof"]["data"]["Single"]["path"]["path"][1]["hashes"][3][0] ^= 1
    bad = tmp_path / "bad.json"
    bad.write_bytes(json.dumps(doc, separators=(",", ":")).encode())
    args = ["c1", "check", str(bad), "--prover-id", H(1), "--sector", "255", "--porep-id", H(0x80)]
    res = runner.invoke(app, args)
    assert res.exit_code == 1
    assert "partition 0, challenge 1" in res.stderr and "tree_r.path" in res.stderr
    assert res.stdout.startswith("FAILED: StackedDrg2KiBV1_1") and "tree_r.path" in res.stdout
    res = runner.invoke(app, [*args, "--json"])  # the same verdict as one JSON object
    assert res.exit_code == 1
    verdict = json.loads(res.stdout)
    assert verdict["ok"] is False and verdict["failed_checks"] == ["tree_r.path"]
    garbage = tmp_path / "garbage.json"
    garbage.write_text('{"registered_proof":"StackedDrg2KiBV1_1"}')
    res = runner.invoke(app, ["c1", "check", str(garbage)])  # no C1 at all: bad input, as prove says it
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1, res.output


def test_c1_make_proofdata(fixtures_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "s"
    piece = tmp_path / "piece"
    piece.write_bytes(bytes(range(256)) * 7)
    res = runner.invoke(
        app,
        [
            "seal",
            "--registered-proof",
            "StackedDrg2KiBV1_1",
            "--miner",
            "1000",
            "--sector",
            "9",
            "--ticket",
            H(7),
            "--piece",
            str(piece),
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    pd_path = tmp_path / "pd.json"
    res = runner.invoke(
        app,
        ["c1", "make", str(out), "--seed", H(8), "--proofdata", "--out", str(pd_path), "--key-order", "go"],
    )
    assert res.exit_code == 0, res.output
    pd = ProofData.parse(pd_path.read_bytes())
    assert (pd.sector_id.miner, pd.sector_id.number) == (1000, 9)
    assert pd.porep is not None and pd.porep.key_order == KeyOrder.GO
    # the SectorID binds replica_id: no --miner/--sector needed
    res = runner.invoke(app, ["c1", "check", str(pd_path)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["c1", "check", str(pd_path), "--sector", "10"])
    assert res.exit_code == 1 and "header.replica_id" in res.stderr


def test_usage_errors(tmp_path: Path) -> None:
    base = ["seal", "--registered-proof", "StackedDrg2KiBV1_1", "--sector", "1", "--out", str(tmp_path / "x")]
    assert (
        runner.invoke(app, [*base, "--ticket", "zz", "--miner", "1", "--random-piece"]).exit_code
        == EXIT_USAGE
    )
    assert (
        runner.invoke(app, [*base, "--ticket", H(1), "--random-piece"]).exit_code == EXIT_USAGE
    )  # no prover
    assert runner.invoke(app, [*base, "--ticket", H(1), "--miner", "1"]).exit_code == EXIT_USAGE  # no piece
    both = runner.invoke(app, [*base, "--ticket", H(1), "--miner", "1", "--cc", "--random-piece"])
    assert both.exit_code == EXIT_USAGE
    assert "exactly one of --piece FILE, --random-piece and --cc" in both.stderr
    big = [
        "seal",
        "--registered-proof",
        "StackedDrg32GiBV1_1",
        "--sector",
        "1",
        "--out",
        str(tmp_path / "y"),
        "--ticket",
        H(1),
        "--miner",
        "1",
        "--random-piece",
    ]
    assert runner.invoke(app, big).exit_code == EXIT_USAGE
    assert runner.invoke(app, ["c1", "make", str(tmp_path), "--seed", H(1)]).exit_code == EXIT_USAGE


# ------------------------------------------------------------------------------------------- c1 synth


def _synth_args(out: Path, *extra: str, proof: str = "StackedDrg2KiBV1_1") -> list[str]:
    return [
        "c1", "synth", "--registered-proof", proof, "--miner", "f01000", "--sector", "7",
        "--ticket", H(2), "--seed", H(3), "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


def test_c1_synth_passes_c1_check(tmp_path: Path) -> None:
    """A sparse 2KiB C1 from the CLI: canonical bytes that c1 check accepts bound to the miner and sector;
    --zero-data makes a committed-capacity sector (comm_d = the published 2KiB zero commitment)."""
    out = tmp_path / "c1.json"
    res = runner.invoke(app, _synth_args(out, "--json"))
    assert res.exit_code == 0, res.output
    made = json.loads(res.stdout)
    assert made["checked"] is True and made["sector"] == 7
    assert (made["proof"], made["challenges"], made["bytes"]) == ("StackedDrg2KiBV1_1", 2, out.stat().st_size)
    assert set(made["stages"]) == {"sector", "c1", "check", "write"}
    c1 = parse_c1(out.read_bytes(), canonical=True)
    assert (c1.comm_r.hex(), c1.seed.hex(), c1.ticket.hex()) == (made["comm_r"], H(3), H(2))
    res = runner.invoke(app, ["c1", "check", str(out), "--miner", "1000", "--sector", "7", "--canonical"])
    assert res.exit_code == 0 and res.stdout.startswith("ok:"), res.output
    res = runner.invoke(app, ["c1", "check", str(out), "--miner", "1001", "--sector", "7"])
    assert res.exit_code == 1 and "header.replica_id" in res.stderr
    # the file exists now: refused without --force, replaced with it (here by a CC sector, Go key order)
    res = runner.invoke(app, _synth_args(out))
    assert res.exit_code == EXIT_USAGE and "exists" in res.stderr
    res = runner.invoke(app, _synth_args(out, "--force", "--zero-data", "--key-order", "go", "--no-check"))
    assert res.exit_code == 0, res.output
    assert res.stdout == "" and res.stderr.startswith(f"wrote {out}: StackedDrg2KiBV1_1 C1")
    assert "strict check" not in res.stderr
    cc = parse_c1(out.read_bytes(), canonical=True)
    assert cc.key_order is KeyOrder.GO
    assert cc.comm_d.hex() == "fc7e928296e516faade986b28f92d44a4f24b935485223376a799027bc18f833"
    res = runner.invoke(app, ["c1", "check", str(out), "--miner", "1000", "--sector", "7"])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--registered-proof": "StackedDrg3KiBV1_1"}, "unknown proof type"),
        ({"--registered-proof": "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep"}, "depend on comm_r"),
        ({"--registered-proof": "StackedDrg2KiBV1_1_Feat_SyntheticPoRep"}, "only interactive proof types"),
        ({"--ticket": "zz"}, "--ticket is not hex"),
        ({"--seed": "0102"}, "--seed must be 32 bytes"),
        ({"--miner": "x1000"}, "--miner must be an actor id"),
        ({"--sector": "-1"}, "--sector must be an integer"),
        ({"--miner": None}, "give exactly one of --miner and --prover-id"),
        ({"--prover-id": H(1)}, "give exactly one of --miner and --prover-id"),
        ({"--out": "/nonexistent-dir/c1.json"}, "does not exist"),
    ],
)
def test_c1_synth_usage_errors(tmp_path: Path, change: dict[str, str | None], message: str) -> None:
    args = _synth_args(tmp_path / "c1.json")
    for flag, value in change.items():
        if flag in args:
            i = args.index(flag)
            args[i : i + 2] = [] if value is None else [flag, value]
        elif value is not None:
            args += [flag, value]
    res = runner.invoke(app, args)
    assert res.exit_code == EXIT_USAGE, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert not (tmp_path / "c1.json").exists()
