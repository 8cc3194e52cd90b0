"""psagent prove / verify as an operator drives them: the configuration's [prover] (--config, the
environment), stdin (`-`), the output checked before any work, `--hex`, and progress as log lines without a
terminal.

The command runs whole: the real CLI, the runtime's pipeline builder, the real input (a 2KiB C1, strictly
checked, public inputs from the Work) and the host verifier; only the Groth16 engine (the reference one) and
the circuit (a toy circuit whose public inputs are the request's own) stand in, so a proof takes
milliseconds instead of a 2^22-constraint setup."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_circuits, toy_r1cs  # tests/agent is on sys.path
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from agent.proving.work import Work
from market.proofdata import ProofData

runner = CliRunner()


@pytest.fixture(scope="module")
def toy_params(work_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Toy parameters (a reference setup: seconds) under the 2KiB proof type's file names, made once."""
    from gpu.groth16 import reference

    work = Work.from_bytes(work_bytes)
    d = tmp_path_factory.mktemp("toy-params")
    stem = work.proof_type.param_stem
    par = reference.setup(toy_r1cs(len(work.public_inputs[0])), reference.ToxicWaste(3, 5, 7, 11, 13))
    par.write(d / f"{stem}.params")
    par.vk.write(d / f"{stem}.vk")
    return d


class StandIn:
    """A 2KiB C1 on disk, toy parameters under its proof type's file names, and what the engine was given."""

    def __init__(self, tmp: Path, work_bytes: bytes, toy_params: Path) -> None:
        import shutil

        from agent.proving.parameters import CheckedParams

        raw = ProofData.parse(work_bytes).porep_raw
        assert raw is not None
        self.c1 = tmp / "c1.json"
        self.c1.write_bytes(raw)
        self.work = Work.from_bytes(raw)
        self.n = len(self.work.public_inputs[0])
        self.params = tmp / "params"
        shutil.copytree(toy_params, self.params)
        self.cache = tmp / "cache"
        params_file = self.params / f"{self.work.proof_type.param_stem}.params"
        CheckedParams(self.cache).record(params_file)  # as if made here: no per-point check
        self.options: list[Any] = []


@pytest.fixture
def stand_in(
    tmp_path: Path, work_bytes: bytes, toy_params: Path, monkeypatch: pytest.MonkeyPatch
) -> StandIn:
    import agent.proving.engine as engine_module
    from agent.proving.pipeline import Circuits
    from porep.sdr.public_inputs import from_c1

    s = StandIn(tmp_path, work_bytes, toy_params)
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(s.cache))
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)
    for key in [k for k in os.environ if k.startswith("PSAGENT_PROVER__")]:
        monkeypatch.delenv(key)

    def engine(backend: Any = "auto", device: Any = None, *, options: Any = None) -> ReferenceEngine:
        s.options.append(options)
        return ReferenceEngine()

    def circuits(cache: Path | None) -> Circuits:
        return toy_circuits(ToyCircuit(s.n, from_c1))  # type: ignore[return-value]

    monkeypatch.setattr(engine_module, "Groth16Engine", engine)
    monkeypatch.setattr(Circuits, "default", staticmethod(circuits))
    monkeypatch.chdir(tmp_path)
    return s


def _no_proving(monkeypatch: pytest.MonkeyPatch) -> None:
    import agent.proving.pipeline as pipeline

    def reached(*_: object, **__: object) -> None:
        raise AssertionError("the proof pipeline was reached")

    monkeypatch.setattr(pipeline.ProofPipeline, "prove", reached)


def _one_line(args: list[str], **kw: Any) -> str:
    res = runner.invoke(app, args, **kw)
    assert res.exit_code == EXIT_USAGE, (res.exit_code, res.output, res.exception)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("psagent: "), res.stderr
    return lines[0]


def _ok(args: list[str], **kw: Any) -> Any:
    res = runner.invoke(app, args, **kw)
    assert res.exit_code == 0, (res.output, res.exception)
    return res


