"""agent.runtime: wallet/config consistency, settings mapping, the status report read from the store
(agent.opsview.report)."""

from __future__ import annotations

import pytest

from agent.config import ConfigError, Settings
from agent.opsview.report import status_report
from agent.runtime import agent_settings, load_wallet
from agent.store import Payment, RequestState, SqliteStore
from market.wallet import Wallet, write_key_file


def test_wallet_must_match_the_key(tmp_path):
    key = tmp_path / "k.key"
    w = Wallet.generate()
    write_key_file(key, w)
    ok = Settings(market={"key_file": key, "wallet": w.address.encode("f")})
    assert load_wallet(ok).address == w.address
    other = Wallet.generate().address.encode("f")
    with pytest.raises(ConfigError, match="is not the address of the key"):
        load_wallet(Settings(market={"key_file": key, "wallet": other}))
    with pytest.raises(ConfigError, match="market.key_file: required"):
        load_wallet(Settings())


def test_agent_settings_follow_the_config():
    s = agent_settings(
        Settings(
            market={"price_fil": "0.004", "low_water": 2, "high_water": 3},
            retention={"submitted_days": 1.0, "failed_days": 3.0},
        )
    )
    assert s.requests.price_attofil == 4 * 10**15 and (s.requests.low_water, s.requests.high_water) == (2, 3)
    assert s.retention_submitted_s == 86400.0 and s.retention_failed_s == 3 * 86400.0


def test_status_report(tmp_path):
    clock = [100.0]
    store = SqliteStore(tmp_path / "s.db", clock=lambda: clock[0])
    a = store.add_request(1, "a", 1, obtained_at=40.0)
    b = store.add_request(2, "b", 2, obtained_at=50.0)
    assert a and b
    store.transition(b.row_id, RequestState.QUEUED, RequestState.FAILED, error="check: bad comm_d")
    store.record_ask(9, 1)
    store.record_payment(Payment(1, 5, 5, b"s", "x", 1.0))
    store.record_payment(Payment(2, 6, 11, b"s", "y", 2.0))
    r = status_report(store, now=100.0)
    assert r.queue["queued"] == 1 and r.queue["failed"] == 1 and r.asks["active"] == 1
    assert r.paid_attofil == 11 and r.last_voucher_nonce == 2 and r.payments == 2
    assert r.recent_failures == [("b", "check: bad comm_d")] and r.oldest_unfinished_s == 60.0
    assert r.as_json()["payments"]["cumulative_attofil"] == "11"
    store.close()


def test_the_runtime_gives_every_configured_device_a_prove_loop(tmp_path):
    """prover.devices = "all" on a host with two (simulated) devices: two engines, two admission slots, two
    prove loops in the service; a list names the devices used."""
    from agent.runtime import build_agent, build_prover
    from gpu.device import Device

    found = [Device(0, "sim 0", (0, 0), True), Device(1, "sim 1", (0, 0), True)]
    settings = Settings(prover={"backend": "cuda", "devices": "all", "params_dir": str(tmp_path)})
    prover = build_prover(settings, list_devices=lambda: found, cache=tmp_path)
    assert prover.capacity == 2 and [e.device.index for e in prover.pipeline.engines] == [0, 1]
    store = SqliteStore(tmp_path / "s.db")
    agent = build_agent(settings, object(), store, prover)  # type: ignore[arg-type]
    assert agent.settings.prover_slots == 2 and agent.fleet.capacity == 2
    one = build_prover(
        Settings(prover={"backend": "cuda", "devices": [1], "params_dir": str(tmp_path)}),
        list_devices=lambda: found, cache=tmp_path,
    )
    assert one.capacity == 1 and one.slots[0].index == 1
    cpu = build_prover(Settings(prover={"backend": "cpu", "params_dir": str(tmp_path)}), cache=tmp_path)
    assert cpu.capacity == 1 and cpu.backend == "cpu"
    store.close()
