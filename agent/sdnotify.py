"""systemd's notify protocol (``Type=notify``): READY=1, STOPPING=1, STATUS=…, WATCHDOG=1.

A datagram to the unix socket named by ``$NOTIFY_SOCKET`` (``@name`` is the abstract namespace). Written
here (a few lines) rather than depending on a binding: outside systemd the variable is unset and every call
is a no-op, so the CLI and tests need nothing.
"""

from __future__ import annotations

import os
import socket

__all__ = ["Notifier"]


class Notifier:
    def __init__(self, address: str | None = None, watchdog_usec: str | None = None) -> None:
        self.address = os.environ.get("NOTIFY_SOCKET") if address is None else address
        usec = os.environ.get("WATCHDOG_USEC") if watchdog_usec is None else watchdog_usec
        # ping at half the watchdog interval, as sd_watchdog_enabled(3) recommends
        self.watchdog_interval_s: float | None = int(usec) / 2e6 if usec and usec.isdigit() else None

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, *fields: str) -> bool:
        """Send ``KEY=value`` lines; False (never an exception) when there is no socket or it fails."""
        if not self.address:
            return False
        addr = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
                s.connect(addr)
                s.sendall("\n".join(fields).encode())
        except OSError:
            return False
        return True

    def ready(self, status: str = "") -> bool:
        return self.send("READY=1", *([f"STATUS={status}"] if status else []))

    def stopping(self, status: str = "") -> bool:
        return self.send("STOPPING=1", *([f"STATUS={status}"] if status else []))

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.send("WATCHDOG=1")
