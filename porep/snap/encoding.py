"""Replica encoding of a sector update: new_replica = key + data·rho(high(i)) mod r, and its inverses.

The sector key is the CC sector's replica (docs snap.md §2.3, rust-fil-proofs ``vanilla.rs``
``encode_into``/``decode_from``/``remove_encoded_data``). rho depends on the h high bits of the node index,
so the 2^h values are computed once and spread over their contiguous node ranges. Values are 32-byte LE
canonical Fr (``uint8[N, 32]``); a non-canonical input is refused, as ``bytes_into_fr`` does.
"""

from __future__ import annotations

import numpy as np

from gpu.arith.fields import (
    fr_add_batch,
    fr_encode,
    fr_inv_batch,
    fr_is_canonical,
    fr_mul_batch,
    fr_sub_batch,
)
from porep.snap.randomness import rhos

NODE = 32


def _limbs(values: np.ndarray, what: str) -> np.ndarray:
    arr = np.ascontiguousarray(values, dtype=np.uint8).reshape(-1, NODE)
    limbs = arr.view("<u4").astype(np.uint32, copy=False).reshape(-1, 8)
    bad = ~fr_is_canonical(limbs)
    if bad.any():
        raise ValueError(f"{what}: node {int(np.argmax(bad))} is not a canonical Fr element (>= r)")
    return limbs


def _nodes(limbs: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(limbs).astype("<u4").view(np.uint8).reshape(-1, NODE)


def rho_per_node_mont(phi_value: int, h: int, nodes: int, *, inverse: bool = False) -> np.ndarray:
    """rho (or rho^-1) of every node, Montgomery ``uint32[nodes, 8]``."""
    if nodes & (nodes - 1) or nodes < 1 << h:
        raise ValueError(f"{nodes} nodes cannot be split by {h} high bits")
    table = fr_encode(rhos(phi_value, h))
    if inverse:
        table = fr_inv_batch(table)
    return np.repeat(table, nodes >> h, axis=0)


def encode(key: np.ndarray, data: np.ndarray, phi_value: int, h: int) -> np.ndarray:
    """new_replica[i] = key[i] + data[i]·rho(i >> (log2 N − h)) mod r."""
    k, d = _limbs(key, "sector key"), _limbs(data, "data")
    if k.shape != d.shape:
        raise ValueError(f"key has {k.shape[0]} nodes, data {d.shape[0]}")
    prod = fr_mul_batch(d, rho_per_node_mont(phi_value, h, k.shape[0]))  # canonical · Montgomery = canonical
    return _nodes(fr_add_batch(k, prod))


def decode(key: np.ndarray, replica: np.ndarray, phi_value: int, h: int) -> np.ndarray:
    """data[i] = (replica[i] − key[i])·rho^-1."""
    k, r = _limbs(key, "sector key"), _limbs(replica, "replica")
    if k.shape != r.shape:
        raise ValueError(f"key has {k.shape[0]} nodes, replica {r.shape[0]}")
    inv = rho_per_node_mont(phi_value, h, k.shape[0], inverse=True)
    return _nodes(fr_mul_batch(fr_sub_batch(r, k), inv))


def recover_key(replica: np.ndarray, data: np.ndarray, phi_value: int, h: int) -> np.ndarray:
    """key[i] = replica[i] − data[i]·rho (``remove_encoded_data``)."""
    r, d = _limbs(replica, "replica"), _limbs(data, "data")
    if r.shape != d.shape:
        raise ValueError(f"replica has {r.shape[0]} nodes, data {d.shape[0]}")
    prod = fr_mul_batch(d, rho_per_node_mont(phi_value, h, r.shape[0]))
    return _nodes(fr_sub_batch(r, prod))
