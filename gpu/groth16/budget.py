"""The device budget an engine proves in, when the operator names none: the memory the device has free once
the context is up and every proving kernel has run once, less a reserve.

Why after the kernels: a kernel's first launch loads its module and makes the driver reserve its stack frame
(local memory) for every thread the device can hold, and keep it. The G2 MSM kernels' frames are 2-4 KB, so
that reservation is ~1 GB on a 132-SM card: memory no allocation made it, and a budget read before it would
promise memory that is gone (``gpu.groth16.plan.overheads`` names it for the plans made without a device).
The reserve (:func:`reserve_bytes`) covers the driver's rounding of allocations and what other processes take.
"""

from __future__ import annotations

import numpy as np

from gpu import memory
from gpu.curves import G1, G2
from gpu.device import Device

RESERVE_MIN = 1 << 30
RESERVE_FRACTION = 0.02


def reserve_bytes(total: int) -> int:
    """What the default budget leaves free on a device of ``total`` bytes: max(1 GiB, 2 %)."""
    return max(RESERVE_MIN, int(RESERVE_FRACTION * total))


def launch_kernels(device: Device) -> None:
    """Run every kernel of a proof once on tiny inputs (results discarded): the MSM's stages on G1 and G2
    with scalars of each class, the H step's transforms and pointwise steps. The caller holds the device."""
    from numba import cuda

    from gpu.arith.fields import fr_from_ints
    from gpu.groth16.cuda_kernels import gather, mul_into, sub_scale
    from gpu.msm import MSMContext
    from gpu.ntt import Order, plan, transform_cuda
    from gpu.ntt.tables import NO_SCALE, scale

    rng = np.random.default_rng(1)
    n = 64
    scalars = fr_from_ints([0, 1] + [int(x) for x in rng.integers(2, 1 << 62, size=n - 2)])
    for group in (G1, G2):
        bases = group.mul(np.repeat(group.generator(), n, axis=0), scalars)  # distinct multiples of g
        MSMContext(bases, backend="cuda", device=device).msm(scalars)
    logn = 4
    d = cuda.to_device(np.zeros((1, 1 << logn, 8), dtype=np.uint32))
    transform_cuda(d, logn, plan(Order.NR), True, NO_SCALE, NO_SCALE, device=device)
    transform_cuda(d, logn, plan(Order.RN), False, scale(logn, "coset_ninv"), NO_SCALE, device=device)
    mul_into(d[0], d[0])
    sub_scale(d[0], d[0], d[0])
    gather(d[0], cuda.to_device(np.zeros(4, dtype=np.uint32)))
    cuda.synchronize()


def default_budget(device: Device) -> int | None:
    """The device bytes an engine on ``device`` may hold, key included: what it holds now plus the free
    memory after :func:`launch_kernels`, less :func:`reserve_bytes`. None for the simulator (no limit)."""
    if device.simulated:
        return None
    from numba import cuda

    with device.use():
        launch_kernels(device)
        memory.flush_frees()
        free, total = (int(x) for x in cuda.current_context().get_memory_info())
    held = memory.ledger(device.index).live if memory.counting(device.index) else 0
    return held + free - reserve_bytes(total)
