"""Official vs development parameter files: `params info` / `params check`, `params generate` kept out of
Filecoin's directory, the gate's log and the prover trusting a published digest instead of the per-point
check. Files are small fakes or toy parameters; the published table is replaced (a test-only injection)
where a test needs a file with a matching digest."""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path
from typing import Any

import pytest
from _doubles import ReferenceEngine, ToyCircuit, toy_r1cs  # tests/agent is on sys.path
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from agent.cli.common import EXIT_FAILURE
from agent.paramfiles import ParamDigests, fetch_hint, official_dir_of, official_dirs, verdict
from porep import official_params as op
from porep.official_params import OfficialFile, Registry
from porep.prooftypes import proof_type

runner = CliRunner()
STEM = proof_type("StackedDrg2KiBV1_1").param_stem  # a published name


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FIL_PROOFS_PARAMETER_CACHE", raising=False)


def _fake_pair(directory: Path, stem: str = STEM) -> tuple[Path, Path]:
    """A .vk and a .params whose layout parses (no points: every count 0); bytes, not curve points."""
    directory.mkdir(parents=True, exist_ok=True)
    from gpu.groth16.params import VK_FIXED

    vk = bytes(VK_FIXED) + struct.pack(">I", 0)
    (directory / f"{stem}.vk").write_bytes(vk)
    (directory / f"{stem}.params").write_bytes(vk + struct.pack(">I", 0) * 5)
    return directory / f"{stem}.params", directory / f"{stem}.vk"


def _publish(monkeypatch: pytest.MonkeyPatch, *files: Path) -> None:
    """Inject a published table in which ``files`` have their current digests."""
    entries = [OfficialFile(f.name, f"Qm{f.suffix}", op.paramfetch_digest(f), "test", "2KiB") for f in files]
    monkeypatch.setattr(op, "_registry", Registry(entries))


def _rows(output: str) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return {r["file"]: r for r in rows}


