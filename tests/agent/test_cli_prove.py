"""psagent prove / verify / bench e2e / params generate --sector-size: bad input (a C1 that fails the strict
check included) and missing parameters end in exit 2 and one line before any work (a real proof runs in
`make test-circuit-long`: a 2KiB setup is 2^22)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from market.proofdata import ProofData
from porep.prooftypes import proof_type

runner = CliRunner()


def _one_line(args: list[str], env: dict[str, str] | None = None) -> str:
    res = runner.invoke(app, args, env=env)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == EXIT_USAGE, (res.exit_code, res.output)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("psagent: "), res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def c1_file(tmp_path_factory: pytest.TempPathFactory, work_bytes: bytes) -> Path:
    """A valid bare 2KiB C1 (miner 1000, sector 1, as the work_bytes request carries it)."""
    p = tmp_path_factory.mktemp("c1") / "c1.json"
    raw = ProofData.parse(work_bytes).porep_raw
    assert raw is not None
    p.write_bytes(raw)
    return p


def test_prove_rejects_a_mutated_c1_before_any_proving(
    c1_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strict vanilla check runs on `psagent prove`'s input as it does on the agent's: one label of the
    last labeling proof changed (still valid JSON, still a canonical value) is refused with one line and
    exit 2, before the parameters are even looked at and before the pipeline is built."""
    import agent.proving.pipeline as pipeline

    def built(*_: object, **__: object) -> None:
        raise AssertionError("the proof pipeline was reached")

    monkeypatch.setattr(pipeline.ProofPipeline, "prove", built)
    raw = c1_file.read_bytes()
    tail = raw.rindex(b'],"layer_index"')
    i = raw.rindex(b",", 0, tail) + 1  # the last byte value of the last parent label
    value = int(raw[i:tail].rstrip(b"]"))
    mutated = raw[:i] + str(value ^ 1).encode() + raw[i + len(str(value)) :]
    assert mutated != raw and len(mutated) == len(raw)
    bad = tmp_path / "mutated.json"
    bad.write_bytes(mutated)
    for extra in ([], ["--miner", "1000", "--sector", "1"]):
        line = _one_line(["prove", str(bad), "--params-dir", str(tmp_path), *extra])
        assert "the C1 failed the strict check" in line and "labels" in line, line
    # the intact C1 gets past the check (and is stopped at its missing parameter file)
    pd = ["--params-dir", str(tmp_path)]
    line = _one_line(["prove", str(c1_file), "--miner", "1000", "--sector", "1", *pd])
    assert "missing parameter file" in line
    # bound to another sector, the intact C1 fails the check too (its replica_id is not that sector's)
    line = _one_line(["prove", str(c1_file), "--miner", "1000", "--sector", "2", *pd])
    assert "the C1 failed the strict check" in line


def test_prove_names_the_missing_parameter_file(c1_file: Path, tmp_path: Path) -> None:
    stem = proof_type("StackedDrg2KiBV1_1").param_stem
    line = _one_line(["prove", str(c1_file), "--params-dir", str(tmp_path)])
    assert f"{tmp_path / stem}.params" in line
    assert f"psagent params generate --sector-size 2KiB --out {tmp_path}" in line
    # the default is $FIL_PROOFS_PARAMETER_CACHE (Filecoin's convention)
    line = _one_line(["prove", str(c1_file)], env={"FIL_PROOFS_PARAMETER_CACHE": str(tmp_path / "cache")})
    assert f"{tmp_path / 'cache' / stem}.params" in line


def test_verify_names_the_missing_vk_and_checks_the_proof_length(c1_file: Path, tmp_path: Path) -> None:
    stem = proof_type("StackedDrg2KiBV1_1").param_stem
    proof = tmp_path / "p.bin"
    proof.write_bytes(bytes(100))
    line = _one_line(["verify", str(c1_file), "--proof", str(proof), "--params-dir", str(tmp_path)])
    assert f"{stem}.vk" in line
    (tmp_path / f"{stem}.vk").write_bytes(b"")
    line = _one_line(["verify", str(c1_file), "--proof", str(proof), "--params-dir", str(tmp_path)])
    assert "100 bytes, a StackedDrg2KiBV1_1 proof is 192" in line


def test_bad_inputs(c1_file: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"not": "a c1"}')
    line = _one_line(["prove", str(junk), "--params-dir", str(tmp_path)])
    assert "neither a C1 JSON nor a ProofData" in line
    assert "cannot read" in _one_line(["prove", str(tmp_path / "none.json")])
    line = _one_line(["prove", str(c1_file), "--miner", "1000", "--params-dir", str(tmp_path)])
    assert "both --miner and --sector" in line
    line = _one_line(["params", "generate", "--sector-size", "3KiB", "--out", str(tmp_path)])
    assert "--sector-size must be one of 2KiB, 8MiB" in line
    line = _one_line(["params", "generate", "--sector-size", "2KiB", "--synthetic-constraints", "8"])
    assert "exactly one of" in line


def test_prove_json_and_bench_e2e_name_the_missing_parameter_file(c1_file: Path, tmp_path: Path) -> None:
    stem = proof_type("StackedDrg2KiBV1_1").param_stem
    line = _one_line(["prove", str(c1_file), "--params-dir", str(tmp_path), "--json"])
    assert f"{tmp_path / stem}.params" in line
    line = _one_line(["bench", "e2e", "--c1", str(c1_file), "--params-dir", str(tmp_path)])
    assert f"{tmp_path / stem}.params" in line


