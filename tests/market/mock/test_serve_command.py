"""``psagent market-mock serve`` as a user runs it: a real process that prints its URL and a demo wallet,
serves our client, keeps its books in --state, and stops cleanly on SIGTERM and SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from typer.testing import CliRunner

from agent.cli import app
from market.client import MarketClient
from market.mock.pool import ChallengePool
from market.wallet import Wallet

PSAGENT = [sys.executable, "-c", "from agent.cli import main; main()"]


def _start(args: list[str]) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [*PSAGENT, "market-mock", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    url_line = proc.stdout.readline()
    wallet_line = proc.stdout.readline()
    proc.stdout.readline()  # the demo key
    assert url_line.startswith("mock market: http://127.0.0.1:"), url_line
    assert wallet_line.startswith("demo wallet: f1"), wallet_line
    return proc, url_line.split()[-1], wallet_line.split()[-1]


def _stop(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=15)  # closes the pipes
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@pytest.mark.slow
def test_serve_restart_and_signals(challenge_pool: ChallengePool, tmp_path: Path) -> None:
    state = tmp_path / "books.db"
    args = [
        "--pool",
        str(challenge_pool.directory),
        "--state",
        str(state),
        "--slot-divisor",
        "1",
        "--demand",
        "0",
    ]
    proc, url, demo = _start(args)
    wallet = Wallet.generate()

    async def ask() -> int:
        async with MarketClient(url, wallet) as c:
            await c.create_ask(5 * 10**15)
            return len((await c.poll()).requests)

    try:
        assert anyio.run(ask) == 1  # a challenge
        root = url.removesuffix("/v0/proofs")
        assert httpx.get(root + "/_mock/state").json()["counters"]["asks_challenge"] == 1
    finally:
        _stop(proc, signal.SIGTERM)
    proc, url, demo2 = _start(args)
    try:
        assert demo2 != demo  # a fresh throwaway wallet each start
        snap = httpx.get(url.removesuffix("/v0/proofs") + "/_mock/state").json()
        assert snap["counters"]["asks_challenge"] == 1 and snap["jobs"] == {"assigned": 1}
    finally:
        _stop(proc, signal.SIGINT)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--listen", "localhost"], "HOST:PORT"),
        (["--faults", "ask:teapot"], "unknown fault"),
        (["--state", "/nonexistent/dir/books.db"], "does not exist"),
        (["--verifying-key", "/nonexistent.vk"], "not a file"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str], words: str) -> None:
    res = CliRunner().invoke(app, ["market-mock", "serve", *args])
    assert res.exit_code == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and words in lines[0], res.stderr
