"""`psagent params generate` fails early and clean: the estimate printed and checked against the free disk
and memory before any work, leftovers of earlier runs named, a disk that fills up mid-run and SIGTERM /
SIGINT end in one line with no partial file left."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from agent.cli.common import EXIT_FAILURE

runner = CliRunner()
SYNTH = ["params", "generate", "--synthetic-constraints", "4096", "--backend", "cpu", "--test-seed", "1"]
STEM = "synthetic-4096-2"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "cache"))


def _lines(text: str) -> list[str]:
    return [line for line in text.strip().splitlines() if line.strip()]


def test_the_estimate_is_the_file_and_a_short_disk_or_memory_is_refused_before_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.host
    import gpu.groth16.setup as setup
    from gpu.groth16.plan import ProofSizes
    from gpu.groth16.setup import estimate
    from gpu.groth16.synthetic import SyntheticCircuit

    def never(*_: Any, **__: Any) -> None:
        raise AssertionError("the setup started although it could not fit")

    est = estimate(ProofSizes.of_r1cs(SyntheticCircuit(4096, 2).r1cs()))
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{STEM}.params.tmp").write_bytes(bytes(1000))  # this run's own leftover: replaced
    (out / "other.params.tmp").write_bytes(bytes(10))  # another one: named, left alone
    monkeypatch.setattr(setup, "generate_file", never)
    monkeypatch.setattr(agent.host, "disk_free", lambda _p: est.file_bytes // 2)
    res = runner.invoke(app, [*SYNTH, "--out", str(out)])
    assert res.exit_code == EXIT_USAGE, res.output
    lines = _lines(res.output)
    assert any(f"{STEM}.params.tmp" in x and "left over" in x and "replaced now" in x for x in lines)
    assert any("other.params.tmp" in x and "rm " in x for x in lines)
    assert any(f"take {agent.host.gb(est.file_bytes)} on disk" in x for x in lines)
    need = agent.host.gb(est.file_bytes + est.vk_bytes + (1 << 20))
    free = agent.host.gb(est.file_bytes // 2 + 1000)  # the own leftover's bytes count as free
    assert lines[-1] == f"psagent: --out {out}: the parameters need {need} on disk, {free} is free there"
    assert (out / "other.params.tmp").exists()
    monkeypatch.setattr(agent.host, "disk_free", lambda _p: 1 << 40)
    monkeypatch.setattr(agent.host, "mem_available", lambda: est.host_bytes - 1)
    res = runner.invoke(app, [*SYNTH, "--out", str(tmp_path / "new")])
    assert res.exit_code == EXIT_USAGE and "the setup needs about" in _lines(res.output)[-1]
    assert not (tmp_path / "new").exists()  # nothing created
    # on a machine whose memory shows as available only once used, the operator can make it a warning
    monkeypatch.setenv("PSAGENT_SETUP_MEMORY_CHECK", "warn")
    res = runner.invoke(app, [*SYNTH, "--out", str(tmp_path / "warned")])
    assert any("warning: the setup needs about" in x for x in _lines(res.output))
    assert "setup started" in str(res.exception)  # past the check: into the (patched) setup


def _tmpfs(path: Path, size: str) -> bool:
    """A tiny tmpfs at ``path`` (root only); False where it cannot be mounted."""
    path.mkdir()
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.mark.slow
def test_a_disk_that_fills_up_is_one_line_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the file is written (another process took the space after the check): a real
    ENOSPC on a 256 KiB tmpfs when one can be mounted, else the writer's file raising ENOSPC."""
    import agent.host
    import gpu.groth16.params as params_module

    disk = tmp_path / "disk"
    real = _tmpfs(disk, "256k")
    try:
        if not real:
            real_open = open

            class Full:
                def __init__(self, f: Any) -> None:
                    self.f, self.n = f, 0

                def write(self, b: Any) -> int:
                    self.n += len(memoryview(b).cast("B"))
                    if self.n > 200_000:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    return int(self.f.write(b))

                def __getattr__(self, name: str) -> Any:
                    return getattr(self.f, name)

            monkeypatch.setattr(params_module, "open", lambda p, m="r": Full(real_open(p, m)), raising=False)
        monkeypatch.setattr(agent.host, "disk_free", lambda _p: 1 << 40)  # the check passed earlier
        out = disk / "params"
        res = runner.invoke(app, [*SYNTH, "--out", str(out)])
        assert res.exit_code == EXIT_FAILURE, res.output
        last = _lines(res.output)[-1]
        assert "No space left on device" in last and f"removed the partial {STEM}.params.tmp" in last, last
        assert "Traceback" not in res.output
        assert list(out.iterdir()) == [], f"left behind ({'tmpfs' if real else 'patched write'})"
    finally:
        if real:
            subprocess.run(["umount", str(disk)], check=True)


