"""Every key of config.example.toml changes what the agent does: for each key, the agent's composition root
(agent.runtime) is built from the example with that key at the example's value and at another value, and
what it built differs (the client, the prover, the store, the loops' settings, the exporter, the logs).

A key without a probe here fails the test, so a key cannot be added to the example without showing that it
is read. The example's machine paths (key file, store, parameters) are moved under the test's directory;
the values compared are the example's own otherwise. Devices: two simulated CUDA devices stand in for a
2-GPU host (``list_devices``)."""

from __future__ import annotations

import io
import logging
import re
import socket
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _doubles import toy_r1cs  # tests/agent is on sys.path

from agent import runtime
from agent.cli.common import kernel_cache_dir
from agent.config import SUBMIT_UNVERIFIED_ENV, ConfigError, Settings, engine_options
from agent.logsetup import make_handler
from agent.opsview.metrics import AgentMetrics
from agent.store import RequestState
from gpu.device import Device
from market.wallet import Wallet, write_key_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config.example.toml"


@pytest.fixture(autouse=True)
def _process_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime sets the per-process engine options (gpu.options): put this process's back afterwards."""
    import gpu.options

    monkeypatch.setattr(gpu.options, "_process", gpu.options.process())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Probe:
    """Builds from a configuration and reports what it built (an observable value)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.wallet = Wallet.generate()
        self.key_file = tmp / "wallet.key"
        write_key_file(self.key_file, self.wallet)
        self.devices = [Device(0, "sim 0", (0, 0), True), Device(1, "sim 1", (0, 0), True)]
        self.n = 0
        self.work: bytes = b""  # a real 2KiB PoRep request, for the probes that need one

    def prover(self, s: Settings) -> Any:
        return runtime.build_prover(s, list_devices=lambda: self.devices, cache=self.tmp / "cache")

    def engines(self, s: Settings) -> Any:
        return self.prover(s).pipeline.engines

    def client(self, s: Settings, what: Callable[[Any], object]) -> object:
        client = runtime.market_client(s, self.wallet)
        try:
            return what(client)
        finally:
            anyio.run(client.aclose)

    def wallet_outcome(self, s: Settings) -> object:
        try:
            return runtime.load_wallet(s).address.encode("f")
        except ConfigError as exc:
            return f"refused: {exc}"

    def store_outcome(self, s: Settings) -> object:
        """A request that ends failed: where the store is, and whether its inputs were kept."""
        store = runtime.open_configured_store(s)
        try:
            self.n += 1
            row = store.add_request(self.n, f"bafy{self.n}", self.n)
            assert row is not None
            store.store_data(row.row_id, b"request bytes", "porep")
            row = store.transition(row.row_id, RequestState.FETCHED, RequestState.FAILED, error="x")
            return (getattr(store, "path", None), row.has_data)
        finally:
            store.close()

    def metrics_outcome(self, s: Settings) -> object:
        serving = runtime.start_metrics(s, AgentMetrics())
        if not serving:
            return "no exporter"
        host, _, port = s.metrics.listen.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=5) as c:
            c.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            return c.recv(12)[:12] == b"HTTP/1.0 200" and f"serving on {port}"

    def engine_outcome(self, s: Settings) -> object:
        """``psagent engine serve``'s server built by the runtime, started: where a client reaches it, the
        socket file's permissions, and its job limit as GetMetrics reports it."""
        import re
        import stat

        from agent.cuzk import proving_pb2 as pb

        listen = runtime.cuzk_listen(s)
        server = runtime.cuzk_server(s, self.prover(s), listen)

        async def run() -> object:
            import grpc

            from agent.cuzk import proving_pb2_grpc as pb_grpc

            target = await server.start()
            try:
                mode = oct(stat.S_IMODE(server.socket.stat().st_mode)) if server.socket is not None else None
                async with grpc.aio.insecure_channel(target) as channel:
                    stub = pb_grpc.ProvingEngineStub(channel)
                    text = (await stub.GetMetrics(pb.GetMetricsRequest())).prometheus_text
                limit = re.search(r"^psagent_engine_max_pending (\S+)$", text, re.M)
                return ("unix" if target.startswith("unix:") else "tcp", mode, limit and limit[1])
            finally:
                await server.stop(0)

        return anyio.run(run, backend="asyncio")

    def engine_warm_up(self, s: Settings) -> object:
        """What the engine's prover loads before it reports ready."""
        prover = runtime.cuzk_prover(s, list_devices=lambda: self.devices, cache=self.tmp / "cache")
        return prover.accepted, prover.accepted_update

    def engine_gate(self, s: Settings) -> object:
        """Whether the engine's prover refuses development parameter files."""
        prover = runtime.cuzk_prover(s, list_devices=lambda: self.devices, cache=self.tmp / "cache")
        return prover.official_only

    def device_budgets(self, s: Settings) -> object:
        """Each device's budget in admission once the prover has asked its engine (``memory_budget``: what it
        does before it charges a key to the device; the simulator has no free-memory figure of its own)."""
        prover = self.prover(s)
        for i in range(len(prover.slots)):
            prover._set_budget(i)
        return [b.total for b in prover.admission.budgets.values()]

    def cpu_threads(self, s: Settings) -> object:
        """The host pool's width once the runtime has built the prover (gpu.options, per process)."""
        from gpu.arith.cpupool import cpu_threads

        self.prover(s)
        return cpu_threads()

    def accepted(self, s: Settings) -> object:
        """What the readiness gate loads, and what the agent built from ``s`` does with 2KiB PoRep work."""
        from agent.stages import UnsupportedWork

        prover = self.prover(s)
        store = runtime.open_configured_store(s)
        try:
            agent = runtime.build_agent(s, object(), store, prover)  # type: ignore[arg-type]
            try:
                proves = str(agent.check(self.work).proof_type.name)
            except UnsupportedWork as exc:
                proves = f"unsupported: {exc}"
        finally:
            store.close()
        return prover.accepted, prover.accepted_update, proves

    def logging_level(self, s: Settings) -> object:
        from agent.logsetup import setup_logging

        root = logging.getLogger()
        before = root.level
        try:
            setup_logging(s.logging.level, s.logging.format, stream=io.StringIO())
            return root.level
        finally:
            root.setLevel(before)


