"""C1 generation (``seal_commit_phase1``): the vanilla proofs of a sealed sector for a seed.

Per partition k and challenge x (docs porep.md §1.3–1.6, SPP ``vanilla/proof_scheme.rs``
``prove_layers``): the tree-D path of x (``comm_d_proofs``), the tree-R_last path of x
(``comm_r_last_proof``), the columns (labels of every layer) with tree-C paths of x, of its 6 DRG parents
and of its 8 expander parents (``replica_column_proofs``), one labeling proof per layer (the 37 parent
labels hashed into label_l(x)) and the encoding proof (the last layer's again). Everything is gathered
with numpy over all challenges at once into :class:`porep.c1.C1Arrays`, from which the C1 models and the
byte-exact JSON (Rust key order) follow.
"""

from __future__ import annotations

import numpy as np

from porep.c1 import C1Arrays, SealCommitPhase1Output
from porep.prooftypes import DRG_DEGREE
from porep.sdr import challenges
from porep.sdr.labels import parent_slots
from porep.sdr.seal import SealedSector

NODE = 32


def challenge_matrix(sealed: SealedSector, seed: bytes) -> np.ndarray:
    """``int64[P, C]``: the challenges of every partition for this sector and seed."""
    info = sealed.info
    rows = challenges.derive_all(sealed.proof_type, info.replica_id, seed, info.comm_r)
    return np.array(rows, dtype=np.int64)


def _const(value: bytes, shape: tuple[int, ...]) -> np.ndarray:
    return np.broadcast_to(np.frombuffer(value, dtype=np.uint8), (*shape, NODE)).copy()


def make_c1_arrays(sealed: SealedSector, seed: bytes) -> C1Arrays:
    seed = bytes(seed)
    if len(seed) != 32:
        raise ValueError("seed must be 32 bytes")
    pt = sealed.proof_type
    info = sealed.info
    P, C, L = pt.partitions, pt.challenges_per_partition, pt.layers
    chal = challenge_matrix(sealed, seed)
    flat = chal.reshape(-1)
    parents = sealed.graph.parents_of(flat).astype(np.int64)  # [P·C, 14] (not the whole cache)
    f: dict[str, np.ndarray] = {}

    # tree D (comm_d_proofs) and tree R_last (comm_r_last_proof) at the challenge
    for prefix, tree, root in (
        ("d", sealed.tree_d, info.comm_d),
        ("r", sealed.tree_r_last, info.comm_r_last),
    ):
        hashes, pos = tree.path_arrays(flat)
        depth, sib = hashes.shape[1], hashes.shape[2]
        f[f"{prefix}.root"] = _const(root, (P, C))
        f[f"{prefix}.leaf"] = tree.leaves[flat].reshape(P, C, NODE)
        f[f"{prefix}.base.hashes"] = hashes.reshape(P, C, depth, sib, NODE)
        f[f"{prefix}.base.index"] = pos.reshape(P, C, depth)

    # the 15 columns: c_x, 6 DRG parents, 8 expander parents
    cols = np.concatenate([flat[:, None], parents], axis=1)  # [P·C, 15]
    hashes, pos = sealed.tree_c.path_arrays(cols.reshape(-1))
    depth, sib = hashes.shape[1], hashes.shape[2]
    f["col.index"] = cols.reshape(P, C, 15)
    f["col.rows"] = np.ascontiguousarray(sealed.labels[:, cols].transpose(1, 2, 0, 3)).reshape(
        P, C, 15, L, NODE
    )
    f["col.root"] = _const(info.comm_c, (P, C, 15))
    f["col.leaf"] = sealed.tree_c.leaves[cols.reshape(-1)].reshape(P, C, 15, NODE)
    f["col.base.hashes"] = hashes.reshape(P, C, 15, depth, sib, NODE)
    f["col.base.index"] = pos.reshape(P, C, 15, depth)

    # labeling proofs (layer l: DRG parents' labels from layer l, expander parents' from layer l − 1)
    lab = np.empty((P * C, L, 37, NODE), dtype=np.uint8)
    for layer in range(1, L + 1):
        for s, slot in enumerate(parent_slots(layer)):
            src = layer if slot < DRG_DEGREE else layer - 1
            lab[:, layer - 1, s] = sealed.labels[src - 1, parents[:, slot]]
    f["lab.parents"] = lab.reshape(P, C, L, 37, NODE)
    f["lab.layer_index"] = np.broadcast_to(np.arange(1, L + 1, dtype=np.int64), (P, C, L)).copy()
    f["lab.node"] = np.repeat(chal[:, :, None], L, axis=2)
    f["enc.parents"] = lab[:, L - 1].reshape(P, C, 37, NODE).copy()
    f["enc.layer_index"] = np.full((P, C), L, dtype=np.int64)
    f["enc.node"] = chal.copy()

    for name, value in (
        ("comm_r", info.comm_r),
        ("comm_d", info.comm_d),
        ("replica_id", info.replica_id),
        ("seed", seed),
        ("ticket", info.ticket),
    ):
        f[name] = np.frombuffer(value, dtype=np.uint8).copy()
    for arr in f.values():
        arr.flags.writeable = False
    return C1Arrays(pt, f)


def make_c1(sealed: SealedSector, seed: bytes) -> SealCommitPhase1Output:
    """The C1 output of a sealed sector for ``seed`` (validated against its proof type)."""
    return SealCommitPhase1Output.from_arrays(make_c1_arrays(sealed, seed))
