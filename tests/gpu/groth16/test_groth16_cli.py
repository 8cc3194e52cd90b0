"""psagent params generate|info, bench ntt, bench prove --export: the exported vk / inputs / proof are checked
with a verifier built here from the independent .vk parser and pyblst."""

from __future__ import annotations

import json
from pathlib import Path

from pyblst import BlstP1Element, BlstP2Element, final_verify, miller_loop
from test_groth16_formats import independent_vk_parse  # this directory is on sys.path
from typer.testing import CliRunner

from agent.cli import app

runner = CliRunner()


def test_params_generate_and_info(tmp_path: Path) -> None:
    res = runner.invoke(
        app,
        [
            "params",
            "generate",
            "--synthetic-constraints",
            "40",
            "--test-seed",
            "3",
            "--out",
            str(tmp_path),
            "--name",
            "t",
        ],
    )
    assert res.exit_code == 0, res.output
    assert (tmp_path / "t.params").exists() and (tmp_path / "t.vk").exists()
    assert "setup: evaluate" in res.stderr and "setup: b_g2" in res.stderr  # progress, one line per stage
    assert res.stdout == "" and "wrote " in res.stderr  # no result on stdout: the message is progress
    from gpu.groth16.plan import ProofSizes
    from gpu.groth16.setup import estimate
    from gpu.groth16.synthetic import SyntheticCircuit

    est = estimate(ProofSizes.of_r1cs(SyntheticCircuit(40, 2).r1cs()))  # what the check before the setup read
    assert (tmp_path / "t.params").stat().st_size == est.file_bytes
    assert (tmp_path / "t.vk").stat().st_size == est.vk_bytes
    assert f"take {est.file_bytes / 1e6:.1f} MB on disk" in res.stderr
    meta = json.loads((tmp_path / "t.meta.json").read_text())
    assert meta["test_mode"] and "INSECURE" in meta["toxic_waste"]
    res = runner.invoke(app, ["params", "info", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.output.splitlines()]
    p = next(r for r in rows if r["file"] == "t.params")
    assert p["domain_log"] == 6 and p["public_inputs_with_one"] == 3 and p["trailing_bytes"] == 0
    assert "INSECURE" in p["toxic_waste"]
    (tmp_path / "bad.vk").write_bytes(b"\0" * 100)
    res = runner.invoke(app, ["params", "info", str(tmp_path)])
    assert res.exit_code == 1 and "bad.vk: INVALID" in res.output


def test_params_generate_needs_a_circuit(tmp_path: Path) -> None:
    # --sector-size is built now (dc54f38; a 2KiB setup takes minutes): tests/agent/test_cli_prove.py
    res = runner.invoke(app, ["params", "generate", "--out", str(tmp_path)])
    assert res.exit_code == 2


def test_bench_ntt_cpu() -> None:
    res = runner.invoke(app, ["bench", "ntt", "--sizes", "3,6", "--reps", "2", "--h-step"])
    assert res.exit_code == 0, res.output
    assert "inverse(forward(x)) == x" in res.output and "h_step" in res.output


def test_bench_prove_export_verifies_independently(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    res = runner.invoke(
        app,
        [
            "bench",
            "prove",
            "--synthetic-constraints",
            "300",
            "--reps",
            "1",
            "--warmup",
            "0",
            "--export",
            str(out),
            "--json-out",
            str(tmp_path / "r.json"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "verified 1/1" in res.output
    vk = independent_vk_parse((out / "vk").read_bytes())
    xs = json.loads((out / "inputs.json").read_text())
    proof = (out / "proof").read_bytes()
    assert len(proof) == 192 and all(isinstance(x, int) for x in xs)

    def check(inputs: list[int]) -> bool:
        acc = vk["ic"][0]  # type: ignore[index]
        for x, p in zip(inputs, vk["ic"][1:], strict=True):  # type: ignore[index]
            acc = acc + p.scalar_mul(x)
        a, b, c = (
            BlstP1Element.uncompress(proof[:48]),
            BlstP2Element.uncompress(proof[48:144]),
            BlstP1Element.uncompress(proof[144:]),
        )
        return bool(
            final_verify(
                miller_loop(a, b),
                miller_loop(vk["alpha_g1"], vk["beta_g2"])
                * miller_loop(acc, vk["gamma_g2"])
                * miller_loop(c, vk["delta_g2"]),
            )
        )

    assert check(xs)
    assert not check([xs[0] + 1] + xs[1:])
    row = json.loads((tmp_path / "r.json").read_text())
    assert row["verified"] == "1/1" and row["median_s"]["total"] > 0


def test_bench_prove_batches_of_circuits(tmp_path: Path) -> None:
    """--circuits K proves K circuits of one shape (different witnesses) per rep; every proof is verified."""
    res = runner.invoke(
        app,
        ["bench", "prove", "--synthetic-constraints", "200", "--reps", "2", "--warmup", "0"]
        + ["--circuits", "3", "--json-out", str(tmp_path / "r.json")],
    )
    assert res.exit_code == 0, res.output
    assert "verified 6/6" in res.output and "batches of 3 circuits" in res.output
    row = json.loads((tmp_path / "r.json").read_text())
    assert row["circuits"] == 3 and row["batch_s"] > 0
    bad = runner.invoke(app, ["bench", "prove", "--synthetic-constraints", "200", "--circuits", "0"])
    assert bad.exit_code == 2
