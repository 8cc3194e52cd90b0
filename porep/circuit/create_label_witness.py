"""The witness of many in-circuit create_label gadgets at once (the bulk of a PoRep partition: 522,269 rows
each, one per layer and challenge).

Why: row-by-row Python synthesis does ~10^5 rows/s; here the gadget is a template (recorded once per
parent count and layer, ``porep.circuit.template``, compiled to a ``template_witness.BitProgram``) and its
aux come from two vectorised passes:
1. the SHA-256 of ``porep.circuit.sha256_witness`` over all messages (Numba; checked against its numpy
   reference), which records every ``addmany``'s full integer sum in bellperson's order — its bits are the
   template's free aux (the result bits, carries included);
2. the bit program (one table lookup per xor / and / ch / maj row, Numba), written straight into the
   assignment; the last row (the 254-bit packing) is the label itself, from the digest.
Inputs are the bits of the replica id (255), the challenge (64, LSB first) and the 6 or 14 parents (255
each), which is how the StackedDRG circuit feeds them (to_bits_le + reverse_bit_numbering).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from porep.circuit.boolean import Boolean, reverse_bit_numbering
from porep.circuit.create_label import TOTAL_PARENTS, create_label
from porep.circuit.cs import ConstraintSystem
from porep.circuit.sha256_witness import FIELD_BITS, addition_bits, bits_le, truncate254
from porep.circuit.template import Template, record
from porep.circuit.template_witness import (
    BitProgram,
    Program,
    bit_program,
    cached_bit_program,
    program,
    solve_bits,
)
from porep.circuit.uint64 import UInt64

# create_label's message: words 8 (the layer) and 11..15 (zero padding) are constants
LABEL_CONSTANT_WORDS = frozenset({8, 11, 12, 13, 14, 15})


def n_inputs(n_parents: int) -> int:
    return FIELD_BITS + 64 + n_parents * FIELD_BITS


def expand_parents(parents: list) -> list:  # type: ignore[type-arg]
    """The 37 label inputs from the 6 (layer 1) or 14 parents (circuit.md §9.1)."""
    if len(parents) == 6:
        return parents * 6 + [parents[0]]
    return parents + parents + parents[: TOTAL_PARENTS - 2 * len(parents)]


def _gadget(n_parents: int, layer: int):  # type: ignore[no-untyped-def]
    def run(cs: ConstraintSystem, ins: list[int]) -> object:
        rid = reverse_bit_numbering([Boolean(v) for v in ins[:FIELD_BITS]])
        node = UInt64([Boolean(v) for v in ins[FIELD_BITS : FIELD_BITS + 64]], None)
        base = FIELD_BITS + 64
        parents = []
        for k in range(n_parents):
            lo = base + k * FIELD_BITS
            parents.append(reverse_bit_numbering([Boolean(v) for v in ins[lo : lo + FIELD_BITS]]))
        return create_label(cs, rid, expand_parents(parents), layer, node)

    return run


def label_template(n_parents: int, layer: int) -> tuple[Template, Program]:
    """The recorded create_label of one layer (6 parents for layer 1, 14 after) and its witness program
    (seconds and ~10^8 bytes: compile it with ``label_program``, which is what is kept)."""
    t = record(_gadget(n_parents, layer), n_inputs(n_parents))
    return t, program(t)


@cache
def label_program(n_parents: int, layer: int, cache_dir: str | None = None) -> BitProgram:
    """The bit program of one layer's create_label (the layer is a constant of the message: its bits fold,
    so every layer has its own rows); kept under ``cache_dir`` when given (``cached_bit_program``)."""
    name = f"create_label-p{n_parents}-l{layer}"
    return cached_bit_program(name, lambda: bit_program(label_template(n_parents, layer)[1]), cache_dir)


def label_inputs(replica_id: bytes, layer: int, nodes: np.ndarray, parents: np.ndarray) -> tuple[
    np.ndarray, np.ndarray, np.ndarray
]:
    """(message uint8[N, 1248], input bits uint8[N, n_inputs], parents' bits uint8[N, P, 255]) of N
    create_labels: ``nodes`` uint64[N], ``parents`` uint8[N, P, 32] canonical LE."""
    n, n_par = parents.shape[0], parents.shape[1]
    rid = np.frombuffer(bytes(replica_id), np.uint8)
    head = np.zeros((n, 64), np.uint8)
    head[:, :32] = rid
    head[:, 32:36] = np.frombuffer(layer.to_bytes(4, "big"), np.uint8)
    head[:, 36:44] = nodes.astype(">u8").view(np.uint8).reshape(n, 8)
    idx = np.asarray(expand_parents(list(range(n_par))))
    msg = np.concatenate([head, parents[:, idx].reshape(n, -1)], axis=1)
    pbits = bits_le(parents.reshape(n * n_par, 32)).reshape(n, n_par, FIELD_BITS)
    inputs = np.concatenate(
        [
            np.broadcast_to(bits_le(rid[None, :]), (n, FIELD_BITS)),
            ((nodes[:, None] >> np.arange(64, dtype=np.uint64)[None, :]) & np.uint64(1)).astype(np.uint8),
            pbits.reshape(n, -1),
        ],
        axis=1,
    )
    return msg, inputs, pbits


def write_labels(
    out: np.ndarray, rows: np.ndarray, replica_id: bytes, layer: int, nodes: np.ndarray, parents: np.ndarray,
    cache_dir: str | None = None,
) -> np.ndarray:
    """Write N create_labels' own aux into ``out`` (canonical Fr rows, instance i's aux j at
    ``out[rows[i] + j]``). Returns the labels, uint8[N, 32] LE (the last aux)."""
    bp = label_program(parents.shape[1], layer, cache_dir)
    msg, inputs, _ = label_inputs(replica_id, layer, nodes, parents)
    digest, free = addition_bits(msg, LABEL_CONSTANT_WORDS)
    if free.shape[1] != len(bp.free):
        raise AssertionError(f"{free.shape[1]} addition bits for {len(bp.free)} free aux")
    solve_bits(bp, inputs, free, out, rows)
    labels = truncate254(digest)
    out[np.asarray(rows, dtype=np.int64) + bp.n_aux - 1] = labels.view("<u4")
    return labels


def label_witness(
    replica_id: bytes, layer: int, nodes: np.ndarray, parents: np.ndarray
) -> tuple[np.ndarray, list[int]]:
    """create_label's own aux for N challenges: ``nodes`` uint64[N], ``parents`` uint8[N, P, 32] (P = 6 for
    layer 1, else 14; canonical Fr reprs < 2^254). Returns (int64[N, n_aux]: every aux but the last as its
    0/1 value, the last left 0; the N labels as ints, which are that last aux)."""
    n, n_par = parents.shape[0], parents.shape[1]
    bp = label_program(n_par, layer)
    out = np.empty((n * bp.n_aux, 8), np.uint32)
    labels = write_labels(out, np.arange(n) * bp.n_aux, replica_id, layer, nodes, parents)
    vals = out[:, 0].astype(np.int64).reshape(n, bp.n_aux)
    vals[:, -1] = 0
    return vals, [int.from_bytes(x.tobytes(), "little") for x in labels]
