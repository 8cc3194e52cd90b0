"""The operator's listener: ``/metrics`` (Prometheus), ``/status`` (JSON) and ``/`` (the status page) on one
HOST:PORT, loopback by default (``metrics.listen``).

A plain threading HTTP server in daemon threads: nothing to build, no assets from elsewhere, read-only (GET
and HEAD only). What ``/status`` and ``/`` show is supplied by the caller (the agent's status document,
``agent.opsview.document.StatusView``), so the listener knows nothing of it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

__all__ = ["Exporter"]

log = logging.getLogger(__name__)


class Exporter:
    """``registry`` on /metrics; ``status`` (a JSON-able document) on /status; ``page`` (HTML) on /."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        status: Callable[[], dict[str, Any]] | None = None,
        page: Callable[[], str] | None = None,
    ) -> None:
        self.registry = registry
        self.status = status
        self.page = page
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def start(self, listen: str) -> Exporter:
        """Serve on ``listen`` (HOST:PORT; [v6]:PORT; port 0: any free one) from a daemon thread; OSError when
        the address cannot be bound."""
        import socket

        host, _, port = listen.rpartition(":")
        host = host.strip("[]")
        handler = _handler(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        self.server = Server((host, int(port)), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, name="psagent-exporter", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def _handler(exporter: Exporter) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "psagent"

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
            self._answer(head=True)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._answer(head=False)

        def _answer(self, *, head: bool) -> None:
            path = urlsplit(self.path).path
            try:
                if path == "/metrics":
                    encoder, content_type = choose_encoder(self.headers.get("Accept", ""))
                    self._send(200, content_type, encoder(exporter.registry), head)
                elif path == "/status" and exporter.status is not None:
                    body = json.dumps(exporter.status(), indent=1, default=str).encode()
                    self._send(200, "application/json", body, head)
                elif path in ("/", "/index.html") and exporter.page is not None:
                    self._send(200, "text/html; charset=utf-8", exporter.page().encode(), head)
                else:
                    self._send(404, "text/plain; charset=utf-8", b"not found: /metrics, /status, /\n", head)
            except Exception as e:  # a failing page must not take the listener down; say why, briefly
                log.warning("%s: %s: %s", path, type(e).__name__, e)
                self._send(500, "text/plain; charset=utf-8", f"{type(e).__name__}: {e}\n".encode(), head)

        def _send(self, code: int, content_type: str, body: bytes, head: bool) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
            log.debug("exporter: " + format, *args)

    return Handler
