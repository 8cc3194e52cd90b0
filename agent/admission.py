"""Admission of proving work to devices: runtime concerns, kept on the agent's side of the engine (which
proves what it is given, on the device it is given).

* :class:`Admission`: per device a number of job slots and one :class:`MemoryBudget` (device bytes);
  ``async with admission.run_on(device, nbytes) as grant`` (or ``run_on_any(nbytes)``: the first device that
  has both) waits, cancellably, until the job is admitted. ``grant.nbytes`` is what the engine is then told
  it may use (``gpu.groth16.prover.prove(..., memory_bytes=grant.nbytes)``), so batch sizing reads the same
  budget instead of the device's free memory (admission waits, never over-commits: docs/decisions.md). A job
  names its device explicitly; there is no process-wide current device.
* :class:`HostBudget`: host bytes that the proving threads reserve before they build a partition's assignment
  (witness, A·w, B·w, C·w), so synthesis running ahead of the prover (``agent.proving.pipeline``) cannot
  grow host memory past the budget. Blocking (threads, not the event loop): synthesis runs in worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass

import anyio

from agent.host import mem_total
from gpu.device import Device

__all__ = [
    "Admission",
    "BudgetExceeded",
    "CPU_SLOT",
    "Grant",
    "HostBudget",
    "MemoryBudget",
    "host_memory_bytes",
]


class BudgetExceeded(RuntimeError):
    """A request larger than the whole budget: it could never be admitted."""


class MemoryBudget:
    """Device bytes that jobs reserve; a reservation waits (cancellably) until it fits."""

    def __init__(self, total_bytes: int) -> None:
        if total_bytes <= 0:
            raise ValueError("the budget must be positive")
        self.total = total_bytes
        self.used = 0
        self._changed = anyio.Condition()

    @asynccontextmanager
    async def reserve(self, nbytes: int) -> AsyncIterator[None]:
        if nbytes < 0:
            raise ValueError("a reservation is a non-negative number of bytes")
        if nbytes > self.total:
            raise BudgetExceeded(f"{nbytes} bytes requested, the budget is {self.total}")
        async with self._changed:
            while self.used + nbytes > self.total:
                await self._changed.wait()
            self.used += nbytes
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self.used -= nbytes
                    self._changed.notify_all()


def host_memory_bytes() -> int:
    """Physical memory of this host (0 when unknown)."""
    return mem_total() or 0


class HostBudget:
    """Host bytes for in-flight partition assignments; ``reserve`` blocks (a thread) until the bytes fit.

    Default total: ``fraction`` of the host's physical memory (all of it counted once per process)."""

    def __init__(self, total_bytes: int | None = None, *, fraction: float = 0.75) -> None:
        total = total_bytes if total_bytes is not None else int(host_memory_bytes() * fraction)
        if total <= 0:
            raise ValueError("the host budget must be positive")
        self.total = total
        self.used = 0
        self.peak = 0
        self._changed = threading.Condition()

    @contextmanager
    def reserve(self, nbytes: int, *, timeout_s: float | None = None) -> Iterator[None]:
        """Hold ``nbytes`` for the block; TimeoutError when they did not fit within ``timeout_s``."""
        if nbytes < 0:
            raise ValueError("a reservation is a non-negative number of bytes")
        if nbytes > self.total:
            raise BudgetExceeded(f"{nbytes} host bytes requested, the budget is {self.total}")
        with self._changed:
            if not self._changed.wait_for(lambda: self.used + nbytes <= self.total, timeout=timeout_s):
                raise TimeoutError(f"{nbytes} host bytes did not fit in {timeout_s} s ({self.used} in use)")
            self.used += nbytes
            self.peak = max(self.peak, self.used)
        try:
            yield
        finally:
            with self._changed:
                self.used -= nbytes
                self._changed.notify_all()


CPU_SLOT = Device(-1, "cpu", (0, 0), True)
"""The CPU backend as one admission slot (``simulated``: it has no device-memory figure to budget)."""


