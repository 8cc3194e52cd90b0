"""agent.admission: per-device job slots + memory budget on anyio (cancellable waits), one device named or the
first of several that admits the job."""

from __future__ import annotations

import anyio
import pytest

from agent.admission import Admission, BudgetExceeded, MemoryBudget
from gpu.device import Device

pytestmark = pytest.mark.anyio


def _devices(n: int = 2) -> list[Device]:
    return [Device(i, f"sim {i}", (0, 0), True) for i in range(n)]


async def test_memory_budget_admits_only_what_fits() -> None:
    budget = MemoryBudget(100)
    order: list[str] = []

    async def second() -> None:
        async with budget.reserve(50):
            order.append("second")
            assert budget.used == 50

    async with anyio.create_task_group() as tg:
        async with budget.reserve(70):
            tg.start_soon(second)
            await anyio.sleep(0.05)
            order.append("first-done")
    assert order == ["first-done", "second"] and budget.used == 0
    with pytest.raises(BudgetExceeded):
        async with budget.reserve(101):
            pass


async def test_a_waiting_reservation_is_cancellable_and_leaves_nothing() -> None:
    budget = MemoryBudget(100)
    async with budget.reserve(60):
        with anyio.move_on_after(0.05) as scope:
            async with budget.reserve(60):
                pytest.fail("admitted past the budget")
        assert scope.cancelled_caught and budget.used == 60
    assert budget.used == 0


async def test_admission_limits_jobs_per_device_and_names_the_device() -> None:
    adm = Admission(_devices(2), jobs_per_device=1, budget_bytes={0: 1000, 1: 1000})
    running: list[int] = []
    peak = {0: 0, 1: 0}

    async def job(dev: int) -> None:
        async with adm.run_on(dev, 100) as grant:
            assert grant.device.index == dev and grant.nbytes == 100
            running.append(dev)
            peak[dev] = max(peak[dev], running.count(dev))
            await anyio.sleep(0.01)
            running.remove(dev)

    async with anyio.create_task_group() as tg:
        for dev in (0, 0, 0, 1, 1):
            tg.start_soon(job, dev)
    assert peak == {0: 1, 1: 1} and adm.budgets[0].used == 0
    with pytest.raises(ValueError, match="not admitted here"):
        async with adm.run_on(7, 1):
            pass


async def test_admission_memory_is_shared_by_the_jobs_of_a_device() -> None:
    adm = Admission(_devices(1), jobs_per_device=4, budget_bytes={0: 1000})
    admitted: list[int] = []
    release = anyio.Event()

    async def job(nbytes: int) -> None:
        async with adm.run_on(0, nbytes):
            admitted.append(nbytes)
            await release.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(job, 700)
        await anyio.sleep(0.02)
        tg.start_soon(job, 400)  # does not fit next to 700: waits
        await anyio.sleep(0.02)
        tg.start_soon(job, 300)  # fits: a job slot is free and 700 + 300 <= 1000
        await anyio.sleep(0.02)
        assert admitted == [700, 300] and adm.budgets[0].used == 1000
        release.set()
    assert admitted == [700, 300, 400] and adm.budgets[0].used == 0


async def test_run_on_any_keeps_every_device_busy() -> None:
    """Jobs that may run anywhere go to the first device with a free slot and room in its budget, so two
    devices prove two jobs at once; a job too large for one device's budget goes to the other; one larger
    than every budget is refused at once."""
    adm = Admission(_devices(2), jobs_per_device=1, budget_bytes={0: 1000, 1: 500})
    assert adm.capacity == 2
    running: list[int] = []
    peak = [0]
    release = anyio.Event()

    async def job(nbytes: int) -> None:
        async with adm.run_on_any(nbytes) as grant:
            running.append(grant.device.index)
            peak[0] = max(peak[0], len(running))
            await release.wait()
            running.remove(grant.device.index)

    async with anyio.create_task_group() as tg:
        tg.start_soon(job, 400)
        tg.start_soon(job, 400)
        tg.start_soon(job, 400)  # both devices busy: waits
        await anyio.sleep(0.05)
        assert sorted(running) == [0, 1] and adm.running(0) == adm.running(1) == 1
        release.set()
    assert peak[0] == 2 and running == [] and adm.budgets[0].used == adm.budgets[1].used == 0
    async with adm.run_on_any(800) as grant:  # fits device 0's budget only
        assert grant.device.index == 0
    with pytest.raises(BudgetExceeded):
        async with adm.run_on_any(1001):
            pass
