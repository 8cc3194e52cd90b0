"""psagent status (read from the store) and psagent run's argument checks; the run itself is tested end to
end in test_e2e / test_crash and by `make run`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent.cli import EXIT_USAGE, app
from agent.store import Payment, RequestState, SqliteStore

runner = CliRunner()


def _key_file(tmp_path: Path) -> Path:
    from _doubles import throwaway_key_file

    return Path(str(throwaway_key_file(tmp_path)))


def _config(tmp_path: Path, *, key: bool = True, extra: str = "") -> Path:
    """The configuration `run` would accept (a key file, the CPU backend, no metrics port) plus ``extra``."""
    cfg = tmp_path / "c.toml"
    market = f'[market]\nkey_file = "{_key_file(tmp_path)}"\n' if key else ""
    cfg.write_text(
        f'{market}[prover]\nbackend = "cpu"\n[metrics]\nlisten = ""\n'
        f'[store]\nurl = "sqlite:///{tmp_path}/agent.db"\n[logging]\nformat = "json"\n{extra}'
    )
    return cfg


def test_status_json_reads_the_store(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    store = SqliteStore(tmp_path / "agent.db")
    row = store.add_request(1, "bafkqueued", 7)
    store.add_request(2, "bafkfailed", 8)
    store.transition(2, RequestState.QUEUED, RequestState.FAILED, error="check: bad C1")
    store.record_payment(Payment(1, 5, 5, b"\x01" * 65, "bafkpaid", 1.0))
    store.close()
    res = runner.invoke(app, ["status", "--config", str(cfg), "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert row is not None and report["queue"]["queued"] == 1 and report["queue"]["failed"] == 1
    assert report["payments"] == {"vouchers": 1, "cumulative_attofil": "5", "last_nonce": 1}
    assert report["recent_failures"] == [{"request_cid": "bafkfailed", "error": "check: bad C1"}]
    assert report["devices"] == []  # the simulator is not a device
    human = runner.invoke(app, ["status", "--config", str(cfg)])
    assert human.exit_code == 0 and "queued 1" in human.stdout and "bafkfailed: check: bad C1" in human.stdout


def test_run_refuses_bad_max_proofs_and_missing_key(tmp_path: Path) -> None:
    res = runner.invoke(app, ["run", "--config", str(_config(tmp_path)), "--max-proofs", "0"])
    assert res.exit_code == EXIT_USAGE and "--max-proofs" in res.output
    res = runner.invoke(app, ["run", "--config", str(_config(tmp_path, key=False))])
    assert res.exit_code == EXIT_USAGE and "market.key_file" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_status_shows_the_readiness_gate(tmp_path: Path) -> None:
    from agent.opsview.gate import Gate, write_gate_file

    cfg = _config(tmp_path)
    SqliteStore(tmp_path / "agent.db").close()
    res = runner.invoke(app, ["status", "--config", str(cfg), "--json"])
    assert json.loads(res.stdout)["gate"]["state"] == "not running"  # no agent has written a gate
    gate = tmp_path / "agent.db.gate.json"  # beside the SQLite store
    write_gate_file(gate, Gate("failed", "warm-up failed: FileNotFoundError: parameters missing"))
    report = json.loads(runner.invoke(app, ["status", "--config", str(cfg), "--json"]).stdout)
    assert report["gate"]["state"] == "failed" and "parameters missing" in report["gate"]["reason"]
    assert report["gate"]["file"] == str(gate)  # which file it read
    human = runner.invoke(app, ["status", "--config", str(cfg)]).stdout
    assert f"gate:     failed: warm-up failed: FileNotFoundError: parameters missing ({gate})" in human
    write_gate_file(gate, Gate("open"), pid=2**22 + 12345)  # a process that is gone
    assert json.loads(runner.invoke(app, ["status", "--config", str(cfg), "--json"]).stdout)["gate"][
        "state"
    ] == "not running"


def test_status_finds_the_services_gate_outside_its_own_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL store keeps the gate in the cache directory: the service's is /var/cache/psagent (the unit
    sets PSAGENT_CACHE_DIR=%C/psagent), the operator's shell has its own (``sudo -u psagent psagent status``,
    README step 5, read ~/.cache/psagent/gate.json and said "not running" while the service ran)."""
    from agent import runtime
    from agent.config import Settings
    from agent.service import Gate, write_gate_file

    service, own = tmp_path / "var-cache-psagent", tmp_path / "home-cache"
    monkeypatch.setattr(runtime, "SERVICE_CACHE_DIR", service, raising=False)
    monkeypatch.setenv("PSAGENT_CACHE_DIR", str(own))
    settings = Settings(store={"url": "postgresql://psagent@db.example/psagent"})
    write_gate_file(service / "gate.json", Gate("warming", "loading parameters"))
    gate = runtime.find_gate(settings)
    assert gate["state"] == "warming" and gate["file"] == str(service / "gate.json")
    write_gate_file(own / "gate.json", Gate("open"), pid=2**22 + 12345)  # this user's own run, long gone
    assert runtime.find_gate(settings)["file"] == str(service / "gate.json")  # the running one wins
    (service / "gate.json").unlink()
    gate = runtime.find_gate(settings)
    assert gate["state"] == "not running" and gate["file"] == str(own / "gate.json")
    # a SQLite store: the gate is beside the store, the same file for every user
    sqlite = Settings(store={"url": f"sqlite:///{tmp_path}/agent.db"})
    assert runtime.gate_files(sqlite) == [tmp_path / "agent.db.gate.json"]


