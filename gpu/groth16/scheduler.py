"""Device scheduling: a job names its device explicitly (never process-global state read once, cuzk.md §5.3),
holds that device's lock (gpu.device) while it runs, and is admitted only when its memory fits the device's
budget (cuzk's OOM lesson, §5.4): admission blocks (or times out) instead of over-committing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gpu.device import Device


class BudgetExceeded(RuntimeError):
    """A request larger than the whole budget, or one that did not fit before its timeout."""


class MemoryBudget:
    """Bytes that jobs may reserve; reservations block until they fit."""

    def __init__(self, total_bytes: int) -> None:
        if total_bytes <= 0:
            raise ValueError("the budget must be positive")
        self.total = total_bytes
        self.used = 0
        self._cv = threading.Condition()

    @contextmanager
    def reserve(self, nbytes: int, timeout: float | None = None) -> Iterator[None]:
        if nbytes > self.total:
            raise BudgetExceeded(f"{nbytes} bytes requested, the budget is {self.total}")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while self.used + nbytes > self.total:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise BudgetExceeded(
                        f"{nbytes} bytes did not fit within {timeout} s ({self.used} in use)"
                    )
                self._cv.wait(left)
            self.used += nbytes
        try:
            yield
        finally:
            with self._cv:
                self.used -= nbytes
                self._cv.notify_all()


class DeviceScheduler:
    """One lock and one memory budget per device; ``run_on(device, nbytes)`` admits a job on that device."""

    def __init__(
        self, devices: list[Device], budget_fraction: float = 0.9, budget_bytes: dict[int, int] | None = None
    ) -> None:
        if not devices:
            raise ValueError("no devices to schedule on")
        self.devices = {d.index: d for d in devices}
        self.budgets = {}
        for d in devices:
            total = (budget_bytes or {}).get(d.index) or int(d.memory_bytes * budget_fraction) or (1 << 40)
            self.budgets[d.index] = MemoryBudget(total)

    @contextmanager
    def run_on(self, device: Device | int, nbytes: int, timeout: float | None = None) -> Iterator[Device]:
        """Reserve ``nbytes`` on ``device``, then hold its lock and make it current for this thread."""
        idx = device.index if isinstance(device, Device) else int(device)
        if idx not in self.devices:
            raise ValueError(f"device {idx} is not scheduled here (have {sorted(self.devices)})")
        dev = self.devices[idx]
        with self.budgets[idx].reserve(nbytes, timeout), dev.use():
            yield dev


def prove_bytes_estimate(logn: int, num_aux: int, resident_bases: bool = True) -> int:
    """Device bytes one partition needs beyond resident bases: the a/b/c domain buffers (3 x 32 B x 2^logn),
    the scalars of the largest MSM and its sort/bucket buffers (rough: 4 x 32 B per scalar)."""
    n = 1 << logn
    return 3 * 32 * n + 4 * 32 * max(n, num_aux)
