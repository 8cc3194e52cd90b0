"""The memory plan of one proof (``gpu.groth16.plan``) from its circuit template's counts: what ``bench e2e
--plan`` prints, ``psagent doctor`` weighs against a device and ``params generate`` checks the disk and memory
by, with the engine's own decision (its layout under a device budget).

The circuit templates and ``gpu.groth16.plan`` load numba: they are imported in the functions, since ``bench
e2e --plan`` imports this module before it applies the configuration's engine options and kernel cache."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent.config import cache_dir
from agent.proving.kind import for_kind

if TYPE_CHECKING:
    from gpu.groth16.plan import Layout, ProofSizes, Stage
    from porep.post.params import PoStProofType
    from porep.prooftypes import ProofType
    from porep.snap.params import UpdateProofType

__all__ = ["memory_plan_of", "sizes_of"]


def sizes_of(pt: ProofType | UpdateProofType | PoStProofType, cache: Path | None = None) -> ProofSizes:
    """``gpu.groth16.plan.ProofSizes`` of one partition of ``pt`` (a seal, an update or a PoSt proof type),
    from the circuit template's counts: no matrix is tiled and nothing large is allocated, so a 32GiB plan
    costs the template (recorded once, cached) and not the 7.5 GB R1CS."""
    from gpu.groth16 import plan  # numba: after the kernel-cache set-up
    from porep.circuit.partition import partition_template
    from porep.post.partition import post_template
    from porep.snap.partition import update_template

    where = cache if cache is not None else cache_dir()
    t = for_kind(
        pt,
        porep=lambda p: partition_template(p, where),
        snap=lambda u: update_template(u, where),
        post=lambda q: post_template(q, where),
    )
    return plan.ProofSizes.of_stats(
        t.stats(), coeff_bytes=int(t.coeff[0].dtype.itemsize), table_rows=int(t.table.shape[0])
    )


def memory_plan_of(
    pt: ProofType | UpdateProofType | PoStProofType,
    *,
    cuda: bool,
    device_spmv: bool,
    params_to_device: bool = True,
    cache: Path | None = None,
    budget: int | None = None,
    layout: str = "auto",
) -> tuple[ProofSizes, Layout | None, list[Stage]]:
    """(sizes, layout, the plan's stages) of one proof of ``pt`` on a device of ``budget`` bytes (None: no
    limit) with ``layout`` forced or ``auto``: the decision the engine makes (``Groth16Engine.layout``), from
    the template's counts (:func:`sizes_of`). ``cuda`` False: the CPU backend (no layout).
    ``gpu.groth16.plan.LayoutError`` when nothing of that kind fits the budget."""
    from gpu.groth16 import plan  # numba: after the kernel-cache set-up

    sizes = sizes_of(pt, cache)
    lay = plan.choose_layout(sizes, budget, device_spmv=device_spmv, force=layout) if cuda else None
    return sizes, lay, plan.memory_plan(sizes, lay, params_to_device=params_to_device)