def test_a_gate_this_user_cannot_read_is_unknown_not_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service writes its gate with umask 0077: one who cannot read it is told so, not "not running"."""
    import os

    from agent.opsview.gate import read_gate
    from agent.service import Gate, write_gate_file

    gate = tmp_path / "gate.json"
    write_gate_file(gate, Gate("open"))
    os.chmod(gate, 0)
    if os.geteuid() == 0:  # root reads it anyway: the answer another user gets
        real = Path.read_text

        def denied(self: Path, *a: Any, **kw: Any) -> str:
            if self == gate:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *a, **kw)

        monkeypatch.setattr(Path, "read_text", denied)
    got = read_gate(gate)
    assert got["state"] == "unknown" and f"cannot read {gate}" in got["reason"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("accepted", "wanted"),
    [
        (None, "StackedDrg32GiBV1_1"),
        ('["StackedDrg2KiBV1_1", "snap:StackedDrg2KiBV1"]', "StackedDrg2KiBV1_1"),
    ],
)
def test_run_under_systemd_is_ready_in_seconds_with_the_gate_in_status_and_metrics(
    tmp_path: Path, accepted: str | None, wanted: str
) -> None:
    """`psagent run` as the unit starts it (a real process, NOTIFY_SOCKET and WATCHDOG_USEC set), on a host
    without parameters: READY=1 within seconds of the start, the watchdog fed, the failed warm-up's reason in
    STATUS= and in the metrics, the process still up (no restart loop); SIGTERM stops it with exit 0. The
    gate waits for the parameters of prover.accepted_proof_types (default: the market's 32GiB pair)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    from _notify import NotifySocket

    from market.wallet import Wallet, write_key_file

    key = tmp_path / "keys" / "wallet.key"
    key.parent.mkdir(mode=0o700)
    write_key_file(key, Wallet.generate())
    port = _free_port()
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'[market]\nurl = "http://127.0.0.1:{_free_port()}"\nkey_file = "{key}"\n'
        f'[prover]\nbackend = "cpu"\nparams_dir = "{tmp_path / "params"}"\n'
        + (f"accepted_proof_types = {accepted}\n" if accepted else "")
        + f'[store]\nurl = "sqlite:///{tmp_path}/agent.db"\n[metrics]\nlisten = "127.0.0.1:{port}"\n'
    )
    (tmp_path / "params").mkdir()
    env = {**os.environ, "WATCHDOG_USEC": "1000000", "PSAGENT_CACHE_DIR": str(tmp_path / "cache")}
    with NotifySocket(tmp_path / "notify.sock") as sock:
        env["NOTIFY_SOCKET"] = sock.path
        t0 = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-c", "from agent.cli import main; main()", "run", "--config", str(cfg)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            ready = sock.wait_for("READY", None, 30.0)
            failed = sock.wait_for("STATUS", "gate failed", 30.0)
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            time.sleep(2.5)
            assert proc.poll() is None  # up, gate closed: no exit, no restart loop
            pings = [t for t, _ in sock.fields("WATCHDOG") if t > failed]
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
    assert ready - t0 < 15.0, f"READY after {ready - t0:.1f} s"
    assert len(pings) >= 2
    status = next(v for _, v in sock.fields("STATUS") if v.startswith("gate failed"))
    assert f"Groth16 parameters for {wanted} not found" in status
    assert 'psagent_readiness_gate{state="failed"} 1.0' in metrics and "psagent_ready 0.0" in metrics
    assert proc.returncode == 0, err[-2000:]
    assert sock.fields("STOPPING")


