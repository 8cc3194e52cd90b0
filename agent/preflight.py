"""What ``psagent run`` refuses before it starts, in one place, so that ``psagent status --config`` (the
README's "check the configuration as the service will read it") refuses exactly the same things.

Every refusal is a :class:`agent.config.ConfigError` (one line naming the key; the CLI exits 2, and the unit's
``RestartPreventExitStatus=2`` keeps a bad configuration from restart-looping). ``run`` goes on to create the
store and bind the metrics port; ``status`` only checks that it could (it never creates a store: a typo'd
path must not turn into an empty queue that looks healthy).
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path
from typing import Any

from agent.config import ConfigError, Settings

__all__ = ["check_backend", "check_metrics_listen", "check_store_creatable", "preflight", "sqlite_path"]


def check_backend(settings: Settings) -> None:
    """prover.backend / prover.devices as the prover will place itself: ``cuda`` without a usable GPU, or a
    device index that is not there, is refused (``auto`` falls back to the CPU)."""
    from gpu.device import get_device, resolve_backend
    from gpu.placement import Backend, GpuError

    p = settings.prover
    try:
        chosen = resolve_backend(p.backend)
    except GpuError as exc:
        raise ConfigError(f"prover.backend = {p.backend}: {exc}") from None
    if chosen is Backend.cuda:
        device = p.devices[0] if isinstance(p.devices, list) and p.devices else 0
        try:
            get_device(device)
        except GpuError as exc:
            raise ConfigError(f"prover.devices: {exc}") from None


def check_metrics_listen(listen: str, *, in_use_ok: bool) -> None:
    """metrics.listen can be bound (``run`` binds it); ``in_use_ok``: a running agent holds it already."""
    if not listen:
        return
    host, _, port = listen.rpartition(":")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ConfigError(f"metrics.listen = {listen}: {exc.strerror or exc}") from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE and in_use_ok:
                return
            raise ConfigError(f"metrics.listen = {listen}: {exc.strerror or exc}") from None


def sqlite_path(settings: Settings) -> Path | None:
    url = settings.store.url
    return Path(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else None


def check_store_creatable(path: Path) -> None:
    """The SQLite store's directory exists and is writable, or can be created (its nearest existing parent
    is a writable directory)."""
    anchor = path.parent
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    where = f"store.url: cannot create the store directory {path.parent}"  # run's words (agent.store)
    if not anchor.is_dir():
        raise ConfigError(f"{where}: Not a directory ({anchor} is a file)")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise ConfigError(f"{where}: Permission denied (no write access to {anchor})")


def preflight(settings: Settings, *, agent_running: bool = False) -> Any:
    """Everything ``run`` checks before it starts, short of creating the store and binding the metrics port
    (checked, not done): the wallet (key file present, readable by us only, its address = market.wallet),
    the prover's placement, the metrics address. Returns the wallet."""
    from agent.runtime import load_wallet

    wallet = load_wallet(settings)
    check_backend(settings)
    check_metrics_listen(settings.metrics.listen, in_use_ok=agent_running)
    return wallet
