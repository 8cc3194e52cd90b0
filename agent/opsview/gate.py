"""The readiness gate as the operator sees it, and its file: the one format the running agent writes and
``psagent status`` (another process) reads.

The gate itself is the service's (``agent.service.Agent.gate``: warmed up, self-tested, healthy, not
stopping); what it looks like to an operator is :class:`Gate`. The service rewrites the gate file every few
seconds (:func:`write_gate_file`); :func:`read_gate` tells a running agent from one that is gone (no file, its
process dead, or not refreshed for :data:`GATE_STALE_S`). Where the file lives is the configuration's
(``agent.runtime.gate_file``).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu.files import atomic_write

__all__ = ["GATE_STALE_S", "GATE_STATES", "Gate", "read_gate", "write_gate_file"]


@dataclass(frozen=True)
class Gate:
    """The readiness gate as shown to operators: ``state`` is starting, warming, open, failed (the warm-up
    failed: ``reason`` says why), unhealthy (the prover failed repeatedly), stopping or stopped."""

    state: str
    reason: str = ""
    since: float = field(default_factory=time.time)

    @property
    def open(self) -> bool:
        return self.state == "open"

    def line(self) -> str:
        return f"{self.state}{': ' + self.reason if self.reason else ''}"

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state, "reason": self.reason, "since": self.since}


GATE_STATES = ("starting", "warming", "open", "failed", "unhealthy", "stopping", "stopped")
GATE_STALE_S = 30.0  # the running agent rewrites its gate file every few seconds


def write_gate_file(path: Path, gate: Gate, *, pid: int | None = None) -> None:
    """The gate's state for ``psagent status`` (another process), written atomically with a timestamp."""
    data = {**gate.as_json(), "pid": pid if pid is not None else os.getpid(), "written_at": time.time()}
    atomic_write(path, json.dumps(data) + "\n")


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
    or it was not refreshed for GATE_STALE_S; ``unknown`` when the file is there but this user cannot read it
    (the service writes it with umask 0077)."""
    now = time.time() if now is None else now
    try:
        data = json.loads(path.read_text())
        state, reason = str(data["state"]), str(data.get("reason", ""))
        pid, written = int(data["pid"]), float(data["written_at"])
    except PermissionError:
        return {"state": "unknown", "reason": f"cannot read {path} (run status as the service's user)"}
    except (OSError, ValueError, KeyError, TypeError):
        return {"state": "not running", "reason": ""}
    if not _alive(pid) or now - written > GATE_STALE_S:
        return {"state": "not running", "reason": f"last seen {now - written:.0f} s ago: {state}"}
    return {"state": state, "reason": reason, "since": data.get("since"), "pid": pid}