def test_prove_reads_the_configuration(
    stand_in: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prover.params_dir from --config (and PSAGENT_PROVER__PARAMS_DIR, which beats the file), [prover]'s
    engine options into the engine, --params-dir over both."""
    s = stand_in
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[prover]\nparams_dir = "{s.params}"\ndevice_spmv = true\n')
    out = tmp_path / "a.proof"
    _ok(["prove", str(s.c1), "--config", str(cfg), "--out", str(out)])
    assert len(out.read_bytes()) == s.work.proof_bytes and s.options[-1].device_spmv is True
    _ok(["verify", str(s.c1), "--proof", str(out), "--config", str(cfg)])
    # the environment's override beats the file
    monkeypatch.setenv("PSAGENT_PROVER__PARAMS_DIR", str(tmp_path / "elsewhere"))
    line = _one_line(["prove", str(s.c1), "--config", str(cfg), "--out", str(tmp_path / "b.proof")])
    assert f"missing parameter file {tmp_path / 'elsewhere'}" in line
    line = _one_line(["verify", str(s.c1), "--proof", str(out), "--config", str(cfg)])
    assert str(tmp_path / "elsewhere") in line
    # and --params-dir beats both
    pd = ["--params-dir", str(s.params)]
    _ok(["prove", str(s.c1), "--config", str(cfg), *pd, "--out", str(tmp_path / "c")])
    monkeypatch.delenv("PSAGENT_PROVER__PARAMS_DIR")
    monkeypatch.setenv("PSAGENT_PROVER__PARAMS_DIR", str(s.params))
    _ok(["prove", str(s.c1), "--out", str(tmp_path / "d.proof")])  # no file: the environment alone
    bad = tmp_path / "bad.toml"
    bad.write_text('[prover]\nbackend = "tpu"\n')
    assert "prover.backend" in _one_line(["prove", str(s.c1), "--config", str(bad)])


def test_stdin_for_the_input_and_for_the_proof(stand_in: StandIn, tmp_path: Path) -> None:
    s = stand_in
    pd = ["--params-dir", str(s.params)]
    raw = s.c1.read_bytes()
    out = tmp_path / "p.proof"
    _ok(["prove", "-", "--out", str(out), *pd], input=raw)
    proof = out.read_bytes()
    assert len(proof) == s.work.proof_bytes
    _ok(["verify", str(s.c1), "--proof", "-", *pd], input=proof)
    res = _ok(["verify", "-", "--proof", str(out), *pd], input=raw)
    assert "1 partition(s) verified" in res.stdout or "partition(s) verified" in res.stdout
    # stdin has no name to put a proof beside: --out or --hex
    assert "give --out FILE" in _one_line(["prove", "-", *pd], input=raw)
    assert "cannot both be -" in _one_line(["verify", "-", "--proof", "-", *pd], input=raw)
    # a wrong proof from stdin is still refused by its length, in one line
    line = _one_line(["verify", str(s.c1), "--proof", "-", *pd], input=b"\0" * 10)
    assert line.startswith("psagent: stdin: 10 bytes")
    assert "stdin:" in _one_line(["prove", "-", "--out", str(tmp_path / "x"), *pd], input=b"{}")


def test_a_bad_out_fails_in_one_line_before_any_work(
    stand_in: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = stand_in
    pd = ["--params-dir", str(s.params)]
    existing = tmp_path / "existing.proof"
    existing.write_bytes(b"keep")
    # the defaults' target (INPUT.proof) is checked too
    (tmp_path / "c1.json.proof").write_bytes(b"keep")
    read: list[Path] = []
    import agent.cli.prove as prove_cli

    real_read = prove_cli.read_input

    def reading(path: Path, what: str = "") -> bytes:
        read.append(path)
        return real_read(path, what)

    monkeypatch.setattr(prove_cli, "read_input", reading)
    _no_proving(monkeypatch)
    cases = [
        (tmp_path / "missing" / "p.proof", "does not exist"),
        (tmp_path, "is a directory"),
        (existing, "exists (pass --force to replace it)"),
        (None, "exists (pass --force to replace it)"),
    ]
    sysfs = Path("/sys/kernel")
    if os.geteuid() == 0 and sysfs.is_dir():  # root writes anywhere the permission bits allow: not sysfs
        cases.append((sysfs / "psagent.proof", "cannot write in /sys/kernel"))
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((locked / "p.proof", "is not writable"))
    for target, needle in cases:
        extra = [] if target is None else ["--out", str(target)]
        line = _one_line(["prove", str(s.c1), *extra, *pd])
        assert needle in line, (target, line)
    assert read == [] and existing.read_bytes() == b"keep"  # refused before the input was even read
    monkeypatch.undo()


def test_force_replaces_and_hex_prints_the_proof(stand_in: StandIn, tmp_path: Path) -> None:
    s = stand_in
    pd = ["--params-dir", str(s.params)]
    existing = tmp_path / "existing.proof"
    existing.write_bytes(b"old")
    _ok(["prove", str(s.c1), "--out", str(existing), "--force", *pd])
    assert len(existing.read_bytes()) == s.work.proof_bytes
    # --hex: the proof on stdout as lotus-bench prints it; no file unless --out
    res = _ok(["prove", str(s.c1), "--hex", *pd])
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith("proof: "), res.stdout
    proof = bytes.fromhex(lines[0][len("proof: "):])
    assert len(proof) == s.work.proof_bytes and not (tmp_path / "c1.json.proof").exists()
    assert "proven and verified" in res.stderr
    # what --hex printed verifies, piped straight back in
    _ok(["verify", str(s.c1), "--proof", "-", *pd], input=res.stdout)
    out = tmp_path / "h.proof"
    res = _ok(["prove", str(s.c1), "--hex", "--out", str(out), *pd])
    assert bytes.fromhex(res.stdout.split()[1]) == out.read_bytes()
    assert "give one" in _one_line(["prove", str(s.c1), "--hex", "--json", *pd])


def test_progress_without_a_terminal_is_log_lines(stand_in: StandIn, tmp_path: Path) -> None:
    """Not a terminal (a pipe, a log): one line per stage on stderr, nothing drawn; --json's stdout stays
    the one JSON object."""
    s = stand_in
    pd = ["--params-dir", str(s.params)]
    res = _ok(["prove", str(s.c1), "--json", "--out", str(tmp_path / "j.proof"), *pd])
    assert json.loads(res.stdout)["verified"] == f"{s.work.partitions}/{s.work.partitions}"
    log = [ln for ln in res.stderr.splitlines() if ln.startswith("prove: ")]
    stages = [ln.split(" s  ", 1)[1] for ln in log]  # "prove: <elapsed> s  <stage>"
    assert "setup: synthesis…" in stages and any(x.startswith("setup: params done in") for x in stages)
    assert any(x.startswith("partition 1/1: witness done in") for x in stages), stages
    assert stages[-1].startswith("partition 1/1: verified (1/1 partitions)"), stages
    assert "\r" not in res.stderr and "\x1b[" not in res.stderr  # no live view drawn


def test_progress_log_says_the_time_left() -> None:
    from agent.cli.prove import ProgressLog
    from agent.proving.pipeline import StageEvent

    class Out:
        lines: list[str] = []

        def write(self, text: str) -> None:
            self.lines.append(text)

        def flush(self) -> None:
            pass

    now = [100.0]
    out = Out()
    log = ProgressLog(3, out, clock=lambda: now[0])  # type: ignore[arg-type]
    log(StageEvent("", -1, 0, "params"))
    now[0] += 5
    log(StageEvent("", -1, 0, "params", 5.0))
    log(StageEvent("j", 0, 3, "witness"))  # the first partition begins at 105
    now[0] += 10
    log(StageEvent("j", 0, 3, "witness", 10.0))
    log(StageEvent("j", 0, 3, "verified", 0.1))  # 1 of 3 in 10 s: 20 s left
    now[0] += 10
    log(StageEvent("j", 1, 3, "verified", 0.1))  # 2 of 3 in 20 s: 10 s left
    now[0] += 10
    log(StageEvent("j", 2, 3, "verified", 0.1))
    text = "".join(out.lines)
    assert "   0.0 s  setup: params…" in text and "   5.0 s  setup: params done in 5.00 s" in text
    assert "partition 1/3: witness done in 10.00 s" in text
    assert "partition 1/3: verified (1/3 partitions, about 20 s left)" in text
    assert "partition 2/3: verified (2/3 partitions, about 10 s left)" in text
    assert "partition 3/3: verified (3/3 partitions)\n" in text
