"""A fake systemd notify socket for the agent's tests: a real AF_UNIX datagram socket whose messages are
collected, with their arrival time, by a thread."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path


class NotifySocket:
    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.messages: list[tuple[float, str]] = []  # (time.monotonic(), datagram)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(self.path)
        self._sock.settimeout(0.1)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> NotifySocket:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sock.close()

    def _read(self) -> None:
        while True:
            stopping = self._stop.is_set()  # after the stop: what is queued still, then out
            try:
                data = self._sock.recv(4096)
            except TimeoutError:
                if stopping:
                    return
                continue
            except OSError:
                return
            with self._lock:
                self.messages.append((time.monotonic(), data.decode()))

    def fields(self, key: str) -> list[tuple[float, str]]:
        """Every ``KEY=value`` line received, as (arrival time, value)."""
        with self._lock:
            msgs = list(self.messages)
        prefix = key + "="
        lines = [(t, line) for t, m in msgs for line in m.split("\n")]
        return [(t, line[len(prefix) :]) for t, line in lines if line.startswith(prefix)]

    def wait_for(self, key: str, value: str | None = None, timeout: float = 30.0) -> float:
        """Arrival time of the first ``KEY=value`` (any value when None); AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for t, v in self.fields(key):
                if value is None or value in v:
                    return t
            time.sleep(0.02)
        raise AssertionError(f"no {key}={value or ''}… within {timeout} s; got {self.messages}")
