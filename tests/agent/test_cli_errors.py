"""The first hour (issue 15): bad input ends in exit 2 and one line on stderr, before any work; outputs are
never replaced silently; the CLI says what it means (--version, -h, help on every option, no internal labels).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from agent.cli.common import Backend
from market.proofdata import ProofData

runner = CliRunner()
H = lambda b: bytes([b]).hex() * 32  # noqa: E731
U64 = str(1 << 64)


def one_line_usage_error(args: list[str], *, env: dict[str, str] | None = None) -> str:
    """Run ``psagent ARGS``; require exit 2, no traceback and exactly one non-empty stderr line."""
    res = runner.invoke(app, args, env=env)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == EXIT_USAGE, (res.exit_code, res.output)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("psagent: ")
    return lines[0]


@pytest.fixture(scope="module")
def proofdata_file(work_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ProofData of a real 2KiB C1 of miner 1000, sector 1."""
    p = tmp_path_factory.mktemp("pd") / "pd.json"
    p.write_bytes(work_bytes)
    return p


@pytest.fixture(scope="module")
def c1_file(work_bytes: bytes, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same C1 without its envelope (nothing binds replica_id to a miner and sector)."""
    pd = ProofData.parse(work_bytes)
    assert pd.porep is not None
    p = tmp_path_factory.mktemp("c1") / "c1.json"
    p.write_bytes(pd.porep.to_json())
    return p


# --- item 3: tracebacks that were -----------------------------------------------------------------

@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--miner", "-5", "--sector", "1"], "--miner must be an actor id"),
        (["--miner", "1000", "--sector", "-1"], "--sector must be an integer from 0 to 2^64-1, got -1"),
        (["--miner", "1000", "--sector", U64], f"--sector must be an integer from 0 to 2^64-1, got {U64}"),
        (["--miner", U64, "--sector", "1"], "--miner must be an integer from 0 to 2^64-1"),
    ],
)
def test_c1_check_bad_ids(c1_file: Path, extra: list[str], needle: str) -> None:
    assert needle in one_line_usage_error(["c1", "check", str(c1_file), *extra])


def test_seal_out_onto_a_file_is_refused_before_work(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("keep me")
    t0 = time.perf_counter()
    line = one_line_usage_error(
        ["seal", "--registered-proof", "StackedDrg2KiBV1_1", "--miner", "1", "--sector", "1",
         "--ticket", H(1), "--random-piece", "--no-progress", "--out", str(target)]
    )
    assert time.perf_counter() - t0 < 2 and "exists and is not a directory" in line
    assert target.read_text() == "keep me"


def test_c1_make_out_into_missing_directory_is_refused_before_work(tmp_path: Path) -> None:
    # The sector directory does not exist either: the output is checked first, so that is not what fails.
    line = one_line_usage_error(
        ["c1", "make", str(tmp_path / "nosector"), "--seed", H(3), "--out", str(tmp_path / "no" / "c1.json")]
    )
    assert f"directory {tmp_path / 'no'} does not exist" in line


@pytest.mark.parametrize("price", ["NaN", "sNaN"])
def test_nan_price_is_one_line(tmp_path: Path, price: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[market]\nprice_fil = "{price}"\n')
    line = one_line_usage_error(["status", "--config", str(cfg)])
    assert "market.price_fil: not a finite FIL amount" in line


@pytest.mark.parametrize(
    "args",
    [
        ["bench", "field", "--backend", "cuda", "--log2n", "4"],
        ["bench", "ntt", "--backend", "cuda", "--sizes", "4"],
        ["bench", "msm", "--backend", "cuda", "--log2n", "4"],
        ["bench", "prove", "--backend", "cuda", "--synthetic-constraints", "64"],
        ["bench", "curve", "--backend", "cuda", "--log2n", "4"],
    ],
)
def test_bench_cuda_without_gpu_is_refused_before_work(
    monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.setattr("gpu.device.devices", lambda: [])
    t0 = time.perf_counter()
    line = one_line_usage_error(args)
    assert time.perf_counter() - t0 < 2 and "no usable CUDA GPU" in line


def test_bench_auto_never_picks_the_simulator() -> None:
    from agent.cli.common import resolve_backend

    assert resolve_backend(Backend.auto) is Backend.cpu  # tests run under NUMBA_ENABLE_CUDASIM=1
    assert resolve_backend(Backend.cuda) is Backend.cuda  # asked for explicitly: the simulator serves it


# --- item 4: inputs that were accepted and then contradicted --------------------------------------

def test_c1_make_proofdata_negative_miner(tmp_path: Path) -> None:
    line = one_line_usage_error(
        ["c1", "make", str(tmp_path), "--seed", H(3), "--proofdata", "--miner", "-1"]
    )
    assert "--miner must be an actor id" in line


def test_c1_check_miner_needs_sector(c1_file: Path) -> None:
    line = one_line_usage_error(["c1", "check", str(c1_file), "--miner", "1000"])
    assert "--miner binds the replica_id only together with --sector" in line
    line = one_line_usage_error(["c1", "check", str(c1_file), "--sector", "1"])
    assert "--sector binds the replica_id only together with --miner or --prover-id" in line


# --- item 8: messages -----------------------------------------------------------------------------

def test_odd_length_hex_says_so(tmp_path: Path) -> None:
    line = one_line_usage_error(["c1", "make", str(tmp_path), "--seed", "abc"])
    assert "--seed has an odd number of hex digits (3)" in line
    assert "--seed is not hex: 'xyz'" in one_line_usage_error(["c1", "make", str(tmp_path), "--seed", "xyz"])


def test_unknown_proof_lists_the_valid_ones(tmp_path: Path) -> None:
    line = one_line_usage_error(
        ["seal", "--registered-proof", "StackedDrg2KiB", "--miner", "1", "--sector", "1", "--ticket", H(1),
         "--random-piece", "--out", str(tmp_path / "s")]
    )
    assert "unknown proof type 'StackedDrg2KiB'; valid:" in line
    assert "StackedDrg2KiBV1_1" in line and "StackedDrg32GiBV1" in line


@pytest.mark.parametrize("miner", ["1000", "f01000", "t01000"])
def test_miner_as_id_address(proofdata_file: Path, miner: str) -> None:
    res = runner.invoke(app, ["c1", "check", str(proofdata_file), "--miner", miner, "--sector", "1"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("ok: StackedDrg2KiBV1_1")


def test_c1_check_json_and_stdin(proofdata_file: Path) -> None:
    import json

    res = runner.invoke(app, ["c1", "check", "-", "--json"], input=proofdata_file.read_bytes())
    assert res.exit_code == 0, res.output
    verdict = json.loads(res.stdout)
    assert verdict["ok"] is True and verdict["proof"] == "StackedDrg2KiBV1_1"
    assert verdict["failed_checks"] == []


def test_config_error_in_our_words(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[market]\nprice_fil = 0.004\n")
    line = one_line_usage_error(["status", "--config", str(cfg)])
    assert 'quote the price' in line and "Input should" not in line


def test_params_info_missing_path(tmp_path: Path) -> None:
    line = one_line_usage_error(["params", "info", str(tmp_path / "nope")])
    assert f"{tmp_path / 'nope'} does not exist" in line
    f = tmp_path / "file"
    f.write_text("")
    assert f"{f} is not a directory" in one_line_usage_error(["params", "info", str(f)])


# --- item 9: configuration ------------------------------------------------------------------------

def test_misspelled_environment_section(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    line = one_line_usage_error(["status", "--config", str(cfg)], env={"PSAGENT_MARKTE__PRICE_FIL": "0.004"})
    assert "PSAGENT_MARKTE__PRICE_FIL: unknown section 'markte'" in line


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[market]\nwallet = "f1notanaddress"\n', "market.wallet: not a Filecoin address"),
        ("[prover]\ndevices = [-1]\n", "prover.devices: must be"),
    ],
)
def test_config_values_checked(tmp_path: Path, text: str, needle: str) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    assert needle in one_line_usage_error(["status", "--config", str(cfg)])


# --- item 10: no silent overwrites ----------------------------------------------------------------

def test_seal_into_non_empty_directory_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "s"
    out.mkdir()
    (out / "sealed").write_text("old data")
    line = one_line_usage_error(
        ["seal", "--registered-proof", "StackedDrg2KiBV1_1", "--miner", "1", "--sector", "1",
         "--ticket", H(1), "--random-piece", "--no-progress", "--out", str(out)]
    )
    assert "is not empty (pass --force" in line and (out / "sealed").read_text() == "old data"


def test_params_generate_over_existing_needs_force(tmp_path: Path) -> None:
    (tmp_path / "synthetic-64-2.vk").write_bytes(b"old")
    args = ["params", "generate", "--synthetic-constraints", "64", "--out", str(tmp_path), "--test-seed", "1"]
    line = one_line_usage_error(args)
    assert "synthetic-64-2.vk exists (pass --force" in line
    assert (tmp_path / "synthetic-64-2.vk").read_bytes() == b"old"
    from agent.cli.params import _check_outputs

    _check_outputs(tmp_path, "synthetic-64-2", force=True)  # --force passes the check (the setup is slow)


def test_c1_make_over_existing_file_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "c1.json"
    out.write_text("old")
    line = one_line_usage_error(["c1", "make", str(tmp_path / "nosector"), "--seed", H(3), "--out", str(out)])
    assert "exists (pass --force" in line


# --- item 7: consistency --------------------------------------------------------------------------

def test_version_and_short_help() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and re.fullmatch(r"psagent \S+\n", res.stdout)
    for args in (["-h"], ["c1", "check", "-h"], ["bench", "prove", "-h"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0 and "Usage:" in res.stdout, args


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """(name, command) of every leaf command (typer carries its own click, so this duck-types)."""
    out = []
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            out += _commands(cmd, f"{prefix}{name} ")
        else:
            out.append((prefix + name, cmd))
    return out


def test_every_option_has_help_and_no_internal_labels() -> None:
    commands = _commands(typer.main.get_command(app))
    assert len(commands) > 15
    for name, cmd in commands:
        for p in cmd.params:
            if p.name in ("help",):
                continue
            assert getattr(p, "help", None), f"psagent {name}: {p.name} has no help text"
            assert not re.search(r"\(P\d+[a-z]?\)", p.help or ""), f"psagent {name}: internal label"
        assert not re.search(r"\(P\d+[a-z]?\)", cmd.help or ""), f"psagent {name}: internal label in help"


def test_backend_is_one_enum_defaulting_to_auto() -> None:
    """One enum everywhere; auto by default, except where a --config supplies prover.backend (prove: the
    option overrides the configuration only when given)."""
    seen = 0
    for name, cmd in _commands(typer.main.get_command(app)):
        configured = any(p.name == "config" for p in cmd.params)
        for p in cmd.params:
            if p.name == "backend":
                seen += 1
                assert p.type_descriptor.annotation is Backend, name
                want = ("None",) if configured else ("auto", "Backend.auto")
                assert str(p.default) in want, (name, p.default)
    assert seen >= 6  # prove + bench field/curve/ntt/msm/prove


# --- item 6: the kernel cache ---------------------------------------------------------------------

def _clear(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for n in names:  # set first so that teardown restores the caller's value (or its absence)
        monkeypatch.setenv(n, "x")
        monkeypatch.delenv(n)


def test_kernel_cache_directory_per_version_and_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent.cli import common
    from agent.cli.common import announce_compilation, enable_kernel_cache, kernel_cache_dir
    from agent.config import Settings, engine_options

    _clear(monkeypatch, "PSAGENT_NUMBA_CACHE", "NUMBA_CACHE_DIR", "PSAGENT_CACHE_DIR", "PSAGENT_PROVER__PTX")
    monkeypatch.setattr(common, "_ours", [None])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    d = kernel_cache_dir(engine_options())
    assert d.parent == tmp_path / "psagent" / "numba" and re.fullmatch(r".+-[0-9a-f]{16}-ptx1", d.name)
    monkeypatch.setenv("PSAGENT_PROVER__PTX", "off")  # [prover] from the environment, read by agent.config
    assert kernel_cache_dir(engine_options()).name == d.name[:-1] + "0"
    monkeypatch.setenv("PSAGENT_PROVER__PTX", "cios")
    assert kernel_cache_dir(engine_options()).name == d.name + "-cios"
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "svc"))
    assert kernel_cache_dir(engine_options()).parent == tmp_path / "svc" / "numba"
    enable_kernel_cache(engine_options())
    first = os.environ["NUMBA_CACHE_DIR"]
    _clear(monkeypatch, "PSAGENT_PROVER__PTX")  # (the environment would beat the file)
    enable_kernel_cache(engine_options(Settings(prover={"ptx": "off"})))  # a config file read later: moved
    assert os.environ["NUMBA_CACHE_DIR"] != first and os.environ["NUMBA_CACHE_DIR"].endswith("-ptx0")
    assert os.environ["PSAGENT_NUMBA_CACHE"] == "1" and Path(os.environ["NUMBA_CACHE_DIR"]).is_dir()
    assert engine_options().kernel_cache  # the switch reaches the engine as a value (gpu reads no PSAGENT_*)
    announce_compilation()
    assert "compiling kernels (first run only)" in capsys.readouterr().err
    (Path(os.environ["NUMBA_CACHE_DIR"]) / "m").mkdir()
    (Path(os.environ["NUMBA_CACHE_DIR"]) / "m" / "f-1.py311.nbi").write_bytes(b"")
    announce_compilation()
    assert capsys.readouterr().err == ""


def test_kernel_cache_respects_the_users_choice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from agent.cli import common
    from agent.cli.common import enable_kernel_cache
    from gpu.options import EngineOptions

    _clear(monkeypatch, "PSAGENT_NUMBA_CACHE")
    monkeypatch.setattr(common, "_ours", [None])
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    enable_kernel_cache(EngineOptions())
    assert "PSAGENT_NUMBA_CACHE" not in os.environ and os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "mine")
    monkeypatch.setenv("PSAGENT_NUMBA_CACHE", "0")  # tests/conftest.py's setting: off stays off
    _clear(monkeypatch, "NUMBA_CACHE_DIR")
    enable_kernel_cache(EngineOptions())
    assert os.environ["PSAGENT_NUMBA_CACHE"] == "0" and "NUMBA_CACHE_DIR" not in os.environ


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["bogus"], "No such command 'bogus'. (see: psagent -h)"),
        (["prove"], "Missing argument 'input'. (see: psagent prove -h)"),
        (["c1", "synth", "--sector-size", "32GiB"], "No such option: --sector-size"),
        (["snap", "synth", "--sector-size", "2KiB"], "Missing option '--out'. (see: psagent snap synth -h)"),
        (["params", "generate", "--backend", "gpu", "--out", "x"], "Invalid value for '--backend'"),
    ],
)
def test_the_console_script_gives_usage_errors_in_one_line(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed ``psagent`` (agent.cli.main): click's usage errors (unknown command or option, missing
    argument, bad choice) are one line and exit 2 like every other bad input, not a boxed usage text."""
    from agent.cli import main

    monkeypatch.setattr("sys.argv", ["psagent", *argv])
    monkeypatch.setattr("agent.cli.use_engine_options", lambda: None)  # leave the test process's numba alone
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == EXIT_USAGE
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("psagent: ") and says in err[0], err


def test_the_console_script_exits_0_after_a_command_and_shows_help_without_arguments(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent.cli import main

    monkeypatch.setattr("agent.cli.use_engine_options", lambda: None)
    monkeypatch.setattr("sys.argv", ["psagent", "--version"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("psagent ")
    monkeypatch.setattr("sys.argv", ["psagent", "snap"])
    with pytest.raises(SystemExit):
        main()
    assert "Usage: psagent snap" in capsys.readouterr().out


def test_sector_sizes_in_every_spelling_through_one_parser(tmp_path: Path) -> None:
    """lotus's 2K / 32G, 2KiB, bytes: the same sizes everywhere a command takes one; a bad one is one line
    and exit 2 with the same words."""
    from porep.prooftypes import parse_sector_size

    for spelling, label in (("2K", "2KiB"), ("2kib", "2KiB"), ("2048", "2KiB"), ("32G", "32GiB"),
                            ("32GiB", "32GiB"), ("8M", "8MiB"), ("34359738368", "32GiB")):
        assert parse_sector_size(spelling) == label
    for cmd in (["params", "generate", "--out", str(tmp_path / "p")], ["snap", "synth", "--out",
                str(tmp_path / "s.json")], ["market-mock", "serve"]):
        line = one_line_usage_error([*cmd, "--sector-size", "3K"])
        assert "--sector-size must be one of 2KiB, 8MiB, 512MiB, 32GiB, 64GiB (or lotus's 2K / 32G" in line
    assert "the mock market seals 2KiB or 8MiB" in one_line_usage_error(
        ["market-mock", "serve", "--sector-size", "32G"]
    )


# --- P32: the operator's second day -----------------------------------------------------------------------

@pytest.mark.parametrize(
    "command", [["status"], ["run"], ["doctor"], ["prove", "in.json"], ["engine", "serve"]]
)
def test_a_config_file_that_is_not_utf8_is_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    """A Latin-1 comment (or a UTF-16 save) in the configuration was a UnicodeDecodeError traceback and exit
    1 for every command; the unit's RestartPreventExitStatus=2 then restart-looped the service."""
    cfg = tmp_path / "c.toml"
    cfg.write_bytes("# caf\u00e9 du march\u00e9\n[market]\nprice_fil = \"0.004\"\n".encode("latin-1"))
    line = one_line_usage_error([*command, "--config", str(cfg)])
    assert f"invalid TOML in {cfg}: not UTF-8 text (byte 0xe9 at offset 5)" in line
    cfg.write_text("[market]\n", encoding="utf-16")
    assert "not UTF-8 text (byte 0xff at offset 0)" in one_line_usage_error([*command, "--config", str(cfg)])


def test_c1_check_of_something_that_is_no_c1_is_exit_2(tmp_path: Path) -> None:
    """Unparseable input is bad input (exit 2, as prove and snap check say it), not a failed check (1)."""
    bad = tmp_path / "x.json"
    bad.write_text("not json at all")
    assert "x.json" in one_line_usage_error(["c1", "check", str(bad)])


@pytest.mark.parametrize("name", ["PSAGENT_PROVER", "PSAGENT_MARKET"])
def test_an_environment_table_that_is_not_json_is_one_line(tmp_path: Path, name: str) -> None:
    """``PSAGENT_PROVER={`` (a whole section in one variable, malformed) was pydantic-settings' SettingsError
    traceback and exit 1."""
    cfg = tmp_path / "c.toml"
    cfg.write_text("")
    line = one_line_usage_error(["status", "--config", str(cfg)], env={name: "{"})
    assert f"invalid configuration in environment: {name}: not a JSON value" in line


def test_help_texts_keep_their_brackets() -> None:
    """Rich reads ``[word]`` in a help text as markup and drops it: `prove -h` said "the agent's proof
    pipeline ( of the configuration)". Every bracketed word of every command's and option's help is shown."""
    import re

    import click

    def walk(cmd: click.Command, path: list[str]) -> Any:
        yield path, cmd
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                yield from walk(sub, [*path, name])

    swallowed = []
    for path, cmd in walk(typer.main.get_command(app), []):
        shown = " ".join(runner.invoke(app, [*path, "-h"], terminal_width=200).output.split())
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        for text in texts:
            for word in re.findall(r"\[[a-z_.]+\]", text):
                if word not in shown:
                    swallowed.append((" ".join(path), word))
    assert not swallowed, swallowed
    prove_help = " ".join(runner.invoke(app, ["prove", "-h"]).output.split())
    assert "the prover section of the configuration" in prove_help
