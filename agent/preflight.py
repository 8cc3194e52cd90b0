"""What ``psagent run`` refuses before it starts, in one place, so that ``psagent status --config`` (the
README's "check the configuration as the service will read it") refuses exactly the same things.

Every refusal is a :class:`agent.config.ConfigError` (one line naming the key; the CLI exits 2, and the unit's
``RestartPreventExitStatus=2`` keeps a bad configuration from restart-looping). ``run`` goes on to create the
store and bind the metrics port; ``status`` only checks that it could (it never creates a store: a typo'd
path must not turn into an empty queue that looks healthy).

``gpu.device`` is imported where the devices are listed, not at the top: ``psagent status`` imports this
module before it reads its configuration, which places Numba's kernel cache (numba reads that once, when
first imported).
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent.config import ConfigError, Settings
from agent.host import nearest_existing
from gpu.placement import Backend, GpuError
from market.errors import WalletError
from market.wallet import read_key_file

if TYPE_CHECKING:
    from gpu.device import Device
    from market.wallet import Wallet

log = logging.getLogger(__name__)

__all__ = [
    "check_metrics_listen",
    "check_store_creatable",
    "load_wallet",
    "preflight",
    "proving_devices",
    "sqlite_path",
]


def load_wallet(settings: Settings) -> Wallet:
    """The provider wallet from ``market.key_file``; its address must equal ``market.wallet`` when given."""
    m = settings.market
    if m.key_file is None:
        raise ConfigError("market.key_file: required to sign asks and submissions (psagent wallet new)")
    try:
        wallet = read_key_file(m.key_file)
    except WalletError as e:
        raise ConfigError(f"market.key_file: {e}") from None
    if m.wallet is not None:
        ours = {wallet.address.encode("f"), wallet.address.encode("t")}
        if m.wallet not in ours:
            raise ConfigError(
                f"market.wallet: {m.wallet} is not the address of the key in {m.key_file} "
                f"({wallet.address.encode('f')})"
            )
    return wallet


def proving_devices(
    settings: Settings, list_devices: Callable[[], Sequence[Device]] | None = None
) -> tuple[str, tuple[Device, ...]]:
    """The backend (``prover.backend``, ``auto`` decided by ``gpu.device.resolve_backend``) and, for CUDA,
    the devices ``prover.devices`` names ("all": every visible one); ConfigError naming the key when a
    device is not there. ``list_devices`` (tests): the devices visible, instead of the driver's."""
    from gpu.device import devices as visible_devices  # numba: after the kernel-cache set-up
    from gpu.device import resolve_backend

    p = settings.prover
    try:
        found = tuple(list_devices() if list_devices is not None else visible_devices())
    except GpuError:
        found = ()
    try:
        backend = resolve_backend(p.backend, found)
    except GpuError as exc:
        raise ConfigError(f"prover.backend = {p.backend}: {exc}") from None
    if backend is Backend.cpu:
        if isinstance(p.devices, list):
            log.warning("prover.devices = %s: ignored, proving on the CPU", p.devices)
        return backend.value, ()
    if p.devices == "all":
        return backend.value, found
    by_index = {d.index: d for d in found}
    missing = [i for i in p.devices if i not in by_index]
    if missing:
        raise ConfigError(
            f"prover.devices: no CUDA device {missing[0]} here (visible: {sorted(by_index) or 'none'})"
        )
    return backend.value, tuple(by_index[i] for i in p.devices)


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
    anchor = nearest_existing(path.parent)
    where = f"store.url: cannot create the store directory {path.parent}"  # run's words (agent.store)
    if not anchor.is_dir():
        raise ConfigError(f"{where}: Not a directory ({anchor} is a file)")
    if not os.access(anchor, os.W_OK | os.X_OK):
        raise ConfigError(f"{where}: Permission denied (no write access to {anchor})")
    # the permission bits can say yes where the file system says no (root in /proc or /sys, a read-only
    # mount): make and remove a directory where run would make the store's, as run's mkdir would fail
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".psagent-status-", dir=anchor))
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc} (in {anchor})") from None


def preflight(settings: Settings, *, agent_running: bool = False) -> Wallet:
    """Everything ``run`` checks before it starts, short of creating the store and binding the metrics port
    (checked, not done): the wallet (key file present, readable by us only, its address = market.wallet),
    the prover's placement, the metrics address. Returns the wallet."""
    wallet = load_wallet(settings)
    proving_devices(settings)
    check_metrics_listen(settings.metrics.listen, in_use_ok=agent_running)
    return wallet