def _stages(s: Settings) -> Any:
    return runtime.agent_settings(s)


# key → (another value, what to observe). The observation runs on the example (paths localised) with the key
# at the example's value, then at the other value; the two must differ.
PROBES: dict[str, tuple[object, Callable[[Probe, Settings], object]]] = {
    "market.url": ("http://127.0.0.1:1/v0/proofs", lambda p, s: p.client(s, lambda c: c.base_url)),
    "market.wallet": ("OWN_ADDRESS", lambda p, s: p.wallet_outcome(s)),
    "market.key_file": ("KEY", lambda p, s: p.wallet_outcome(s)),
    "market.price_fil": ("0.004", lambda p, s: _stages(s).requests.price_attofil),
    "market.low_water": (1, lambda p, s: _stages(s).requests.low_water),
    "market.high_water": (20, lambda p, s: _stages(s).requests.high_water),
    "market.poll_interval_s": (0.5, lambda p, s: _stages(s).requests.poll_interval_s),
    "market.backoff_max_s": (7.0, lambda p, s: _stages(s).requests.backoff_max_s),
    "market.request_timeout_s": (5.0, lambda p, s: p.client(s, lambda c: c._http.timeout.read)),
    "market.retry_budget_s": (60.0, lambda p, s: p.client(s, lambda c: c.retry.budget_s)),
    "market.max_request_bytes": (1 << 20, lambda p, s: p.client(s, lambda c: c.max_request_bytes)),
    "market.withdraw_on_shutdown": (False, lambda p, s: _stages(s).withdraw_on_shutdown),
    "prover.backend": ("cuda", lambda p, s: p.prover(s).backend),
    "prover.devices": ([1], lambda p, s: [e.device.index for e in p.prover(s).pipeline.engines]),
    "prover.partition_workers": (3, lambda p, s: p.prover(s).pipeline.workers),
    "prover.device_memory_gib": (2.0, lambda p, s: p.device_budgets(s)),
    "prover.device_layout": ("stream16", lambda p, s: [e.layout(toy_r1cs(2)).name for e in p.engines(s)]),
    "prover.params_dir": ("OTHER_PARAMS", lambda p, s: p.prover(s).params_dir),
    "prover.allow_development_params": (True, lambda p, s: (p.prover(s).official_only, p.engine_gate(s))),
    "prover.accepted_proof_types": (
        ["StackedDrg2KiBV1_1", "snap:StackedDrg2KiBV1"], lambda p, s: p.accepted(s)
    ),
    "prover.verify_before_submit": (
        False, lambda p, s: (p.prover(s).verify, _stages(s).stages.submit_unverified)
    ),
    "prover.device_spmv": (False, lambda p, s: [e.host_bytes(toy_r1cs(2)) for e in p.engines(s)]),
    "prover.params_to_device": (False, lambda p, s: [e.params_to_device for e in p.engines(s)]),
    "prover.ptx": ("cios", lambda p, s: kernel_cache_dir(engine_options(s)).name),
    "prover.cpu_threads": (3, lambda p, s: p.cpu_threads(s)),
    "store.url": ("OTHER_STORE", lambda p, s: p.store_outcome(s)),
    "metrics.listen": ("", lambda p, s: p.metrics_outcome(s)),
    "retention.submitted_days": (0.5, lambda p, s: _stages(s).retention_submitted_s),
    "retention.failed_days": (30.0, lambda p, s: _stages(s).retention_failed_s),
    "retention.discard_inputs": (False, lambda p, s: p.store_outcome(s)),
    "engine.listen": ("127.0.0.1:0", lambda p, s: p.engine_outcome(s)),
    "engine.max_pending": (3, lambda p, s: p.engine_outcome(s)),
    "engine.socket_mode": ("0600", lambda p, s: p.engine_outcome(s)),
    "engine.preload": (["porep-2k", "snap-2k"], lambda p, s: p.engine_warm_up(s)),
    "logging.level": ("debug", lambda p, s: p.logging_level(s)),
    "logging.format": ("human", lambda p, s: type(make_handler(s.logging.format, io.StringIO())).__name__),
}
# the devices matter on the CUDA backend: probed there (the example's "auto" picks the CPU without a GPU);
# the key file is probed without the example's wallet address (nobody holds that key)
CONTEXT: dict[str, dict[str, object]] = {
    "prover.devices": {"prover.backend": "cuda"},
    "prover.device_memory_gib": {"prover.backend": "cuda"},
    "prover.device_layout": {"prover.backend": "cuda"},
    "prover.device_spmv": {"prover.backend": "cuda"},
    "prover.params_to_device": {"prover.backend": "cuda"},
    "market.key_file": {"market.wallet": None},
}


