"""The memory plan of one proof (``gpu.groth16.plan``) from its circuit template's counts: what ``bench e2e
--plan`` prints and ``psagent doctor`` weighs against a device, by the formulas admission reserves by.

The circuit templates and ``gpu.groth16.plan`` load numba: they are imported in the function, since ``bench
e2e --plan`` imports this module before it applies the configuration's engine options and kernel cache."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.config import cache_dir
from agent.proving.kind import for_kind

if TYPE_CHECKING:
    from gpu.groth16.plan import ProofSizes, Stage
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = ["memory_plan_of"]


def memory_plan_of(
    pt: ProofType | UpdateProofType,
    *,
    cuda: bool,
    device_spmv: bool,
    params_to_device: bool = True,
    cache: Path | None = None,
) -> tuple[ProofSizes, list[Stage]]:
    """(``gpu.groth16.plan.ProofSizes``, the plan's stages) of one proof of ``pt`` (a seal or an update proof
    type), from the circuit template's counts: no matrix is tiled and nothing large is allocated, so a 32GiB
    plan costs the template (recorded once, cached) and not the 7.5 GB R1CS. The same formulas as admission
    (the engine's ``device_bytes``, ``resident_bytes``, ``host_bytes``)."""
    from gpu.groth16 import plan  # numba: after the kernel-cache set-up
    from porep.circuit.partition import partition_template
    from porep.snap.partition import update_template

    where = cache if cache is not None else cache_dir()
    t = for_kind(pt, porep=lambda p: partition_template(p, where), snap=lambda u: update_template(u, where))
    sizes = plan.ProofSizes.of_stats(
        t.stats(), coeff_bytes=int(t.coeff[0].dtype.itemsize), table_rows=int(t.table.shape[0])
    )
    stages = plan.memory_plan(sizes, device_spmv=device_spmv, cuda=cuda, params_to_device=params_to_device)
    return sizes, stages