def test_progress_view_shows_stages_as_they_happen() -> None:
    """The live view of `psagent prove`, fed the pipeline's events (recorded into a console)."""
    from rich.console import Console

    from agent.cli.prove import ProgressView
    from agent.proving.pipeline import StageEvent

    console = Console(record=True, width=200, force_terminal=False)
    with ProgressView(2, console) as view:
        view(StageEvent("", -1, 0, "params", 1.5))
        view(StageEvent("j", 0, 2, "witness"))
        assert "partition 1/2: witness…" in view.progress.tasks[1].description
        view(StageEvent("j", 0, 2, "witness", 0.25))
        view(StageEvent("j", 0, 2, "prove", 2.0))
        view.pace.first = view.pace.clock() - 30.0  # the first partition began 30 s ago
        view(StageEvent("j", 0, 2, "verified", 0.01))
    text = console.export_text()
    assert "setup: params 1.50s" in text
    line = "partition 1/2: witness 0.25s, prove 2.00s, verified 0.01s  (1/2 partitions, about 30 s left)"
    assert line in text


def test_params_generate_records_its_file_as_checked(tmp_path: Path) -> None:
    """A file made here is trusted by the prover without the per-point check (minutes at 2KiB, measured on the
    H200 when it was missing: bench e2e spent its whole budget inside that check)."""
    from agent.proving.parameters import CheckedParams

    cache = tmp_path / "cache"
    out = tmp_path / "params"
    args = ["params", "generate", "--synthetic-constraints", "64", "--out", str(out), "--test-seed", "1"]
    res = runner.invoke(app, args, env={"PSAGENT_CACHE_DIR": str(cache)})
    assert res.exit_code == 0, res.output
    (made,) = out.glob("*.params")
    assert CheckedParams(cache).trusted(made)
    import json

    from agent.proving.parameters import file_digest

    entry = json.loads(CheckedParams.beside(made).read_text())  # beside the file: for every user
    assert entry["blake2b"] == file_digest(made)  # the digest hashed while writing is the file's
    assert CheckedParams(tmp_path / "another-user").trusted(made)
    made.write_bytes(made.read_bytes()[:-1] + bytes([made.read_bytes()[-1] ^ 1]))
    assert not CheckedParams(cache).trusted(made)  # changed bytes are checked again


def test_params_generate_refuses_cuda_without_a_gpu_before_building_the_circuit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--backend cuda with no usable GPU: one line, exit 2, and no circuit built first (the 32GiB one takes
    minutes)."""
    import agent.cli.params as params_cli
    import gpu.device
    from gpu.placement import GpuError

    def built(*_: object) -> None:
        raise AssertionError("the circuit was built before the backend was checked")

    def no_gpu(_: object) -> None:  # what gpu.device.resolve_backend says on a machine without a GPU
        raise GpuError("no usable CUDA GPU here")

    monkeypatch.setattr(params_cli, "_blank_r1cs", built)
    monkeypatch.setattr(gpu.device, "resolve_backend", no_gpu)
    args = ["params", "generate", "--sector-size", "2KiB", "--backend", "cuda", "--out", str(tmp_path)]
    line = _one_line(args)
    assert "--backend cuda: no usable CUDA GPU here" in line


@pytest.fixture(scope="module")
def snap_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("snap") / "snap.json"
    res = runner.invoke(app, ["snap", "synth", "--sector-size", "2KiB", "--out", str(p), "--no-progress"])
    assert res.exit_code == 0, res.output
    return p


def test_prove_takes_a_snap_request_and_names_the_update_parameters(snap_file: Path, tmp_path: Path) -> None:
    """A market ProofData carrying a Snap update goes to the update circuit: its parameters are the update
    proof's files, and the line says how to make development ones (the proof itself: make test-snap-long and
    the real-prover mixed e2e)."""
    from porep.snap.params import update_proof_type

    stem = update_proof_type("StackedDrg2KiBV1").param_stem
    line = _one_line(["prove", str(snap_file), "--params-dir", str(tmp_path)])
    assert f"{tmp_path / stem}.params" in line
    assert f"psagent params generate --sector-size 2KiB --update --out {tmp_path}" in line
    pd = ["--params-dir", str(tmp_path)]
    line = _one_line(["verify", str(snap_file), "--proof", str(tmp_path / "p"), *pd])
    assert f"{stem}.vk" in line
    line = _one_line(["bench", "e2e", "--c1", str(snap_file), "--params-dir", str(tmp_path)])
    assert f"{tmp_path / stem}.params" in line
    line = _one_line(["prove", str(snap_file), "--miner", "1000", "--sector", "1", *pd])
    assert "--miner/--sector are for a bare PoRep C1, not a Snap request" in line


def test_prove_refuses_a_snap_request_that_fails_the_strict_check_before_any_work(
    snap_file: Path, tmp_path: Path
) -> None:
    import json

    d = json.loads(snap_file.read_text())
    d["Snap"]["new_r"][5] ^= 1  # comm_r_new no longer the root the vanilla proofs lead to
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(d))
    line = _one_line(["prove", str(bad), "--params-dir", str(tmp_path)])
    assert "the Snap request failed the strict check" in line