# A real `psagent params generate` process whose point computation is replaced by a slow writer through the
# real gpu.groth16.params.ParamsWriter (no minute of kernel compilation): the signal, the unwinding, the
# clean-up and the message are the real ones.
SLOW_SETUP = r'''
import sys, time
import gpu.groth16.setup as setup
from gpu.curves import G1
from gpu.groth16.params import ParamsWriter

def slow(r1cs, path, *, progress=None, **_):
    with ParamsWriter(path) as w:
        w.write(bytes(1000))
        w.section(10**6, G1)
        progress("h", 0.0, 1.0)
        print("writing", file=sys.stderr, flush=True)
        for _ in range(10**6):
            w.write(bytes(96 * 1000))
            time.sleep(0.01)

setup.generate_file = slow
from agent.cli import main
sys.argv = ["psagent", *sys.argv[1:]]
main()
'''


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_removes_the_partial_file_and_says_so_in_one_line(tmp_path: Path, signum: int) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PSAGENT_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_SETUP, *SYNTH[:-2], "--out", str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    tmp = out / f"{STEM}.params.tmp"
    deadline = time.monotonic() + 60
    while not (tmp.exists() and tmp.stat().st_size > 300_000) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    assert tmp.exists(), "the writer never started"
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, stderr
    lines = _lines(stderr)
    assert lines[-1] == f"psagent: {name}: stopped; removed the partial {STEM}.params.tmp", stderr
    assert "Traceback" not in stderr and stdout == ""
    assert list(out.iterdir()) == []


@pytest.mark.slow
def test_a_sector_size_is_estimated_from_its_template_before_the_circuit_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--sector-size: the counts come from the circuit template (recorded once, cached), so a host without
    the memory for the circuit and the setup is told so before the circuit is tiled."""
    import agent.cli.params as params_cli
    import agent.host

    def built(*_: object) -> None:
        raise AssertionError("the circuit was built before the resources were checked")

    monkeypatch.setattr(params_cli, "_blank_r1cs", built)
    monkeypatch.setattr(agent.host, "mem_available", lambda: 50 << 20)
    res = runner.invoke(app, ["params", "generate", "--sector-size", "2K", "--backend", "cpu",
                              "--out", str(tmp_path / "out")])
    assert res.exit_code == EXIT_USAGE, res.output
    lines = _lines(res.output)
    assert "1.1 GB on disk" in lines[-2]
    assert "memory for the circuit and the setup (52.4 MB available)" in lines[-2]
    assert lines[-1].startswith("psagent: the setup needs about 1.6 GB of memory, 52.4 MB is available")



def test_a_vk_that_cannot_follow_takes_its_new_params_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The .params is whole and in place, then the .vk cannot be written: no set without all three files, so
    the new .params goes too, and the line says so. (The setup is a stand-in that writes the file whole.)"""
    from types import SimpleNamespace

    import gpu.groth16.setup as setup

    def vk_write(path: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def generate_file(r1cs: Any, path: Path, **_: Any) -> Any:
        path.write_bytes(b"whole")
        return SimpleNamespace(vk=SimpleNamespace(write=vk_write), sizes={}, blake2b="0" * 64)

    monkeypatch.setattr(setup, "generate_file", generate_file)
    out = tmp_path / "params"
    res = runner.invoke(app, [*SYNTH, "--out", str(out)])
    assert res.exit_code == EXIT_FAILURE, res.output
    last = _lines(res.output)[-1]
    assert "No space left on device" in last and f"removed the new {STEM}.params" in last, last
    assert list(out.iterdir()) == []
