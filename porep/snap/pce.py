"""The pre-compiled update circuit (PCE) of one update proof type: its R1CS recorded once, by tiling.

Why: as for PoRep (``porep.circuit.pce``), the matrices depend only on the size, and a partition is a header
(inputs, phi, the comm_r checks, the apex tree, the challenge digests) plus n challenges that run the same
code (``porep.snap.circuit.synthesize_challenge``) over their own aux and header variables. So the header and
ONE challenge are recorded shape-only (32GiB: 6.8 M of the 81 M rows) and the n challenges are tiled from it
with ``porep.circuit.pce``'s template, cache and checks.

One thing differs from PoRep: challenge ``i`` reads its own random bits, a chunk of the header's digest bits
(digest ``i // per``, chunk ``i % per``), not challenge 0's. The template's ``window`` covers challenge 0's
chunk and shifts it per challenge; digest blocks are equal in size, so the shift is a fixed offset per
challenge, recorded with the template.
"""

from __future__ import annotations

import os

import numpy as np

from gpu.groth16.r1cs import R1CS
from porep.circuit import pce
from porep.circuit.cs import ConstraintSystem
from porep.circuit.pce import Layout, PartitionTemplate
from porep.snap.circuit import _constants, blank_witness, synthesize_challenge, synthesize_header
from porep.snap.params import UpdateConstants

__all__ = ["CODE_FILES", "cache_key", "cached_template", "record", "update_pce"]

# The code that shapes the update circuit's rows (paths under porep/): PoRep's gadgets + the snap composition.
CODE_FILES = (*pce.CODE_FILES, "snap/circuit.py", "snap/params.py", "snap/pce.py", "snap/randomness.py")


def record(pt: object) -> PartitionTemplate:
    """Synthesise the header (every digest of the size) and challenge 0 blank; the window is challenge
    0's random bits, shifted to challenge i's chunk of the digest bits."""
    consts = _constants(pt)
    cs = ConstraintSystem(witness=False, record=True)
    w = blank_witness(consts)  # n blank challenges: the header allocates every challenge's bits
    head = synthesize_header(cs, consts, w)
    h_rows, h_in, h_aux = cs.num_constraints, cs.num_inputs, cs.num_aux
    with cs.namespace("challenge_0"):
        synthesize_challenge(cs, consts, head, head.generated_bits[0], w.challenges[0])
    if cs.num_inputs != h_in:
        raise AssertionError("a challenge allocated an input")
    c_rows, c_aux = cs.num_constraints - h_rows, cs.num_aux - h_aux
    layout = Layout(h_rows, h_in, h_aux, c_rows, 0, c_aux, consts.challenges)
    rb = consts.random_bits
    first = np.asarray([bits[0] for bits in head.generated_bits], dtype=np.int64)
    for i, bits in enumerate(head.generated_bits):
        if bits != list(range(first[i], first[i] + rb)):
            raise AssertionError(f"challenge {i}'s random bits are not {rb} consecutive aux")
    lo = h_in + int(first[0])  # aux j is column num_inputs + j
    return pce.template_of(cs, layout, (lo, lo + rb), first - first[0])


def _name(consts: UpdateConstants) -> str:
    return f"snap-n{consts.nodes}-c{consts.challenges}"


def cache_key(pt: object) -> str:
    """The cache entry's name: the size (every constant follows from the node count) and the code version."""
    return f"{_name(_constants(pt))}-{pce.files_version(CODE_FILES)}"


def cached_template(pt: object, cache_dir: str | os.PathLike[str]) -> PartitionTemplate:
    """The template from ``cache_dir/pce/<key>``, recorded and saved there when absent, stale or corrupt."""
    consts = _constants(pt)
    return pce.cached(_name(consts), cache_key(consts), lambda: record(consts), cache_dir)


def update_pce(pt: object, cache_dir: str | os.PathLike[str] | None = None) -> R1CS:
    """The R1CS (compact matrices) of one partition of ``pt`` (an ``UpdateProofType``, its id or name, or
    ``UpdateConstants``): tiled from the cached template when ``cache_dir`` is given, else a fresh one."""
    t = cached_template(pt, cache_dir) if cache_dir is not None else record(pt)
    return t.r1cs()
