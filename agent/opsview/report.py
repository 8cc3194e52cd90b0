"""The status report: what ``psagent status`` prints, read by another process than the agent's.

The store (readable while the service runs: WAL readers) and the agent's gate file (:mod:`agent.opsview.gate`)
are all it has: it works whether or not an agent runs. The running agent's own view, with its metrics, is the
status document (:mod:`agent.opsview.document`, ``/status``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.opsview.gate import read_gate
from agent.store import TERMINAL_STATES, AskState, RequestState, Store

__all__ = ["StatusReport", "status_report"]


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
