"""Synthetic C1s of any proof type: random values, exact shapes, consistent indices (codec benchmarks).

Not a proof of anything (hashes are random, so vanilla verification fails); they exercise the C1 codec and
models at every size — including the 32GiB shape that the P7 benchmark parses — without sealing a
sector. For *valid* C1s of any size without sealing (``psagent c1 synth``) see :mod:`porep.sdr.sparse`.
Indices are made consistent the way a real C1's are, so code that only reads structure (challenge
= c_x column = labeling node = the leaf index of every path) sees realistic data:

* per challenge a node ``x``; tree-D path bits, tree-R/C path digits, ``c_x.column.index``,
  ``labeling_proofs[*].node`` and ``encoding_proof.node`` all derive from it;
* each parent column gets a random node, and its tree-C path digits derive from that node;
* every 32-byte value has its top two bits clear, like an Fr repr or a trimmed SHA-256 domain.
"""

from __future__ import annotations

import numpy as np

from porep.c1 import C1Arrays, KeyOrder, SealCommitPhase1Output, encode
from porep.c1.layout import COLUMNS_PER_CHALLENGE, layout_for
from porep.prooftypes import ProofType, RegisteredSealProof, proof_type


def _path_indices(nodes: np.ndarray, pt: ProofType) -> dict[str, np.ndarray]:
    """Tree C/R path indices of leaf ``nodes``: base digits (leaf level first), then sub, then top."""
    base_leaves = pt.tree.base**pt.base_depth
    within = nodes % base_leaves
    out = {
        "base": np.stack(
            [(within // pt.tree.base**lvl) % pt.tree.base for lvl in range(pt.base_depth)], axis=-1
        )
    }
    if pt.tree.sub:
        out["sub"] = ((nodes // base_leaves) % pt.tree.sub)[..., None]
    if pt.tree.top:
        out["top"] = ((nodes // (base_leaves * pt.tree.sub)) % pt.tree.top)[..., None]
    return out


def synth_arrays(proof: ProofType | RegisteredSealProof | int | str, seed: int = 0) -> C1Arrays:
    """Random, structurally valid bulk arrays of a C1 of ``proof``'s type."""
    pt = proof if isinstance(proof, ProofType) else proof_type(proof)
    layout = layout_for(pt, KeyOrder.RUST)
    rng = np.random.default_rng(seed)
    fields: dict[str, np.ndarray] = {}
    for name in layout.byte_fields:
        arr = rng.integers(0, 256, size=layout.fields[name].shape, dtype=np.uint8)
        arr[..., 31] &= 0x3F
        fields[name] = arr
    P, C, L = pt.partitions, pt.challenges_per_partition, pt.layers
    challenge = rng.integers(0, pt.nodes, size=(P, C), dtype=np.int64)
    fields["d.base.index"] = np.stack([(challenge >> lvl) & 1 for lvl in range(pt.tree_d_depth)], axis=-1)
    for part, idx in _path_indices(challenge, pt).items():
        fields[f"r.{part}.index"] = idx
    columns = rng.integers(0, pt.nodes, size=(P, C, COLUMNS_PER_CHALLENGE), dtype=np.int64)
    columns[:, :, 0] = challenge
    fields["col.index"] = columns
    for part, idx in _path_indices(columns, pt).items():
        fields[f"col.{part}.index"] = idx
    fields["lab.node"] = np.repeat(challenge[:, :, None], L, axis=2)
    fields["lab.layer_index"] = np.broadcast_to(np.arange(1, L + 1, dtype=np.int64), (P, C, L)).copy()
    fields["enc.node"] = challenge.copy()
    fields["enc.layer_index"] = np.full((P, C), L, dtype=np.int64)
    return C1Arrays(pt, fields)


def synth_c1(
    proof: ProofType | RegisteredSealProof | int | str,
    seed: int = 0,
    key_order: KeyOrder | str = KeyOrder.RUST,
) -> SealCommitPhase1Output:
    """A synthetic C1 as models (validated)."""
    return SealCommitPhase1Output.from_arrays(synth_arrays(proof, seed), key_order=key_order)


def synth_c1_json(
    proof: ProofType | RegisteredSealProof | int | str, seed: int = 0, order: KeyOrder | str = KeyOrder.RUST
) -> bytes:
    """A synthetic C1 document, without building models (fast for 32GiB shapes)."""
    return encode(synth_arrays(proof, seed), KeyOrder(order))
