"""Serving the mock market on a real socket: uvicorn, in a background thread (tests, dry runs) or in the
foreground (``psagent market-mock serve``).

Why these libraries: Starlette is a small, widely used ASGI toolkit (routing, requests/responses, nothing
more); uvicorn is the reference ASGI server, pure Python with h11, maintained by the same people. A real
server on loopback (rather than an in-process transport) is the point: timeouts, dropped connections,
keep-alive and partial bodies then happen as they do against the real market.

uvicorn runs with its h11 protocol subclassed to hand each connection's transport to the app (under
``TRANSPORT_KEY`` in the ASGI scope), which is how a ``drop-before`` / ``drop-after`` fault closes a
connection without an answer. Its own Date and Server headers are off: the app dates answers by the
market's (possibly skewed) clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from market.mock.app import BASE_PATH, TRANSPORT_KEY, MockMarketApp
from market.mock.checker import ProofChecker
from market.mock.faults import FaultPlan
from market.mock.state import MarketRules, MarketState

__all__ = ["MockMarket", "base_url", "bind", "make_config", "serve_forever"]


class _DroppableH11(H11Protocol):
    """uvicorn's h11 protocol, putting the connection's transport into every request's scope."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        inner = self.app

        async def app(scope: Any, receive: Any, send: Any) -> None:
            scope[TRANSPORT_KEY] = transport
            await inner(scope, receive, send)

        self.app = app


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket (port 0: any free port), bound before the server starts so its URL is known."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say they are TCP; with proto 0
    # every answer written in two parts (head, body) waited ~40 ms for the client's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{BASE_PATH}"


def make_config(
    app: MockMarketApp, *, log_level: str = "warning", access_log: bool = False
) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        http=_DroppableH11,
        lifespan="off",
        log_level=log_level,
        access_log=access_log,
        date_header=False,
        server_header=False,
        timeout_keep_alive=30,
        # no handlers of uvicorn's own ("INFO:     Started server process" mixed into psagent's log): its
        # loggers propagate to the process's root handler (psagent's format, JSON when not on a terminal)
        log_config=None,
    )


class MockMarket:
    """A mock market served on loopback from a background thread::

        with MockMarket(checker=DigestStandInChecker(), pool=pool) as market:
            async with MarketClient(market.base_url, wallet) as client: ...

    ``state_path`` keeps the books in SQLite across restarts; ``faults`` is a spec or a FaultPlan.
    """

    def __init__(
        self,
        *,
        checker: ProofChecker,
        rules: MarketRules | None = None,
        state_path: Path | None = None,
        challenge_source: Any = None,
        faults: str | FaultPlan | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.state = MarketState(state_path, rules or MarketRules(), challenge_source=challenge_source)
        plan = faults if isinstance(faults, FaultPlan) else FaultPlan.parse(faults)
        self.app = MockMarketApp(self.state, checker, plan)
        self._sock = bind(host, port)
        self.base_url = base_url(self._sock)
        self.root_url = self.base_url[: -len(BASE_PATH)]
        self._server = uvicorn.Server(make_config(self.app))
        self._thread: threading.Thread | None = None

    @property
    def faults(self) -> FaultPlan:
        return self.app.faults

    def start(self) -> MockMarket:
        def serve() -> None:
            asyncio.run(self._server.serve(sockets=[self._sock]))

        self._thread = threading.Thread(target=serve, name="mock-market", daemon=True)
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the mock market server failed to start")
            threading.Event().wait(0.005)
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
            self._thread = None
        self._sock.close()
        self.state.close()

    def __enter__(self) -> MockMarket:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _ForegroundServer(uvicorn.Server):
    """uvicorn's server, minus re-raising the stopping signal after its graceful shutdown (which would end
    the process by that signal): SIGINT/SIGTERM finish in-flight requests and return normally (exit 0)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        original = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


def serve_forever(market_app: MockMarketApp, sock: socket.socket, *, log_level: str = "info") -> None:
    """Serve in the foreground until SIGINT/SIGTERM."""
    _ForegroundServer(make_config(market_app, log_level=log_level)).run(sockets=[sock])
