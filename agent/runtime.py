"""Putting the agent together from its configuration: wallet, market client, store, settings, status.

Kept apart from the CLI so that ``psagent run``, the dry-run and tests build the agent the same way, and
apart from :mod:`agent.service` so the service stays free of configuration parsing.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.config import ConfigError, Settings
from agent.pipeline import PipelineSettings
from agent.requester import RequestLoopSettings
from agent.service import AgentSettings
from agent.storage import open_store
from agent.store import TERMINAL_STATES, AskState, RequestState, Store

__all__ = ["StatusReport", "agent_settings", "gate_file", "load_wallet", "read_gate", "status_report"]

GATE_STALE_S = 30.0  # the running agent rewrites its gate file every few seconds


def load_wallet(settings: Settings) -> Any:
    """The provider wallet from ``market.key_file``; its address must equal ``market.wallet`` when given."""
    from market.errors import WalletError
    from market.wallet import read_key_file

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


def agent_settings(settings: Settings, *, max_attempts: int = 3) -> AgentSettings:
    m, r = settings.market, settings.retention
    return AgentSettings(
        requests=RequestLoopSettings(
            price_attofil=m.price_attofil,
            low_water=m.low_water,
            high_water=m.high_water,
            poll_interval_s=m.poll_interval_s,
            backoff_max_s=m.backoff_max_s,
        ),
        pipeline=PipelineSettings(max_attempts=max_attempts),
        withdraw_on_shutdown=m.withdraw_on_shutdown,
        retention_submitted_s=r.submitted_days * 86400.0,
        retention_failed_s=r.failed_days * 86400.0,
    )


@dataclass(frozen=True)
class StatusReport:
    queue: dict[str, int]
    asks: dict[str, int]
    payments: int
    paid_attofil: int
    last_voucher_nonce: int | None
    recent_failures: list[tuple[str, str]]
    oldest_unfinished_s: float | None
    gate: dict[str, Any] = field(default_factory=lambda: {"state": "not running", "reason": ""})

    def as_json(self) -> dict[str, Any]:
        return {
            "gate": self.gate,
            "queue": self.queue,
            "asks": self.asks,
            "payments": {
                "vouchers": self.payments,
                "cumulative_attofil": str(self.paid_attofil),
                "last_nonce": self.last_voucher_nonce,
            },
            "recent_failures": [{"request_cid": c, "error": e} for c, e in self.recent_failures],
            "oldest_unfinished_s": self.oldest_unfinished_s,
        }


def gate_file(settings: Settings) -> Path:
    """Where the agent writes its readiness gate for ``psagent status``: beside a SQLite store, else in the
    cache directory."""
    from agent.config import cache_dir

    url = settings.store.url
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :] + ".gate.json")
    return cache_dir() / "gate.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_gate(path: Path, *, now: float | None = None) -> dict[str, Any]:
    """The gate as the running agent last wrote it; ``not running`` when there is no file, its process is gone
    or it was not refreshed for GATE_STALE_S."""
    now = time.time() if now is None else now
    try:
        data = json.loads(path.read_text())
        state, reason = str(data["state"]), str(data.get("reason", ""))
        pid, written = int(data["pid"]), float(data["written_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return {"state": "not running", "reason": ""}
    if not _alive(pid) or now - written > GATE_STALE_S:
        return {"state": "not running", "reason": f"last seen {now - written:.0f} s ago: {state}"}
    return {"state": state, "reason": reason, "since": data.get("since"), "pid": pid}


def status_report(
    store: Store, *, now: float | None = None, failures: int = 5, gate: Path | None = None
) -> StatusReport:
    """What ``psagent status`` shows, read from the store (works while the service runs: WAL readers) and the
    agent's gate file."""
    now = time.time() if now is None else now
    counts = store.counts()
    asks = store.asks()
    payments = store.payments()
    rows = store.list_requests()
    unfinished = [r.obtained_at for r in rows if r.state not in TERMINAL_STATES]
    failed = [r for r in rows if r.state is RequestState.FAILED][-failures:]
    return StatusReport(
        queue={s.value: counts[s] for s in RequestState},
        asks={s.value: sum(1 for a in asks if a.state is s) for s in AskState},
        payments=len(payments),
        paid_attofil=payments[-1].cumulative_amount if payments else 0,
        last_voucher_nonce=payments[-1].nonce if payments else None,
        recent_failures=[(r.request_cid, r.last_error or "") for r in failed],
        oldest_unfinished_s=(now - min(unfinished)) if unfinished else None,
        gate=read_gate(gate, now=now) if gate is not None else {"state": "not running", "reason": ""},
    )


def open_configured_store(settings: Settings, *, create: bool = True) -> Store:
    from agent.store import StoreError

    try:
        return open_store(settings.store.url, create=create)
    except StoreError as e:
        raise ConfigError(f"store.url: {e}") from None
