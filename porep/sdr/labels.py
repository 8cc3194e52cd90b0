"""SDR labeling (PC1): the layers of labels, and the single-label function that proofs recompute.

label_l(v) = sha254(replica_id ‖ u32_be(l) ‖ u64_be(v) ‖ 20 zero bytes ‖ P_1 ‖ … ‖ P_37) (docs porep.md
§4.4; SPP ``vanilla/create_label/single.rs``, ``labeling_proof.rs``). The 37 parent labels repeat the
node's parents in order: layer 1 has only the 6 DRG parents, taken from layer 1 itself (p0..p5 six times,
then p0); later layers have the 6 DRG parents from the same layer and the 8 expander parents from the
previous layer (p0..p13, p0..p13, p0..p8). Node 0 hashes the 64-byte prefix alone. Every node depends on
its predecessor, so a layer is one sequential pass: hashlib's SHA-256 (SHA-NI where the CPU has it) in a
tight loop whose per-node work is one numpy gather and two hash updates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from porep.prooftypes import DRG_DEGREE, EXP_DEGREE, TOTAL_PARENTS

NODE = 32
Progress = Callable[[int, int], None]


def label_prefix(replica_id: bytes, layer: int, node: int) -> bytes:
    """The first 64 bytes hashed into a label."""
    return bytes(replica_id) + layer.to_bytes(4, "big") + node.to_bytes(8, "big") + bytes(20)


def parent_slots(layer: int) -> np.ndarray:
    """Which of the 14 cache parents (0..5 DRG, 6..13 expander) fill the 37 label inputs of ``layer``."""
    return np.resize(np.arange(DRG_DEGREE if layer == 1 else DRG_DEGREE + EXP_DEGREE), TOTAL_PARENTS)


def create_label(replica_id: bytes, layer: int, node: int, parents37: bytes | np.ndarray | None) -> bytes:
    """One label from its 37 parent labels (``None`` / empty for node 0), trimmed to 254 bits."""
    h = hashlib.sha256(label_prefix(replica_id, layer, node))
    if node != 0:
        if parents37 is None:
            raise ValueError(f"node {node} has parents")
        data = bytes(parents37) if not isinstance(parents37, np.ndarray) else parents37.tobytes()
        if len(data) != TOTAL_PARENTS * NODE:
            raise ValueError(f"a label hashes {TOTAL_PARENTS} parent labels, got {len(data) // NODE}")
        h.update(data)
    out = bytearray(h.digest())
    out[31] &= 0x3F
    return bytes(out)


def label_layers(
    replica_id: bytes,
    parent_cache: np.ndarray,
    layers: int,
    progress: Callable[[int, int, int], None] | None = None,
) -> np.ndarray:
    """All labels: ``uint8[layers, N, 32]`` (``[l-1]`` = layer l). ``progress(layer, done, total)``."""
    replica_id = bytes(replica_id)
    if len(replica_id) != 32:
        raise ValueError("replica_id must be 32 bytes")
    n = parent_cache.shape[0]
    out = np.empty((layers, n, NODE), dtype=np.uint8)
    # Rows [0, n) of `work` are the previous layer, [n, 2n) the one being written, so one gather fetches
    # DRG parents (current layer, +n) and expander parents (previous layer) together.
    work = np.zeros((2 * n, NODE), dtype=np.uint8)
    step = max(1, n // 64)
    sha = hashlib.sha256
    block = 1 << 16  # gather indices are made per block of nodes (37 int64 per node: 5 GB for 512MiB)
    for layer in range(1, layers + 1):
        slots = parent_slots(layer)
        offset = np.zeros(DRG_DEGREE + EXP_DEGREE, dtype=np.int64)
        offset[:DRG_DEGREE] = n
        layer_be = layer.to_bytes(4, "big")
        pad = bytes(20)
        cur = work[n:]
        gather = np.empty((0, TOTAL_PARENTS), dtype=np.int64)
        for v in range(n):
            if v % block == 0:
                gather = (parent_cache[v : v + block].astype(np.int64) + offset)[:, slots]  # [block, 37]
            h = sha(replica_id + layer_be + v.to_bytes(8, "big") + pad)
            if v:
                h.update(work[gather[v % block]])
            d = bytearray(h.digest())
            d[31] &= 0x3F
            cur[v] = np.frombuffer(d, dtype=np.uint8)
            if progress is not None and v % step == step - 1:
                progress(layer, v + 1, n)
        out[layer - 1] = cur
        work[:n] = cur
        if progress is not None:
            progress(layer, n, n)
    return out
