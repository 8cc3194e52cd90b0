"""The unit file is part of the operator contract: notify readiness, watchdog, restart, hardening."""

from __future__ import annotations

import configparser
from pathlib import Path

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "psagent.service"
ENGINE_UNIT = UNIT.with_name("psagent-engine.service")


def load(unit: Path = UNIT) -> configparser.ConfigParser:
    cp = configparser.ConfigParser(strict=False, interpolation=None)
    cp.optionxform = str  # type: ignore[assignment,method-assign]
    cp.read_string(unit.read_text())
    return cp


def test_service_contract() -> None:
    svc = load()["Service"]
    assert svc["Type"] == "notify"
    assert svc["Restart"] == "on-failure"
    assert int(svc["WatchdogSec"].rstrip("s")) > 0
    # READY=1 comes before the warm-up (tests/agent/test_service.py): the start timeout covers start-up only,
    # but must not be systemd's default 90 s guess nor unbounded
    assert svc["TimeoutStartSec"] == "5min"
    # the hardening keeps the driver from creating /dev/nvidia-uvm: a privileged, optional pre-start does it
    assert svc["ExecStartPre"] == "-+/usr/bin/nvidia-modprobe -u -c=0"
    assert svc["NoNewPrivileges"] == "yes" and svc["ProtectKernelModules"] == "yes"
    assert svc["ExecStart"].startswith("/opt/psagent/bin/psagent run --config ")
    # a configuration error (exit 2) or an unbuilt command (exit 3) must not restart-loop
    assert set(svc["RestartPreventExitStatus"].split()) == {"2", "3"}
    # the kernel cache: under the CacheDirectory, one subdirectory per version (no pinned NUMBA_CACHE_DIR)
    env = svc["Environment"]
    assert "PSAGENT_CACHE_DIR=%C/psagent" in env and "NUMBA_CACHE_DIR" not in env
    assert svc["StateDirectory"] == "psagent"
    for key in ("NoNewPrivileges", "ProtectHome", "PrivateTmp", "RestrictSUIDSGID"):
        assert svc[key] == "yes", key
    assert svc["ProtectSystem"] == "strict"
    assert load()["Install"]["WantedBy"] == "multi-user.target"


def test_engine_service_contract() -> None:
    """psagent engine serve under systemd: notify after warm-up (with time for it), watchdog, no restart loop
    on a configuration error, the agent's hardening, and a socket directory that Curio's user can reach
    through the service's group (the socket itself is engine.socket_mode, 0660)."""
    from agent.config import CuzkConfig

    unit = load(ENGINE_UNIT)
    svc = unit["Service"]
    assert svc["Type"] == "notify" and svc["NotifyAccess"] == "main"
    assert svc["ExecStart"] == "/opt/psagent/bin/psagent engine serve --config /etc/psagent/config.toml"
    assert int(svc["WatchdogSec"].rstrip("s")) > 0 and svc["TimeoutStartSec"] == "30min"
    assert set(svc["RestartPreventExitStatus"].split()) == {"2", "3"} and svc["Restart"] == "on-failure"
    assert svc["RuntimeDirectory"] == "psagent" and svc["RuntimeDirectoryMode"] == "0750"
    default = CuzkConfig()
    assert default.listen == "unix:///run/psagent/engine.sock" and default.socket_mode == "0660"
    assert "AF_UNIX" in svc["RestrictAddressFamilies"].split()
    agent = load()["Service"]
    for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "RestrictSUIDSGID",
                "ProtectKernelTunables", "ProtectKernelModules", "ProtectControlGroups", "LockPersonality",
                "CapabilityBoundingSet", "UMask", "User", "Group", "Environment", "BindReadOnlyPaths",
                "ExecStartPre"):
        assert svc[key] == agent[key], key
    assert unit["Install"]["WantedBy"] == "multi-user.target"


def test_status_knows_the_units_cache_directory() -> None:
    """`psagent status` looks for the service's gate in agent.runtime.SERVICE_CACHE_DIR: the units' cache
    directory (%C is /var/cache for a system unit)."""
    from agent.runtime import SERVICE_CACHE_DIR

    for unit in (UNIT, ENGINE_UNIT):
        svc = load(unit)["Service"]
        assert svc["CacheDirectory"] == "psagent" and "PSAGENT_CACHE_DIR=%C/psagent" in svc["Environment"]
    assert SERVICE_CACHE_DIR == Path("/var/cache") / "psagent"