def test_params_info_tells_official_from_damaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    params, vk = _fake_pair(tmp_path / "p")
    _publish(monkeypatch, params, vk)
    res = runner.invoke(app, ["params", "info", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    rows = _rows(res.stdout)
    assert rows[params.name]["kind"] == "official" and rows[vk.name]["kind"] == "official"
    assert rows[vk.name]["cid"] == "Qm.vk"
    # one byte changed, same name: damaged, named, exit 1
    data = bytearray(params.read_bytes())
    data[5] ^= 1
    params.write_bytes(bytes(data))
    res = runner.invoke(app, ["params", "info", str(tmp_path / "p")])
    assert res.exit_code == EXIT_FAILURE
    row = _rows(res.stdout)[params.name]
    assert row["kind"] == "damaged" and op.registry().by_name[params.name].digest in row["reason"]
    assert _rows(res.stdout)[vk.name]["kind"] == "official"


def test_params_info_with_the_real_table(tmp_path: Path) -> None:
    """Under the real published names: a fake file is damaged, ours (meta.json) development, and a file in
    Filecoin's directory that is development gets a warning."""
    params, _ = _fake_pair(tmp_path / "p")
    res = runner.invoke(app, ["params", "info", str(tmp_path / "p")])
    assert res.exit_code == EXIT_FAILURE and _rows(res.stdout)[params.name]["kind"] == "damaged"
    (tmp_path / "p" / f"{STEM}.meta.json").write_text('{"toxic_waste": "test"}')
    res = runner.invoke(app, ["params", "info", str(tmp_path / "p")])
    assert res.exit_code == 0
    rows = _rows(res.stdout)
    assert rows[params.name]["kind"] == "development" and "warning" not in rows[params.name]
    official = tmp_path / "official"
    _fake_pair(official, "toy")
    res = runner.invoke(
        app, ["params", "info", str(official)], env={"FIL_PROOFS_PARAMETER_CACHE": str(official)}
    )
    row = _rows(res.stdout)["toy.params"]
    assert row["kind"] == "development" and "official parameter directory" in row["warning"]


def test_digests_are_computed_once_per_file_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    params, _ = _fake_pair(tmp_path / "p")
    _publish(monkeypatch, params)
    digests = ParamDigests(tmp_path / "c")
    assert verdict(params, digests).kind == "official"
    reads: list[Path] = []
    real_open = open

    def counting_open(path: Any, *a: Any, **k: Any) -> Any:
        if Path(path) == params:
            reads.append(params)
        return real_open(path, *a, **k)

    monkeypatch.setattr("builtins.open", counting_open)
    assert verdict(params, ParamDigests(tmp_path / "c")).kind == "official"
    assert reads == []  # on record: not read again
    params.write_bytes(params.read_bytes() + b"x")  # changed: hashed again, now damaged
    assert verdict(params, ParamDigests(tmp_path / "c")).kind == "damaged"


def test_params_generate_refuses_filecoins_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Into $FIL_PROOFS_PARAMETER_CACHE (or /var/tmp/filecoin-proof-parameters, or below them): exit 2, one
    line, before any circuit is built, nothing written."""
    import agent.cli.params as params_cli

    def built(*_: object) -> None:
        raise AssertionError("the circuit was built before --out was checked")

    monkeypatch.setattr(params_cli, "_blank_r1cs", built)
    official = tmp_path / "filecoin-proof-parameters"
    official.mkdir()
    env = {"FIL_PROOFS_PARAMETER_CACHE": str(official)}
    for out in (official, official / "sub", Path("/var/tmp/filecoin-proof-parameters")):
        res = runner.invoke(app, ["params", "generate", "--sector-size", "2KiB", "--out", str(out)], env=env)
        assert res.exit_code == EXIT_USAGE, res.output
        assert "official parameter directory" in res.output and len(res.output.strip().splitlines()) == 1
    assert list(official.iterdir()) == []
    rel = runner.invoke(
        app, ["params", "generate", "--synthetic-constraints", "8", "--out", "."],
        env={"FIL_PROOFS_PARAMETER_CACHE": "."},
    )
    assert rel.exit_code == EXIT_USAGE and "official parameter directory" in rel.output


def test_official_dirs_and_the_fetch_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert official_dirs() == [Path("/var/tmp/filecoin-proof-parameters").resolve()]
    monkeypatch.setenv("FIL_PROOFS_PARAMETER_CACHE", str(tmp_path))
    assert official_dir_of(tmp_path / "x") == tmp_path.resolve() and official_dir_of(Path("/tmp")) is None
    hint = fetch_hint("32GiB", tmp_path)
    assert "lotus fetch-params 32GiB" in hint and "--out ./params" in hint
    assert fetch_hint("2KiB", tmp_path / "..", update=True).endswith(f"--update --out {tmp_path / '..'}")


def _toy_params(directory: Path, stem: str, n_inputs: int = 2) -> Any:
    import secrets

    from gpu.groth16 import reference

    params = reference.setup(
        toy_r1cs(n_inputs), reference.ToxicWaste(*(secrets.randbelow(2**200) + 2 for _ in range(5)))
    )
    directory.mkdir(parents=True, exist_ok=True)
    params.write(directory / f"{stem}.params")
    params.vk.write(directory / f"{stem}.vk")
    return params


def test_params_check_by_digest_or_point_by_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "p"
    _toy_params(d, "toy")
    published = _fake_pair(d, "pub")
    _publish(monkeypatch, *published)
    res = runner.invoke(app, ["params", "check", str(d)])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert "ok      pub.params: official (digest" in lines[0] and "ok      pub.vk: official" in lines[1]
    assert lines[2].startswith("ok      toy.params: development,") and "points on the curve" in lines[2]
    assert lines[3].startswith("ok      toy.vk: development,")
    # the per-point check is remembered for the .params (same bytes)
    again = runner.invoke(app, ["params", "check", str(d)]).stdout.splitlines()
    assert "checked earlier" in again[2]
    # a point changed: its check fails; a published file changed: damaged; exit 1 with a summary line
    toy = d / "toy.params"
    data = bytearray(toy.read_bytes())
    data[len(data) - 40] ^= 0x01  # inside the last G2 point's coordinates
    toy.write_bytes(bytes(data))
    published[1].write_bytes(published[1].read_bytes() + b"\0")
    res = runner.invoke(app, ["params", "check", str(d)])
    assert res.exit_code == EXIT_FAILURE
    out = res.stdout.splitlines()
    assert out[1].startswith("FAILED  pub.vk: damaged")
    assert out[2].startswith("FAILED  toy.params: development")
    assert "2 of 4 file(s) failed the check" in res.output


def test_bad_directories_are_one_line(tmp_path: Path) -> None:
    for cmd in ("info", "check"):
        res = runner.invoke(app, ["params", cmd, str(tmp_path / "nope")])
        assert res.exit_code == EXIT_USAGE and "does not exist" in res.output
        res = runner.invoke(app, ["params", cmd, str(tmp_path)])
        assert res.exit_code == EXIT_USAGE and "no .params or .vk files" in res.output


def test_an_official_file_is_trusted_by_its_digest_and_the_gate_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The prover skips the per-point check of a file whose published digest matches (paramfetch's
    guarantee), runs it for any other file, and the gate's log names each file's kind."""
    from _doubles import toy_circuits

    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver

    d = tmp_path / "p"
    pt = proof_type("StackedDrg2KiBV1_1")
    _toy_params(d, pt.param_stem)
    params_file, vk_file = d / f"{pt.param_stem}.params", d / f"{pt.param_stem}.vk"
    published = [  # the .params with its digest, the .vk with another one: damaged
        OfficialFile(params_file.name, "Qm1", op.paramfetch_digest(params_file), "test", "2KiB"),
        OfficialFile(vk_file.name, "Qm2", "0" * 32, "test", "2KiB"),
    ]
    monkeypatch.setattr(op, "_registry", Registry(published))
    asked: list[bool] = []

    def read(path: Path, subgroup_check: bool) -> Any:
        from gpu.groth16.params import Parameters

        asked.append(subgroup_check)
        return Parameters.read(path, subgroup_check=False)

    pipe = ProofPipeline(
        d, engines=[ReferenceEngine()], circuits=toy_circuits(ToyCircuit(2, lambda c1: [])),  # type: ignore[arg-type]
        cache=tmp_path / "c", read_params=read, sample=lambda: _sample(),
    )
    prover = AdmittedProver(pipe, accepted=(pt.name,))
    with caplog.at_level(logging.INFO, logger="agent.proving"):
        prover.warm_up()
    assert asked == [False]  # no per-point check: the digest vouched for the points
    lines = {r.getMessage().rsplit("/", 1)[-1]: r.levelno for r in caplog.records}
    assert any(m.startswith(f"{params_file.name}: official (digest") for m in lines)
    damaged = [m for m in lines if m.startswith(f"{vk_file.name}: damaged (digest")]
    assert damaged and lines[damaged[0]] == logging.ERROR
    # another file under that name: the per-point check runs
    monkeypatch.setattr(op, "_registry", Registry([]))
    _toy_params(d, pt.param_stem)
    pipe2 = ProofPipeline(d, engines=[ReferenceEngine()], circuits=toy_circuits(ToyCircuit(2, lambda c1: [])),  # type: ignore[arg-type]
                          cache=tmp_path / "c2", read_params=read)
    pipe2.shape(pt)
    assert asked[-1] is True


def _sample() -> Any:
    from _doubles import toy_sample

    return toy_sample()


# --- P32: development parameters never reach the real market ----------------------------------------------

def _gated_prover(d: Path, cache: Path, *, official_only: bool) -> Any:
    from _doubles import toy_circuits

    from agent.proving.pipeline import ProofPipeline
    from agent.proving.prover import AdmittedProver

    pipe = ProofPipeline(
        d, engines=[ReferenceEngine()], circuits=toy_circuits(ToyCircuit(2, lambda c1: [])),  # type: ignore[arg-type]
        cache=cache, sample=lambda: _sample(),
    )
    return AdmittedProver(pipe, accepted=("StackedDrg2KiBV1_1",), official_only=official_only)


def test_the_gate_of_a_real_market_opens_only_on_official_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Development parameters under the published names (``params generate``, a .meta.json beside them) used
    to be logged and loaded: the self-test verifies against the same development key, so the gate opened and
    every proof went to a market that verifies with the official keys. With official_only (every market but
    the mock and the dry run) the warm-up refuses them in one line naming the file and the fix; the same
    files pass once their digests are the published ones, and the dry run's prover (official_only False)
    still loads them."""
    pt = proof_type("StackedDrg2KiBV1_1")
    d = tmp_path / "p"
    _toy_params(d, pt.param_stem)
    (d / f"{pt.param_stem}.meta.json").write_text('{"toxic_waste": "development"}')
    monkeypatch.setattr(op, "_registry", Registry([]))  # the real table names these files: none match here
    prover = _gated_prover(d, tmp_path / "c", official_only=True)
    with pytest.raises(RuntimeError) as refused:
        prover.warm_up()
    why = str(refused.value)
    assert why.startswith(f"{pt.param_stem}.params is development (")
    assert "the market and the chain verify against the official keys" in why
    assert "lotus fetch-params 2KiB" in why
    assert "prover.allow_development_params = true" in why and "\n" not in why
    assert not prover.loaded(pt)  # refused before anything was loaded
    # a damaged file (a published name, another digest) is refused too
    (d / f"{pt.param_stem}.meta.json").unlink()
    entries = [OfficialFile(f"{pt.param_stem}.{s}", "Qm", "0" * 32, "test", "2KiB") for s in ("params", "vk")]
    monkeypatch.setattr(op, "_registry", Registry(entries))
    with pytest.raises(RuntimeError, match=r"\.params is damaged \(digest"):
        _gated_prover(d, tmp_path / "c", official_only=True).warm_up()
    # the published digests: the gate opens
    _publish(monkeypatch, d / f"{pt.param_stem}.params", d / f"{pt.param_stem}.vk")
    official = _gated_prover(d, tmp_path / "c", official_only=True)
    official.warm_up()
    assert official.loaded(pt)
    # development files where development is wanted (the dry run, the mock market)
    monkeypatch.setattr(op, "_registry", Registry([]))
    dev = _gated_prover(d, tmp_path / "c", official_only=False)
    dev.warm_up()
    assert dev.loaded(pt)


def test_the_gate_judges_a_proof_type_at_its_first_use_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proof type the warm-up did not load (the cuzk server proves what Curio sends, beyond engine.preload)
    meets the same gate the first time it is made ready: refused before it loads, every time until the files
    change; once official, judged once."""
    import anyio

    from agent.proving.prover import ParamsRefused

    pt = proof_type("StackedDrg2KiBV1_1")
    d = tmp_path / "p"
    _toy_params(d, pt.param_stem)
    (d / f"{pt.param_stem}.meta.json").write_text('{"toxic_waste": "development"}')
    monkeypatch.setattr(op, "_registry", Registry([]))
    prover = _gated_prover(d, tmp_path / "c", official_only=True)
    prover.accepted = ()  # nothing at the warm-up
    prover.warm_up()
    for _ in range(2):  # refused again: a refusal is not remembered as judged
        with pytest.raises(ParamsRefused, match=r"\.params is development \("):
            anyio.run(prover.preload, pt)
        assert not prover.loaded(pt)
    (d / f"{pt.param_stem}.meta.json").unlink()
    _publish(monkeypatch, d / f"{pt.param_stem}.params", d / f"{pt.param_stem}.vk")
    judged: list[str] = []
    real = prover._log_verdicts
    monkeypatch.setattr(prover, "_log_verdicts", lambda t: (judged.append(t.name), real(t)))
    anyio.run(prover.preload, pt)
    anyio.run(prover.preload, pt)
    assert prover.loaded(pt) and judged == [pt.name]


def test_run_refuses_development_parameters_unless_told(tmp_path: Path) -> None:
    """``psagent run``'s prover (agent.runtime.build_prover) and ``psagent engine serve``'s (cuzk_prover)
    refuse development files by default; the named override prover.allow_development_params admits them; the
    dry run's never refuses them."""
    from agent import runtime
    from agent.config import Settings

    base = {"backend": "cpu", "params_dir": str(tmp_path)}
    assert runtime.build_prover(Settings(prover=base), cache=tmp_path).official_only is True
    allowed = Settings(prover={**base, "allow_development_params": True})
    assert runtime.build_prover(allowed, cache=tmp_path).official_only is False
    dry = runtime.build_prover(Settings(prover=base), cache=tmp_path, official_only=False)
    assert dry.official_only is False
    # psagent engine serve: Curio sends its proofs to the chain, which verifies with the official keys
    assert runtime.cuzk_prover(Settings(prover=base), cache=tmp_path).official_only is True
    assert runtime.cuzk_prover(allowed, cache=tmp_path).official_only is False
    # psagent prove / bench e2e: a proof to a file, not to a market; the gate names each file's kind only
    from agent.cli.prove import make_prover

    assert make_prover(Settings(prover=base), tmp_path, None).official_only is False
