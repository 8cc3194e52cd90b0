"""The pre-compiled FallbackPoSt circuit (PCE): one sector recorded, tiled over the circuit's sectors.

Why: a FallbackPoSt partition is ``sectors`` copies of one sector gadget that share nothing but ONE (docs
post.md §5), so with ``porep.circuit.pce``'s template (header = ONE alone, "challenge" = one sector) the
whole R1CS comes from ~1/sectors of the rows: a 32GiB WindowPoSt partition's 125 M rows from one sector's
53,333 (2349 sectors), recorded in well under a second and cached under the agent's cache directory.
"""

from __future__ import annotations

import os

from gpu.groth16.r1cs import R1CS
from porep.circuit import pce
from porep.circuit.cs import ConstraintSystem
from porep.circuit.pce import Layout, PartitionTemplate
from porep.post.circuit import PoStShape, blank_sector, synthesize_sector

__all__ = ["CODE_FILES", "cache_key", "cached_template", "post_pce", "record"]

# The code that shapes the rows (paths under porep/): the gadgets the sector uses and the composition.
CODE_FILES = (
    "circuit/boolean.py", "circuit/cs.py", "circuit/insertion.py", "circuit/multipack.py", "circuit/num.py",
    "circuit/pce.py", "circuit/por.py", "circuit/poseidon.py", "hashes/poseidon.py", "post/circuit.py",
    "post/pce.py",
)


def record(shape: PoStShape) -> PartitionTemplate:
    """Synthesise sector 0 blank (after ONE, which is the whole header) and keep its rows sorted."""
    cs = ConstraintSystem(witness=False, record=True)
    with cs.namespace("sector_0"):
        synthesize_sector(cs, shape, blank_sector(shape))
    layout = Layout(0, 1, 0, cs.num_constraints, cs.num_inputs - 1, cs.num_aux, shape.sectors)
    return pce.template_of(cs, layout)


def _name(shape: PoStShape) -> str:
    arities = ".".join(map(str, shape.path_arities))
    return f"post-a{arities}-s{shape.sectors}-c{shape.challenges}"


def cache_key(shape: PoStShape) -> str:
    return f"{_name(shape)}-{pce.files_version(CODE_FILES)}"


def cached_template(shape: PoStShape, cache_dir: str | os.PathLike[str]) -> PartitionTemplate:
    """The template from ``cache_dir/pce/<key>``, recorded and saved there when absent, stale or corrupt."""
    return pce.cached(_name(shape), cache_key(shape), lambda: record(shape), cache_dir)


def post_pce(shape: PoStShape, cache_dir: str | os.PathLike[str] | None = None) -> R1CS:
    """The R1CS (compact matrices) of ``shape``: tiled from the cached template with ``cache_dir``."""
    t = cached_template(shape, cache_dir) if cache_dir is not None else record(shape)
    return t.r1cs()
