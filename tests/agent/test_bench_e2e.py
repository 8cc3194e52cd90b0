"""`psagent bench e2e`'s runs (cold, warm, steady state with proofs in flight), its JSON lines and its export,
and benchmarks/verify_export.py's independent check of exported proofs (pyblst and Python integers only)."""

from __future__ import annotations

import importlib.util
import json
import secrets
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_circuits, toy_r1cs, toy_work  # tests/agent on sys.path

from agent.cli.bench import run_e2e
from agent.proving.pipeline import ProofPipeline
from agent.proving.prover import AdmittedProver
from gpu.groth16 import reference

ROOT = Path(__file__).resolve().parents[2]


def _verify_export() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_export", ROOT / "benchmarks" / "verify_export.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["verify_export"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    secret = reference.ToxicWaste(*(secrets.randbelow(2**200) + 2 for _ in range(5)))
    params = reference.setup(toy_r1cs(2), secret)
    d = tmp_path_factory.mktemp("params")
    params.write(d / "toy.params")
    params.vk.write(d / "toy.vk")
    return d, params


def test_runs_rows_jsonl_and_export(toy: tuple[Path, Any], tmp_path: Path) -> None:
    d, params = toy
    pipe = ProofPipeline(
        d, engines=[ReferenceEngine()], circuits=toy_circuits(ToyCircuit(2, lambda c1: c1.xs)),
        cache=tmp_path / "cache", read_params=lambda path, check: params,
    )
    work = toy_work(2)
    xs = [list(v) for v in work.public_inputs]
    export = tmp_path / "export"
    export.mkdir()
    jsonl = tmp_path / "runs.jsonl"
    echoed: list[str] = []
    prover = AdmittedProver(pipe, jobs_per_device=2)  # bench e2e's path: the agent's admission
    rows, verified = run_e2e(
        prover, work, warm_runs=1, steady=3, in_flight=2, export=export, jsonl=jsonl, echo=echoed.append
    )
    assert verified
    assert [r["run"] for r in rows] == ["cold", "warm1", "steady1", "steady2", "steady3", "steady"]
    assert all(r["verified"] == "2/2" for r in rows[:-1])
    steady = rows[-1]
    assert steady["proofs"] == 3 and steady["verified_proofs"] == 3 and steady["in_flight"] == 2
    assert steady["proofs_per_hour"] > 0 and abs(steady["s_per_proof"] - steady["wall_s"] / 3) <= 1e-3
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert [x["run"] for x in lines] == [r["run"] for r in rows]
    assert len(lines[0]["per_partition"]) == 2 and "per_partition" not in rows[0]  # kept in the JSON lines
    assert len(echoed) == len(rows)
    proofs = sorted(p.name for p in export.glob("proof-*.bin"))
    assert proofs == sorted(f"proof-{r['run']}.bin" for r in rows[:-1])

    ve = _verify_export()
    vk = ve.read_vk((d / "toy.vk").read_bytes())
    for p in export.glob("proof-*.bin"):
        data = p.read_bytes()
        assert [ve.check(vk, data[192 * k : 192 * (k + 1)], xs[k]) for k in range(2)] == [True, True]
        assert not ve.check(vk, data[:192], [xs[0][0] + 1, xs[0][1]])
        assert not ve.check(vk, data[:192], xs[1])  # partition 0's proof with partition 1's inputs


def test_independent_point_decoding_rejects_bad_encodings(toy: tuple[Path, Any]) -> None:
    """The vk reader of verify_export refuses what blst must never see unchecked: points off the curve,
    non-canonical coordinates, flags, a wrong length."""
    ve = _verify_export()
    d, _ = toy
    raw = (d / "toy.vk").read_bytes()
    ve.read_vk(raw)
    off_curve = bytearray(raw)
    off_curve[95] ^= 1  # alpha's y
    with pytest.raises(ValueError, match="off the curve"):
        ve.read_vk(bytes(off_curve))
    g2 = bytearray(raw)
    g2[2 * 96 + 191] ^= 1  # beta_g2's y.c0
    with pytest.raises(ValueError, match="off the curve"):
        ve.read_vk(bytes(g2))
    flagged = bytearray(raw)
    flagged[0] |= 0x80
    with pytest.raises(ValueError, match="uncompressed"):
        ve.read_vk(bytes(flagged))
    big = bytearray(raw)
    big[0:48] = (ve.P + 1).to_bytes(48, "big")
    with pytest.raises(ValueError, match="non-canonical"):
        ve.read_vk(bytes(big))
    with pytest.raises(ValueError, match="layout"):
        ve.read_vk(raw + b"\0")
