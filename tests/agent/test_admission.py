"""agent.admission: per-device capacity limiter + memory budget on anyio (cancellable waits), and the
partition assembly keyed by a job id per attempt."""

from __future__ import annotations

import anyio
import pytest

from agent.admission import (
    Admission,
    AssemblyError,
    BudgetExceeded,
    JobAssembly,
    MemoryBudget,
    new_job_id,
)
from gpu.device import Device
from gpu.groth16.params import PROOF_BYTES

pytestmark = pytest.mark.anyio


def _devices(n: int = 2) -> list[Device]:
    return [Device(i, f"sim {i}", (0, 0), True) for i in range(n)]


def test_assembly_orders_and_refuses_mixing() -> None:
    asm = JobAssembly()
    j1, j2 = new_job_id(), new_job_id()
    assert j1 != j2
    asm.start(j1, 3)
    asm.start(j2, 3)
    parts = [bytes([i]) * PROOF_BYTES for i in range(3)]
    for i in (2, 0, 1):
        asm.insert(j1, i, parts[i])
    with pytest.raises(AssemblyError, match="duplicate"):
        asm.insert(j1, 1, parts[1])
    with pytest.raises(AssemblyError, match="out of range"):
        asm.insert(j2, 3, parts[0])
    with pytest.raises(AssemblyError, match="192"):
        asm.insert(j2, 0, b"short")
    with pytest.raises(AssemblyError, match="missing partitions"):
        asm.assemble(j2)
    assert asm.missing(j2) == [0, 1, 2]
    assert asm.assemble(j1) == b"".join(parts)
    with pytest.raises(AssemblyError, match="finished or failed"):
        asm.insert(j1, 0, parts[0])  # late partition of a finished job
    with pytest.raises(AssemblyError, match="already used"):
        asm.start(j1, 3)
    with pytest.raises(AssemblyError, match="unknown"):
        asm.insert("nope", 0, parts[0])
    asm.fail(j2)
    with pytest.raises(AssemblyError, match="finished or failed"):
        asm.insert(j2, 0, parts[0])


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
