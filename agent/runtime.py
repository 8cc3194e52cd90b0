"""Putting the agent together from its configuration: wallet, market client, store, settings, status.

Kept apart from the CLI so that ``psagent run``, the dry-run and tests build the agent the same way, and
apart from :mod:`agent.service` so the service stays free of configuration parsing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from agent.config import ConfigError, Settings
from agent.pipeline import PipelineSettings
from agent.requester import RequestLoopSettings
from agent.service import AgentSettings
from agent.store import TERMINAL_STATES, AskState, RequestState, SqliteStore, open_store

__all__ = ["StatusReport", "agent_settings", "load_wallet", "status_report"]


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

    def as_json(self) -> dict[str, Any]:
        return {
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


def status_report(store: SqliteStore, *, now: float | None = None, failures: int = 5) -> StatusReport:
    """What ``psagent status`` shows, read from the store only (works while the service runs: WAL readers)."""
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
    )


def open_configured_store(settings: Settings) -> SqliteStore:
    from agent.store import StoreError

    try:
        return open_store(settings.store.url)
    except StoreError as e:
        raise ConfigError(f"store.url: {e}") from None