@dataclass(frozen=True)
class Grant:
    """An admitted job: the device it runs on and the device bytes reserved for it."""

    device: Device
    nbytes: int


class Admission:
    """Job slots and a memory budget per device, and one wait for either a named device or any of them.

    ``budget_bytes`` (per device index): what each device's jobs may reserve; a device not named starts with
    its total memory until its engine's budget replaces it (``AdmittedProver``: the engine decides it, see
    ``gpu.groth16.budget``); the simulator (no memory figure) gets 1 TiB. ``host``: the host-memory budget
    the jobs' proving threads reserve from (:class:`HostBudget`). ``serialized``: the jobs of one device
    never hold device memory at once (the engine holds its device for a partition's whole device part and
    frees its buffers before letting go), so a job needs its bytes free beside the resident keys, not beside
    the other jobs' reservations; without it reservations add up."""

    def __init__(
        self,
        devices: Sequence[Device],
        *,
        jobs_per_device: int = 1,
        budget_bytes: dict[int, int] | None = None,
        host: HostBudget | None = None,
        serialized: bool = False,
    ) -> None:
        if not devices:
            raise ValueError("no devices to admit work to")
        if jobs_per_device < 1:
            raise ValueError("jobs_per_device must be >= 1")
        self.devices = {d.index: d for d in devices}
        self.host = host or HostBudget()  # shared by every device's jobs: one host
        self.jobs_per_device = jobs_per_device
        self.serialized = serialized
        self._free = dict.fromkeys(self.devices, jobs_per_device)
        self._changed = anyio.Condition()
        self.budgets: dict[int, MemoryBudget] = {}
        for d in devices:
            total = (budget_bytes or {}).get(d.index) or d.total_memory() or (1 << 40)
            self.budgets[d.index] = MemoryBudget(total)

    @property
    def capacity(self) -> int:
        """Jobs that may run at once over all devices."""
        return self.jobs_per_device * len(self.devices)

    def running(self, device: Device | int) -> int:
        idx = device.index if isinstance(device, Device) else int(device)
        return self.jobs_per_device - self._free[idx]

    def run_on(self, device: Device | int, nbytes: int) -> AbstractAsyncContextManager[Grant]:
        """Wait for a job slot on ``device`` and ``nbytes`` of its budget; both are released on exit.
        Cancelling the waiting task (a deadline, a drain) leaves nothing reserved."""
        idx = device.index if isinstance(device, Device) else int(device)
        if idx not in self.devices:
            raise ValueError(f"device {idx} is not admitted here (have {sorted(self.devices)})")
        return self._admit((idx,), nbytes)

    def run_on_any(self, nbytes: int) -> AbstractAsyncContextManager[Grant]:
        """Wait for the first device with a free job slot and ``nbytes`` of budget (every device proves at
        once); the grant names the device."""
        return self._admit(tuple(self.devices), nbytes)

    @asynccontextmanager
    async def _admit(self, candidates: tuple[int, ...], nbytes: int) -> AsyncIterator[Grant]:
        if nbytes < 0:
            raise ValueError("a reservation is a non-negative number of bytes")

        def fits(i: int) -> bool:
            used = 0 if self.serialized else self.budgets[i].used
            return self._free[i] > 0 and used + nbytes <= self.budgets[i].total

        async with self._changed:
            while True:
                if all(nbytes > self.budgets[i].total for i in candidates):
                    raise BudgetExceeded(
                        f"{nbytes} bytes requested, the budget is "
                        f"{max(self.budgets[i].total for i in candidates)}"
                    )
                idx = next((i for i in candidates if fits(i)), None)
                if idx is not None:
                    break
                await self._changed.wait()
            self._free[idx] -= 1
            self.budgets[idx].used += nbytes
        try:
            yield Grant(self.devices[idx], nbytes)
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._free[idx] += 1
                    self.budgets[idx].used -= nbytes
                    self._changed.notify_all()


