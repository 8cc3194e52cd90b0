"""psagent doctor with faked probes (the host's driver, device files, toolkit, devices, memory) and a real
loopback HTTP server as the market: each missing piece is named with its fix, nothing else is flagged."""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.cli import app
from agent.config import Settings
from agent.doctor import Device, Finding, Probes, diagnose
from porep import official_params as op
from porep.official_params import OfficialFile, Registry

H200 = Device(0, "NVIDIA H200", (9, 0), 141 << 30)


class FakeHost(Probes):
    """A healthy GPU host; tests change one thing at a time."""

    def __init__(self, **kw: Any) -> None:
        super().__init__()
        self.kw = {"kernel": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15", "cuda": 12080,
                   "files": {"nvidiactl": True, "nvidia0": True, "nvidia-uvm": True},
                   "toolkit": (True, "nvvm /x/libnvvm.so; libdevice /x/libdevice.10.bc"),
                   "devices": [H200], "mem": 1 << 40, **kw}
        self.device_calls = 0

    def kernel_driver(self) -> str | None:
        return self.kw["kernel"]  # type: ignore[no-any-return]

    def cuda_driver_version(self) -> int | None:
        return self.kw["cuda"]  # type: ignore[no-any-return]

    def device_files(self) -> dict[str, bool]:
        return self.kw["files"]  # type: ignore[no-any-return]

    def toolkit(self) -> tuple[bool, str]:
        return self.kw["toolkit"]  # type: ignore[no-any-return]

    def devices(self) -> list[Device]:
        self.device_calls += 1
        return self.kw["devices"]  # type: ignore[no-any-return]

    def mem_total(self) -> int | None:
        return self.kw["mem"]  # type: ignore[no-any-return]


class _Market(BaseHTTPRequestHandler):
    skew_s = 0.0

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(404)  # its Date header comes from date_time_string below
        self.send_header("Content-Length", "0")
        self.end_headers()

    def date_time_string(self, timestamp: float | None = None) -> str:
        return email.utils.formatdate(time.time() + self.skew_s, usegmt=True)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def market() -> Iterator[tuple[str, type[_Market]]]:
    handler = type("M", (_Market,), {"skew_s": 0.0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v0/proofs", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def params(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[tuple[str, Any]]]:
    """A parameter directory with a toy proof type's files, published (injected table) with their digests."""
    from types import SimpleNamespace

    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "cache"))
    d = tmp_path / "params"
    d.mkdir()
    (d / "pt.params").write_bytes(b"params bytes")
    (d / "pt.vk").write_bytes(b"vk bytes")
    files = (d / "pt.params", d / "pt.vk")
    published = [OfficialFile(f.name, "Qm", op.paramfetch_digest(f), "test", "2KiB") for f in files]
    monkeypatch.setattr(op, "_registry", Registry(published))
    pt = SimpleNamespace(name="Toy", param_stem="pt", size_label="2KiB")
    return d, [("Toy", pt)]


def _settings(url: str, params_dir: Path) -> Settings:
    return Settings(market={"url": url}, prover={"params_dir": params_dir})


def _by(findings: list[Finding], check: str) -> list[Finding]:
    return [f for f in findings if f.check == check]


def test_a_healthy_host_has_nothing_missing(market: Any, params: Any) -> None:
    url, _ = market
    d, types = params
    found = diagnose(_settings(url, d), FakeHost(), proof_types=types, plan=(100 << 30, 60 << 30))
    assert all(f.ok for f in found), [f.line() for f in found if not f.ok]
    assert "CUDA 12.8" in _by(found, "driver")[0].detail
    assert "9.0" in _by(found, "compute capability")[0].detail
    assert [f.detail.split(":")[1].strip().split()[0] for f in _by(found, "parameters")] == ["official"] * 2
    assert "answered HTTP 404" in _by(found, "market")[0].detail
    assert _by(found, "clock")[0].ok


def test_each_missing_piece_is_named_with_its_fix(market: Any, params: Any) -> None:
    url, handler = market
    d, types = params
    s = _settings(url, d)
    no_uvm = diagnose(s, FakeHost(files={"nvidiactl": True, "nvidia0": True, "nvidia-uvm": False}),
                      proof_types=types)
    f = _by(no_uvm, "uvm device")[0]
    assert f.ok is False and "/dev/nvidia-uvm missing" in f.detail and "nvidia-modprobe -u -c=0" in f.fix

    host = FakeHost(kernel=None, cuda=None)
    no_driver = diagnose(s, host, proof_types=types)
    driver = _by(no_driver, "driver")[0]
    assert driver.ok is False and "install the NVIDIA driver" in driver.fix
    assert host.device_calls == 0 and _by(no_driver, "compute capability")[0].ok is None  # not probed

    no_toolkit = diagnose(s, FakeHost(toolkit=(False, "libnvrtc.so.13 not found")), proof_types=types)
    f = _by(no_toolkit, "toolkit")[0]
    assert f.ok is False and "psagent[cuda]" in f.fix and "libnvrtc" in f.detail

    old = diagnose(s, FakeHost(devices=[Device(0, "Tesla P100", (6, 0), 16 << 30)]), proof_types=types)
    assert _by(old, "compute capability")[0].ok is False

    small = diagnose(s, FakeHost(mem=64 << 30, devices=[Device(0, "L4", (8, 9), 24 << 30)]),
                     proof_types=types, plan=(100 << 30, 60 << 30))
    assert [f.ok for f in _by(small, "memory")] == [False, False]

    handler.skew_s = -30.0  # the market's clock 30 s behind ours: our signatures look 30 s in its future
    skewed = _by(diagnose(s, FakeHost(), proof_types=types), "clock")[0]
    assert skewed.ok is False and "+3" in skewed.detail and "timesyncd" in skewed.fix


