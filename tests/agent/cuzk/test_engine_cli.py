"""``psagent engine serve``: bad input in one line and exit 2 before anything loads, and the service's life
(warm-up, READY, watchdog, SIGTERM) with the prover double."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from _engine import toy_prover

from agent.proving.work import Work

REPO = Path(__file__).resolve().parents[3]


def psagent(
    *args: str, config: str | None = None, tmp: Path, prelude: str = ""
) -> subprocess.CompletedProcess[str]:
    argv = ["psagent", *args]
    if config is not None:
        path = tmp / "c.toml"
        path.write_text(config)
        argv += ["--config", str(path)]
    code = f"{prelude}\nimport sys\nsys.argv = {argv!r}\nfrom agent.cli import main\nmain()\n"
    env = {**os.environ, "PSAGENT_CACHE_DIR": str(tmp / "cache")}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_without_grpcio_it_says_so_in_one_line(tmp_path: Path) -> None:
    done = psagent("engine", "serve", tmp=tmp_path, prelude="import sys; sys.modules['grpc'] = None")
    assert "needs grpcio: pip install 'psagent[engine]'" in one_line(done)


def test_a_bad_address_is_one_line_and_exit_2(tmp_path: Path) -> None:
    line = one_line(psagent("engine", "serve", "--listen", "0.0.0.0", tmp=tmp_path))
    assert "--listen = 0.0.0.0: '0.0.0.0' is neither unix:///PATH nor HOST:PORT" in line


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ('[engine]\nlisten = "unix://"\n', "engine.listen: 'unix://' names no socket file"),
        (
            '[engine]\npreload = ["wpost-1t"]\n',
            "engine.preload: 'wpost-1t' is not a circuit id",
        ),
        ('[engine]\npreload = ["porep-2k", "porep-2k"]\n', "engine.preload: a circuit is named twice"),
        ('[engine]\nmax_pending = 0\n', "engine.max_pending: must be >= 1"),
        ('[engine]\nsocket_mode = "rw"\n', "engine.socket_mode: 'rw' is not an octal file mode"),
    ],
)
def test_bad_engine_configuration_names_its_key(config: str, says: str, tmp_path: Path) -> None:
    from agent.config import ConfigError, load_settings

    path = tmp_path / "c.toml"
    path.write_text(config)
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_listen_check_before_warm_up(tmp_path: Path) -> None:
    """What ``psagent engine serve`` checks before it loads anything: the socket directory exists and is
    writable, nothing but a socket sits at the path, a TCP address is free on this host."""
    from agent import runtime
    from agent.config import ConfigError, Settings

    def check(listen: str) -> str:
        with pytest.raises(ConfigError) as err:
            runtime.cuzk_listen(Settings(), listen)
        return str(err.value)

    assert "directory /nonexistent-dir does not exist" in check("unix:///nonexistent-dir/e.sock")
    (tmp_path / "file").write_text("")
    assert "exists and is not a socket" in check(f"unix://{tmp_path}/file")
    assert runtime.cuzk_listen(Settings(), f"unix://{tmp_path}/e.sock") == f"unix://{tmp_path}/e.sock"
    with pytest.raises(ConfigError, match=r"^engine.listen = unix:///nonexistent-dir/e.sock: directory"):
        runtime.cuzk_listen(Settings(engine={"listen": "unix:///nonexistent-dir/e.sock"}))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert f"127.0.0.1:{port}: Address already in use" in check(f"127.0.0.1:{port}")


def test_missing_preloaded_parameters_are_named_before_warm_up(tmp_path: Path) -> None:
    config = (
        f'[prover]\nbackend = "cpu"\nparams_dir = "{tmp_path}/none"\n'
        f'[engine]\nlisten = "unix://{tmp_path}/e.sock"\npreload = ["porep-32g"]\n'
    )
    line = one_line(psagent("engine", "serve", config=config, tmp=tmp_path))
    assert "engine.preload: Groth16 parameters for StackedDrg32GiBV1_1 not found" in line


def test_parameters_the_gate_refuses_stop_the_engine_in_one_line(tmp_path: Path) -> None:
    """engine.preload's files under the published names but not the published bytes: the warm-up's gate
    refuses them before loading, one line and exit 2 (the units' RestartPreventExitStatus: no restart loop
    that would prove for the chain with keys it rejects)."""
    from porep.prooftypes import proof_type

    stem = proof_type("StackedDrg2KiBV1_1").param_stem
    params = tmp_path / "params"
    params.mkdir()
    for suffix in ("params", "vk"):
        (params / f"{stem}.{suffix}").write_bytes(b"not the published file")
    config = (
        f'[prover]\nbackend = "cpu"\nparams_dir = "{params}"\n'
        f'[engine]\nlisten = "unix://{tmp_path}/e.sock"\npreload = ["porep-2k"]\n'
    )
    done = psagent("engine", "serve", config=config, tmp=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]  # after the service's own log lines (bound, warming up)
    assert line.startswith(f"psagent: {stem}.params is damaged (digest") and "not the official file" in line
    assert "prover.allow_development_params = true" in line


@pytest.mark.anyio
async def test_the_service_life_under_systemd(porep_work: Work, snap_work: Work, tmp_path: Path) -> None:
    """Watchdog pings from the start, READY once warmed up and bound (a stale socket replaced), STOPPING on
    stop; the socket is gone afterwards."""
    from agent.cuzk.jobs import Jobs
    from agent.cuzk.server import CuzkServer, CuzkService, serve
    from agent.sdnotify import Notifier

    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    sock = tmp_path / "engine.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))  # left behind by an engine that was killed
    stale.close()
    notify_path = tmp_path / "notify"
    got = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    got.bind(str(notify_path))
    got.setblocking(False)
    server = CuzkServer(CuzkService(Jobs(prover), prover), f"unix://{sock}", socket_mode=0o600)
    stop = asyncio.Event()
    warmed: list[bool] = []
    targets: list[str] = []
    task = asyncio.ensure_future(serve(
        server, warm_up=lambda: warmed.append(True), notifier=Notifier(str(notify_path), "200000"),
        stop=stop, ready=targets.append,
    ))
    for _ in range(500):
        if targets:
            break
        await asyncio.sleep(0.01)
    assert warmed == [True] and targets == [f"unix:{sock}"]
    assert (sock.stat().st_mode & 0o777) == 0o600
    await asyncio.sleep(0.25)  # the watchdog interval is 0.1 s here
    stop.set()
    await task
    messages = []
    while True:
        try:
            messages.append(got.recv(4096).decode())
        except BlockingIOError:
            break
    got.close()
    ready = [m for m in messages if m.startswith("READY=1")]
    assert "WATCHDOG=1" in messages[: messages.index(ready[0])]  # the warm-up is watched too
    assert len(ready) == 1 and f"serving cuzk.v1.ProvingEngine on unix:{sock}" in ready[0]
    assert messages.count("WATCHDOG=1") >= 3 and messages[-1].startswith("STOPPING=1")
    assert not sock.exists()


@pytest.mark.anyio
async def test_the_engine_answers_get_status_while_it_warms_up(
    porep_work: Work, snap_work: Work, tmp_path: Path
) -> None:
    """The port is bound before the warm-up (it bound only after it: minutes of silence for 32GiB, Curio
    could not tell a warming engine from a dead one): GetStatus answers while warming, a proof is refused
    UNAVAILABLE (Curio retries), READY comes once warmed up and proofs are taken from then on."""
    import threading

    import grpc

    from agent.cuzk import proving_pb2 as pb
    from agent.cuzk import proving_pb2_grpc as pb_grpc
    from agent.cuzk.jobs import Jobs
    from agent.cuzk.server import CuzkServer, CuzkService, serve
    from agent.sdnotify import Notifier

    prover = toy_prover(tmp_path / "p", porep_work, snap_work)
    sock = tmp_path / "engine.sock"
    server = CuzkServer(CuzkService(Jobs(prover), prover), f"unix://{sock}")
    release = threading.Event()
    stop = asyncio.Event()
    targets: list[str] = []
    task = asyncio.ensure_future(serve(
        server, warm_up=lambda: release.wait(30), notifier=Notifier(""), stop=stop, ready=targets.append
    ))
    try:
        for _ in range(500):
            if sock.exists():
                break
            await asyncio.sleep(0.01)
        assert sock.exists() and not targets  # bound, not ready
        async with grpc.aio.insecure_channel(f"unix:{sock}") as channel:
            stub = pb_grpc.ProvingEngineStub(channel)
            status = await stub.GetStatus(pb.GetStatusRequest(), timeout=10)
            assert status.total_proofs_completed == 0
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.Prove(pb.ProveRequest(), timeout=10)
            assert refused.value.code() is grpc.StatusCode.UNAVAILABLE
            assert "warming up" in (refused.value.details() or "")
            release.set()
            for _ in range(500):
                if targets:
                    break
                await asyncio.sleep(0.01)
            assert targets == [f"unix:{sock}"]
            answer = await stub.Prove(pb.ProveRequest(), timeout=10)  # warmed: the request itself is judged
            assert "proof_kind is unset" in str(answer.result)
    finally:
        release.set()
        stop.set()
        await task