def _example() -> dict[str, dict[str, Any]]:
    """The example's keys, those commented out as example values (``# key = value``) among them: a key left
    unset so that the environment's convention holds (prover.params_dir) must change behaviour too."""
    return tomllib.loads(re.sub(r"(?m)^# ([a-z_]+ = \S.*)$", r"\1", EXAMPLE.read_text()))


def _keys(data: dict[str, dict[str, Any]]) -> list[str]:
    return [f"{section}.{key}" for section, table in data.items() for key in table]


def _localised(p: Probe, data: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The example with its machine paths under the test's directory (same meaning, writable here)."""
    out = {k: dict(v) for k, v in data.items()}
    out["market"]["key_file"] = str(p.key_file)
    out["store"]["url"] = f"sqlite:///{p.tmp / 'psagent.db'}"
    out["prover"]["params_dir"] = str(p.tmp / "params")
    out["metrics"]["listen"] = f"127.0.0.1:{_free_port()}"
    out["engine"]["listen"] = f"unix://{p.tmp}/engine.sock"
    return out


def _with(data: dict[str, dict[str, Any]], key: str, value: object) -> Settings:
    section, name = key.split(".")
    out = {k: dict(v) for k, v in data.items()}
    if value is None:
        out[section].pop(name)
    else:
        out[section][name] = value
    return Settings(**out)


def _other(p: Probe, key: str, value: object) -> object:
    return {
        "KEY": str(p.tmp / "absent.key"),
        "OTHER_PARAMS": str(p.tmp / "other-params"),
        "OTHER_STORE": f"sqlite:///{p.tmp / 'other.db'}",
        "OWN_ADDRESS": p.wallet.address.encode("f"),
    }.get(value, value) if isinstance(value, str) else value


def test_every_example_key_has_a_probe() -> None:
    keys = _keys(_example())
    assert sorted(keys) == sorted(PROBES), "a key of config.example.toml without a probe here, or vice versa"


@pytest.mark.parametrize("key", sorted(PROBES))
def test_each_key_changes_what_the_runtime_builds(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.setenv(SUBMIT_UNVERIFIED_ENV, "1")  # the debug switch verify_before_submit = false needs
    p = Probe(tmp_path)
    if key == "prover.accepted_proof_types":
        p.work = request.getfixturevalue("work_bytes")
    base = _localised(p, _example())
    for k, v in CONTEXT.get(key, {}).items():
        section, name = k.split(".")
        if v is None:
            base[section].pop(name)
        else:
            base[section][name] = v
    other, observe = PROBES[key]
    section, name = key.split(".")
    at_example = observe(p, _with(base, key, base[section][name]))
    at_other = observe(p, _with(base, key, _other(p, key, other)))
    assert at_example != at_other, (key, at_example, at_other)


def test_verify_before_submit_false_is_refused_without_the_debug_switch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(SUBMIT_UNVERIFIED_ENV, raising=False)
    with pytest.raises(ConfigError, match="verify_before_submit: false is refused: an unverified proof"):
        from agent.config import load_settings

        cfg = tmp_path / "c.toml"
        cfg.write_text("[prover]\nverify_before_submit = false\n")
        load_settings(cfg)
    monkeypatch.setenv(SUBMIT_UNVERIFIED_ENV, "1")
    assert Settings(prover={"verify_before_submit": False}).prover.verify_before_submit is False


def test_configured_devices_must_exist(tmp_path: Path) -> None:
    p = Probe(tmp_path)
    s = Settings(prover={"backend": "cuda", "devices": [0, 3]})
    with pytest.raises(ConfigError, match=r"prover.devices: no CUDA device 3 here \(visible: \[0, 1\]\)"):
        p.prover(s)
    with pytest.raises(ValueError, match="an empty list names no device"):
        Settings(prover={"devices": []})