def test_parameters_missing_development_and_damaged(market: Any, params: Any) -> None:
    url, _ = market
    d, types = params
    (d / "pt.vk").write_bytes(b"vk bytez")  # published name, another digest
    (d / "pt.params").unlink()
    found = _by(diagnose(_settings(url, d), FakeHost(), proof_types=types), "parameters")
    # for the real market the fix is the official file, never a development one (P32)
    assert found[0].ok is False and "missing" in found[0].detail and "lotus fetch-params 2KiB" in found[0].fix
    assert "params generate" not in found[0].fix
    assert found[1].ok is False and "damaged" in found[1].detail and "fetch it again" in found[1].fix
    (d / "pt.meta.json").write_text("{}")  # ours: development, which the gate refuses for the real market
    found = _by(diagnose(_settings(url, d), FakeHost(), proof_types=types), "parameters")
    assert found[1].ok is False and "development" in found[1].detail
    assert "the readiness gate refuses it" in found[1].detail and "lotus fetch-params 2KiB" in found[1].fix
    # a test market of one's own (the named override): development files are fine, and may be generated
    test_market = Settings(market={"url": url}, prover={"params_dir": d, "allow_development_params": True})
    found = _by(diagnose(test_market, FakeHost(), proof_types=types), "parameters")
    assert found[0].ok is False and "params generate" in found[0].fix
    assert found[1].ok is True and "development" in found[1].detail and "official keys" in found[1].detail


def test_doctor_config_checks_the_configured_proof_types(
    market: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`doctor --config` looks for the parameters of prover.accepted_proof_types, the files the gate loads:
    it reported the 32GiB pair missing for a 2KiB configuration and said nothing of the 2KiB files."""
    import agent.doctor
    from porep.prooftypes import proof_type
    from porep.snap.params import update_proof_type

    url, _ = market
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(agent.doctor, "Probes", lambda: FakeHost())
    d = tmp_path / "params"
    d.mkdir()
    porep = proof_type("StackedDrg2KiBV1_1").param_stem
    snap = update_proof_type("StackedDrg2KiBV1").param_stem
    for stem in (porep, snap):
        for ext in ("params", "vk"):
            (d / f"{stem}.{ext}").write_bytes(f"{stem}.{ext}".encode())
    published = [OfficialFile(f.name, "Qm", op.paramfetch_digest(f), "test", "2KiB") for f in d.iterdir()]
    monkeypatch.setattr(op, "_registry", Registry(published))
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[market]\nurl = "{url}"\n[prover]\nparams_dir = "{d}"\n'
                   'accepted_proof_types = ["StackedDrg2KiBV1_1", "snap:StackedDrg2KiBV1"]\n')
    res = CliRunner().invoke(app, ["doctor", "--config", str(cfg), "--json"])
    params = [f for f in json.loads(res.stdout)["findings"] if f["check"] == "parameters"]
    assert [f["ok"] for f in params] == [True] * 4, params
    details = " ".join(f["detail"] for f in params)
    assert "StackedDrg2KiBV1_1 params: official" in details
    assert "StackedDrg2KiBV1 (update) vk: official" in details
    assert "32GiB" not in details
    assert res.exit_code == 0, res.output


def test_an_unreachable_market_within_the_timeout(params: Any) -> None:
    import socket

    d, types = params
    with socket.socket() as s:  # a port that accepts nothing: the connection is refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    found = diagnose(_settings(f"http://127.0.0.1:{port}", d), FakeHost(), proof_types=types,
                     market_timeout_s=2.0)
    assert time.monotonic() - t0 < 10
    assert _by(found, "market")[0].ok is False and _by(found, "clock")[0].ok is None


def test_the_command_exits_1_and_says_it_in_json(
    market: Any, params: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agent.doctor

    url, _ = market
    d, _types = params
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[market]\nurl = "{url}"\n[prover]\nparams_dir = "{d}"\n')
    monkeypatch.setattr(agent.doctor, "Probes", lambda: FakeHost(files={"nvidiactl": True, "nvidia0": True,
                                                                        "nvidia-uvm": False}))
    res = CliRunner().invoke(app, ["doctor", "--config", str(cfg), "--json"])
    assert res.exit_code == 1, res.output
    report = json.loads(res.stdout)
    assert report["ok"] is False
    missing = {f["check"] for f in report["findings"] if f["ok"] is False}
    assert "uvm device" in missing and "parameters" in missing  # the 32GiB files are not in this directory
    human = CliRunner().invoke(app, ["doctor", "--config", str(cfg)])
    assert "MISSING uvm device: /dev/nvidia-uvm missing -> sudo nvidia-modprobe -u -c=0" in human.stdout