def _bad_configs(tmp_path: Path, port: int) -> dict[str, tuple[Path, str]]:
    """Each thing `psagent run` refuses before it starts: (configuration, what the one line names);
    ``port``: a port another process listens on."""
    import os

    from market.wallet import Wallet, write_key_file

    key = _key_file(tmp_path)
    loose = tmp_path / "loose-key" / "wallet.key"
    loose.parent.mkdir(mode=0o700)
    write_key_file(loose, Wallet.generate())
    os.chmod(loose, 0o644)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    gone = tmp_path / "gone" / "wallet.key"

    def make(name: str, *, k: Path | None = key, m: str = "", b: str = "cpu", p: str = "", listen: str = "",
             s: str = "") -> Path:
        d = tmp_path / name
        d.mkdir()
        market = f'[market]\nkey_file = "{k}"\n{m}' if k is not None else ""
        (d / "c.toml").write_text(
            f'{market}[prover]\nbackend = "{b}"\n{p}[metrics]\nlisten = "{listen}"\n'
            f'[store]\nurl = "{s or f"sqlite:///{d}/agent.db"}"\n[logging]\nformat = "json"\n'
        )
        return d / "c.toml"

    other = Wallet.generate().address.encode("f")
    return {
        "no key_file": (make("nokey", k=None), "market.key_file: required"),
        "key file missing": (make("missing", k=gone), f"key file {gone} does not exist"),
        "key file readable by others": (make("loose", k=loose), "accessible by group or others"),
        "wallet is not the key's": (
            make("mismatch", m=f'wallet = "{other}"\n'), "is not the address of the key"
        ),
        "cuda without a GPU": (make("nogpu", b="cuda"), "prover.backend = cuda: no usable CUDA GPU"),
        "device not there": (make("nodev", b="cuda", p="devices = [5]\n"), "prover.devices: no CUDA device"),
        "metrics port taken": (
            make("port", listen=f"127.0.0.1:{port}"), f"metrics.listen = 127.0.0.1:{port}"
        ),
        "store directory cannot be created": (
            make("store", s=f"sqlite:///{blocker}/sub/agent.db"),
            f"store.url: cannot create the store directory {blocker}/sub: Not a directory",
        ),
        # root may write /proc by its mode bits, but nothing can be made there (P32: status passed it)
        "store directory in /proc": (
            make("proc", s="sqlite:////proc/nope/x.db"),
            "store.url: cannot create the store directory /proc/nope",
        ),
    }


def test_status_config_refuses_what_run_refuses(tmp_path: Path, monkeypatch: Any) -> None:
    """`psagent status --config` (the README's check before starting the service) exits 2 with run's one
    line for each configuration `run` rejects, and neither creates a store."""
    import socket

    import gpu.device

    real_devices = gpu.device.devices
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        for name, (cfg, needle) in _bad_configs(tmp_path, busy.getsockname()[1]).items():
            if name == "cuda without a GPU":
                monkeypatch.setattr(gpu.device, "devices", lambda: [])
            run = runner.invoke(app, ["run", "--config", str(cfg)])
            status = runner.invoke(app, ["status", "--config", str(cfg)])
            monkeypatch.setattr(gpu.device, "devices", real_devices)
            assert run.exit_code == EXIT_USAGE, (name, run.output)
            assert status.exit_code == EXIT_USAGE, (name, status.output)
            assert len(status.output.strip().splitlines()) == 1 and "Traceback" not in status.output, name
            assert needle in status.output, (name, status.output)
            if name.startswith("store directory"):  # status adds which parent is in the way
                assert status.output.startswith(run.output.rstrip("\n")), name
            else:
                assert status.output == run.output, name  # the same check, the same words
            assert not (cfg.parent / "agent.db").exists(), name


def test_status_never_creates_a_store_at_a_typod_path(tmp_path: Path) -> None:
    typo = tmp_path / "var" / "lib" / "psagnet" / "agent.db"
    cfg = _config(tmp_path)
    cfg.write_text(cfg.read_text().replace(f"sqlite:///{tmp_path}/agent.db", f"sqlite:///{typo}"))
    res = runner.invoke(app, ["status", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert f"store:    {typo} does not exist yet (psagent run creates it)" in res.stdout
    assert "queue" not in res.stdout  # no empty queue reported as if the store were there
    report = json.loads(runner.invoke(app, ["status", "--config", str(cfg), "--json"]).stdout)
    assert report["store"] == {"url": f"sqlite:///{typo}", "exists": False} and report["queue"] is None
    assert not (tmp_path / "var").exists()  # nothing created


def test_run_with_a_store_directory_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    cfg = _config(tmp_path, extra="")
    cfg.write_text(cfg.read_text().replace(f"sqlite:///{tmp_path}/agent.db", f"sqlite:///{tmp_path}/f/x/a.db"))
    res = runner.invoke(app, ["run", "--config", str(cfg)])
    assert res.exit_code == EXIT_USAGE and len(res.output.strip().splitlines()) == 1
    assert f"cannot create the store directory {tmp_path}/f/x" in res.output
